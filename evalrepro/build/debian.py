"""Debian packages pinned at lock time and fetched again, exactly, at build time.

:func:`resolve` asks apt which packages ``mmdebstrap --variant=minbase
--include=PACKAGES SUITE`` would install from a mirror, and pins each one
(:class:`DebPin`: its pool file, size and sha256). :func:`fetch` gets exactly those
files again, from the mirror or from an archive that keeps old versions (such as
snapshot.debian.org), checked against their pins. :func:`local_repository` makes a flat
repository of them, so that mmdebstrap installs the pinned packages or fails.

apt runs in a private root under the cache: its own sources.list (``MIRROR SUITE main``,
signed by the Debian archive keyring), its own lists and config, and an empty dpkg status,
so nothing of the host's apt configuration or installed packages counts. The suite's lists
are refreshed when asked for or when a day old; for one state of the lists a resolve is
deterministic, so its answer is kept under the apt root, named by the digest of the
request, the lists' signed Release files and the apt that read them, and read back
instead of asking apt again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Annotated
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, TypeAdapter, ValidationError

from evalrepro import atomic
from evalrepro.digest import sha256_json
from evalrepro.errors import UserError

#: The keyring the suite's Release must be signed with (from debian-archive-keyring).
DEFAULT_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
ARCHITECTURE = "amd64"
#: Lists older than this are fetched again before a resolve.
LISTS_MAX_AGE = 24 * 60 * 60
#: The config option naming an archive, for the "how to configure" hint.
ARCHIVE_OPTION = "environment.base.archive"
#: An archive that keeps every version, for the "how to configure" hint.
ARCHIVE_EXAMPLE = "https://snapshot.debian.org/archive/debian/20261201T000000Z"

_PACKAGE = r"[a-z0-9][a-z0-9+.-]*"
_VERSION = r"(?:[0-9]+:)?[A-Za-z0-9][A-Za-z0-9.+~-]*"
#: What mmdebstrap's --include accepts that we pass on: a name, optionally ``=version``.
_INCLUDE = re.compile(rf"{_PACKAGE}(?:={_VERSION})?")
_SUITE = re.compile(r"[a-z0-9][a-z0-9.-]*")
_MIRROR = re.compile(r"(?:https?|file|copy)://[^\s\[\]'\"]+")

#: Variants: the apt patterns mmdebstrap (1.3.5, ``run_install``) installs on top of the
#: Essential:yes set, each narrowed to the suite and architecture; plain names are not.
_REQUIRED = "?and(?priority(required),?not(?essential))"
_IMPORTANT = "?and(?or(?priority(required),?priority(important)),?not(?essential))"
_STANDARD = "?and(?or(~prequired,~pimportant,~pstandard),?not(?essential))"
VARIANTS: dict[str, tuple[str, ...]] = {
    "essential": (),
    "required": (_REQUIRED,),
    "minbase": (_REQUIRED,),
    "buildd": (_REQUIRED, "build-essential"),
    "important": (_IMPORTANT,),
    "debootstrap": (_IMPORTANT,),
    "standard": (_STANDARD,),
}


class MirrorError(Exception):
    """A mirror or archive could not be reached: an infrastructure error, not the pins'."""


