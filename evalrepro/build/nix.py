"""The Nix builder: images as Nix derivations of inputs pinned by hash, loaded into podman.

Layers, as the Containerfile builder's (the same files where a trial looks), each a
deterministic tar written in Nix's sandbox by ``backends/nix/layers.py``:

* ``base``: every .deb of the Debian base, pinned (package, version, sha256) by
  :func:`evalrepro.build.debian.resolve` once, at lock time, and unpacked without running
  maintainer scripts;
* ``env``: /opt/venv with the wheels of a spec's requirements, pinned by
  :func:`evalrepro.build.wheels.resolve_wheels`;
* ``history``: a repo's history (a bare repo), as a tar evalrepro makes and pins;
* ``instance``: the tree at the base commit (a tar, pinned), owned by the test user;
  then the spec's install command, run as root of a user namespace in a chroot of the
  image, inside the sandbox (so without network: ``pip install --no-build-isolation
  --no-index``, not a download); what it changed is the rest of the layer.

The records carry every pin (``PinnedInput``), so a lockfile holds them and a rebuild
from it builds exactly those: evalrepro fetches each file with the ordinary clients (apt's
downloader, pip), checks its hash and adds it to the Nix store by hash
(``nix-store --add-fixed``), where the fixed-output paths of ``backends/nix/lib.nix``
find it without a network. ``flake.nix`` builds the same derivations from a lockfile.

The image (an image config and its layers as a docker-archive, byte for byte a function
of the pins) enters podman with ``podman load``; the instance record's digest is its
image Id, the same for root and rootless and on every machine. The records below it hold
their layer's diff id (the sha256 of its tar, as the image config lists it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import ClassVar

from evalrepro import PACKAGE_DIR, atomic
from evalrepro.build import debian, nixstore, wheels
from evalrepro.build.base import Builder
from evalrepro.build.images import ImageChain, inputs_digest, layer_key
from evalrepro.build.nixstore import NixError
from evalrepro.config.builders import NixBuilderConfig
from evalrepro.config.environment import PodmanEnvironment
from evalrepro.config.spec import PYTHON_SUITES, base_of
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.records.image import BuildFailure, ImageRecord, PinnedInput
from evalrepro.records.testspec import TestSpec
from evalrepro.runtimes.store import StoreError
from evalrepro.sources.checkout import LocalCheckout
from evalrepro.sources.git import RepoError

#: The Debian binary every derivation starts from (busybox-static's): a shell, dpkg-deb.
BUSYBOX = Path("/bin/busybox")
#: Why a spec with Debian packages of its own gets no image from this builder.
DEBS_REFUSED = (
    "the Nix builder does not install a spec's own Debian packages (debs); build it with "
    "environment.builder=containerfile"
)
#: Nix allows these characters in a store path name.
_UNSAFE = re.compile(r"[^A-Za-z0-9+._?=-]")
#: Files of the recipe: a change to either is a change to every layer.
RECIPE_FILES = ("lib.nix", "layers.py", "build.nix")


def recipe_dir() -> Path:
    """``backends/nix/`` of a checkout, or the copy a wheel carries."""
    for candidate in (
        PACKAGE_DIR / "backend_files" / "nix",
        PACKAGE_DIR.parent / "backends" / "nix",
    ):
        if (candidate / "lib.nix").is_file():
            return candidate
    raise UserError(f"evalrepro's Nix files are missing (looked near {PACKAGE_DIR})")


def setting(name: str, value: object) -> PinnedInput:
    """A build setting as an input: its value is its version, its digest canonical JSON."""
    shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return PinnedInput(kind="setting", name=name, version=shown, digest=sha256_json(value))


def _settings(inputs: list[PinnedInput]) -> list[PinnedInput]:
    return [i for i in inputs if i.kind == "setting"]


def _safe(text: str) -> str:
    """As lib.nix's ``safe``: a repo or wheel name as part of a store path name."""
    return re.sub(r"[/:@ !]", "-", text)


def tar_store_name(prefix: str, pin: PinnedInput) -> str:
    """lib.nix's name of a tree or history tar."""
    return f"{prefix}-{_safe(pin.name)}" + (f"-{pin.version}" if pin.version else "") + ".tar"


