"""npm packages pinned at lock time and unpacked, exactly, at build time.

Two sources of a closure, each a list of :class:`NpmPin` (where the package goes under
``/node_modules``, its name and version, the tarball's URL, its registry integrity
string and its sha256):

* :func:`resolve_npm`: exact registry specifiers (``mocha@10.2.0``). npm's own client
  resolves their closure (``npm install --package-lock-only --ignore-scripts`` in a
  scratch folder, against one registry, without the host's npm configuration: a user's
  ``omit-lockfile-registry-resolved`` would drop the URLs), and the lockfile it writes
  is read as the second source is.
* :func:`lockfile_pins`: a repository's own ``package-lock.json`` (version 2 or 3) at the
  base commit: its ``resolved`` and ``integrity`` of every package, dev dependencies
  included (the tests need them).

Either way each tarball is downloaded at lock time into a content cache keyed by its
sha256 (``tarballs/<hex[:2]>/<hex>.tgz``), checked against its integrity string; the
sha256 becomes the pin. :func:`fetch_tarballs` gets exactly those files again (from the
cache, else the URL), each checked against both. Packages for another platform that are
optional (``fsevents``) are left out, as npm leaves them out on Linux; one that is not
optional is refused. Workspace links and git or file dependencies are refused in one
line: nothing would pin them.

A registry resolve is kept a day (:data:`RESOLVE_MAX_AGE`), as a wheel resolve is.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from evalrepro import atomic
from evalrepro.digest import sha256_json
from evalrepro.errors import UserError
from evalrepro.npmnames import NPM_NAME, npm_specifier

DEFAULT_REGISTRY = "https://registry.npmjs.org/"
#: How long a registry resolve is kept (as a wheel resolve, ``wheels.INDEX_MAX_AGE``).
RESOLVE_MAX_AGE = 24 * 60 * 60
#: The host's npm variables that still apply (how to reach the registry, not what it is).
_NPM_KEPT = frozenset(
    {"https_proxy", "http_proxy", "proxy", "noproxy", "cafile", "ca", "strict_ssl", "fetch_retries"}
)
#: Where the images' node runs: npm's ``os`` / ``cpu`` / ``libc`` names for it.
PLATFORM = {"os": "linux", "cpu": {"amd64": "x64", "arm64": "arm64"}, "libc": "glibc"}
#: Integrity algorithms, strongest first (Subresource Integrity names).
_ALGORITHMS = ("sha512", "sha384", "sha256", "sha1")
_SHA256 = r"[0-9a-f]{64}"
_INTEGRITY = r"(?:sha512|sha384|sha256|sha1)-[A-Za-z0-9+/=]+(?:\s+\S+)*"
#: A place under ``/node_modules``: ``mocha``, ``@scope/pkg``, ``a/node_modules/b``.
_PATH = rf"{NPM_NAME}(?:/node_modules/{NPM_NAME})*"
_DOWNLOAD_TIMEOUT = 60


class NpmPin(BaseModel):
    """One npm tarball of an environment, where it is unpacked, and its hashes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Its folder under ``/node_modules`` (npm's lockfile key without the leading
    #: ``node_modules/``): ``mocha``, ``mocha/node_modules/ms``.
    path: Annotated[str, Field(pattern=rf"^{_PATH}$")]
    #: The package's version.
    version: Annotated[str, Field(min_length=1, pattern=r"^[0-9A-Za-z.+-]+$")]
    #: Where the registry serves it.
    url: Annotated[str, Field(pattern=r"^(?:https?|file)://\S+$")]
    #: The registry's Subresource Integrity string (``sha512-<base64>``).
    integrity: Annotated[str, Field(pattern=rf"^{_INTEGRITY}$")]
    #: Hex sha256 of the tarball.
    sha256: Annotated[str, Field(pattern=rf"^{_SHA256}$")]

    @property
    def digest(self) -> str:
        return f"sha256:{self.sha256}"

    @property
    def label(self) -> str:
        return f"npm package {self.path} {self.version}"


_PINS = TypeAdapter(list[NpmPin])


# --- resolving ----------------------------------------------------------------------------


def resolve_npm(
    specifiers: Sequence[str],
    *,
    cache_dir: Path,
    registry: str = DEFAULT_REGISTRY,
    architecture: str = "amd64",
    max_age: float = RESOLVE_MAX_AGE,
) -> list[NpmPin]:
    """Pin the closure of exact registry specifiers (``name@1.2.3``), as npm resolves it.

    An unknown package or version, or a specifier that is not exact, is a UserError
    naming it. The same request answered less than ``max_age`` seconds ago (and whose
    tarballs are still in the cache) is answered from the cache.
    """
    wanted: dict[str, str] = {}
    for specifier in specifiers:
        parsed = npm_specifier(specifier)
        if parsed is None:
            raise UserError(
                f"npm {specifier!r} is not an exact specifier (name@1.2.3: no ranges or tags)"
            )
        wanted[parsed[0]] = parsed[1]
    if not wanted:
        return []
    cache_dir.mkdir(parents=True, exist_ok=True)
    request = {
        "dependencies": dict(sorted(wanted.items())),
        "registry": registry,
        "architecture": architecture,
        "npm": _npm_version(),
    }
    kept = cache_dir / "resolved" / f"{sha256_json(request).removeprefix('sha256:')}.json"
    pins = _kept_pins(kept, cache_dir, max_age)
    if pins is None:
        lock = _npm_lock(wanted, registry, cache_dir)
        pins = lockfile_pins(lock, "npm's resolve", cache_dir=cache_dir, architecture=architecture)
        atomic.write_text(kept, _PINS.dump_json(pins).decode())
    return pins


def _kept_pins(path: Path, cache_dir: Path, max_age: float) -> list[NpmPin] | None:
    try:
        if time.time() - path.stat().st_mtime >= max_age:
            return None
        pins = _PINS.validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
    return pins if all(tarball_path(cache_dir, pin).is_file() for pin in pins) else None


def _npm_lock(wanted: dict[str, str], registry: str, cache_dir: Path) -> bytes:
    """The package-lock.json npm writes for a package depending on exactly ``wanted``."""
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".resolve-") as tmp:
        work = Path(tmp)
        manifest = {
            "name": "evalrepro-env",
            "version": "0.0.0",
            "private": True,
            "dependencies": dict(sorted(wanted.items())),
        }
        (work / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        result = _npm(
            [
                "install",
                "--package-lock-only",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--lockfile-version=3",
                f"--registry={registry}",
                f"--cache={cache_dir / 'npm-cache'}",
            ],
            cwd=work,
        )
        if result.returncode != 0:
            asked = ", ".join(f"{n}@{v}" for n, v in sorted(wanted.items()))
            raise UserError(f"npm cannot resolve {asked} from {registry}: {_npm_error(result)}")
        try:
            return (work / "package-lock.json").read_bytes()
        except OSError as error:
            raise UserError(f"npm wrote no package-lock.json: {error}") from None


def _npm(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Not the host's npm configuration (files or npm_config_* variables), except how to
    # reach the registry.
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith("npm_config_")}
    env.update(
        {
            k: v
            for k, v in os.environ.items()
            if k.lower().startswith("npm_config_") and k.lower()[11:] in _NPM_KEPT
        }
    )
    # Empty files of its own (npm refuses one file for both).
    for scope in ("userconfig", "globalconfig"):
        empty = cwd / f".{scope}"
        empty.write_text("")
        env[f"npm_config_{scope}"] = str(empty)
    npm = shutil.which("npm")
    if npm is None:
        raise UserError("npm is not installed (the lock step resolves npm packages with it)")
    try:
        return subprocess.run(
            [npm, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
    except OSError as error:
        raise UserError(f"cannot run npm: {error}") from None


def _npm_version() -> str:
    npm = shutil.which("npm")
    if npm is None:
        return "none"
    try:
        done = subprocess.run([npm, "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return "none"
    return done.stdout.strip() or "none"


def _npm_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (result.stderr + result.stdout).splitlines()]
    errors = [
        re.sub(r"^npm (?:ERR!|error)\s*", "", line)
        for line in lines
        if line.startswith(("npm ERR!", "npm error"))
    ]
    # npm's first lines are its code (E404, ETARGET); the sentence comes after.
    useful = [e for e in errors if e and not re.fullmatch(r"code \S+", e)]
    useful = [e for e in useful if not e.startswith(("A complete log", "Log files"))]
    shown = useful[:1] or [line for line in lines if line][-1:] or [f"exit {result.returncode}"]
    return shown[0][:400]


# --- a lockfile's closure -----------------------------------------------------------------


def lockfile_pins(
    lock: bytes,
    where: str,
    *,
    cache_dir: Path,
    architecture: str = "amd64",
) -> list[NpmPin]:
    """The closure a package-lock.json (version 2 or 3) holds, each tarball fetched into
    the cache and checked against its integrity; sorted by path.

    ``where`` names the lockfile in messages. An entry without ``resolved`` or
    ``integrity``, a git, file or workspace dependency, or a package for another platform
    that is not optional, is a UserError naming it.
    """
    try:
        data = json.loads(lock)
    except ValueError as error:
        raise UserError(f"{where}: not JSON: {error}") from None
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        version = data.get("lockfileVersion") if isinstance(data, dict) else None
        raise UserError(
            f"{where}: no 'packages' (lockfileVersion {version}): write it with npm 7 or later"
        )
    found: list[tuple[str, dict[str, Any]]] = []
    for key, entry in sorted(packages.items()):
        if key == "" or not isinstance(entry, dict):
            continue  # the root package: the repository itself
        if not key.startswith("node_modules/") or entry.get("link"):
            raise UserError(
                f"{where}: {key or '(root)'} is a workspace or linked package: evalrepro "
                "installs registry tarballs only"
            )
        if entry.get("inBundle") or entry.get("extraneous"):
            continue  # inside its parent's tarball / not part of the tree
        path = key.removeprefix("node_modules/")
        if not _fits(entry, architecture):
            if entry.get("optional") or entry.get("devOptional"):
                continue
            raise UserError(
                f"{where}: npm package {path} is for {_platform_of(entry)}, not the images' "
                f"linux {PLATFORM['cpu'][architecture]}"
            )
        found.append((path, entry))
    pins = [_pin(path, entry, where, cache_dir) for path, entry in found]
    return sorted(pins, key=lambda pin: pin.path)


def _fits(entry: dict[str, Any], architecture: str) -> bool:
    here = {"os": PLATFORM["os"], "cpu": PLATFORM["cpu"][architecture], "libc": PLATFORM["libc"]}
    for field, value in here.items():
        wanted = entry.get(field)
        if not isinstance(wanted, list) or not wanted:
            continue
        if f"!{value}" in wanted:
            return False
        positive = [w for w in wanted if isinstance(w, str) and not w.startswith("!")]
        if positive and value not in positive:
            return False
    return True


def _platform_of(entry: dict[str, Any]) -> str:
    return " ".join(
        f"{field} {','.join(map(str, entry[field]))}"
        for field in ("os", "cpu", "libc")
        if entry.get(field)
    )


def _pin(path: str, entry: dict[str, Any], where: str, cache_dir: Path) -> NpmPin:
    version = str(entry.get("version", ""))
    url = entry.get("resolved")
    integrity = entry.get("integrity")
    label = f"{where}: npm package {path} {version}".rstrip()
    if not isinstance(url, str) or urlsplit(url).scheme not in ("https", "http"):
        shown = f" ({url})" if url else ""
        raise UserError(f"{label} has no registry tarball URL{shown}: nothing can pin it")
    if not isinstance(integrity, str) or not integrity:
        raise UserError(f"{label} has no integrity: nothing can check its tarball")
    file = _fetch_checked(url, integrity, None, cache_dir, label)
    sha256 = file.name.removesuffix(".tgz")
    try:
        return NpmPin(path=path, version=version, url=url, integrity=integrity, sha256=sha256)
    except ValidationError as error:
        raise UserError(f"{label}: cannot pin it: {error.errors()[0]['msg']}") from None


# --- the tarballs -------------------------------------------------------------------------


def tarball_path(cache_dir: Path, pin: NpmPin) -> Path:
    """Where the content cache keeps a pin's tarball."""
    return cache_dir / "tarballs" / pin.sha256[:2] / f"{pin.sha256}.tgz"


def fetch_tarballs(pins: Sequence[NpmPin], cache_dir: Path) -> list[Path]:
    """The pinned tarballs, from the content cache or downloaded, in the pins' order.

    A cached file is checked before use; a download whose sha256 or integrity differs
    from its pin is a UserError naming the package.
    """
    return [
        _fetch_checked(pin.url, pin.integrity, pin.sha256, cache_dir, pin.label) for pin in pins
    ]


def integrity_matches(data_or_path: bytes | Path, integrity: str) -> bool:
    """Whether bytes (or a file's) match a Subresource Integrity string: its strongest
    algorithm evalrepro knows, any of that algorithm's hashes."""
    hashes: dict[str, list[str]] = {}
    for token in integrity.split():
        algorithm, _, value = token.partition("-")
        hashes.setdefault(algorithm, []).append(value.split("?", 1)[0])
    algorithm = next((a for a in _ALGORITHMS if a in hashes), None)
    if algorithm is None:
        return False
    digest = hashlib.new(algorithm)
    if isinstance(data_or_path, Path):
        with data_or_path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    else:
        digest.update(data_or_path)
    got = base64.b64encode(digest.digest()).decode()
    return got in hashes[algorithm]


def _by_integrity(cache_dir: Path, integrity: str) -> Path:
    """The index from an integrity string to the sha256 of the tarball it checked."""
    name = hashlib.sha256(integrity.encode()).hexdigest()
    return cache_dir / "by-integrity" / name[:2] / name


def _fetch_checked(
    url: str, integrity: str, sha256: str | None, cache_dir: Path, label: str
) -> Path:
    """The tarball in the content cache, checked against ``integrity`` and (when pinned)
    ``sha256``; downloaded from ``url`` when the cache lacks it."""
    index = _by_integrity(cache_dir, integrity)
    known = sha256
    if known is None:
        try:
            known = index.read_text().strip()
        except OSError:
            known = None
    if known is not None and re.fullmatch(_SHA256, known):
        cached = cache_dir / "tarballs" / known[:2] / f"{known}.tgz"
        if (
            cached.is_file()
            and _sha256_file(cached) == known
            and integrity_matches(cached, integrity)
        ):
            return cached
    data = _download(url, label)
    if not integrity_matches(data, integrity):
        raise UserError(f"{label}: the tarball at {url} does not match its integrity {integrity}")
    got = hashlib.sha256(data).hexdigest()
    if sha256 is not None and got != sha256:
        raise UserError(f"{label}: the tarball at {url} has sha256 {got}, not the pinned {sha256}")
    target = cache_dir / "tarballs" / got[:2] / f"{got}.tgz"
    atomic.write_bytes(target, data)
    atomic.write_text(index, got + "\n")
    return target


def _download(url: str, label: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT) as response:
            return response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise UserError(f"{label}: cannot download {url}: {reason}") from None


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install_manifest(pins: Sequence[NpmPin]) -> list[dict[str, str]]:
    """What the image's installer unpacks, parents before what they hold: each folder
    under ``/node_modules``, its tarball's file name (its sha256) and its integrity."""
    ordered = sorted(pins, key=lambda pin: (pin.path.count("/node_modules/"), pin.path))
    return [
        {"path": pin.path, "file": f"{pin.sha256}.tgz", "sha256": pin.sha256} for pin in ordered
    ]