class DebPin(BaseModel):
    """One .deb of an image, as the mirror's signed Packages index described it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    package: Annotated[str, Field(pattern=rf"^{_PACKAGE}$")]
    version: Annotated[str, Field(pattern=rf"^{_VERSION}$")]
    architecture: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    #: The file's path in the archive (the index's ``Filename``), e.g. ``pool/main/...``.
    filename: Annotated[str, Field(pattern=r"^[A-Za-z0-9+._~%-][A-Za-z0-9+._~%/-]*\.deb$")]
    #: Bytes of the file; None when the pin came from a record that does not keep it.
    size: NonNegativeInt | None = None
    sha256: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]

    @property
    def store_name(self) -> str:
        """``package_version_arch.deb``, a valid Nix store path name, one per pin.

        Nix allows ``[A-Za-z0-9+._?=-]``; a version's ``:`` and ``~`` become ``=3a`` and
        ``=7e``. No Debian name or version holds ``=``, so distinct pins keep distinct names.
        """
        escaped = re.sub(r"[^A-Za-z0-9+._-]", lambda m: f"={ord(m.group()):02x}", self.version)
        name = f"{self.package}_{escaped}_{self.architecture}.deb"
        if len(name) <= 211:  # Nix's limit on a store path name
            return name
        digest = hashlib.sha256(name.encode()).hexdigest()[:32]
        return f"{self.package[:120]}_{digest}_{self.architecture}.deb"

    def url(self, archive: str) -> str:
        return archive.rstrip("/") + "/" + self.filename

    def _download_url(self, archive: str) -> str:
        # As apt does: some mirrors (S3-backed ones) read a '+' in a path as a space.
        return archive.rstrip("/") + "/" + quote(self.filename, safe="/~")


# --- resolve ------------------------------------------------------------------------------


def resolve(
    suite: str,
    mirror: str,
    packages: list[str],
    *,
    variant: str = "minbase",
    cache_dir: Path,
    refresh: bool = False,
    keyring: Path = DEFAULT_KEYRING,
) -> list[DebPin]:
    """Every package ``mmdebstrap --variant=VARIANT --include=PACKAGES SUITE OUT MIRROR``
    installs, pinned, sorted by name.

    mmdebstrap (1.3.5) installs in two steps, and so does apt here: first the suite's
    ``Essential: yes`` packages with their dependencies, from an empty status (with
    ``pkgCacheGen::ForceEssential ","``, so apt does not count itself essential); then, with
    those installed, ``PACKAGES`` and the variant's set (minbase, an alias of required: every
    ``Priority: required`` package that is not essential, which brings apt). Dependencies are
    ``Depends`` and ``Pre-Depends``, never ``Recommends``. ``PACKAGES`` may pin a version as
    ``name=version``.
    """
    check_source(suite, mirror)
    if variant not in VARIANTS:
        raise UserError(f"unknown mmdebstrap variant {variant!r}: use one of {', '.join(VARIANTS)}")
    for package in packages:
        if not _INCLUDE.fullmatch(package):
            raise UserError(f"not a Debian package name: {package!r}")
    root = _AptRoot.for_suite(cache_dir, mirror=mirror, suite=suite, keyring=keyring)
    with root.locked():
        root.update(refresh=refresh)
        # For one state of the signed lists and one apt, the answer is always the same:
        # kept by the digest of those inputs, it costs no apt process the next time.
        inputs = {"packages": packages, "variant": variant, "lists": root.lists_digest()}
        cached = root.path / "closures" / f"{sha256_json(inputs).removeprefix('sha256:')}.json"
        pins = _read_pins(cached)
        if pins is not None:
            return pins
        essential = root.closure([_narrow(suite, "?essential")], status=root.empty_status)
        if not essential:
            raise UserError(f"Debian suite {suite!r} at {mirror} has no Essential:yes packages")
        installed = root.path / "var/lib/dpkg/status.essential"
        atomic.write_text(
            installed, "".join(f"{s.text}\nStatus: install ok installed\n\n" for s in essential)
        )
        extra = [
            _narrow(suite, item) if item.startswith("?") else item for item in VARIANTS[variant]
        ]
        rest = root.closure([*packages, *extra], status=installed)
        pins = [stanza.pin() for stanza in (*essential, *rest)]
        pins.sort(key=lambda pin: (pin.package, pin.architecture))
        atomic.write_text(cached, _PINS.dump_json(pins).decode())
    return pins


_PINS = TypeAdapter(list[DebPin])


def _read_pins(path: Path) -> list[DebPin] | None:
    """A closure resolved before, or None (none, or not one this version can read)."""
    try:
        return _PINS.validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


#: What makes a Packages record a dpkg status record, for apt.
_INSTALLED = "Status: install ok installed"


def _narrow(suite: str, pattern: str) -> str:
    # mmdebstrap's own pattern: the suite by archive or codename, the native architecture.
    return (
        f"?narrow(?or(?archive(^{suite}$),?codename(^{suite}$)),"
        f"?architecture({ARCHITECTURE}),{pattern})"
    )


def check_source(suite: str, mirror: str) -> None:
    if not _SUITE.fullmatch(suite):
        raise UserError(f"not a Debian suite name: {suite!r}")
    if not _MIRROR.fullmatch(mirror):
        raise UserError(f"not a Debian mirror URL (http, https or file): {mirror!r}")


class _Stanza:
    """One record of apt's Packages index, as ``apt-cache show`` printed it."""

    def __init__(self, text: str) -> None:
        self.text = text.strip("\n")
        self.fields: dict[str, str] = {}
        for line in self.text.splitlines():
            if line[:1] not in (" ", "\t") and ":" in line:
                key, _, value = line.partition(":")
                self.fields[key] = value.strip()

    def pin(self) -> DebPin:
        fields = self.fields
        if "SHA256" not in fields:
            raise MirrorError(f"the index has no SHA256 for {fields.get('Package')}")
        return DebPin(
            package=fields["Package"],
            version=fields["Version"],
            architecture=fields["Architecture"],
            filename=fields["Filename"],
            size=int(fields["Size"]),
            sha256="sha256:" + fields["SHA256"].lower(),
        )


