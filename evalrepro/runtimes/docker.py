"""Docker (root's daemon, ``dockerd``): the second runtime, in one module.

**Sandbox.** An attempt is one ``docker run`` of the supervisor, an agent's sandbox one
detached container with ``docker exec`` per command: docker's CLI takes the commands
podman's runtime gives for these (``run``, ``exec``, ``cp``, ``inspect``, ``stop``), so
the attempt and the sandbox are :class:`~evalrepro.runtimes.podman.PodmanRuntime`'s
with :attr:`DockerRuntime.tool` ``docker``, and what differs is here:

- the same confinement as podman's: ``--network none``, no privilege gain, podman's own
  capability set (docker's default adds ``NET_RAW``, ``MKNOD``, ``AUDIT_WRITE``) and
  podman's seccomp profile (``/usr/share/containers/seccomp.json``) when the machine has
  it: the code under test sees the same kernel interface under either runtime;
- no conmon: docker has no ``--timeout``. evalrepro's own deadlines stop every container
  (the supervisor's timeout, the host's backstop, ``docker rm --force``); a container of
  an evalrepro that was killed runs on until the next session in the same run directory
  removes it (``remove_leftovers``), as the record of each limit says;
- the daemon runs as root: the cgroup limits of root podman apply (``--memory``,
  ``--pids-limit``, ``--cpus``, as backstops behind the supervisor's watchdog).

**Images.** Docker 20.10 builds nothing evalrepro could pin (``docker build`` writes
other configs, hence other Ids), and loads ``docker-archive`` files but not OCI archives.
So the builders build in root's podman store (:meth:`DockerRuntime.build_store`), and the
runtime brings an image into docker's store, as a docker-archive of podman's (config
bytes kept: the same Id), the first time a sandbox starts from it. The lockfile's
digests are the same as a podman run's. :class:`DockerStore` is docker's image store; it
loads an OCI layout (a bundle's ``images.oci.tar``) by re-packing it as a docker-archive,
and exports (``save``) by re-packing ``docker save``'s output as the docker-archive
podman writes (:func:`repack_docker_save`): the same bytes load into either store.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, ClassVar

from evalrepro.config.environment import DockerEnvironment
from evalrepro.errors import UserError
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.interactive import Sandbox, SandboxError, SandboxRequest
from evalrepro.runtimes.podman import PodmanRuntime
from evalrepro.runtimes.podman_store import PodmanStore
from evalrepro.runtimes.store import ImageStore, StoreError, backend_files, last_line, run_args

#: The capabilities podman 4.3 gives a container (its built-in default): docker's default
#: set has NET_RAW, MKNOD and AUDIT_WRITE besides.
CAPABILITIES = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
#: podman's seccomp profile (containers-common): the same system calls in both runtimes.
SECCOMP_PROFILE = Path("/usr/share/containers/seccomp.json")
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


class DockerStore(ImageStore):
    """Docker's image store, through the ``docker`` CLI."""

    tool: ClassVar[str] = "docker"

    def __init__(self, env: dict[str, str], cache_dir: Path) -> None:
        self.env = env
        self.cache_dir = cache_dir
        #: docker-archives loaded whole already (each image of one is loaded with all).
        self._loaded: set[Path] = set()

    def docker(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["docker", *args], capture_output=True, text=True, env=self.env, check=False
        )
        if check and done.returncode != 0:
            raise StoreError(f"docker {args[0]} failed: {last_line(done.stderr)}")
        return done

    def ids(self) -> dict[str, str]:
        done = self.docker(
            "images", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}", check=False
        )
        if done.returncode != 0:
            raise UserError(f"docker images failed: {last_line(done.stderr)}")
        ids = {}
        for line in done.stdout.splitlines():
            reference, _, image_id = line.partition(" ")
            if image_id and not reference.endswith(":<none>"):
                ids[reference] = f"sha256:{image_id.removeprefix('sha256:')}"
        return ids

    def image_id(self, reference: str) -> str | None:
        done = self.docker("image", "inspect", "--format", "{{.Id}}", reference, check=False)
        found = done.stdout.strip().removeprefix("sha256:")
        return found or None if done.returncode == 0 else None

    def inspect(self, reference: str) -> dict[str, Any] | None:
        done = self.docker("image", "inspect", reference, check=False)
        try:
            (found,) = json.loads(done.stdout) if done.returncode == 0 else [None]
        except ValueError:
            return None
        return found if isinstance(found, dict) and found.get("Id") else None

    def manifest_types(self, ids: Sequence[str]) -> dict[str, str]:
        # Docker keeps no manifest of a loaded image: what it writes is a docker-archive.
        return {f"sha256:{i.removeprefix('sha256:')}": DOCKER_MANIFEST for i in ids}

    def tag(self, image: str, *names: str) -> None:
        for name in names:
            self.docker("tag", image, name)

    def untag(self, image: str, *names: str) -> None:
        # Docker drops an image with its last name: that name stays (no error).
        found = self.inspect(image) or {}
        tags = set(found.get("RepoTags") or [])
        for name in names:
            if name in tags and len(tags) > 1:
                self.docker("rmi", "--no-prune", name, check=False)
                tags.discard(name)

    def remove(self, *references: str) -> None:
        if references:
            self.docker("rmi", *references, check=False)

    def load(self, archive: Path) -> None:
        with _as_docker_archive(archive) as readable:
            self.docker("load", "--quiet", "--input", str(readable))

    def load_from_archive(self, archive: Path, number: int) -> str:
        try:
            with tarfile.open(archive) as tar:
                member = tar.extractfile("manifest.json")
                entries = json.loads(member.read()) if member is not None else []
            config = str(entries[number]["Config"])
        except (OSError, KeyError, IndexError, TypeError, ValueError, tarfile.TarError) as error:
            raise StoreError(f"{archive} names no image {number}: {error}") from None
        image_id = config.rsplit("/", 1)[-1].removesuffix(".json")
        if self.image_id(image_id) is None:
            if archive.resolve() in self._loaded:
                raise StoreError(f"loading {archive} gave no image {image_id[:12]}")
            self.load(archive)
            self._loaded.add(archive.resolve())
        if self.image_id(image_id) is None:
            raise StoreError(f"loading {archive} gave no image {image_id[:12]}")
        return image_id

    def load_from_layout(self, layout: Path, name: str) -> str:
        with tempfile.TemporaryDirectory(prefix="evalrepro-load-", dir=self.cache_dir) as tmp:
            archive = Path(tmp) / "image.tar"
            image_id = docker_archive_of_layout(layout, name, archive)
            self.load(archive)
        if self.image_id(image_id) is None:
            raise StoreError(f"loading {name} gave no image {image_id[:12]}")
        return image_id

    def pull(self, reference: str, *, tls_verify: bool = True) -> str:
        # Docker's daemon decides which registries it may reach without TLS.
        done = self.docker("pull", "--quiet", reference, check=False)
        if done.returncode != 0:
            raise StoreError(last_line(done.stderr).removeprefix("Error response from daemon: "))
        found = self.image_id(reference)
        if found is None:
            raise StoreError(f"docker pull {reference} named no image")
        return found

    def push(self, image: str, remote: str, *, tls_verify: bool = True) -> str:
        self.docker("tag", image, remote)
        done = self.docker("push", remote, check=False)
        if done.returncode != 0:
            raise StoreError(last_line(done.stderr) or "?")
        for word in done.stdout.split():
            if word.startswith("sha256:") and len(word) == 71:
                return word
        raise StoreError(f"docker push {remote} reported no digest")

    def export_layout(self, image_id: str, layout: Path, name: str) -> None:
        raise StoreError("docker writes no OCI layout")

    def save(self, references: Sequence[str], archive: Path) -> None:
        """``docker save``, re-packed as the docker-archive podman writes (what
        ``image_archive`` checks and either store loads): each config as ``<Id>.json``
        byte for byte, each layer once as ``<diff id>.tar``, checked against it."""
        saved = archive.with_name(f".{archive.name}.docker-save")
        try:
            self.docker("save", "--output", str(saved), *references)
            repack_docker_save(saved, archive)
        finally:
            saved.unlink(missing_ok=True)

    def run(
        self, image: str, argv: Sequence[str], *, volumes: Sequence[tuple[str, str]] = ()
    ) -> subprocess.CompletedProcess:
        return self.docker(*run_args(image, argv, volumes), check=False)