def wheel_store_name(pin: PinnedInput) -> str:
    """lib.nix's name of a wheel: the file name carries no meaning to the installer."""
    return f"{_safe(pin.name)}-{_safe(pin.version)}.whl"


def deb_store_name(pin: PinnedInput) -> str:
    """lib.nix's name of a .deb: ``DebPin.store_name``, from the pin's URL."""
    match = re.search(r"_([a-z0-9-]+)\.deb$", pin.source)
    arch = match.group(1) if match else "amd64"
    version = pin.version.replace(":", "=3a").replace("~", "=7e")
    return f"{pin.name}_{version}_{arch}.deb"


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def _short(key: str) -> str:
    return _hex(key)[:24]


class InputError(Exception):
    """An input of a layer cannot be had; the message names it."""


@dataclass
class Layer:
    """A layer before it is built: its record without a digest, and its files to add."""

    layer: str
    inputs: list[PinnedInput]
    parent: Layer | None
    #: store name -> a local file with those bytes (added to the store if missing)
    files: dict[str, Path] = field(default_factory=dict)
    failure: str | None = None

    @property
    def key(self) -> str:
        return layer_key(NixBuilder.kind, self.layer, self.inputs, self.parent_key)

    @property
    def parent_key(self) -> str | None:
        return self.parent.key if self.parent else None

    @property
    def chain(self) -> list[Layer]:
        return [*(self.parent.chain if self.parent else []), self]

    @property
    def tag(self) -> str:
        # Only an instance's image is loaded into podman; a layer below is named by its
        # Nix output (its tar), which the image holds.
        if self.layer == "instance":
            return f"localhost/evalrepro-nix:{_short(self.key)}"
        return f"nix:evalrepro-{self.layer}-{_short(self.key)}.tar"

    def spec(self) -> dict:
        """The record as lib.nix reads it."""
        return {
            "layer": self.layer,
            "key": self.key,
            "parent_key": self.parent_key,
            "tag": self.tag,
            "inputs": [i.model_dump(mode="json") for i in self.inputs],
        }