class _AptRoot:
    """A private apt: config, sources, lists and dpkg status of its own, under the cache."""

    def __init__(self, path: Path, *, suite: str = "", mirror: str = "", keyring: Path) -> None:
        self.path = path
        self.suite = suite
        self.mirror = mirror
        self.keyring = keyring
        self.config = path / "apt.conf"
        self.empty_status = path / "var/lib/dpkg/status"

    @classmethod
    def for_suite(cls, cache_dir: Path, *, mirror: str, suite: str, keyring: Path) -> _AptRoot:
        if not keyring.is_file():
            raise UserError(f"cannot verify Debian suite {suite!r}: no keyring {keyring}")
        key = sha256_json({"mirror": mirror, "suite": suite, "keyring": str(keyring)})
        path = cache_dir / "apt" / f"{suite}-{key.removeprefix('sha256:')[:16]}"
        return cls(path, suite=suite, mirror=mirror, keyring=keyring)

    @classmethod
    def for_downloads(cls, cache_dir: Path) -> _AptRoot:
        """A root with no sources: apt's downloader only."""
        return cls(cache_dir / "apt" / "downloads", keyring=DEFAULT_KEYRING)

    @property
    def where(self) -> str:
        return f"Debian suite {self.suite!r} at {self.mirror}"

    def prepare(self) -> None:
        root = self.path
        for sub in (
            "etc/apt/apt.conf.d",
            "etc/apt/preferences.d",
            "etc/apt/sources.list.d",
            "etc/apt/trusted.gpg.d",
            "var/lib/apt/lists/partial",
            "var/cache/apt/archives/partial",
            "var/lib/dpkg",
            "var/log/apt",
        ):
            (root / sub).mkdir(parents=True, exist_ok=True)
        settings = {
            "Dir": f"{root}/",
            "Dir::State::status": str(self.empty_status),
            # Every place apt reads config or keys from is ours, none the host's.
            "Dir::Etc::main": f"{root}/etc/apt/apt.conf",
            "Dir::Etc::parts": f"{root}/etc/apt/apt.conf.d",
            "Dir::Etc::sourcelist": f"{root}/etc/apt/sources.list",
            "Dir::Etc::sourceparts": f"{root}/etc/apt/sources.list.d",
            "Dir::Etc::preferences": f"{root}/etc/apt/preferences",
            "Dir::Etc::preferencesparts": f"{root}/etc/apt/preferences.d",
            "Dir::Etc::trusted": f"{root}/etc/apt/trusted.gpg",
            "Dir::Etc::trustedparts": f"{root}/etc/apt/trusted.gpg.d",
            # Status files change between the two steps: no binary cache to go stale.
            "Dir::Cache::pkgcache": "",
            "Dir::Cache::srcpkgcache": "",
            "APT::Architecture": ARCHITECTURE,
            "APT::Architectures": ARCHITECTURE,
            "APT::Install-Recommends": "false",
            "APT::Install-Suggests": "false",
            "Acquire::Languages": "none",
            "pkgCacheGen::ForceEssential": ",",  # as mmdebstrap: apt is not essential
        }
        atomic.write_text(self.config, "".join(f'{k} "{v}";\n' for k, v in settings.items()))
        if not self.empty_status.exists():
            atomic.write_text(self.empty_status, "")
        atomic.write_text(root / "var/lib/dpkg/arch", f"{ARCHITECTURE}\n")
        source = f"deb [signed-by={self.keyring}] {self.mirror} {self.suite} main\n"
        atomic.write_text(root / "etc/apt/sources.list", source if self.suite else "")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """This root, for one caller at a time (apt's own locks would fail, not wait)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / ".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self.prepare()
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def run(self, *args: str, status: Path | None = None) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if status is not None:
            command[1:1] = ["-o", f"Dir::State::status={status}"]
        return subprocess.run(
            command,
            env=_apt_env(self.config),
            cwd=self.path,
            capture_output=True,
            text=True,
            check=False,
        )

    # --- the suite's lists

    def lists_digest(self) -> str:
        """sha256 over canonical JSON of what decides a resolve besides the request: the
        signed Release files of the lists (each names its indexes by hash) and the apt
        that reads them (its programs and library, by size and modification time)."""
        lists = self.path / "var/lib/apt/lists"
        releases = {
            path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(lists.glob("*Release"))
        }
        tools = {}
        for pattern in ("/usr/bin/apt-get", "/usr/bin/apt-cache", "/usr/lib/*/libapt-pkg.so.*"):
            for path in sorted(Path("/").glob(pattern.lstrip("/"))):
                info = path.stat()
                tools[str(path)] = [info.st_size, info.st_mtime_ns]
        return sha256_json({"releases": releases, "apt": tools, "arch": ARCHITECTURE})

    def update(self, *, refresh: bool) -> None:
        stamp = self.path / "updated"
        if not refresh and stamp.exists() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE:
            return
        done = self.run("apt-get", "update", "--error-on=any")
        if done.returncode != 0:
            raise self._update_error(done.stdout + done.stderr)
        atomic.write_text(stamp, "")

    def _update_error(self, output: str) -> Exception:
        where = self.where
        if "NO_PUBKEY" in output or "is not signed" in output:
            keys = sorted(set(re.findall(r"NO_PUBKEY ([0-9A-F]+)", output)))
            return UserError(
                f"cannot verify {where}: its Release is signed by keys not in {self.keyring} "
                f"({', '.join(keys) or 'unknown'}); install a newer debian-archive-keyring "
                "(bookworm-updates has the keys of newer releases)"
            )
        if "does not have a Release file" in output or re.search(r"\b404\b", output):
            return UserError(f"{where} does not exist (no Release file)")
        return MirrorError(f"cannot update the lists of {where}: {_apt_error(output)}")

    # --- resolving

    def closure(self, wanted: Sequence[str], *, status: Path) -> list[_Stanza]:
        """What ``apt-get install WANTED`` would download, with ``status`` installed."""
        if not wanted:
            return []
        done = self.run(
            "apt-get", "install", "--print-uris", "-y", "--no-install-recommends", "--",
            *wanted, status=status,
        )  # fmt: skip
        if done.returncode != 0:
            named = " ".join(w for w in wanted if not w.startswith("?")) or "the base set"
            raise UserError(
                f"apt cannot install {named} from {self.where}: "
                f"{_apt_error(done.stdout + done.stderr)}"
            )
        # 'URL' NAME SIZE HASH; NAME is package_version_arch.deb with ':' as %3a
        wanted_files: dict[tuple[str, str, str], tuple[str, int]] = {}
        for line in done.stdout.splitlines():
            match = re.fullmatch(r"'([^']+)' (\S+)_(\S+)_(\S+)\.deb (\d+) \S+", line)
            if match:
                url, name, version, arch, size = match.groups()
                key = (unquote(name), unquote(version), unquote(arch))
                wanted_files[key] = (unquote(url), int(size))
        stanzas = self.show([f"{name}={version}" for name, version, _ in wanted_files])
        found = {
            (s.fields["Package"], s.fields["Version"], s.fields["Architecture"]): s for s in stanzas
        }
        for key, (url, size) in wanted_files.items():
            stanza = found.get(key)
            if stanza is None or not url.endswith("/" + stanza.fields["Filename"]):
                raise MirrorError(f"apt's index has no record of {key[0]} {key[1]} ({url})")
            if int(stanza.fields["Size"]) != size:
                raise MirrorError(f"apt's index disagrees on the size of {key[0]} {key[1]}")
        return [found[key] for key in wanted_files]

    def show(self, specs: Sequence[str]) -> list[_Stanza]:
        if not specs:
            return []
        done = self.run("apt-cache", "show", "--no-all-versions", "--", *specs)
        if done.returncode != 0:
            raise MirrorError(f"apt-cache show failed: {_apt_error(done.stdout + done.stderr)}")
        stanzas = [_Stanza(text) for text in re.split(r"\n\n+", done.stdout) if text.strip()]
        # One record per version: a version in two sources is listed once per source.
        unique: dict[tuple[str, str, str], _Stanza] = {}
        for stanza in stanzas:
            f = stanza.fields
            unique.setdefault((f["Package"], f["Version"], f["Architecture"]), stanza)
        return list(unique.values())


def _apt_env(config: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "APT_CONFIG": str(config),
        "LC_ALL": "C.UTF-8",  # apt's messages are parsed: untranslated
    }
    # Proxies are the network's, not the host's apt config: the one thing let through.
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _apt_error(output: str) -> str:
    """apt's first error line (and the first unmet dependency), on one line."""
    errors = [line[3:] for line in output.splitlines() if line.startswith("E: ")]
    unmet = [line.strip() for line in output.splitlines() if re.match(r"^ \S+ : ", line)]
    parts = errors[:1] + unmet[:1] or [line for line in output.splitlines() if line][-1:]
    return " ".join(" ".join(parts).split())[:500] or "no output"


