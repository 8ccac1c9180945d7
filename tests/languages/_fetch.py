"""Upstream sources for the language projects, fetched as any user can, and kept.

Debian's archive gives binary packages (``apt-get download``, then ``dpkg-deb -x``: a
``golang-*-dev`` or ``librust-*-dev`` package carries its library's whole source) and
source packages (``apt-get source --download-only`` against a deb-src list of the same
mirror this machine's apt uses, in a private apt state folder: no root, nothing of the
system's apt is touched); the npm registry gives package tarballs (``npm pack``). Every
file is pinned by sha256: a file whose bytes differ stops the test in one line. What is
fetched stays in the cache folder, so a second run fetches nothing.

Then :func:`make_repository` turns an upstream tree, with the project's edits (the bug,
the tests the test patch brings back), into a bare git repository of one commit by a
fixed author at a fixed date: the same base commit on every machine.
"""

from __future__ import annotations

import hashlib
import os
import pwd
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


#: The projects' patches, as diffs against their base commits: ``patches/<language>/``.
PATCHES = Path(__file__).parent / "patches"


def patch(language: str, name: str) -> str:
    """The patch ``name`` (gold, test, wrong, attack) of ``language``'s project."""
    return (PATCHES / language / f"{name}.diff").read_text()


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


def deb(package: str, version: str, sha256: str, cache: Path) -> Path:
    """The binary package ``package`` at ``version`` (``apt-get download``), pinned."""
    folder = cache / "debs"
    folder.mkdir(parents=True, exist_ok=True)
    found = list(folder.glob(f"{package}_{version.replace(':', '%3a')}_*.deb"))
    if not found:
        _run(["apt-get", "download", "-q", f"{package}={version}"], folder)
        found = list(folder.glob(f"{package}_{version.replace(':', '%3a')}_*.deb"))
        if not found:
            raise FetchError(f"apt-get download {package}={version}: no .deb in {folder}")
    return _pinned(found[0], sha256)


def deb_tree(package: str, version: str, sha256: str, cache: Path, inside: str) -> Path:
    """The folder ``inside`` of the binary package's files (``dpkg-deb -x``)."""
    archive = deb(package, version, sha256, cache)
    dest = cache / "unpacked" / archive.stem
    if not (dest / inside).is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        _run(["dpkg-deb", "-x", str(archive), str(dest)], cache)
    return dest / inside


def _mirrors() -> list[str]:
    """The URIs of this machine's Debian sources (deb822 and one-line lists alike)."""
    texts = [Path("/etc/apt/sources.list")]
    texts += sorted(Path("/etc/apt/sources.list.d").glob("*"))
    uris: list[str] = []
    for path in texts:
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
        # apt drops to this user to download: ourselves (not _apt, who cannot write here).
        f"-oAPT::Sandbox::User={pwd.getpwuid(os.getuid()).pw_name}",
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
    """The file ``tarball`` of the source package ``package`` (``apt-get source``), pinned:
    an upstream tarball (``.orig.tar.gz``) stays the same across Debian revisions."""
    folder = cache / "sources" / package
    target = folder / tarball
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        options = _private_apt(cache)
        _run(["apt-get", "-q", *options, "source", "--download-only", package], folder)
        if not target.exists():
            raise FetchError(f"apt-get source {package}: no {tarball} in {folder}")
    return _pinned(target, sha256)


def npm_tarball(spec: str, sha256: str, cache: Path) -> Path:
    """The npm registry's tarball of ``spec`` (``name@version``, ``npm pack``), pinned."""
    folder = cache / "npm"
    name, _, version = spec.rpartition("@")
    target = folder / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        _run(["npm", "pack", "--silent", spec], folder)
    return _pinned(target, sha256)


def unpack(archive: Path, dest: Path, top: str) -> Path:
    """The archive's folder ``top``, unpacked under ``dest`` (which it replaces)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    _run(
        ["tar", "--no-same-owner", "--no-same-permissions", "-xf", str(archive), "-C", str(dest)],
        dest,
    )
    return dest / top


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
