"""Python wheels pinned at lock time and fetched again, exactly, at build time.

:func:`resolve_wheels` asks pip which wheels ``pip install REQUIREMENTS`` would install
into a CPython of the given version on manylinux (``pip install --dry-run --report``
with ``--only-binary=:all: --python-version --platform``, so the host's own Python does
not count), and pins each one (:class:`WheelPin`: its file name, sha256 and URL, as the
index gave them). :func:`fetch_wheels` gets exactly those files again into a content
cache keyed by sha256, checked against their pins; :func:`wheelhouse` puts them in one
folder for ``pip install --no-index --require-hashes``.

pip runs without the host's pip configuration (``PIP_CONFIG_FILE=/dev/null``, no
``PIP_*`` index, find-links or constraints variables), against one index. For one state
of the index a resolve is deterministic. Environment markers (``exceptiongroup;
python_version < "3.11"``) are evaluated for the target Python (pip itself would use the
host's: its marker environment is replaced), the other markers on the host (Linux, the
host's machine).

A resolve is kept, as the Debian suite's lists are (:data:`INDEX_MAX_AGE`, a day): the
same request (requirements, target Python, platforms, index, pip) within a day of the
last answer is read back from the cache instead of asking the index again, so a warm
plan does not pay pip's 0.5 s. An index that changed within the day is seen the next day,
or at once with ``max_age=0``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Annotated
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from evalrepro import atomic
from evalrepro.digest import sha256_json
from evalrepro.errors import UserError

DEFAULT_INDEX = "https://pypi.org/simple"
#: glibc of the images' Python (Debian bookworm has 2.36): manylinux tags up to it fit.
DEFAULT_GLIBC = (2, 36)
#: The host's pip variables that still apply (how to reach the index, not what it is).
_PIP_KEPT = frozenset(
    {"PIP_CERT", "PIP_CLIENT_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_PROXY", "PIP_RETRIES"}
)
#: How long a resolve is kept (as long as the Debian suite's lists, ``debian.LISTS_MAX_AGE``).
INDEX_MAX_AGE = 24 * 60 * 60
_SHA256 = r"[0-9a-f]{64}"
_NAME = r"[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?"
#: Characters of a Nix store path name (besides alphanumerics): ``+-._?=``.
_NIX_UNSAFE = re.compile(r"[^A-Za-z0-9+._?=-]")


class WheelPin(BaseModel):
    """One wheel of an environment, as the index described it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The project name, normalized (PEP 503: lower case, runs of ``-_.`` as ``-``).
    name: Annotated[str, Field(pattern=rf"^{_NAME}$")]
    version: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9.+!_-]+$")]
    #: The wheel's file name (its tags say where it installs).
    filename: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+!-]*\.whl$")]
    #: Hex sha256 of the file.
    sha256: Annotated[str, Field(pattern=rf"^{_SHA256}$")]
    #: Where the index served it.
    url: Annotated[str, Field(pattern=r"^(?:https?|file)://\S+$")]

    @property
    def digest(self) -> str:
        """``sha256:<hex>``, as :class:`evalrepro.build.images.PinnedInput` holds digests."""
        return f"sha256:{self.sha256}"

    @property
    def store_name(self) -> str:
        """A name for the file that Nix accepts in a store path (no ``%``, ``:`` or ``!``)."""
        name = _NIX_UNSAFE.sub("_", self.filename)
        return name.lstrip(".") or "wheel.whl"

    @property
    def requirement(self) -> str:
        """The line of a ``--require-hashes`` requirements file that installs exactly it."""
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def platform_tags(machine: str | None = None, glibc: tuple[int, int] = DEFAULT_GLIBC) -> list[str]:
    """The manylinux tags a glibc ``glibc`` system of ``machine`` installs, newest first.

    pip's ``--platform manylinux_2_36_x86_64`` does not imply the older ones: say each.
    """
    arch = machine or os.uname().machine
    major, minor = glibc
    tags = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 16, -1)]
    legacy = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
    tags += [f"{tag}_{arch}" for tag, need in legacy.items() if need <= glibc]
    return tags


def resolve_wheels(
    requirements: Sequence[str],
    *,
    python_version: str = "3.11",
    cache_dir: Path,
    index_url: str = DEFAULT_INDEX,
    platforms: Sequence[str] | None = None,
    max_age: float = INDEX_MAX_AGE,
) -> list[WheelPin]:
    """Pin the wheels that ``pip install REQUIREMENTS`` installs into CPython ``X.Y``
    (``X.Y.Z`` also sets the markers' ``python_full_version``, else ``X.Y.0``).

    Every requirement must come as a wheel (``--only-binary=:all:``); an sdist-only
    package is a UserError naming pip's complaint. Sorted by name. The same request
    answered less than ``max_age`` seconds ago is answered from the cache.
    """
    full = _python_version(python_version)
    lines = [_requirement_line(r) for r in requirements]
    if not lines:
        return []
    tags = list(platforms) if platforms is not None else platform_tags()
    cache_dir.mkdir(parents=True, exist_ok=True)
    request = {
        "lines": lines,
        "python": full,
        "platforms": tags,
        "index": index_url,
        "pip": _pip_version(),
    }
    kept = cache_dir / "resolved" / f"{sha256_json(request).removeprefix('sha256:')}.json"
    pins = _kept_pins(kept, max_age)
    if pins is None:
        pins = _resolve(lines, full, tags, index_url, cache_dir)
        atomic.write_text(kept, _PINS.dump_json(pins).decode())
    return pins