# --- fetch --------------------------------------------------------------------------------


def fetch(
    pins: list[DebPin],
    dest: Path,
    *,
    mirror: str,
    archive: str | None = None,
    cache_dir: Path,
) -> dict[str, Path]:
    """Each pinned .deb as ``dest / pin.store_name``, by package name.

    Files come from a cache of verified files (``cache_dir/debs/<sha256>.deb``), else
    through apt's own downloader from the mirror, else from ``archive`` (a URL that keeps
    old versions, such as snapshot.debian.org), each checked against its pinned size and
    sha256.
    """
    by_package: dict[str, DebPin] = {}
    for pin in pins:
        if by_package.setdefault(pin.package, pin) != pin:
            raise UserError(f"two pins for Debian package {pin.package}")
    for url in (mirror, archive):
        if url is not None and not _MIRROR.fullmatch(url):
            raise UserError(f"not a Debian mirror URL (http, https or file): {url!r}")
    cache = cache_dir / "debs"
    missing = [pin for pin in by_package.values() if not _verified(_cached(cache, pin), pin)]
    if missing:
        _download(missing, cache, cache_dir=cache_dir, mirror=mirror, archive=archive)
    dest.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for package, pin in sorted(by_package.items()):
        target = dest / pin.store_name
        if not _verified(target, pin):
            _link_or_copy(_cached(cache, pin), target)
        files[package] = target
    return files