class NixBuilder(Builder):
    config: PodmanEnvironment
    kind: ClassVar[str] = "nix"

    def open(self) -> None:
        self.nix: NixBuilderConfig = self.config.builder  # type: ignore[assignment]
        self.work = self.cache_dir / "nix"
        self.recipe = recipe_dir()

    def check(self) -> None:
        nixstore.check()

    # --- prepare --------------------------------------------------------------------------

    def prepare(
        self,
        specs: list[TestSpec],
        checkouts: dict[str, LocalCheckout],
        locked: list[ImageRecord] | None = None,
    ) -> dict[str, ImageChain | BuildFailure]:
        self._locked = list(locked or [])
        bases: dict[str, Layer] = {}
        envs: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Layer] = {}
        layers: dict[str, Layer] = {}  # instance id -> its instance layer
        for spec in specs:
            suite, debs = base_of(spec, self.config.base.suite)
            checkout = checkouts[spec.instance_id]
            if debs:
                # The base's .debs are unpacked here without their maintainer scripts, which
                # a toolchain needs (alternatives, generated files): not the same package.
                refused = f"instance {spec.instance_id}: {DEBS_REFUSED} ({' '.join(debs)})"
                asked = [setting("debs", list(debs))]
                layers[spec.instance_id] = Layer("base", asked, None, failure=refused)
                continue
            if suite not in bases:
                bases[suite] = self._guard("base", None, partial(self._base, suite))
            # One env per (base, requirements): resolving wheels asks the index each time.
            wanted = (suite, tuple(spec.packages), tuple(spec.npm))
            if wanted not in envs:
                envs[wanted] = self._guard("env", bases[suite], partial(self._env, spec, suite))
            env = envs[wanted]
            history = self._guard("history", env, partial(self._history, spec, checkout))
            layers[spec.instance_id] = self._guard(
                "instance", history, partial(self._instance, spec, checkout)
            )
        records = self._build(list(layers.values()))
        return {instance_id: records[id(layer)] for instance_id, layer in layers.items()}

    def _guard(self, layer: str, parent: Layer | None, make: Callable[..., Layer]) -> Layer:
        """The layer ``make(parent)`` gives, or one that records why it could not be made."""
        if parent is not None and parent.failure is not None:
            return Layer(layer, [], parent, failure=parent.failure)
        try:
            return make() if parent is None else make(parent)
        except (InputError, UserError, RepoError, debian.MirrorError, NixError) as error:
            return Layer(layer, [], parent, failure=str(error))

    def _recipe(self) -> PinnedInput:
        data = b"".join((self.recipe / name).read_bytes() for name in RECIPE_FILES)
        return PinnedInput(kind="recipe", name="backends/nix", digest=sha256_bytes(data))

    def _locked_like(self, layer: str, settings: list[PinnedInput]) -> ImageRecord | None:
        """The lockfile's record of this layer: the one with the same settings. None: a
        layer the lockfile does not have (its config changed since), resolved afresh."""
        for record in self._locked:
            if record.builder == self.kind and record.layer == layer:
                if _settings(record.inputs) == settings:
                    return record
        return None

    # --- base: the .debs

    def _base(self, suite: str) -> Layer:
        base = self.config.base
        settings = [
            setting("suite", suite),
            setting("mirror", base.mirror),
            setting("variant", "minbase"),
            setting("packages", list(base.packages)),
            setting("source_date_epoch", base.source_date_epoch),
        ]
        found = self._locked_like("base", settings)
        if found is not None:
            pins = [i for i in found.inputs if i.kind in ("deb", "tool")]
            files = self._locked_debs([p for p in pins if p.kind == "deb"])
            busybox, busybox_files = self._busybox(
                next((p for p in pins if p.kind == "tool"), None)
            )
            debs = [p for p in pins if p.kind == "deb"]
        else:
            resolved = debian.resolve(
                suite, base.mirror, list(base.packages), cache_dir=self.cache_dir
            )
            debs = [
                PinnedInput(
                    kind="deb",
                    name=pin.package,
                    version=pin.version,
                    digest=pin.sha256,
                    source=pin.url(self.nix.archive or base.mirror),
                )
                for pin in resolved
            ]
            files = self._resolved_debs(resolved, debs)
            busybox, busybox_files = self._busybox(None)
        return Layer(
            "base",
            [self._recipe(), *settings, busybox, *debs],
            None,
            files={**files, **busybox_files},
        )

    def _missing(self, names: dict[str, str], recursive: bool = False) -> set[str]:
        """Of ``store name -> sha256 hex``, the names whose fixed path the store lacks."""
        paths = {nixstore.fixed_path(n, h, recursive=recursive): n for n, h in names.items()}
        return {paths[p] for p in nixstore.missing(list(paths))}

    def _resolved_debs(
        self, resolved: list[debian.DebPin], debs: list[PinnedInput]
    ) -> dict[str, Path]:
        names = {deb_store_name(d): _hex(d.digest) for d in debs}
        for pin, deb in zip(resolved, debs, strict=True):
            if pin.store_name != deb_store_name(deb):
                raise InputError(f"deb {pin.package} {pin.version}: no store name for it")
        wanted = self._missing(names)
        pins = [pin for pin in resolved if pin.store_name in wanted]
        if not pins:
            return {}
        fetched = debian.fetch(
            pins,
            self.work / "debs",
            mirror=self.config.base.mirror,
            archive=self.config.base.archive or self.nix.archive,
            cache_dir=self.cache_dir,
        )
        return {path.name: path for path in fetched.values()}

    def _locked_debs(self, debs: list[PinnedInput]) -> dict[str, Path]:
        """The lockfile's .debs that the store lacks, downloaded and checked by sha256."""
        names = {deb_store_name(d): _hex(d.digest) for d in debs}
        wanted = self._missing(names)
        files: dict[str, Path] = {}
        folder = self.work / "debs"
        folder.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            name = deb_store_name(deb)
            if name not in wanted:
                continue
            target = folder / name
            if not (target.is_file() and _sha256_file(target) == _hex(deb.digest)):
                self._download_deb(deb, target)
            files[name] = target
        return files

    def _download_deb(self, deb: PinnedInput, target: Path) -> None:
        """From the mirror, else from the pin's URL (an archive), checked by apt."""
        pool = deb.source.find("/pool/")
        urls = [deb.source]
        if pool >= 0:
            archives = [self.config.base.mirror, self.config.base.archive]
            urls[:0] = [a.rstrip("/") + deb.source[pool:] for a in archives if a]
        reasons = []
        for url in dict.fromkeys(urls):
            with tempfile.TemporaryDirectory(dir=target.parent, prefix=".partial-") as tmp:
                partial = Path(tmp) / target.name
                done = subprocess.run(
                    ["/usr/lib/apt/apt-helper", "download-file", url, str(partial),
                     f"SHA256:{_hex(deb.digest)}"],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                if done.returncode == 0 and _sha256_file(partial) == _hex(deb.digest):
                    os.replace(partial, target)
                    return
                output = done.stdout + done.stderr
                if "Hash Sum mismatch" in output or done.returncode == 0:
                    raise UserError(
                        f"{deb.label}: sha256 mismatch: {url} does not have the pinned {deb.digest}"
                    )
                reasons.append(f"{url} ({nixstore._last_line(output)})")
        raise InputError(
            f"{deb.label} is not in the Nix store and cannot be downloaded: {' nor '.join(reasons)}"
        )

    def _busybox(self, pinned: PinnedInput | None) -> tuple[PinnedInput, dict[str, Path]]:
        """The static busybox every derivation starts from, as a directory in the store."""
        folder = self.work / "busybox" / "evalrepro-busybox"
        if pinned is not None and not self._missing(
            {folder.name: _hex(pinned.digest)}, recursive=True
        ):
            return pinned, {}
        if not BUSYBOX.is_file():
            raise UserError(f"{BUSYBOX} is missing: run scripts/setup (it installs busybox-static)")
        folder.mkdir(parents=True, exist_ok=True)
        binary = folder / "busybox"
        if not binary.is_file() or binary.read_bytes() != BUSYBOX.read_bytes():
            # Whole or not at all: another evalrepro may be hashing this folder right now.
            partial = folder.parent / f".busybox.{os.getpid()}"
            shutil.copyfile(BUSYBOX, partial)
            partial.chmod(0o755)
            os.replace(partial, binary)
        digest = "sha256:" + nixstore.nar_sha256(folder)
        version = subprocess.run(
            ["dpkg-query", "--show", "--showformat=${Version}", "busybox-static"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        tool = PinnedInput(kind="tool", name="busybox", version=version, digest=digest)
        if pinned is not None and pinned.digest != digest:
            raise UserError(
                f"{pinned.label}: the lockfile pins {pinned.digest}, this machine's {BUSYBOX} "
                f"(busybox-static {version or '?'}) is {digest}"
            )
        wanted = self._missing({folder.name: _hex(digest)}, recursive=True)
        return tool, ({"busybox": folder} if wanted else {})

    # --- env: the wheels

    def _env(self, spec: TestSpec, suite: str, base: Layer) -> Layer:
        if spec.npm:
            raise UserError(
                f"the nix builder cannot install npm packages "
                f"({' '.join(filter(None, (spec.repo, spec.version)))} asks for "
                f"{', '.join(spec.npm)}): build it with environment.builder=containerfile"
            )
        python = next((v for v, s in PYTHON_SUITES.items() if s == suite), None)
        if python is None:
            raise UserError(f"environment.base.suite: no Python known for Debian suite {suite!r}")
        settings = [setting("python", python), setting("requirements", list(spec.packages))]
        found = self._locked_like("env", settings)
        if found is not None:
            pins = [
                wheels.WheelPin(
                    name=i.name,
                    version=i.version,
                    filename=i.source.rsplit("/", 1)[-1].split("#")[0],
                    sha256=_hex(i.digest),
                    url=i.source,
                )
                for i in found.inputs
                if i.kind == "wheel"
            ]
        else:
            pins = wheels.resolve_wheels(
                spec.packages,
                python_version=python,
                cache_dir=self.cache_dir,
                index_url=self.nix.index_url,
            )
        inputs = [
            PinnedInput(kind="wheel", name=p.name, version=p.version, digest=p.digest, source=p.url)
            for p in pins
        ]
        names = {wheel_store_name(i): _hex(i.digest) for i in inputs}
        wanted = self._missing(names)
        files: dict[str, Path] = {}
        missing_pins = [
            p for p, i in zip(pins, inputs, strict=True) if wheel_store_name(i) in wanted
        ]
        if missing_pins:
            fetched = wheels.fetch_wheels(missing_pins, self.cache_dir)
            folder = self.work / "wheels"
            folder.mkdir(parents=True, exist_ok=True)
            for pin, path in zip(missing_pins, fetched, strict=True):
                name = wheel_store_name(
                    PinnedInput(kind="wheel", name=pin.name, version=pin.version, digest=pin.digest)
                )
                _link(path, folder / name)
                files[name] = folder / name
        return Layer("env", [self._recipe(), *settings, *inputs], base, files=files)

    # --- history and instance: tars evalrepro makes from the checkout

    def _history(self, spec: TestSpec, checkout: LocalCheckout, env: Layer) -> Layer:
        name = f"history-{_safe(spec.repo)}.tar"
        tar = self.work / "trees" / f"{_hex(checkout.source_digest)}.history.tar"
        if not tar.is_file():
            with tempfile.TemporaryDirectory(dir=self._scratch()) as tmp:
                checkout.export_history(Path(tmp) / "repo.git")
                _write_tar(Path(tmp) / "repo.git", tar)
        pin = PinnedInput(kind="history", name=spec.repo, digest=_sha256_prefixed(tar))
        self._check_locked_file(pin)
        return Layer("history", [self._recipe(), pin], env, files={name: tar})

    def _instance(self, spec: TestSpec, checkout: LocalCheckout, history: Layer) -> Layer:
        if not checkout.has_commit(spec.base_commit):
            raise RepoError(f"base commit {spec.base_commit} is not in {spec.repo}'s history")
        tar = self.work / "trees" / f"{spec.base_commit}.tree.tar"
        if not tar.is_file():
            with tempfile.TemporaryDirectory(dir=self._scratch()) as tmp:
                checkout.export_tree(spec.base_commit, Path(tmp) / "tree")
                _write_tar(Path(tmp) / "tree", tar)
        pin = PinnedInput(
            kind="tree", name=spec.repo, version=spec.base_commit, digest=_sha256_prefixed(tar)
        )
        self._check_locked_file(pin)
        return Layer(
            "instance",
            [self._recipe(), pin, setting("install", spec.install or "")],
            history,
            files={tar_store_name("tree", pin): tar},
        )

    def _check_locked_file(self, pin: PinnedInput) -> None:
        for record in self._locked:
            for other in record.inputs:
                same = (other.kind, other.name, other.version) == (pin.kind, pin.name, pin.version)
                if same and other.digest != pin.digest:
                    raise InputError(
                        f"{pin.label}: sha256 mismatch: the checkout gives {pin.digest}, "
                        f"the lockfile pins {other.digest}"
                    )

    def _scratch(self) -> Path:
        path = self.work / "scratch"
        path.mkdir(parents=True, exist_ok=True)
        (self.work / "trees").mkdir(parents=True, exist_ok=True)
        return path

    # --- build and load -------------------------------------------------------------------

    def _build(self, instances: list[Layer]) -> dict[int, ImageChain | BuildFailure]:
        """Each instance layer's chain of records, its image built and loaded if missing."""
        results: dict[int, ImageChain | BuildFailure] = {}
        wanted: dict[str, Layer] = {}  # key -> instance layer, unique
        for layer in instances:
            failed = next((each for each in layer.chain if each.failure is not None), None)
            if failed is not None:
                results[id(layer)] = self._failure(failed, failed.failure or "")
            else:
                wanted.setdefault(layer.key, layer)
        # One listing of podman's store for every image (not one inspect each).
        store = self.store.ids()
        loaded = {
            key: (store[layer.tag].removeprefix("sha256:") if layer.tag in store else None)
            for key, layer in wanted.items()
        }
        to_build = [layer for key, layer in wanted.items() if loaded[key] is None]
        built: dict[tuple[str, str], float] = {}
        errors: dict[str, str] = {}
        if to_build:
            built, errors = self._nix_build(to_build)
        records: dict[str, ImageChain | BuildFailure] = {}
        for key, layer in wanted.items():
            try:
                if key in errors:
                    raise InputError(errors[key])
                records[key] = self._records(layer, loaded[key], built)
            except (InputError, StoreError, NixError) as error:
                records[key] = self._failure(layer, str(error))
        for layer in instances:
            if id(layer) not in results:
                results[id(layer)] = records[layer.key]
        return results

    def _failure(self, layer: Layer, reason: str) -> BuildFailure:
        log = self.work / "logs" / f"{layer.layer}-{_hex(layer.key)}.log"
        return BuildFailure(
            builder=self.kind,
            layer=layer.layer,
            key=layer.key if layer.inputs else "",
            reason=reason,
            build_log=str(log) if log.is_file() else None,
        )

    def _nix_build(
        self, images: list[Layer]
    ) -> tuple[dict[tuple[str, str], float], dict[str, str]]:
        """Build the images (one nix-build) and load them. Which (layer, short key) Nix
        built, each with its share of the build's seconds; the errors by image key."""
        layers = {each.key: each for image in images for each in image.chain}
        files: dict[str, Path] = {}
        for each in layers.values():
            files.update(each.files)
        self._add(files)
        spec = {
            "records": [each.spec() for each in layers.values()],
            "build": [image.key for image in images],
        }
        digest = _hex(sha256_json(spec))
        spec_file = self.work / "specs" / f"{digest}.json"
        atomic.write_text(spec_file, json.dumps(spec, indent=1, sort_keys=True) + "\n")
        log = self.work / "logs" / f"build-{digest[:24]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        done = nixstore.run(
            [
                "nix-build",
                str(self.recipe / "build.nix"),
                "--argstr",
                "spec",
                str(spec_file),
                "--no-out-link",
                "--keep-going",
                *nixstore.options(),
            ],
            check=False,
        )
        atomic.write_text(log, done.stderr)
        seconds = round(time.monotonic() - started, 3)
        if done.returncode != 0:
            return {}, self._attribute(images, done.stderr, log)
        archives = done.stdout.split()
        errors: dict[str, str] = {}
        for image, archive in zip(images, archives, strict=True):
            try:
                self.store.load(Path(archive))
            except StoreError as error:
                errors[image.key] = f"{self.store.tool} load {archive} failed: {error}"
        # What Nix built (rather than found in the store), from its own log.
        names = set(
            re.findall(r"building '[^']*-evalrepro-([a-z]+)-([0-9a-f]{24})\.tar\.drv'", done.stderr)
        )
        share = round(seconds / max(len(names), 1), 3)
        return {name: share for name in names}, errors

    def _attribute(self, images: list[Layer], stderr: str, log: Path) -> dict[str, str]:
        """Which image each failed derivation belongs to, and why (one line each)."""
        failed = set(re.findall(r"evalrepro-([a-z]+)-([0-9a-f]{24})\.tar", " ".join(
            line for line in stderr.splitlines() if "failed" in line or "error" in line
        )))  # fmt: skip
        fixed = re.findall(
            r"hash mismatch in fixed-output derivation '[^']*-([^'/]+)\.drv'", stderr
        )
        reason = nixstore._last_line(stderr)
        # The builder's own last words (layers.py's message) come just before Nix's line.
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        for index, line in enumerate(lines):
            if index and re.match(r"error: builder for '.*' failed", line):
                reason = lines[index - 1][:500]
                break
        if fixed:
            reason = f"sha256 mismatch of {fixed[0]} (see {log})"
        errors = {}
        for image in images:
            hit = [each for each in image.chain if (each.layer, _short(each.key)) in failed]
            if hit or not failed:
                where = hit[0].layer if hit else "image"
                errors[image.key] = f"nix-build of the {where} layer failed: {reason} (log: {log})"
        if not errors:  # only images of others failed: these were built, build them again
            return {image.key: f"nix-build failed: {reason} (log: {log})" for image in images}
        return errors

    def _add(self, files: dict[str, Path]) -> None:
        """Put each file into the store under its store name (its bytes checked on the way)."""
        if not files:
            return
        staging = self.work / "add"
        staging.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=staging) as tmp:
            flat, recursive = [], []
            for name, path in sorted(files.items()):
                if path.is_dir():
                    recursive.append(path)
                    continue
                target = Path(tmp) / (name if name != "busybox" else path.name)
                _link(path, target)
                flat.append(target)
            nixstore.add_fixed(flat)
            nixstore.add_fixed(recursive, recursive=True)

    def _records(
        self, image: Layer, image_id: str | None, built: dict[tuple[str, str], float]
    ) -> ImageChain:
        image_id = image_id or self.store.image_id(image.tag)
        if image_id is None:
            raise InputError(f"{image.tag} is not in {self.store.tool}'s store after its build")
        diff_ids = self.store.layers(image.tag)
        chain = image.chain
        if len(diff_ids) != len(chain):
            raise InputError(f"{image.tag} has {len(diff_ids)} layers, its records {len(chain)}")
        records = []
        for each, diff_id in zip(chain, diff_ids, strict=True):
            last = each is image
            # An instance's record stands for its layer and its image (the archive).
            names = [(each.layer, _short(each.key))] + (
                [("image", _short(each.key))] if last else []
            )
            records.append(
                ImageRecord(
                    builder=self.kind,
                    layer=each.layer,
                    key=each.key,
                    inputs_digest=inputs_digest(each.inputs),
                    inputs=each.inputs,
                    tag=each.tag,
                    parent_key=each.parent_key,
                    image_digest=f"sha256:{image_id.removeprefix('sha256:')}" if last else diff_id,
                    built=any(name in built for name in names),
                    build_seconds=round(sum(built.get(name, 0.0) for name in names), 3),
                    package_manifest_digest=self._manifest(each) if each.layer == "base" else None,
                )
            )
        return ImageChain(layers=records)

    # --- the base's package list

    def _manifest_file(self, key: str) -> Path:
        return self.cache_dir / "images" / f"nix-{_hex(key)}.packages.txt"

    def _manifest(self, base: Layer) -> str:
        """The base's packages (name=version, as dpkg-query lists them), kept as a file."""
        lines = sorted(f"{i.name}={i.version}" for i in base.inputs if i.kind == "deb")
        manifest = self._manifest_file(base.key)
        text = "\n".join(lines) + "\n"
        if not manifest.is_file() or manifest.read_text() != text:
            atomic.write_text(manifest, text)
        return sha256_bytes(text.encode())

    def missing(self, records: list[ImageRecord]) -> list[ImageRecord]:
        # Only an image's top record is a podman image; the records below it are layers
        # inside its archive (tag "nix:<derivation>", digest the layer's diff id).
        return super().missing([r for r in records if not r.tag.startswith("nix:")])

    def package_manifest(self, base: ImageRecord) -> Path | None:
        manifest = self._manifest_file(base.key)
        return manifest if manifest.exists() else None


# --- files --------------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _sha256_prefixed(path: Path) -> str:
    return "sha256:" + _sha256_file(path)


def _link(source: Path, target: Path) -> None:
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _write_tar(root: Path, out: Path) -> None:
    """``root``'s files as a tar that is a function of their names, bytes and x bits alone:
    sorted, mtime 0, owner 0, modes 0755/0644, symlinks kept."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + f".{os.getpid()}.partial")
    paths = sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix().encode())
    with tarfile.open(partial, "w", format=tarfile.GNU_FORMAT) as tar:
        for path in paths:
            rel = path.relative_to(root).as_posix()
            info = tarfile.TarInfo(rel)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_symlink():
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, os.readlink(path), 0o777
                tar.addfile(info)
            elif path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif path.is_file():
                info.size = path.stat().st_size
                info.mode = 0o755 if path.stat().st_mode & 0o100 else 0o644
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                raise InputError(f"{path}: not a file, directory or symlink")
    os.replace(partial, out)
