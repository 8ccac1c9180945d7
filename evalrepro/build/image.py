"""The prebuilt-image builder: images someone else built, pulled by digest, used as is.

``environment.builder: {kind: image, images: {<instance id>: "registry/name@sha256:..."}}``
names each instance's image by its *manifest* digest. The builder pulls it by that
digest (podman verifies the manifest's bytes against it: a registry that serves other
bytes is refused), checks that the store holds it under that digest, and records both
digests: the manifest digest as the layer's one input (what was asked for) and the image
Id podman reports (the config digest, what the runtime runs and the lockfile compares).
Run again from a lockfile, an image whose Id is not the locked one is refused (a
manifest list resolves to one image per platform: another architecture is another Id).
An image already in the store under its pinned digest is not pulled again.

Without ``adapt`` there is no layer on top: the image is what the trial runs in, so it
must already hold what the trial supervisor needs (``evalrepro/sandbox/``).
With ``adapt``, one layer of evalrepro's goes on each pulled image
(``backends/podman/Containerfile.adapt``, built on the pulled image's Id, without network,
its top layer normalised as the Containerfile builder's are: ``layertar``). Its key is
over its recipe's bytes, the normalisation rule, the environment's prefix and the test
user, and the pulled image's key (so over the manifest digest): a change to any of them
is another layer, found by its tag ``localhost/evalrepro-adapt:<key>`` once built. It
makes an image made the way SWE-bench's are (the repo cloned into ``/testbed`` by root, a
conda env, no harness store) meet the contract:

* the harness's store ``/opt/evalrepro/repo.git``: a bare copy of ``/testbed/.git``
  (``git clone --local --no-hardlinks``: the object files as they are), made before the
  test user may write there;
* the test user ``tester`` (uid 1000, home ``/home/tester``), added beside the image's own
  uid 1000 if it has one (SWE-bench's ``nonroot``): an agent's sandbox runs as ``tester``;
* ``/testbed`` owned by the test user;
* ``/opt/venv`` a link to the environment's prefix (``adapt.python_env``, SWE-bench's
  ``/opt/miniconda3/envs/testbed``): the test command's PATH has ``/opt/venv/bin`` first,
  which is what ``conda activate testbed`` does to PATH (the env's ``activate.d`` scripts
  are not run). An image with an ``/opt/venv`` of its own is refused.

The image (the adapted one, if adapted) is checked once per image Id and base commit, in
one container:

* ``/usr/bin/python3`` able to compile the supervisor, run as the container's root (no
  ``USER`` but root, no ``ENTRYPOINT``);
* ``git`` and ``patch`` on the supervisor's PATH (``/opt/venv/bin`` first);
* the repo's tree at the base commit in ``/testbed``, owned by the test user (uid 1000),
  who alone runs the code under test;
* the harness's own git store ``/opt/evalrepro/repo.git`` (root's), holding the base
  commit: the supervisor restores test files from it, never from ``/testbed/.git``;
* no folder of the Python path outside ``/testbed`` (``sys.path`` of ``/opt/venv/bin/python``,
  else of ``/usr/bin/python3``, and the image's ``PYTHONPATH``; a walk of at most 20,000
  folders) writable by the test user: a module planted there would be imported as the
  standard library or the test framework, which the exit guard takes from outside the tree.

An image of the Containerfile builder's instance layer meets this; SWE-bench's published
images (tree owned by root, no harness store) do not as they are, and do once adapted.
The spec's packages and install command are not applied: the image was built with them.
The pulled image's installed-package list (dpkg's) is kept as the chain's base's.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from evalrepro import atomic
from evalrepro.build import layertar
from evalrepro.build.base import Builder
from evalrepro.build.images import ImageChain, inputs_digest, layer_key, setting_input
from evalrepro.config.builders import AdapterConfig, PrebuiltImageConfig, parse_pinned_reference
from evalrepro.config.environment import PodmanEnvironment
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.records.image import BuildFailure, ImageRecord, PinnedInput
from evalrepro.records.supervision import TEST_USER
from evalrepro.records.testspec import TestSpec
from evalrepro.runtimes.store import RUNTIME_FAILURES as _RUNTIME_FAILURES
from evalrepro.runtimes.store import StoreError, backend_files
from evalrepro.runtimes.store import last_line as _last_line
from evalrepro.sandbox import GIT_DIR, SUPERVISOR_PATH, TESTBED, shipped_supervisor
from evalrepro.sources.checkout import LocalCheckout

LAYER = "image"
#: The layer ``adapt`` puts on a pulled image (``backends/podman/Containerfile.adapt``).
ADAPTER = "adapt"
#: How the adapter's recipe starts the line that says why it cannot adapt an image.
_ADAPTER_SAYS = "evalrepro adapter: "
#: Run in the image by its own ``/usr/bin/python3 -I -S`` (any Python 3 the supervisor
#: itself could run on): prints one JSON object, the problems found and the dpkg list.
CONTRACT_CHECK = """
import json, os, shutil, subprocess, sys, zipfile
testbed, git_dir, supervisor, base, uid, gid = sys.argv[1:7]
path = "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
env = {"PATH": path, "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}
problems = []
try:
    with zipfile.ZipFile(supervisor) as archive:  # the supervisor's modules
        for name in archive.namelist():
            compile(archive.read(name), name, "exec")
except SyntaxError as error:
    version = sys.version.split()[0]
    problems.append("its python3 %s cannot run the supervisor (%s)" % (version, error))
for tool in ("git", "patch"):
    if shutil.which(tool, path=path) is None:
        problems.append("no %s on PATH" % tool)
if not os.path.isdir(testbed):
    problems.append("no %s (the tree at the base commit)" % testbed)
elif os.stat(testbed).st_uid != int(uid):
    problems.append("%s is owned by uid %d, not by the test user (uid %s)"
                    % (testbed, os.stat(testbed).st_uid, uid))
if not os.path.isdir(git_dir):
    problems.append("no %s (the harness's git store of the repo)" % git_dir)
elif shutil.which("git", path=path) is not None:
    found = subprocess.call(
        ["git", "--git-dir", git_dir, "-c", "safe.directory=*", "cat-file", "-e",
         base + "^{commit}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if found != 0:
        problems.append("base commit %s is not in %s" % (base, git_dir))
# Every folder the test run imports from, outside the tree, must be the image's alone: a
# module the test user could write there would be imported as the standard library or
# the framework (the exit guard takes those from outside the tree).
python = "/opt/venv/bin/python" if os.path.exists("/opt/venv/bin/python") else "/usr/bin/python3"
try:
    listed = subprocess.Popen([python, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    entries = json.loads(listed.communicate(timeout=120)[0].decode("utf-8", "replace"))
except (OSError, ValueError, subprocess.SubprocessError):
    entries = []
    problems.append("%s cannot list its Python path" % python)
# The image's PYTHONPATH is the test run's too (-I leaves it out).
entries = os.environ.get("PYTHONPATH", "").split(os.pathsep) + list(entries)
inside = os.path.realpath(testbed) + os.sep
writable, seen, walked = [], set(), 0

def writes(place):
    try:
        st = os.stat(place)
    except OSError:
        return False
    if st.st_uid == int(uid):
        return bool(st.st_mode & 0o200)
    if st.st_gid == int(gid):
        return bool(st.st_mode & 0o020)
    return bool(st.st_mode & 0o002)

def note(place):
    if place not in writable and writes(place):
        writable.append(place)

for entry in entries:
    if not isinstance(entry, str) or not os.path.isabs(entry):
        continue
    entry = os.path.realpath(entry)
    if (entry + os.sep).startswith(inside) or entry in seen:
        continue
    seen.add(entry)
    if not os.path.isdir(entry):
        # A zip file or a missing entry: whoever may write it or its folder plants there.
        if os.path.lexists(entry):
            note(entry)
        while not os.path.isdir(entry):
            entry = os.path.dirname(entry)
        if not (entry + os.sep).startswith(inside):
            note(entry)
        continue
    for folder, subfolders, _ in os.walk(entry):
        walked += 1
        if walked > 20000 or len(writable) >= 3:
            break
        if (os.path.realpath(folder) + os.sep).startswith(inside):
            subfolders[:] = []  # the tree is the test user's by design
            continue
        note(folder)
        for name in subfolders:  # a link to a folder elsewhere: os.walk does not follow it
            if os.path.islink(os.path.join(folder, name)):
                note(os.path.join(folder, name))
for place in writable[:3]:
    problems.append("%s is writable by the test user (uid %s): code under test could plant a "
                    "module there" % (place, uid))
packages = None
if shutil.which("dpkg-query", path=path) is not None:
    listed = subprocess.Popen(["dpkg-query", "--show", "--showformat=${Package}=${Version}\\n"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = listed.communicate()[0].decode("utf-8", "replace")
    packages = out if listed.returncode == 0 else None
print(json.dumps({"problems": problems, "packages": packages}))
"""
_ROOT_USERS = ("", "0", "root", "0:0", "root:root", "root:0", "0:root")


class ImageProblem(Exception):
    """The image cannot be had or does not meet the contract: its trials cannot run."""

    def __init__(self, reason: str, log: Path | None = None) -> None:
        super().__init__(reason)
        self.log = log


class PrebuiltImageBuilder(Builder):
    config: PodmanEnvironment
    kind: ClassVar[str] = "image"

    def open(self) -> None:
        assert isinstance(self.config.builder, PrebuiltImageConfig)
        self.settings: PrebuiltImageConfig = self.config.builder
        self._images: dict[str, ImageRecord | BuildFailure] = {}
        #: The adapter layer on each pulled image, by the pulled image's key.
        self._adapted: dict[str, ImageRecord | BuildFailure] = {}

    @cached_property
    def _normaliser(self) -> layertar.Normaliser:
        # Made when first used: a builder opened without a runtime checks its config only.
        return layertar.Normaliser(self.store, self.cache_dir / "layer-sizes")

    def prepare(
        self,
        specs: list[TestSpec],
        checkouts: dict[str, LocalCheckout],
        locked: list[ImageRecord] | None = None,
    ) -> dict[str, ImageChain | BuildFailure]:
        images = self.settings.images
        missing = [spec.instance_id for spec in specs if spec.instance_id not in images]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise UserError(
                f"environment.builder.images: no image for instance {missing[0]}{more}; "
                "the image builder runs each instance in an image pinned by digest"
            )
        pins = {record.key: record for record in locked or () if record.builder == self.kind}
        chains: dict[str, ImageChain | BuildFailure] = {}
        for spec in specs:
            reference = images[spec.instance_id]
            if reference not in self._images:
                self._images[reference] = self._image(spec.instance_id, reference, pins)
            image = self._images[reference]
            layers: list[ImageRecord] = []
            if isinstance(image, ImageRecord) and self.settings.adapt is not None:
                if image.key not in self._adapted:
                    self._adapted[image.key] = self._adapt(image, self.settings.adapt, pins)
                layers, image = [image], self._adapted[image.key]
            result = image
            if isinstance(image, ImageRecord):
                result = self._checked(spec, [*layers, image])
            if isinstance(result, BuildFailure):
                chains[spec.instance_id] = result.model_copy(
                    update={
                        "reason": f"instance {spec.instance_id}: {result.reason}",
                        "below": layers if result.layer == ADAPTER else [],
                    }
                )
            else:
                chains[spec.instance_id] = result
        return chains

    # --- pull ------------------------------------------------------------------------

    def _image(
        self, instance_id: str, reference: str, pins: dict[str, ImageRecord]
    ) -> ImageRecord | BuildFailure:
        """The image of ``reference``: found in the store by its digest, else pulled."""
        parsed = parse_pinned_reference(reference)
        assert parsed is not None, reference  # the config validated it
        repository, manifest_digest = parsed
        inputs = [
            PinnedInput(kind="image", name=repository, digest=manifest_digest, source=reference)
        ]
        key = layer_key(self.kind, LAYER, inputs, None)
        log = self.cache_dir / "builds" / f"{LAYER}-{manifest_digest.removeprefix('sha256:')}.log"
        pulled, seconds = False, 0.0
        try:
            found = self._inspect(reference)
            if found is None:
                started = time.monotonic()
                self._pull(reference, log)
                pulled, seconds = True, round(time.monotonic() - started, 3)
                found = self._inspect(reference)
                if found is None:
                    raise ImageProblem(f"{reference} is not in the store right after its pull")
        except ImageProblem as problem:
            return BuildFailure(
                builder=self.kind,
                layer=LAYER,
                key=key,
                reason=str(problem),
                build_log=str(problem.log) if problem.log else None,
            )
        image_id = "sha256:" + found["Id"].removeprefix("sha256:")
        # podman checked the manifest's bytes against the digest; the store must say so too.
        # (under any repository: the digest names the bytes, the registry only where they were)
        digests = {entry.rpartition("@")[2] for entry in found.get("RepoDigests") or []}
        if manifest_digest not in digests:
            raise UserError(
                f"instance {instance_id}: the store's image {_short(image_id)} for {reference} "
                f"is not recorded under {manifest_digest}; refusing it"
            )
        pinned = pins.get(key)
        if pinned is not None and pinned.image_digest != image_id:
            raise UserError(
                f"instance {instance_id}: {reference} is image {image_id} here, but the "
                f"lockfile pinned {pinned.image_digest}; refusing it (a manifest list gives "
                "one image per platform: was it locked on another architecture?)"
            )
        return ImageRecord(
            builder=self.kind,
            layer=LAYER,
            key=key,
            inputs_digest=inputs_digest(inputs),
            inputs=inputs,
            tag=reference,
            parent_key=None,
            image_digest=image_id,
            built=pulled,
            build_seconds=seconds,
        )

    def _inspect(self, reference: str) -> dict | None:
        """podman's record of the image stored under ``reference``, or None."""
        return self.store.inspect(reference)

    def _pull(self, reference: str, log: Path) -> None:
        """``podman pull`` by digest: podman refuses a manifest whose bytes do not match."""
        tls = "true" if self.settings.tls_verify else "false"
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            pulled = self.store.pull(reference, tls_verify=self.settings.tls_verify)
        except StoreError as error:
            atomic.write_text(
                log, f"$ {self.store.tool} pull --tls-verify={tls} {reference}\n{error}\n"
            )
            raise ImageProblem(f"pulling {reference} failed: {error}", log) from None
        atomic.write_text(
            log, f"$ {self.store.tool} pull --tls-verify={tls} {reference}\n{pulled}\n"
        )

    # --- the supervisor's contract ----------------------------------------------------

    def _checked(self, spec: TestSpec, layers: list[ImageRecord]) -> ImageChain | BuildFailure:
        """The chain, if its image holds what the supervisor needs for ``spec``; else a
        failure. The pulled image (the base) gets the package list (the adapter installs
        none)."""
        image = layers[-1]
        check_key = sha256_json(
            {
                "check": CONTRACT_CHECK,
                "supervisor": shipped_supervisor().digest,
                "base_commit": spec.base_commit,
                "user": TEST_USER,
            }
        ).removeprefix("sha256:")[:32]
        verdict = self._cache("images", image.image_digest, f"check-{check_key}.json")
        try:
            if verdict.exists():
                result = json.loads(verdict.read_text())
            else:
                result = self._run_check(spec, image)
                atomic.write_text(verdict, json.dumps(result, sort_keys=True) + "\n")
        except ImageProblem as problem:
            return self._failure(image, str(problem))
        if result["problems"]:
            return self._failure(
                image, f"{image.tag} cannot run trials: " + "; ".join(result["problems"])
            )
        base = layers[0]
        packages = self._manifest_file(base.image_digest)
        if result["packages"] is not None and not packages.exists():
            lines = sorted(result["packages"].splitlines())
            atomic.write_text(packages, "\n".join(lines) + "\n")
        if packages.exists():
            digest = sha256_bytes(packages.read_bytes())
            base = base.model_copy(update={"package_manifest_digest": digest})
        return ImageChain(layers=[base, *layers[1:]])

    def _run_check(self, spec: TestSpec, image: ImageRecord) -> dict:
        found = self._inspect(image.tag) or {}
        config = found.get("Config") or {}
        if config.get("Entrypoint"):
            raise ImageProblem(
                f"{image.tag} has an ENTRYPOINT ({' '.join(config['Entrypoint'])}): the "
                "supervisor must be the container's command"
            )
        if str(config.get("User") or "") not in _ROOT_USERS:
            raise ImageProblem(
                f"{image.tag} runs as user {config['User']!r}: the supervisor must start "
                "as the container's root"
            )
        with tempfile.TemporaryDirectory(prefix="evalrepro-check-") as folder:
            Path(folder).chmod(0o755)  # rootless: the container's root is not this user
            archive = Path(folder) / "supervisor.pyz"
            archive.write_bytes(shipped_supervisor().archive)
            archive.chmod(0o644)
            done = self.store.run(
                image.tag,
                [
                    "/usr/bin/python3",
                    "-I",
                    "-S",
                    "-c",
                    CONTRACT_CHECK,
                    TESTBED,
                    GIT_DIR,
                    SUPERVISOR_PATH,
                    spec.base_commit,
                    str(TEST_USER["uid"]),
                    str(TEST_USER["gid"]),
                ],
                volumes=[(str(archive), SUPERVISOR_PATH)],
            )
        if done.returncode in (126, 127):
            raise ImageProblem(
                f"{image.tag} has no /usr/bin/python3 to run the supervisor with "
                f"({_RUNTIME_FAILURES[done.returncode]})"
            )
        try:
            result = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = None
        if done.returncode != 0 or not isinstance(result, dict):
            raise ImageProblem(
                f"checking {image.tag} failed ({self.store.tool} exit code {done.returncode}): "
                f"{_last_line(done.stderr)}"
            )
        return {"problems": list(result.get("problems") or []), "packages": result.get("packages")}

    def _failure(self, image: ImageRecord, reason: str) -> BuildFailure:
        return BuildFailure(builder=self.kind, layer=image.layer, key=image.key, reason=reason)

    # --- the adapter layer -----------------------------------------------------------

    def _adapt(
        self, image: ImageRecord, adapt: AdapterConfig, pins: dict[str, ImageRecord]
    ) -> ImageRecord | BuildFailure:
        """The adapter layer on the pulled ``image``: found by its key, else built."""
        containerfile = backend_files() / f"Containerfile.{ADAPTER}"
        inputs = [
            PinnedInput(
                kind="recipe",
                name=containerfile.name,
                digest=sha256_bytes(containerfile.read_bytes()),
            ),
            # Rewritten without overlayfs's attributes, as the Containerfile builder's layers.
            PinnedInput(
                kind="recipe", name="normalisation", digest=sha256_json(layertar.NORMALISATION)
            ),
            setting_input("python_env", adapt.python_env),
            setting_input("user", TEST_USER),
        ]
        key = layer_key(self.kind, ADAPTER, inputs, image.key)
        tag = f"localhost/evalrepro-{ADAPTER}:{key.removeprefix('sha256:')[:24]}"
        log = self.cache_dir / "builds" / f"{ADAPTER}-{key.removeprefix('sha256:')}.log"
        built, seconds = False, 0.0
        try:
            # A locked layer the store holds (under any name: a bundle's image) is that
            # layer, given the layer's tag (the contract check runs the tag).
            pinned = pins.get(key)
            found = self.store.image_id(pinned.image_digest) if pinned else None
            if found is not None:
                self.store.tag(found, tag)
            found = found or self.store.image_id(tag)
            if found is None:
                started = time.monotonic()
                self._build_adapter(containerfile, tag, image, adapt, log)
                built, seconds = True, round(time.monotonic() - started, 3)
                found = self.store.image_id(tag)
                if found is None:
                    raise ImageProblem(f"{tag} is missing right after its build", log)
        except (ImageProblem, StoreError) as problem:
            return BuildFailure(
                builder=self.kind,
                layer=ADAPTER,
                key=key,
                reason=str(problem),
                build_log=str(log) if log.exists() else None,
                below=[image],
            )
        return ImageRecord(
            builder=self.kind,
            layer=ADAPTER,
            key=key,
            inputs_digest=inputs_digest(inputs),
            inputs=inputs,
            tag=tag,
            parent_key=image.key,
            image_digest=f"sha256:{found.removeprefix('sha256:')}",
            built=built,
            build_seconds=seconds,
        )

    def _build_adapter(
        self, containerfile: Path, tag: str, image: ImageRecord, adapt: AdapterConfig, log: Path
    ) -> None:
        """``podman build`` the adapter on the pulled image's Id, without network, then
        normalise its layer (layertar): the tag appears only on the finished image."""
        log.parent.mkdir(parents=True, exist_ok=True)
        # Not the Containerfile builder's staging folder: it removes folders it did not lock.
        staging = self.cache_dir / "staging-adapt"
        staging.mkdir(parents=True, exist_ok=True)
        context = Path(tempfile.mkdtemp(prefix="adapt-", dir=staging))
        built = f"localhost/evalrepro-building:{context.name.lower()}"
        try:
            shutil.copy(containerfile, context / "Containerfile")
            (context / "normalise").mkdir()
            returncode = self.store.build(
                context,
                context / "Containerfile",
                built,
                log=log,
                build_args={"PARENT": image.image_digest, "PYTHON_ENV": adapt.python_env},
                network=False,
                omit_history=True,
            )
            if returncode != 0:
                # The recipe's own word on what the image lacks, else podman's last line.
                text = log.read_text(errors="replace")
                said = [
                    line.removeprefix(_ADAPTER_SAYS).strip()
                    for line in text.splitlines()
                    if line.startswith(_ADAPTER_SAYS)
                ]
                tail = said[-1][:500] if said else _last_line(text)
                raise ImageProblem(f"building the adapter on {image.tag} failed: {tail}", log)
            try:
                self._normaliser.normalise(built, tag, context / "normalise", image.image_digest)
            except (layertar.LayerError, StoreError, OSError, ValueError, KeyError) as error:
                self.store.remove(built)
                raise ImageProblem(f"normalising {tag}: {error}", log) from error
        finally:
            self.store.remove_tree(context)

    # --- files -----------------------------------------------------------------------

    def _cache(self, folder: str, image_digest: str, suffix: str) -> Path:
        path = self.cache_dir / folder / f"{image_digest.removeprefix('sha256:')}.{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _manifest_file(self, image_digest: str) -> Path:
        # The same file name as the Containerfile builder's: one list per image Id.
        return self._cache("images", image_digest, "packages.txt")

    def missing(self, records: list[ImageRecord]) -> list[ImageRecord]:
        # A reference pinned by digest is not a name the store lists: ask by reference.
        return [r for r in records if f"sha256:{self.store.image_id(r.tag)}" != r.image_digest]

    def package_manifest(self, base: ImageRecord) -> Path | None:
        manifest = self._manifest_file(base.image_digest)
        return manifest if manifest.exists() else None


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]