def _cached(cache: Path, pin: DebPin) -> Path:
    return cache / f"{pin.sha256.removeprefix('sha256:')}.deb"


def _verified(path: Path, pin: DebPin) -> bool:
    try:
        if pin.size is not None and path.stat().st_size != pin.size:
            return False
        return _sha256_file(path) == pin.sha256
    except FileNotFoundError:
        return False


def _sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()


def _download(
    pins: list[DebPin], cache: Path, *, cache_dir: Path, mirror: str, archive: str | None
) -> None:
    """Download ``pins`` into the cache (mirror first, then the archive), verified."""
    cache.mkdir(parents=True, exist_ok=True)
    root = _AptRoot.for_downloads(cache_dir)
    with root.locked(), tempfile.TemporaryDirectory(dir=cache, prefix=".partial-") as tmp:
        staging = Path(tmp)
        # apt drops privileges to _apt to download, when the staging dir lets it.
        staging.chmod(0o755)
        reasons: dict[DebPin, list[str]] = {pin: [] for pin in pins}
        sources = [mirror] if archive is None else [mirror, archive]
        for source in sources:
            left = [pin for pin in pins if not (staging / pin.store_name).exists()]
            if not left:
                break
            failed = _apt_download(root, {pin._download_url(source): staging / pin.store_name
                                          for pin in left})  # fmt: skip
            for pin in left:
                if (reason := failed.get(pin._download_url(source))) is not None:
                    reasons[pin].append(reason)
        left = [pin for pin in pins if not (staging / pin.store_name).exists()]
        if left:
            raise _unavailable(left, reasons, sources)
        for pin in pins:
            path = staging / pin.store_name
            got = _sha256_file(path)
            size = path.stat().st_size
            if got != pin.sha256 or pin.size not in (None, size):
                raise UserError(
                    f"Debian package {pin.package} {pin.version} does not match its pin: "
                    f"{pin.filename} has {got} ({size} bytes), the pin says {pin.sha256}"
                    + (f" ({pin.size} bytes)" if pin.size is not None else "")
                )
            os.replace(path, _cached(cache, pin))