_PINS = TypeAdapter(list[WheelPin])


def _pip_version() -> str:
    # Without pip, the resolve itself fails, naming it (see _pip).
    try:
        return metadata.version("pip")
    except metadata.PackageNotFoundError:
        return "none"


def _kept_pins(path: Path, max_age: float) -> list[WheelPin] | None:
    """A resolve kept less than ``max_age`` seconds ago, or None."""
    try:
        if time.time() - path.stat().st_mtime >= max_age:
            return None
        return _PINS.validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def _resolve(
    lines: list[str], full: str, tags: list[str], index_url: str, cache_dir: Path
) -> list[WheelPin]:
    version = ".".join(full.split(".")[:2])
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".resolve-") as tmp:
        work = Path(tmp)
        (work / "requirements.txt").write_text("".join(f"{line}\n" for line in lines))
        report = work / "report.json"
        args = [
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "--target",
            str(work / "target"),
            "--only-binary=:all:",
            "--python-version",
            version,
            "--implementation",
            "cp",
            "--abi",
            "cp" + version.replace(".", ""),
            *(arg for tag in tags for arg in ("--platform", tag)),
            "--index-url",
            index_url,
            "-r",
            str(work / "requirements.txt"),
        ]
        result = _pip(args, cache_dir=cache_dir, python=full)
        if result.returncode != 0:
            raise UserError(
                f"cannot resolve the wheels of {', '.join(lines)} for CPython {version}: "
                f"{_pip_error(result)}"
            )
        try:
            items = json.loads(report.read_text())["install"]
        except (OSError, ValueError, KeyError) as error:
            raise UserError(f"pip wrote no usable install report: {error}") from error
    pins = [_pin(item) for item in items]
    return sorted(pins, key=lambda pin: (pin.name, pin.version, pin.filename))


def _python_version(version: str) -> str:
    if not re.fullmatch(r"3\.[0-9]{1,2}(?:\.[0-9]{1,3})?", version):
        raise UserError(f"not a CPython version X.Y or X.Y.Z: {version!r}")
    return version if version.count(".") == 2 else f"{version}.0"


def _requirement_line(requirement: str) -> str:
    text = requirement.strip()
    # A requirements file takes options too (``--index-url``, ``-e``): only requirements.
    if not text or text.startswith("-") or "\n" in requirement or "\r" in requirement:
        raise UserError(f"not a Python requirement: {requirement!r}")
    return text


def _pin(item: dict) -> WheelPin:
    metadata = item.get("metadata", {})
    name = str(metadata.get("name", "?"))
    version = str(metadata.get("version", ""))
    info = item.get("download_info", {})
    url = str(info.get("url", ""))
    hashes = info.get("archive_info", {}).get("hashes") or {}
    sha256 = hashes.get("sha256")
    if sha256 is None:
        legacy = info.get("archive_info", {}).get("hash", "")
        sha256 = legacy.removeprefix("sha256=") if legacy.startswith("sha256=") else None
    if not sha256:
        raise UserError(f"the index gave no sha256 for wheel {name} {version} ({url})")
    filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    try:
        return WheelPin(
            name=canonical_name(name),
            version=version,
            filename=filename,
            sha256=sha256.lower(),
            url=url,
        )
    except ValueError as error:
        raise UserError(f"cannot pin wheel {name} {version} from {url!r}: {error}") from error


def fetch_wheels(pins: Sequence[WheelPin], cache_dir: Path) -> list[Path]:
    """The pinned wheel files, from the content cache or downloaded, in the pins' order.

    A cached file is checked before use and fetched again when it does not match. A
    download whose sha256 differs from its pin (the pin was edited, or the index now
    serves other bytes under that name) is a UserError naming the wheel.
    """
    _check_distinct(pins)
    missing = [pin for pin in pins if not _verified(_cached(cache_dir, pin), pin)]
    if missing:
        _download(missing, cache_dir)
    return [_cached(cache_dir, pin) for pin in pins]