class _as_docker_archive:
    """The archive itself, or for an ``oci-archive`` a docker-archive re-packed from it."""

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Path:
        try:
            with tarfile.open(self.archive) as tar:
                names = set(tar.getnames())
        except (OSError, tarfile.TarError) as error:
            raise StoreError(f"cannot read {self.archive}: {error}") from None
        if "oci-layout" not in names and "./oci-layout" not in names:
            return self.archive
        self._tmp = tempfile.TemporaryDirectory(prefix="evalrepro-oci-")
        layout = Path(self._tmp.name) / "layout"
        with tarfile.open(self.archive) as tar:
            tar.extractall(layout, filter="data")
        index = json.loads((layout / "index.json").read_text())
        manifests = index.get("manifests") or []
        if len(manifests) != 1:
            raise StoreError(f"{self.archive} holds {len(manifests)} images, not one")
        name = (manifests[0].get("annotations") or {}).get("org.opencontainers.image.ref.name")
        target = Path(self._tmp.name) / "image.tar"
        docker_archive_of_layout(layout, name, target)
        return target

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def repack_docker_save(saved: Path, target: Path) -> list[str]:
    """Write what ``docker save`` wrote to ``saved`` (docker 20.10: legacy folders
    ``<v1 id>/layer.tar``, a shared layer a link to its first copy; docker 25: an OCI
    layout's blobs) as a docker-archive of podman's shape: ``<Id>.json`` configs,
    ``<diff id>.tar`` layers, ``manifest.json``. Each layer's bytes must hash to the diff
    id its config names (docker re-creates a layer's tar from its store byte for byte);
    the Ids (hex) of the images, in the order saved."""
    ids: list[str] = []
    try:
        with tarfile.open(saved) as source, tarfile.open(target, "w") as tar:
            manifest = json.loads(_member_bytes(source, "manifest.json"))
            written: set[str] = set()
            entries = []
            for entry in manifest:
                config = _member_bytes(source, str(entry["Config"]))
                image_id = hashlib.sha256(config).hexdigest()
                diff_ids = [str(d) for d in json.loads(config)["rootfs"]["diff_ids"]]
                layers = [str(path) for path in entry["Layers"]]
                if len(layers) != len(diff_ids):
                    raise StoreError(
                        f"docker saved {len(layers)} layers of {image_id[:12]}, its config "
                        f"names {len(diff_ids)}"
                    )
                if f"{image_id}.json" not in written:
                    _add_member(tar, f"{image_id}.json", io.BytesIO(config), len(config), None)
                    written.add(f"{image_id}.json")
                names = []
                for path, diff_id in zip(layers, diff_ids, strict=True):
                    hexdigest = diff_id.removeprefix("sha256:")
                    name = f"{hexdigest}.tar"
                    if name not in written:
                        member = source.getmember(path.removeprefix("./"))
                        handle = source.extractfile(member)  # a link: its target's bytes
                        if handle is None:
                            raise StoreError(f"docker saved {path} as no file")
                        size = handle.seek(0, io.SEEK_END)
                        handle.seek(0)
                        _add_member(tar, name, handle, size, hexdigest)
                        written.add(name)
                    names.append(name)
                tags = [str(tag) for tag in entry.get("RepoTags") or []]
                entries.append({"Config": f"{image_id}.json", "RepoTags": tags, "Layers": names})
                ids.append(image_id)
            data = json.dumps(entries).encode()
            _add_member(tar, "manifest.json", io.BytesIO(data), len(data), None)
    except (OSError, KeyError, TypeError, ValueError, tarfile.TarError) as error:
        target.unlink(missing_ok=True)
        raise StoreError(
            f"docker save wrote no usable archive: {type(error).__name__}: {error}"
        ) from None
    except StoreError:
        target.unlink(missing_ok=True)
        raise
    return ids