def _apt_download(root: _AptRoot, targets: dict[str, Path]) -> dict[str, str]:
    """Fetch URL -> file with apt's acquire; the reason each failed URL failed."""
    pairs = [str(part) for url, path in targets.items() for part in (url, path)]
    done = root.run("/usr/lib/apt/apt-helper", "download-file", *pairs)
    if done.returncode == 0:
        return {}
    output = done.stdout + done.stderr
    failed: dict[str, str] = {}
    for line in output.splitlines():
        match = re.match(r"^E: Failed to fetch (\S+)\s+(.*)$", line)
        if match:
            failed[match.group(1)] = " ".join(re.sub(r"\[IP: [^]]*\]", "", match.group(2)).split())
    for url, path in targets.items():
        if not path.exists() and url not in failed:
            failed[url] = _apt_error(output)
    return failed


def _unavailable(
    pins: list[DebPin], reasons: dict[DebPin, list[str]], sources: list[str]
) -> Exception:
    pin = pins[0]
    why = reasons[pin]
    what = f"Debian package {pin.package} {pin.version}"
    if len(pins) > 1:
        what += f" (and {len(pins) - 1} more)"
    where = " nor ".join(f"{url} ({reason})" for url, reason in zip(sources, why, strict=False))
    gone = len(why) == len(sources) and all(re.search(r"\b(404|410)\b", r) for r in why)
    if not gone:
        return MirrorError(f"cannot download {what}: {where}")
    hint = (
        f"set {ARCHIVE_OPTION} to an archive that keeps old versions, e.g. {ARCHIVE_EXAMPLE}"
        if len(sources) == 1
        else f"set {ARCHIVE_OPTION} to an archive (a snapshot.debian.org URL) of a date when "
        "the pins were current"
    )
    return UserError(f"{what} is no longer available from {where}; {hint}")


# --- a local repository -------------------------------------------------------------------


