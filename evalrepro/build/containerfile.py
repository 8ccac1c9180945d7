"""The Containerfile builder: four content-addressed image layers built by ``podman build``.

Layers (each key = sha256 over the canonical JSON of its builder, name, pinned inputs
and its parent's key; the tag carries the key, so an unchanged layer is found, not
rebuilt):

* ``base``: a Debian rootfs made by mmdebstrap (suite, packages, SOURCE_DATE_EPOCH from
  the environment config), imported ``FROM scratch``. Its inputs pin every .deb it
  installs (``evalrepro.build.debian``: resolved at lock time, or taken from the lockfile being
  run again); mmdebstrap installs from a local repository of exactly those files,
  fetched by hash from the mirror or the configured archive, never from the mirror;
* ``env``: a venv with a spec's packages. Its inputs pin every wheel
  (``evalrepro.build.wheels``: resolved for the base's Python and glibc); pip installs
  exactly those from a wheelhouse mounted into the build (``--no-index
  --require-hashes``), without network. A spec with npm packages gets
  ``Containerfile.env-npm`` instead: the venv only if it has wheels, then every pinned
  npm tarball (``evalrepro.build.npm``) unpacked into ``/node_modules`` by the base's
  python3 (``npm-install.py``), also from a mounted folder, without network;
* ``history``: a repo's whole git history as a bare repo, shared by its instances;
* ``instance``: the tree at the base commit, whose ``.git`` borrows the history's
  objects; then the spec's install command.

Independent layers build at once, up to ``executor.max_workers`` builds (the trials'
budget, before any trial runs): each instance's chain above the base is followed by a
worker of its own, and a layer that several chains share (an env, a repo's history) is
built once, by the first chain to need it, while the others wait for it.

Every build uses ``--timestamp 0`` and ``--pull=never``; the recorded digest is the image
Id (config digest), the one that is stable across stores. Only the instance layer's build
has network (its install command may download; it gets the host's CA bundle, mounted,
never baked in).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

from pydantic import ValidationError

from evalrepro import atomic
from evalrepro.build import debian, layertar, npm, wheels
from evalrepro.build.base import Builder
from evalrepro.build.images import ImageChain, inputs_digest, layer_key
from evalrepro.build.images import setting_input as _setting
from evalrepro.config.environment import PodmanEnvironment
from evalrepro.config.spec import base_of, npm_lockfile
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.records.image import BuildFailure, ImageRecord, PinnedInput
from evalrepro.records.supervision import TEST_USER
from evalrepro.records.testspec import TestSpec
from evalrepro.runtimes import tether
from evalrepro.runtimes.store import StoreError, backend_files
from evalrepro.runtimes.store import last_line as _last_line
from evalrepro.runtimes.tether import run_tethered
from evalrepro.sources.checkout import LocalCheckout
from evalrepro.sources.git import RepoError

#: dpkg path filters of the base rootfs: no manuals, docs (but copyrights), locales, info.
DPKG_FILTERS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
#: Run in the finished rootfs. Debian's postinst byte-compiles Python modules, and those
#: .pyc files differ between root and rootless builds: without them, the rootfs tar (and
#: so the base image Id) is the same in both modes. Python recompiles them on demand.
#: Then the unprivileged user the code under test runs as (fixed lines: reproducible).
_USER = TEST_USER
CUSTOMIZE_HOOKS = (
    'find "$1/usr" -name __pycache__ -type d -prune -exec rm -rf {} +',
    f"echo '{_USER['name']}:x:{_USER['uid']}:{_USER['gid']}:evalrepro tests:{_USER['home']}:"
    f'/bin/bash\' >> "$1/etc/passwd"',
    f"echo '{_USER['name']}:x:{_USER['gid']}:' >> \"$1/etc/group\"",
    f"echo '{_USER['name']}:*:19000:0:99999:7:::' >> \"$1/etc/shadow\"",
    f"echo '{_USER['name']}:!::' >> \"$1/etc/gshadow\"",
    f'mkdir -p "$1{_USER["home"]}" && chown {_USER["uid"]}:{_USER["gid"]} "$1{_USER["home"]}"',
)


#: Run before any package of a base with a spec's own packages is unpacked: folders that
#: the dpkg filters keep empty but some maintainer scripts need (OpenJDK's postinst
#: registers its manual pages with update-alternatives, which fails without man1).
SETUP_HOOKS = ('mkdir -p "$1/usr/share/man/man1"',)


class BuildError(Exception):
    def __init__(self, reason: str, log: Path | None = None) -> None:
        super().__init__(reason)
        self.log = log


Stage = Callable[[Path], dict[str, str]]


class ContainerfileBuilder(Builder):
    config: PodmanEnvironment
    kind: ClassVar[str] = "containerfile"

    def open(self) -> None:
        self._store: dict[str, str] = {}
        self._locked_ids: dict[str, str] = {}
        self.files = backend_files()
        #: Each layer of this run, by key: found or built once, whichever chain asks first.
        self._layers: dict[str, Future[ImageRecord | BuildFailure]] = {}
        self._layers_lock = threading.Lock()
        #: Wheels resolved this run, by (requirements, Python, glibc): pins or the error.
        self._resolved: dict[tuple, list[PinnedInput] | str] = {}
        #: One resolution at a time (pip and its cache are not shared between calls).
        self._resolving = threading.Lock()
        #: Set on an interrupt: no build starts after it.
        self._stopped = threading.Event()

    def check(self) -> None:
        self._clean_staging()

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
        locked = [record for record in locked or [] if record.builder == self.kind]
        # One listing of the store answers "is this layer there?" for every layer (one
        # inspect per layer costs 55-145 ms: minutes for SWE-bench's 2,300 layers).
        self._store = self.store.ids()
        # A locked layer whose Id the store holds under any name (a bundle's image, loaded
        # under a name of its own) is that layer, whatever the layer's tag names now.
        held = set(self._store.values())
        self._locked_ids = {
            record.key: record.image_digest for record in locked if record.image_digest in held
        }
        # A spec that names its Python gets the base of the Debian suite shipping it, with
        # its own Debian packages on top. The bases first, one at a time (each rootfs is
        # one mmdebstrap of its own).
        of = {spec.instance_id: base_of(spec, self.config.base.suite) for spec in specs}
        bases = {wanted: self._base(*wanted, locked) for wanted in dict.fromkeys(of.values())}

        def chain(spec: TestSpec) -> ImageChain | BuildFailure:
            base = bases[of[spec.instance_id]]
            return self._chain(spec, checkouts[spec.instance_id], base, locked)

        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            built = list(pool.map(chain, specs))
        except BaseException:
            # Ctrl-C (or a bug): no build starts after it, and the builds under way stop
            # now, as they would if evalrepro died, rather than each running to its end.
            self._stopped.set()
            tether.stop_all()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return {spec.instance_id: image for spec, image in zip(specs, built, strict=True)}

    def _chain(
        self,
        spec: TestSpec,
        checkout: LocalCheckout,
        base: ImageRecord | BuildFailure,
        locked: list[ImageRecord],
    ) -> ImageChain | BuildFailure:
        """The layers of one instance's image above its base, found or built in order."""
        epoch = self.config.base.source_date_epoch
        history = [PinnedInput(kind="history", name=spec.repo, digest=checkout.source_digest)]
        instance = [
            PinnedInput(
                kind="commit",
                name=spec.repo,
                version=spec.base_commit,
                digest=sha256_json(spec.base_commit),
            ),
            _setting("install", spec.install),
        ]
        steps: list[Callable[[ImageRecord], ImageRecord | BuildFailure]] = [
            # A spec without Python or npm packages has no env layer (no empty venv): its
            # history and instance sit on the base.
            *(
                [partial(self._env, spec.packages, locked, npm=_npm_request(spec, checkout))]
                if spec.packages or spec.npm
                else []
            ),
            partial(self._layer, "history", history, stage=partial(_stage_history, checkout)),
            # The install command may download: this build alone has network.
            partial(
                self._layer,
                "instance",
                instance,
                stage=partial(_stage_instance, checkout, spec, epoch),
                network=True,
            ),
        ]
        chain: list[ImageRecord] = []
        record = base
        for make in steps:
            if isinstance(record, BuildFailure):
                break
            chain.append(record)
            record = make(record)
        if isinstance(record, BuildFailure):
            return record.model_copy(update={"below": chain})
        return ImageChain(layers=[*chain, record])

    # --- pinned inputs ---------------------------------------------------------------

    def _base(
        self, suite: str, extra: tuple[str, ...], locked: list[ImageRecord]
    ) -> ImageRecord | BuildFailure:
        """The base layer of ``suite`` with the specs' ``extra`` Debian packages: its .debs
        pinned by the lockfile, else resolved. A package apt cannot install fails this
        base (so the trials of its specs alone), naming the package and apt's reason."""
        requests = self._base_requests(suite, extra)
        debs = _locked_inputs(locked, "base", requests, "deb")
        if debs is None:
            base = self.config.base
            try:
                pins = debian.resolve(
                    suite,
                    base.mirror,
                    [*base.packages, *extra],
                    cache_dir=self.cache_dir / "debian",
                )
            except debian.MirrorError as error:
                return self._failure("base", requests, None, f"cannot resolve packages: {error}")
            except UserError as error:
                return self._failure("base", requests, None, str(error))
            debs = [_deb_input(pin, base.mirror) for pin in pins]
        stage = partial(self._stage_base, suite, requests, debs)
        return self._layer("base", [*requests, *debs], None, stage=stage)

    def _env(
        self,
        packages: Sequence[str],
        locked: list[ImageRecord],
        base: ImageRecord,
        *,
        npm: NpmRequest | str | None = None,
    ) -> ImageRecord | BuildFailure:
        """The env layer of ``packages`` (and ``npm``'s: see :func:`_npm_request`) on
        ``base``: its wheels and npm tarballs pinned, else resolved."""
        python, glibc = _base_python(base)
        requests = [_setting("python", python), *_requirement_inputs(packages)]
        if isinstance(npm, str):
            return self._failure("env", requests, base, npm)
        requests += npm.inputs if npm else []
        locked_found = _locked_inputs(locked, "env", requests, ("wheel", "npm"))
        found = None if locked_found is None else [i for i in locked_found if i.kind == "wheel"]
        if found is None and not packages:
            found = []
        if found is None:
            asked = (tuple(packages), python, glibc)
            with self._resolving:
                if asked not in self._resolved:
                    try:
                        pins = wheels.resolve_wheels(
                            packages,
                            python_version=python,
                            cache_dir=self.cache_dir / "wheels",
                            platforms=wheels.platform_tags(_MACHINES[debian.ARCHITECTURE], glibc),
                        )
                        self._resolved[asked] = [_wheel_input(pin) for pin in pins]
                    except UserError as error:
                        self._resolved[asked] = str(error)
                resolved = self._resolved[asked]
            if isinstance(resolved, str):
                return self._failure("env", requests, base, resolved)
            found = resolved
        if not npm:
            stage = partial(self._stage_env, found)
            return self._layer("env", [*requests, *found], base, stage=stage)
        tarballs = None if locked_found is None else [i for i in locked_found if i.kind == "npm"]
        if tarballs is None:
            tarballs = self._resolve_npm(npm)
            if isinstance(tarballs, str):
                return self._failure("env", requests, base, tarballs)
        installer = self.files / NPM_INSTALLER
        recipe = PinnedInput(
            kind="recipe", name=NPM_INSTALLER, digest=sha256_bytes(installer.read_bytes())
        )
        return self._layer(
            "env",
            [recipe, *requests, *found, *tarballs],
            base,
            stage=partial(self._stage_env_npm, found, tarballs),
            recipe="Containerfile.env-npm",
        )

    def _resolve_npm(self, request: NpmRequest) -> list[PinnedInput] | str:
        """The npm tarballs ``request`` pins (once a run): their inputs, or the error."""
        asked = ("npm", tuple((i.kind, i.name, i.digest) for i in request.inputs))
        cache = self.cache_dir / "npm"
        with self._resolving:
            if asked not in self._resolved:
                try:
                    if request.lock is not None:
                        lockfile = request.inputs[0]
                        pins = npm.lockfile_pins(
                            request.lock,
                            f"{lockfile.source}'s {lockfile.name}",
                            cache_dir=cache,
                            architecture=debian.ARCHITECTURE,
                        )
                    else:
                        pins = npm.resolve_npm(
                            [i.name for i in request.inputs],
                            cache_dir=cache,
                            registry=self.config.build.npm_registry,
                            architecture=debian.ARCHITECTURE,
                        )
                    self._resolved[asked] = [_npm_input(pin) for pin in pins]
                except UserError as error:
                    self._resolved[asked] = str(error)
            return self._resolved[asked]

    def _failure(
        self, layer: str, inputs: list[PinnedInput], parent: ImageRecord | None, reason: str
    ) -> BuildFailure:
        key = layer_key(self.kind, layer, inputs, parent.key if parent else None)
        return BuildFailure(builder=self.kind, layer=layer, key=key, reason=reason)

    # --- layers ----------------------------------------------------------------------

    def _layer(
        self,
        layer: str,
        inputs: list[PinnedInput],
        parent: ImageRecord | None,
        *,
        stage: Stage,
        network: bool = False,
        recipe: str | None = None,
    ) -> ImageRecord | BuildFailure:
        """The layer with these inputs: found by its key's tag, else built, once a run;
        from ``Containerfile.<layer>`` or the ``recipe`` named."""
        containerfile = self.files / (recipe or f"Containerfile.{layer}")
        recipe_input = PinnedInput(
            kind="recipe",
            name=containerfile.name,
            digest=sha256_bytes(containerfile.read_bytes()),
        )
        # A layer on a parent is rewritten without overlayfs's attributes (layertar): the
        # rule is an input, so that a layer built before it is not taken for one after.
        rules = [
            PinnedInput(
                kind="recipe",
                name="normalisation",
                digest=sha256_json(layertar.NORMALISATION),
            )
        ]
        rules = rules if parent else []
        inputs = [recipe_input, *rules, *inputs]
        key = layer_key(self.kind, layer, inputs, parent.key if parent else None)
        with self._layers_lock:
            future = self._layers.get(key)
            first = future is None
            if future is None:
                future = self._layers[key] = Future()
        if first:
            # This chain builds it; a chain that asks meanwhile waits for this future (a
            # layer's parent is done before it is asked for: no chain waits on a waiter).
            try:
                future.set_result(
                    self._find_or_build(layer, key, inputs, containerfile, parent, stage, network)
                )
            except BaseException as error:
                future.set_exception(error)
                raise
        return future.result()

    def _find_or_build(
        self,
        layer: str,
        key: str,
        inputs: list[PinnedInput],
        containerfile: Path,
        parent: ImageRecord | None,
        stage: Stage,
        network: bool,
    ) -> ImageRecord | BuildFailure:
        tag = f"localhost/evalrepro-{layer}:{key.removeprefix('sha256:')[:24]}"
        build_log = self.cache_dir / "builds" / f"{layer}-{key.removeprefix('sha256:')}.log"
        built, build_seconds = False, 0.0
        try:
            listed = self._locked_ids.get(key) or self._store.get(tag)
            image_id = listed.removeprefix("sha256:") if listed else None
            if image_id is None:
                if self._stopped.is_set():
                    raise BuildError(f"building {tag}: interrupted")
                started = time.monotonic()
                self._build(containerfile, tag, parent, stage, build_log, network)
                built, build_seconds = True, round(time.monotonic() - started, 3)
                image_id = self.store.image_id(tag)
                if image_id is None:
                    raise BuildError(f"{tag} is missing right after its build", build_log)
            return ImageRecord(
                builder=self.kind,
                layer=layer,
                key=key,
                inputs_digest=inputs_digest(inputs),
                inputs=inputs,
                tag=tag,
                parent_key=parent.key if parent else None,
                image_digest=f"sha256:{image_id}",
                built=built,
                build_seconds=build_seconds,
                package_manifest_digest=self._record_package_manifest(tag, image_id, inputs)
                if layer == "base"
                else None,
            )
        except (BuildError, RepoError, StoreError, UserError, debian.MirrorError) as error:
            log = getattr(error, "log", None)
            return BuildFailure(
                builder=self.kind,
                layer=layer,
                key=key,
                reason=str(error),
                build_log=str(log) if log else None,
            )

    def _build(
        self,
        containerfile: Path,
        tag: str,
        parent: ImageRecord | None,
        stage: Stage,
        build_log: Path,
        network: bool,
    ) -> None:
        """Stage a build context, then ``podman build`` it; the tag appears only on success."""
        build_log.parent.mkdir(parents=True, exist_ok=True)
        with self._staging() as context:
            # Built under a name of this build's own; the layer's tag comes after the
            # rewrite, so that a tag only ever names a finished, normalised image.
            built = _building_tag(context)
            shutil.copy(containerfile, context / "Containerfile")
            build_args = stage(context)
            epoch = self.config.base.source_date_epoch
            returncode = self.store.build(
                context,
                context / "Containerfile",
                built,
                log=build_log,
                build_args={
                    "SOURCE_DATE_EPOCH": str(epoch),
                    # FROM the parent's Id: its tag may name another build of the same inputs.
                    **({"PARENT": parent.image_digest} if parent else {}),
                    **build_args,
                },
                # Only a build that downloads (an install command) gets the host's network
                # and CA bundle; the others install pinned files from their context.
                network=network,
                volumes=self._ca_mount() if network else [],
                # The history above the base is the normaliser's: see layertar.NORMALISATION.
                omit_history=parent is not None,
            )
            if returncode != 0:
                tail = _last_line(build_log.read_text(errors="replace"))
                raise BuildError(f"building {tag} failed: {tail}", build_log)
            scratch = context / "normalise"
            scratch.mkdir()
            try:
                if parent is None:  # the base: imported, no overlay copy-up, no parent
                    self.store.tag(built, tag)
                    self.store.remove(built)
                else:
                    self._normaliser.normalise(built, tag, scratch, parent.image_digest)
            except (layertar.LayerError, StoreError, OSError, ValueError, KeyError) as error:
                self.store.remove(built)
                raise BuildError(f"normalising {tag}: {error}", build_log) from error

    def _ca_mount(self) -> list[tuple[str, str]]:
        bundle = self.config.build.ca_bundle
        if bundle is None or not Path(bundle).is_file():
            return []
        return [(bundle, "/etc/ssl/certs/ca-certificates.crt")]

    def _base_requests(self, suite: str, extra: tuple[str, ...] = ()) -> list[PinnedInput]:
        """What the config asks of the base layer (its pins come on top): a base without
        a spec's ``extra`` packages asks exactly what it asked before there were any (the
        same key, the same image)."""
        base = self.config.base
        return [
            _setting("suite", suite),
            _setting("mirror", base.mirror),
            _setting("variant", "minbase"),
            _setting("source_date_epoch", base.source_date_epoch),
            _setting("dpkg_filters", list(DPKG_FILTERS)),
            *([_setting("setup_hooks", list(SETUP_HOOKS))] if extra else []),
            _setting("customize_hooks", [*CUSTOMIZE_HOOKS, _sources_hook(base.mirror, suite)]),
            *(
                PinnedInput(kind="package", name=name, digest=sha256_json(name))
                for name in sorted(base.packages)
            ),
            *([_setting("debs", list(extra))] if extra else []),
        ]

    def _stage_base(
        self, suite: str, requests: list[PinnedInput], debs: list[PinnedInput], context: Path
    ) -> dict[str, str]:
        rootfs = self._rootfs(suite, requests, debs)
        os.link(rootfs, context / "rootfs.tar")
        return {}

    def _rootfs(self, suite: str, requests: list[PinnedInput], debs: list[PinnedInput]) -> Path:
        """The mmdebstrap tarball of exactly the pinned .debs, made once, cached by the inputs."""
        key = inputs_digest([*requests, *debs]).removeprefix("sha256:")
        rootfs = self.cache_dir / "rootfs" / f"{key}.tar"
        if rootfs.exists():
            return rootfs
        rootfs.parent.mkdir(parents=True, exist_ok=True)
        base = self.config.base
        log = self.cache_dir / "builds" / f"rootfs-{key}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        if shutil.which("mmdebstrap") is None:
            raise BuildError("mmdebstrap is not installed; run scripts/setup")
        debian.check_source(suite, base.mirror)
        pins = [_deb_pin(deb, base.mirror) for deb in debs]
        with self._staging() as scratch, _public_folder() as public, log.open("wb") as out:
            files = debian.fetch(
                pins,
                scratch / "debs",
                mirror=base.mirror,
                archive=base.archive,
                cache_dir=self.cache_dir / "debian",
            )
            source = debian.local_repository(
                list(files.values()), public / "repo", suite=suite, pins=pins
            )
            partial_tar = scratch / "rootfs.tar"
            extra = any(i.kind == "setting" and i.name == "debs" for i in requests)
            returncode = run_tethered(
                self._mmdebstrap_command(partial_tar, suite, source, pins, setup=extra),
                stdout=out,
                env={**os.environ, "SOURCE_DATE_EPOCH": str(base.source_date_epoch)},
                # Its own user namespace cannot enter a rootless user's private folders:
                # started elsewhere (a 0700 home), mmdebstrap fails before it builds.
                cwd="/",
            )
            if returncode != 0:
                raise BuildError(
                    f"mmdebstrap failed: {_last_line(log.read_text(errors='replace'))}", log
                )
            os.replace(partial_tar, rootfs)
        return rootfs

    def _mmdebstrap_command(
        self,
        output: Path,
        suite: str,
        source: str,
        pins: list[debian.DebPin],
        *,
        setup: bool = False,
    ) -> list[str]:
        """``setup``: the base of a spec's packages, with :data:`SETUP_HOOKS`."""
        base = self.config.base
        hooks = [*CUSTOMIZE_HOOKS, _sources_hook(base.mirror, suite)]
        return [
            "mmdebstrap",
            *(f"--setup-hook={hook}" for hook in (SETUP_HOOKS if setup else ())),
            # The pins are the minbase set already resolved; each is named, since a local
            # repository has the .debs' own priorities, not the archive's (adduser's
            # differ), and minbase's Priority:required set would not be the same.
            "--variant=essential",
            "--skip=output/dev",
            # A user namespace works for root and rootless alike: one mode, one tarball.
            "--mode=unshare",
            f"--include={','.join(sorted(pin.package for pin in pins))}",
            *(f"--dpkgopt={rule}" for rule in DPKG_FILTERS),
            *(f"--customize-hook={hook}" for hook in hooks),
            suite,
            str(output),
            # The pinned files only: the mirror is not asked.
            source,
        ]

    def _stage_env(self, found: list[PinnedInput], context: Path) -> dict[str, str]:
        pins = [_wheel_pin(wheel) for wheel in found]
        wheels.wheelhouse(pins, self.cache_dir / "wheels", context / "wheels")
        os.replace(context / "wheels" / "requirements.txt", context / "requirements.txt")
        return {}

    def _stage_env_npm(
        self, found: list[PinnedInput], tarballs: list[PinnedInput], context: Path
    ) -> dict[str, str]:
        """The wheelhouse, and ``npm/``: the pinned tarballs (checked), their manifest and
        the installer."""
        self._stage_env(found, context)
        pins = [_npm_pin(tarball) for tarball in tarballs]
        files = npm.fetch_tarballs(pins, self.cache_dir / "npm")
        folder = context / "npm"
        folder.mkdir()
        for file in files:
            try:
                os.link(file, folder / file.name)
            except OSError:
                shutil.copyfile(file, folder / file.name)
        (folder / "manifest.json").write_text(json.dumps(npm.install_manifest(pins), indent=1))
        shutil.copyfile(self.files / NPM_INSTALLER, folder / NPM_INSTALLER)
        return {}

    # --- staging ---------------------------------------------------------------------

    @contextmanager
    def _staging(self) -> Iterator[Path]:
        """A scratch folder for one build, locked while the build uses it."""
        root = self.cache_dir / "staging"
        root.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(dir=root))
        with (path / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                self.store.remove_tree(path)

    def _clean_staging(self) -> list[Path]:
        """Remove the staging folders of builds that died (no process holds their lock)."""
        root = self.cache_dir / "staging"
        removed = []
        for path in sorted(root.iterdir()) if root.is_dir() else []:
            try:
                with (path / ".lock").open("a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a build of another evalrepro process, still running
            except OSError:
                # No lock file: a half-made folder. A live build makes its lock at once,
                # so only one older than a minute is a dead build's.
                with contextlib.suppress(OSError):
                    if time.time() - path.stat().st_mtime < 60:
                        continue
            self.store.remove_tree(path)
            # and the image its build left before its rewrite, if it died in between
            self.store.remove(_building_tag(path))
            removed.append(path)
        return removed

    def _manifest_file(self, image_id: str) -> Path:
        # Named by the image Id, not the tag: a tag rebuilt from the same inputs can hold
        # other packages (the mirror moved on), and its list must not be the old one's.
        return self.cache_dir / "images" / f"{image_id.removeprefix('sha256:')}.packages.txt"

    def _record_package_manifest(self, tag: str, image_id: str, inputs: list[PinnedInput]) -> str:
        """The base image's installed packages (name=version), kept as a file; its digest.

        They must be the pinned .debs, exactly.
        """
        manifest = self._manifest_file(image_id)
        if not manifest.exists():
            # By Id: a layer found by its locked Id (a bundle's image, loaded under a name
            # of its own) need not be under its tag, and the tag may name another build.
            done = self.store.run(
                image_id, ["dpkg-query", "--show", "--showformat=${Package}=${Version}\\n"]
            )
            if done.returncode != 0:
                raise BuildError(f"cannot list the packages of {tag}: {_last_line(done.stderr)}")
            installed = sorted(line.replace(":amd64=", "=") for line in done.stdout.splitlines())
            pinned = sorted(f"{i.name}={i.version}" for i in inputs if i.kind == "deb")
            if installed != pinned:
                extra = sorted(set(installed) - set(pinned)) or ["nothing else"]
                missing = sorted(set(pinned) - set(installed)) or ["every pin"]
                raise BuildError(
                    f"{tag} holds other packages than its pins: {extra[0]} installed, "
                    f"{missing[0]} pinned"
                )
            atomic.write_text(manifest, "\n".join(installed) + "\n")
        return sha256_bytes(manifest.read_bytes())

    def package_manifest(self, base: ImageRecord) -> Path | None:
        manifest = self._manifest_file(base.image_digest)
        return manifest if manifest.exists() else None


def _building_tag(staging: Path) -> str:
    """The name an image has between its build and its rewrite (layertar)."""
    return f"localhost/evalrepro-building:{staging.name.lower()}"


def _requirement_inputs(packages: Sequence[str]) -> list[PinnedInput]:
    return [
        PinnedInput(kind="requirement", name=requirement, digest=sha256_json(requirement))
        for requirement in packages
    ]


#: The machine name of a Debian architecture (the wheels' platform tags use it).
_MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


@contextmanager
def _public_folder() -> Iterator[Path]:
    """A folder under the system's temp dir that others may enter: mmdebstrap's apt reads
    the local repository as root of a user namespace, who cannot enter a rootless user's
    private folders (pytest's, a 0700 cache)."""
    path = Path(tempfile.mkdtemp(prefix="evalrepro-debs-"))
    try:
        path.chmod(0o755)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _sources_hook(mirror: str, suite: str) -> str:
    """Point the image's apt at the mirror, not at the local repository it was made from."""
    return f"echo 'deb {mirror} {suite} main' > \"$1/etc/apt/sources.list\""


def _locked_inputs(
    locked: list[ImageRecord], layer: str, requests: list[PinnedInput], kind: str | tuple[str, ...]
) -> list[PinnedInput] | None:
    """The pins (inputs of ``kind``) of a locked ``layer`` that asked for ``requests``."""
    kinds = (kind,) if isinstance(kind, str) else kind
    for record in locked:
        if record.layer != layer:
            continue
        asked = [i for i in record.inputs if i.kind not in (*kinds, "recipe")]
        if asked == requests:
            return [i for i in record.inputs if i.kind in kinds]
    return None


#: The env layer's npm installer, run by the base's python3 (``backends/podman/``).
NPM_INSTALLER = "npm-install.py"


@dataclass(frozen=True)
class NpmRequest:
    """What a spec's ``npm`` asks of the env layer, as inputs: each registry specifier
    (``npm-request``), or the repository's lockfile by the sha256 of its bytes
    (``npm-lockfile``) and those bytes, whose closure is taken."""

    inputs: list[PinnedInput]
    lock: bytes | None = None


def _npm_request(spec: TestSpec, checkout: LocalCheckout) -> NpmRequest | str | None:
    """The spec's npm request (None: it has none); a lockfile missing at the base commit
    is the reason its env layer fails."""
    if not spec.npm:
        return None
    path = npm_lockfile(spec.npm)
    if path is None:
        return NpmRequest(
            [
                PinnedInput(kind="npm-request", name=entry, digest=sha256_json(entry))
                for entry in spec.npm
            ]
        )
    data = checkout.read_file(spec.base_commit, path)
    if data is None:
        return f"npm: {spec.repo} has no {path} at its base commit {spec.base_commit[:12]}"
    lockfile = PinnedInput(
        kind="npm-lockfile", name=path, digest=sha256_bytes(data), source=spec.repo
    )
    return NpmRequest([lockfile], data)


def _npm_input(pin: npm.NpmPin) -> PinnedInput:
    return PinnedInput(
        kind="npm",
        name=pin.path,
        version=pin.version,
        digest=pin.digest,
        source=pin.url,
        integrity=pin.integrity,
    )


def _npm_pin(tarball: PinnedInput) -> npm.NpmPin:
    """The pin an ``npm`` input (of a lockfile, perhaps edited) stands for."""
    try:
        return npm.NpmPin(
            path=tarball.name,
            version=tarball.version,
            url=tarball.source,
            integrity=tarball.integrity or "",
            sha256=tarball.digest.removeprefix("sha256:"),
        )
    except ValidationError as error:
        raise UserError(
            f"the pin of npm package {tarball.name} {tarball.version} is not valid: "
            f"{error.errors()[0]['loc'][0]}: {error.errors()[0]['msg']} ({tarball.source})"
        ) from error


def _deb_input(pin: debian.DebPin, mirror: str) -> PinnedInput:
    return PinnedInput(
        kind="deb", name=pin.package, version=pin.version, digest=pin.sha256, source=pin.url(mirror)
    )


def _deb_pin(deb: PinnedInput, mirror: str) -> debian.DebPin:
    """The pin a ``deb`` input (of a lockfile, perhaps edited) stands for."""
    prefix = mirror.rstrip("/") + "/"
    filename = deb.source.removeprefix(prefix) if deb.source.startswith(prefix) else ""
    if not filename.startswith("pool/") and "/pool/" in deb.source:
        filename = deb.source[deb.source.index("/pool/") + 1 :]
    architecture = filename.rsplit("_", 1)[-1].removesuffix(".deb")
    try:
        return debian.DebPin(
            package=deb.name,
            version=deb.version,
            architecture=architecture,
            filename=filename,
            sha256=deb.digest,
        )
    except ValidationError as error:
        raise UserError(
            f"the pin of Debian package {deb.name} {deb.version} is not valid: "
            f"{error.errors()[0]['msg']} ({deb.source})"
        ) from error


def _wheel_input(pin: wheels.WheelPin) -> PinnedInput:
    return PinnedInput(
        kind="wheel", name=pin.name, version=pin.version, digest=pin.digest, source=pin.url
    )


def _wheel_pin(wheel: PinnedInput) -> wheels.WheelPin:
    """The pin a ``wheel`` input (of a lockfile, perhaps edited) stands for."""
    try:
        return wheels.WheelPin(
            name=wheel.name,
            version=wheel.version,
            filename=unquote(urlsplit(wheel.source).path.rsplit("/", 1)[-1]),
            sha256=wheel.digest.removeprefix("sha256:"),
            url=wheel.source,
        )
    except ValidationError as error:
        raise UserError(
            f"the pin of wheel {wheel.name} {wheel.version} is not valid: "
            f"{error.errors()[0]['msg']} ({wheel.source})"
        ) from error


def _base_python(base: ImageRecord) -> tuple[str, tuple[int, int]]:
    """The base image's Python (``3.11.2``) and glibc (``(2, 36)``), from its pins."""
    versions = {i.name: i.version for i in base.inputs if i.kind == "deb"}
    python = re.match(r"(?:\d+:)?(3\.\d+\.\d+)", versions.get("python3", ""))
    glibc = re.match(r"(?:\d+:)?(\d+)\.(\d+)", versions.get("libc6", ""))
    if python is None or glibc is None:
        raise UserError("the base layer pins no python3 or libc6 package")
    return python.group(1), (int(glibc.group(1)), int(glibc.group(2)))


def _stage_history(checkout: LocalCheckout, context: Path) -> dict[str, str]:
    checkout.export_history(context / "repo.git")
    return {}


def _stage_instance(
    checkout: LocalCheckout, spec: TestSpec, epoch: int, context: Path
) -> dict[str, str]:
    if not checkout.has_commit(spec.base_commit):
        raise RepoError(f"base commit {spec.base_commit} is not in {spec.repo}'s history")
    testbed = context / "testbed"
    checkout.export_tree(spec.base_commit, testbed)
    # A .git of fixed bytes: HEAD at the base commit, objects from the history layer.
    git_dir = testbed / ".git"
    for folder in ("objects/info", "refs/heads", "refs/tags"):
        (git_dir / folder).mkdir(parents=True, exist_ok=True)
    (git_dir / "HEAD").write_text(f"{spec.base_commit}\n")
    (git_dir / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    )
    (git_dir / "objects" / "info" / "alternates").write_text("/opt/evalrepro/repo.git/objects\n")
    for path in sorted(testbed.rglob("*"), reverse=True):
        os.utime(path, (epoch, epoch), follow_symlinks=False)
    os.utime(testbed, (epoch, epoch))
    return {"INSTALL": spec.install or ""}
