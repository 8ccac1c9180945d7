"""Debian sources of the Java, Ruby and PHP projects, fetched as any user can, and kept.

The same interface as ``tests/languages/_fetch.py`` (the Go, Rust, C and JavaScript
projects'; the lead keeps one of the two at the merge): :func:`source_tarball` runs
``apt-get source --download-only`` against a deb-src list of the mirror this machine's
apt uses, in a private apt state folder (no root; nothing of the system's apt is
touched), and pins the file by sha256; :func:`make_repository` turns an upstream tree,
with the project's edits, into a bare git repository of one commit by a fixed author at
a fixed date: the same base commit on every machine. Unpacking uses ``tar`` (the
Python of bookworm has no ``tarfile`` data filter).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from evalrepro.sources.commits import Signature, commit_directory, init_repository

#: The author and date of every base commit (2024-01-01T00:00:00Z).
AUTHOR = Signature("evalrepro languages", "languages@example.invalid", 1_704_067_200)
#: The Debian suite the sources come from: the base images' own.
SUITE = "bookworm"


class FetchError(RuntimeError):
    """A source that cannot be fetched or is not the pinned one: one line."""


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise FetchError(f"{' '.join(args[:3])}... failed in {cwd}: {last[0]}")


def _pinned(path: Path, sha256: str) -> Path:
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    if found != sha256:
        raise FetchError(f"{path.name}: sha256 {found}, pinned {sha256}")
    return path


def _mirrors() -> list[str]:
    """The URIs of this machine's Debian sources (deb822 and one-line lists alike)."""
    paths = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    uris: list[str] = []
    for path in paths:
        try:
            text = path.read_text()
        except OSError:
            continue
        found = re.findall(r"^URIs:\s*(\S+)", text, re.M)
        found += re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)
        uris += [u.rstrip("/") for u in found if u.rstrip("/").endswith("/debian")]
    return list(dict.fromkeys(uris)) or ["http://deb.debian.org/debian"]


def _private_apt(cache: Path) -> list[str]:
    """apt options for a deb-src list of the machine's mirror, in a state folder of ours."""
    root = cache / "apt"
    sources = root / "sources.list"
    options = [
        f"-oDir::Etc::SourceList={sources}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={root / 'lists'}",
        f"-oDir::Cache={root / 'cache'}",
        "-oDebug::NoLocking=1",
        f"-oAPT::Sandbox::User={os.environ.get('USER') or 'root'}",
    ]
    if not (root / "updated").exists():
        for folder in (root / "lists" / "partial", root / "cache" / "archives" / "partial"):
            folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for uri in _mirrors():
            lines += [f"deb-src {uri} {SUITE} main", f"deb-src {uri} {SUITE}-updates main"]
        sources.write_text("\n".join(lines) + "\n")
        _run(["apt-get", "-q", *options, "update"], root)
        (root / "updated").touch()
    return options


def source_tarball(package: str, tarball: str, sha256: str, cache: Path) -> Path:
    """The file ``tarball`` of the source package ``package`` (``apt-get source``), pinned.

    apt's exit code is not the test: the mirror lacks some of a package's files (the
    Debian tarball of ``java-string-similarity``), and only the file asked for counts."""
    folder = cache / "sources" / package
    target = folder / tarball
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        options = _private_apt(cache)
        args = ["apt-get", "-q", *options, "source", "--download-only", package]
        done = subprocess.run(args, cwd=folder, capture_output=True, text=True, check=False)
        if not target.exists():
            last = (done.stderr.strip() or "no output").splitlines()[-1]
            raise FetchError(f"apt-get source {package}: no {tarball} in {folder}: {last}")
    return _pinned(target, sha256)


def unpack(archive: Path, dest: Path) -> Path:
    """``archive``'s files, without its top folder, in ``dest`` (which it replaces)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    args = ["tar", "--no-same-owner", "--strip-components=1", "-xf", str(archive), "-C", "."]
    _run(args, dest)
    return dest


#: One edit of an upstream tree: (path, old text, new text); the old text must occur
#: exactly once in the file; old None: a new file.
Edit = tuple[str, str | None, str]


def make_repository(upstream: Path, repo_dir: Path, edits: list[Edit], message: str) -> str:
    """A bare repository at ``repo_dir`` whose one commit is ``upstream`` with ``edits``
    made, in order; its commit id."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(upstream, tree, symlinks=True)
        for path, old, new in edits:
            target = tree / path
            if old is None:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(new)
                continue
            text = target.read_text()
            if text.count(old) != 1:
                raise FetchError(f"{path}: the text to replace occurs {text.count(old)} times")
            target.write_text(text.replace(old, new))
        for path in tree.rglob("*"):
            if path.is_file() and not path.is_symlink():
                path.chmod(0o755 if path.stat().st_mode & 0o100 else 0o644)
        shutil.rmtree(repo_dir, ignore_errors=True)
        git_dir = init_repository(repo_dir, bare=True)
        return commit_directory(tree, git_dir, signature=AUTHOR, message=message)


def patches(language: str) -> tuple[str, str, str, str]:
    """The gold, test, wrong and attack patches of ``language``'s project: the files
    ``patches/<language>/{gold,test,wrong,attack}.diff`` beside this module."""
    folder = Path(__file__).parent / "patches" / language
    gold, test, wrong, attack = (
        (folder / f"{name}.diff").read_text() for name in ("gold", "test", "wrong", "attack")
    )
    return gold, test, wrong, attack