def local_repository(
    files: list[Path],
    dest: Path,
    *,
    suite: str | None = None,
    pins: Sequence[DebPin] | None = None,
) -> str:
    """A flat apt repository in ``dest`` of exactly ``files``; its sources line.

    With ``pins``, the packages the files hold must be exactly those (name, version,
    architecture): a pin whose version was edited, but not its file, is refused.

    The index is ``dpkg-scanpackages`` (dpkg-dev). mmdebstrap selects the Essential:yes and
    Priority:required packages of the suite it is given by the repository's Suite and
    Codename, so a Release naming ``suite`` is written; without one only ``--include``d
    packages and their dependencies would be found. The line uses ``copy://``: mmdebstrap
    needs the .debs inside its chroot, which ``file://`` would leave outside. In
    mmdebstrap's unshare mode every folder above ``dest`` must be searchable by others.
    """
    if suite is not None and not _SUITE.fullmatch(suite):
        raise UserError(f"not a Debian suite name: {suite!r}")
    if shutil.which("dpkg-scanpackages") is None:
        raise UserError("dpkg-scanpackages is not installed (apt-get install dpkg-dev)")
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    for file in files:
        if file.suffix != ".deb" or not file.is_file():
            raise UserError(f"not a .deb file: {file}")
        if file.name in names:
            raise UserError(f"two .deb files named {file.name}")
        names.add(file.name)
        target = dest / file.name
        if not (target.exists() and os.path.samefile(file, target)):
            _link_or_copy(file, target)
    for extra in sorted(path.name for path in dest.glob("*.deb") if path.name not in names):
        raise UserError(f"{dest} holds {extra}, which is not one of the repository's files")
    done = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."],
        cwd=dest,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace")
        raise UserError(f"dpkg-scanpackages failed in {dest}: {_apt_error(message)}")
    index = done.stdout
    if pins is not None:
        _check_contents(index.decode(errors="replace"), pins)
    atomic.write_bytes(dest / "Packages", index)
    release = [
        "Origin: evalrepro",
        "Label: evalrepro",
        *([f"Suite: {suite}", f"Codename: {suite}"] if suite is not None else []),
        f"Architectures: {ARCHITECTURE} all",
        # A fixed date: the repository is a function of its files.
        "Date: Thu, 01 Jan 1970 00:00:00 UTC",
        "SHA256:",
        f" {hashlib.sha256(index).hexdigest()} {len(index)} Packages",
    ]
    atomic.write_text(dest / "Release", "\n".join(release) + "\n")
    # Readable by anyone: mmdebstrap's apt reads it as root of a user namespace (a
    # rootless user's sub-uid), to whom the files' owner is nobody. (Each folder above
    # ``dest`` must let it through too.)
    for path in dest.iterdir():
        path.chmod(0o644)
    dest.chmod(0o755)
    return f"deb [trusted=yes] copy://{quote(str(PurePosixPath(dest)), safe='/')}/ ./"


def _link_or_copy(source: Path, target: Path) -> None:
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        os.link(source, partial)
    except OSError:
        shutil.copyfile(source, partial)
    os.replace(partial, target)


def _check_contents(index: str, pins: Sequence[DebPin]) -> None:
    """The packages a repository's index lists are exactly ``pins``."""
    found: dict[str, tuple[str, str]] = {}
    for text in re.split(r"\n\n+", index):
        if text.strip():
            fields = _Stanza(text).fields
            found[fields["Package"]] = (fields["Version"], fields["Architecture"])
    for pin in pins:
        got = found.pop(pin.package, None)
        if got is None:
            raise UserError(f"Debian package {pin.package} {pin.version}: no file holds it")
        if got != (pin.version, pin.architecture):
            raise UserError(
                f"Debian package {pin.package} is pinned as {pin.version} ({pin.architecture}) "
                f"but its file {pin.filename} holds {got[0]} ({got[1]})"
            )
    if found:
        extra = sorted(found)
        raise UserError(f"the repository holds Debian package {extra[0]}, which is not pinned")