def wheelhouse(pins: Sequence[WheelPin], cache_dir: Path, dest: Path) -> Path:
    """``dest`` holding exactly the pinned wheels and ``requirements.txt`` with their hashes.

    ``pip install --no-index --find-links DEST --require-hashes -r DEST/requirements.txt``
    then installs exactly them.
    """
    files = fetch_wheels(pins, cache_dir)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for file in files:
        try:
            os.link(file, dest / file.name)
        except OSError:
            shutil.copyfile(file, dest / file.name)
    (dest / "requirements.txt").write_text(hashed_requirements(pins))
    return dest


def hashed_requirements(pins: Sequence[WheelPin]) -> str:
    return "".join(f"{pin.requirement}\n" for pin in sorted(pins, key=lambda p: p.name))


def _check_distinct(pins: Sequence[WheelPin]) -> None:
    seen: set[str] = set()
    for pin in pins:
        if pin.name in seen:
            raise UserError(f"two pins for wheel {pin.name}")
        seen.add(pin.name)


def _cached(cache_dir: Path, pin: WheelPin) -> Path:
    return cache_dir / "wheels" / pin.sha256[:2] / pin.sha256 / pin.filename


def _verified(path: Path, pin: WheelPin) -> bool:
    try:
        return _sha256_file(path) == pin.sha256
    except FileNotFoundError:
        return False


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(pins: Sequence[WheelPin], cache_dir: Path) -> None:
    """Download ``pins`` (one pip call), check each and move it into the cache."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".fetch-") as tmp:
        work = Path(tmp)
        result = _pip_download(pins, work)
        if result.returncode != 0:
            # Which one? Each alone, so that the error names the wheel at fault.
            for pin in pins:
                alone = work / f"one-{pin.sha256}"
                single = _pip_download([pin], alone)
                if single.returncode != 0:
                    raise _fetch_error(pin, single)
            raise UserError(f"cannot fetch the pinned wheels: {_pip_error(result)}")
        for pin in pins:
            _store(pin, work / "files" / pin.filename, cache_dir)


def _pip_download(pins: Sequence[WheelPin], work: Path) -> subprocess.CompletedProcess[str]:
    work.mkdir(parents=True, exist_ok=True)
    requirements = work / "requirements.txt"
    # The pinned URL, and pip checks the file against the pinned hash (--require-hashes).
    requirements.write_text(
        "".join(f"{pin.name} @ {pin.url} --hash=sha256:{pin.sha256}\n" for pin in pins)
    )
    args = ["download", "--no-deps", "--no-index", "--quiet", "--require-hashes"]
    return _pip([*args, "-d", str(work / "files"), "-r", str(requirements)], cache_dir=None)


def _fetch_error(pin: WheelPin, result: subprocess.CompletedProcess[str]) -> UserError:
    output = result.stdout + result.stderr
    if "DO NOT MATCH THE HASHES" in output:
        got = re.search(rf"Got\s+({_SHA256})", output)
        served = f" has sha256 {got.group(1)}" if got else " differs"
        return UserError(
            f"wheel {pin.name} {pin.version}: the file at {pin.url}{served}, "
            f"not the pinned {pin.sha256}"
        )
    return UserError(
        f"wheel {pin.name} {pin.version} is no longer available from {pin.url}: "
        f"{_pip_error(result)}"
    )


def _store(pin: WheelPin, file: Path, cache_dir: Path) -> None:
    if not file.is_file():
        raise UserError(f"pip did not download wheel {pin.name} {pin.version} ({pin.filename})")
    got = _sha256_file(file)
    if got != pin.sha256:  # pip checked it too; this is the cache's own guard
        raise UserError(
            f"wheel {pin.name} {pin.version}: downloaded sha256 {got}, not the pinned {pin.sha256}"
        )
    target = _cached(cache_dir, pin)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(file, target)


#: pip with the marker environment of another Python: pip evaluates requirements'
#: markers with ``packaging.markers.default_environment()`` of the running interpreter.
_PIP_FOR_PYTHON = """
import sys
from pip._vendor.packaging import markers
full = sys.argv.pop(1)
host = markers.default_environment
def target():
    return {**host(), "python_version": full.rsplit(".", 1)[0],
            "python_full_version": full, "implementation_version": full}
markers.default_environment = target
from pip._internal.cli.main import main
sys.exit(main())
"""


def _pip(
    args: list[str], *, cache_dir: Path | None, python: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in _PIP_KEPT}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    cache = ["--cache-dir", str(cache_dir / "pip")] if cache_dir is not None else ["--no-cache-dir"]
    launcher = ("-c", _PIP_FOR_PYTHON, python) if python else ("-m", "pip")
    try:
        return subprocess.run(
            [sys.executable, *launcher, *args, *cache],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    except OSError as error:
        raise UserError(f"cannot run pip: {error}") from error


def _pip_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (result.stderr + result.stdout).splitlines()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    shown = errors[:1] or [line for line in lines if line][-1:] or [f"exit {result.returncode}"]
    return shown[0][:400]