def _member_bytes(tar: tarfile.TarFile, name: str) -> bytes:
    handle = tar.extractfile(tar.getmember(name.removeprefix("./")))
    if handle is None:
        raise StoreError(f"docker saved {name} as no file")
    return handle.read()


def _add_member(
    tar: tarfile.TarFile, name: str, handle: IO[bytes], size: int, sha256: str | None
) -> None:
    """A regular file ``name`` of ``size`` bytes; StoreError if ``sha256`` (hex) is given
    and its bytes do not match it."""
    hashing = _Hashing(handle)
    info = tarfile.TarInfo(name)
    info.size, info.mode = size, 0o644
    tar.addfile(info, hashing)
    if sha256 is not None and hashing.digest.hexdigest() != sha256:
        raise StoreError(f"docker saved layer {sha256[:12]} with other bytes than its diff id")


class _Hashing:
    """A reader that hashes what is read through it."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data


def docker_archive_of_layout(layout: Path, name: str | None, target: Path) -> str:
    """Write the image ``name`` of the OCI layout folder as a docker-archive (its config
    blob byte for byte, its layers as they are: docker decompresses them), named
    ``name`` if it is a tag; its Id (hex)."""
    index = json.loads((layout / "index.json").read_text())
    descriptors = [
        d
        for d in index.get("manifests") or []
        if name is None
        or (d.get("annotations") or {}).get("org.opencontainers.image.ref.name") == name
    ]
    if len(descriptors) != 1:
        raise StoreError(f"the layout holds {len(descriptors)} images named {name}")

    def blob(digest: str) -> Path:
        algorithm, _, hexdigest = str(digest).partition(":")
        if algorithm != "sha256" or len(hexdigest) != 64 or not hexdigest.isalnum():
            raise StoreError(f"the layout names a blob {digest!r}")
        return layout / "blobs" / "sha256" / hexdigest

    manifest = json.loads(blob(descriptors[0]["digest"]).read_bytes())
    config = manifest["config"]["digest"].removeprefix("sha256:")
    layers = [layer["digest"].removeprefix("sha256:") for layer in manifest["layers"]]
    tags = [name] if name and ":" in name and "@" not in name else []
    entry = [{"Config": f"{config}.json", "RepoTags": tags, "Layers": [f"{h}.tar" for h in layers]}]
    with tarfile.open(target, "w") as tar:
        tar.add(blob(f"sha256:{config}"), arcname=f"{config}.json")
        for hexdigest in dict.fromkeys(layers):
            tar.add(blob(f"sha256:{hexdigest}"), arcname=f"{hexdigest}.tar")
        data = json.dumps(entry).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return config


class DockerRuntime(PodmanRuntime):
    kind: ClassVar[str] = "docker"
    tool: ClassVar[str] = "docker"

    def __init__(self, config: DockerEnvironment, cache_dir: Path) -> None:
        self.config = config
        self.cache_dir = cache_dir
        self.files = backend_files()
        # The daemon is root's: the cgroup limits apply, whoever runs evalrepro.
        self.rootless = False
        self.env = dict(os.environ)
        self._running: set[str] = set()
        self.images = DockerStore(self.env, cache_dir)
        podman_env = {**os.environ, "CONTAINERS_CONF": str(self.files / "containers.conf")}
        #: Where the builders build: podman's store (root's, as the daemon's is).
        self._builds = PodmanStore(podman_env, cache_dir, rootless=os.geteuid() != 0)
        #: One bringing-over per image at a time (attempts run in threads).
        self._bringing = threading.Lock()
        #: Images docker's store was found to hold (or was given) by this runtime: one
        #: listing of the store answers for all of them, not a ``docker image inspect``
        #: before every attempt (under the lock). One removed meanwhile fails its ``docker
        #: run`` (the Id names no image), which forgets it: the retry brings it again.
        self._present: set[str] = set()
        self._listed = False

    def check(self) -> None:
        if shutil.which("docker") is None:
            raise UserError("docker is not installed; run scripts/setup as root (it installs it)")
        done = self.cli(
            "info", "--format", "{{.ServerVersion}} {{.Driver}} {{.DockerRootDir}}", check=False
        )
        fields = done.stdout.split()
        if done.returncode != 0 or len(fields) != 3:
            said = last_line(done.stderr) or "no answer"
            raise UserError(
                f"docker's daemon is not reachable ({said}); as root, scripts/setup starts "
                "it (dockerd --iptables=false --bridge=none)"
            )
        self.version, self.storage_driver, self.graph_root = fields
        if shutil.which("podman") is None:
            raise UserError("the docker runtime builds its images with podman; run scripts/setup")

    def describe(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "mode": "root",
            "docker": getattr(self, "version", "?"),
            "storage_driver": getattr(self, "storage_driver", "?"),
            "runtime": "runc",
        }

    def build_store(self) -> ImageStore:
        return self._builds

    def backstop(self, seconds: int) -> list[str]:
        return []  # no conmon: see the module docstring

    def by_hand(self, command: list[str]) -> str:
        return f"docker {shlex.join(command)}"

    def _limit_flags(self) -> tuple[list[str], dict[str, str]]:
        flags, enforced = super()._limit_flags()
        flags = [
            *flags,
            "--cap-drop=ALL",
            *(f"--cap-add={cap}" for cap in CAPABILITIES),
            *([f"--security-opt=seccomp={SECCOMP_PROFILE}"] if SECCOMP_PROFILE.is_file() else []),
        ]
        enforced["nproc"] = f"ulimit {self.config.limits.nproc} (per host user)"
        enforced["time"] += (
            "; no runtime backstop (docker has no --timeout): a killed evalrepro's container "
            "runs on until the next session removes it"
        )
        return flags, enforced

    def _remove(self, name: str) -> None:
        self.cli("rm", "--force", name, check=False)

    def remove_tree(self, path: Path) -> None:
        self._builds.remove_tree(path)

    # --- images: built in podman's store, brought into docker's -------------------------

    def bring(self, image_id: str) -> None:
        """Make docker's store hold the image ``image_id`` (from podman's, by a
        docker-archive: the same config bytes, the same Id); StoreError if it cannot."""
        wanted = image_id.removeprefix("sha256:")
        with self._bringing:
            if wanted in self._present:
                return
            if not self._listed:
                self._listed = True
                with contextlib.suppress(UserError):  # then asked about one by one
                    self._present.update(
                        i.removeprefix("sha256:") for i in self.images.ids().values()
                    )
                if wanted in self._present:
                    return
            if self.images.image_id(wanted) == wanted:
                self._present.add(wanted)
                return
            if self._builds.image_id(wanted) is None:
                raise StoreError(f"neither docker's nor podman's store holds {image_id}")
            with tempfile.TemporaryDirectory(prefix="evalrepro-bring-") as tmp:
                archive = Path(tmp) / "image.tar"
                self._builds.save([wanted], archive)
                self.images.load(archive)
            found = self.images.image_id(wanted)
            if found != wanted:
                raise StoreError(f"docker loaded {image_id} as {found or 'nothing'}")
            # Named by its Id, as an archive's image is (a nameless one is pruned with
            # dangling images, and listings leave it out).
            self.images.tag(wanted, f"localhost/evalrepro-loaded:{wanted}")
            self._present.add(wanted)

    def missing_images(self, images: Sequence[LockedImage]) -> list[LockedImage]:
        """What docker's store lacks once the images podman's store holds are brought."""
        left = []
        for image in super().missing_images(images):
            try:
                self.bring(image.image_digest)
            except StoreError:
                left.append(image)
        return left

    def run(self, spec: AttemptSpec) -> AttemptOutput:
        assert spec.image is not None
        try:
            self.bring(spec.image.digest)
        except StoreError as error:
            facts = RuntimeFacts(error=f"cannot bring the image into docker's store: {error}")
            return AttemptOutput(report=SupervisorReport(runtime=facts))
        output = super().run(spec)
        if output.report is None or output.report.runtime.error is not None:
            # Docker could not run it (the image may be gone): asked about again next time.
            self._present.discard(spec.image.digest.removeprefix("sha256:"))
        return output

    def sandbox(self, request: SandboxRequest) -> Sandbox:
        self._bring_for(request)
        return super().sandbox(request)

    def image_tree(self, request: SandboxRequest, path: str, *, limit: int) -> bytes:
        self._bring_for(request)
        return super().image_tree(request, path, limit=limit)

    def _bring_for(self, request: SandboxRequest) -> None:
        try:
            self.bring(request.image_digest)
        except StoreError as error:
            raise SandboxError(f"sandbox {request.name}: {error}") from None
