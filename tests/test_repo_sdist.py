"""Source distributions as repo sources: one commit of the files, the same everywhere.

An archive without a git repository inside (an sdist, .tar.gz or .zip) becomes one
commit of its files, the single top-level directory stripped, with a fixed author,
committer, dates and message (``repos.sdist_commit``); its SHA depends on the files
alone. Checked on a real sdist from PyPI (pinned by sha256; skipped when pip cannot
reach the index), on one laid out as setuptools does, under a hostile git config, in
two caches, as zip and tar, and against plain git doing what the definition says.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from evalrepro.errors import UserError
from evalrepro.sources.archive import ArchiveRepo
from evalrepro.sources.config import SourceConfig
from evalrepro.sources.resolve import resolve_sources
from evalrepro.sources.sdist import SDIST_MESSAGE, SDIST_SIGNATURE, sdist_commit
from tests.repo_support import commits_in, git, make_repo, sample, tar_of

#: six 1.16.0's sdist on PyPI, and the base commit it is given.
SIX = "six==1.16.0"
SIX_SHA256 = "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926"
SIX_COMMIT = "7413cb4325e5fc3bf13959b30c496ace042ff43f"

#: The files of a small sdist as setuptools lays it out, with what could make git
#: change them: attributes asking for CRLF, an ignore file ignoring the code, CRLF text,
#: an executable script, a symlink, an empty directory.
FILES = {
    "PKG-INFO": b"Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
    "setup.py": b"from setuptools import setup\nsetup()\n",
    "setup.cfg": b"[metadata]\nname = tiny\nversion = 1.0\n",
    "tiny/__init__.py": b"VALUE = 1\n",
    "tiny/windows.txt": b"line one\r\nline two\r\n",
    "bin/run.sh": b"#!/bin/sh\necho run\n",
    ".gitattributes": b"*.txt text eol=crlf\n",
    ".gitignore": b"*.py\n",
}
EXECUTABLE = {"bin/run.sh"}
LINKS = {"tiny/alias.txt": "windows.txt"}
TINY_COMMIT = "7bdf2ee832a3582c89f31bc8d4df6f0402ee716c"


def tiny_tar(path: Path, top: str | None = "tiny-1.0") -> Path:
    """The sdist as a .tar.gz, members in setuptools' order (directories first)."""
    prefix = f"{top}/" if top else ""
    with tarfile.open(path, "w:gz") as archive:
        for directory in sorted({str(Path(name).parent) for name in FILES} | {"empty"}):
            if directory != ".":
                info = tarfile.TarInfo(prefix + directory)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
        for name, data in FILES.items():
            info = tarfile.TarInfo(prefix + name)
            info.size, info.mode = len(data), 0o755 if name in EXECUTABLE else 0o644
            archive.addfile(info, io.BytesIO(data))
        for name, target in LINKS.items():
            info = tarfile.TarInfo(prefix + name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    return path


def tiny_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in FILES.items():
            info = zipfile.ZipInfo(f"tiny-1.0/{name}")
            info.create_system = 3
            info.external_attr = (0o100755 if name in EXECUTABLE else 0o100644) << 16
            archive.writestr(info, data)
        for name, target in LINKS.items():
            info = zipfile.ZipInfo(f"tiny-1.0/{name}")
            info.create_system = 3
            info.external_attr = 0o120777 << 16
            archive.writestr(info, target)
    return path


def sha256_of(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def checkout_of(archive: Path, base: str, cache: Path):
    source = ArchiveRepo(path=archive, sha256=sha256_of(archive))
    config = SourceConfig(repos={"me/tiny": source})
    resolved = resolve_sources(config, [sample("t-1", "me/tiny", base)], cache, dataset="mine")
    return resolved.checkout("t-1")


@pytest.fixture
def hostile_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME, XDG config and GIT_* variables that would change every commit made."""
    home = tmp_path / "hostile-home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    for hook in ("pre-commit", "commit-msg", "post-commit", "reference-transaction"):
        (hooks / hook).write_text("#!/bin/sh\nexit 1\n")
        (hooks / hook).chmod(0o755)
    (home / "attributes").write_text("* text eol=crlf\n")
    (home / "ignore").write_text("*\n")
    config = (
        "[user]\n\tname = Hostile\n\temail = hostile@example.invalid\n"
        "[init]\n\tdefaultBranch = trunk\n"
        "[core]\n\tautocrlf = true\n\tfileMode = false\n\tsymlinks = false\n"
        f"\tattributesFile = {home / 'attributes'}\n\texcludesFile = {home / 'ignore'}\n"
        f"\thooksPath = {hooks}\n"
        "[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = false\n"
        "[i18n]\n\tcommitEncoding = ISO-8859-1\n"
    )
    (home / ".gitconfig").write_text(config)
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text(config)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name, value in {
        "GIT_AUTHOR_NAME": "Hostile",
        "GIT_AUTHOR_DATE": "1 +0100",
        "GIT_COMMITTER_DATE": "2 +0200",
        "GIT_DEFAULT_HASH": "sha256",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.autocrlf",
        "GIT_CONFIG_VALUE_0": "true",
        "GIT_CONFIG_SYSTEM": str(home / ".gitconfig"),
        "GIT_INDEX_FILE": str(home / "no" / "index"),
        "GIT_OBJECT_DIRECTORY": str(home / "objects"),
        "GIT_DIR": str(home / "not-a-repo"),
    }.items():
        monkeypatch.setenv(name, value)
    umask = os.umask(0o077)
    yield
    os.umask(umask)


# --- the definition --------------------------------------------------------------------


def test_an_sdist_is_one_commit_of_its_files_with_the_fixed_identity(tmp_path):
    archive = tiny_tar(tmp_path / "tiny-1.0.tar.gz")
    assert sdist_commit(archive) == TINY_COMMIT
    checkout = checkout_of(archive, TINY_COMMIT, tmp_path / "cache")
    assert checkout.refs == (("refs/heads/main", TINY_COMMIT),)
    shown = git(checkout.git_dir, "cat-file", "-p", TINY_COMMIT).splitlines()
    who = f"{SDIST_SIGNATURE.name} <{SDIST_SIGNATURE.email}> 946684800 +0000"
    assert shown[1:] == [f"author {who}", f"committer {who}", "", SDIST_MESSAGE]
    assert shown[0].startswith("tree ")  # and no parent

    tree = git(checkout.git_dir, "ls-tree", "-r", "--full-tree", TINY_COMMIT).splitlines()
    modes = {line.split("\t")[1]: line.split()[0] for line in tree}
    assert modes == {
        **{name: "100755" if name in EXECUTABLE else "100644" for name in FILES},
        **dict.fromkeys(LINKS, "120000"),
    }  # the top directory stripped, the empty directory gone


def test_files_are_committed_byte_for_byte_whatever_gitattributes_and_gitignore_say(tmp_path):
    archive = tiny_tar(tmp_path / "tiny-1.0.tar.gz")
    checkout = checkout_of(archive, TINY_COMMIT, tmp_path / "cache")
    for name, data in FILES.items():
        shown = subprocess.run(
            [
                "git",
                "--git-dir",
                str(checkout.git_dir),
                "cat-file",
                "blob",
                f"{TINY_COMMIT}:{name}",
            ],
            capture_output=True,
            check=True,
        ).stdout
        assert shown == data, name
    link = git(checkout.git_dir, "cat-file", "blob", f"{TINY_COMMIT}:tiny/alias.txt")
    assert link == "windows.txt"


def test_the_sdist_commit_is_what_plain_git_makes_of_the_unpacked_files(tmp_path):
    # The documented recipe: unpack, enter the top directory, commit everything with
    # the fixed identity and dates. (Plain `git add` would apply .gitattributes, so the
    # recipe holds for trees without them; evalrepro never applies them.)
    plain = {name: data for name, data in FILES.items() if name != ".gitattributes"}
    tree = tmp_path / "unpacked" / "tiny-1.0"
    for name, data in plain.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
        (tree / name).chmod(0o755 if name in EXECUTABLE else 0o644)
    archive = tar_of(tree, tmp_path / "plain-1.0.tar.gz", "tiny-1.0")

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        **SDIST_SIGNATURE.env(),
    }
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "--all", "--force"],
        ["commit", "-q", "-m", SDIST_MESSAGE],
    ):
        subprocess.run(["git", *args], cwd=tree, env=env, check=True, capture_output=True)
    by_hand = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tree, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    assert sdist_commit(archive) == by_hand


def test_a_zip_and_a_tar_of_the_same_files_give_the_same_commit(tmp_path):
    assert sdist_commit(tiny_zip(tmp_path / "tiny-1.0.zip")) == TINY_COMMIT


def test_an_archive_of_loose_files_is_committed_as_it_is(tmp_path):
    loose = tiny_tar(tmp_path / "loose.tar.gz", top=None)
    assert sdist_commit(loose) == TINY_COMMIT  # nothing to strip: the same files


def test_the_commit_is_the_same_in_two_caches_under_a_hostile_git_config(tmp_path, hostile_git):
    archive = tiny_tar(tmp_path / "tiny-1.0.tar.gz")
    first = checkout_of(archive, TINY_COMMIT, tmp_path / "cache-a")
    second = checkout_of(archive, TINY_COMMIT, tmp_path / "cache-b")
    assert first.git_dir != second.git_dir
    assert first.refs == second.refs == (("refs/heads/main", TINY_COMMIT),)
    assert first.source_digest == second.source_digest
    assert sdist_commit(archive) == TINY_COMMIT

    # And what the image layers get from it is the same files, under the same config.
    first.export_tree(TINY_COMMIT, tmp_path / "tree")
    assert (tmp_path / "tree" / "tiny" / "windows.txt").read_bytes() == FILES["tiny/windows.txt"]
    assert (tmp_path / "tree" / "tiny" / "alias.txt").is_symlink()
    first.export_history(tmp_path / "history.git")
    assert commits_in(tmp_path / "history.git") == {TINY_COMMIT}


def test_an_sdist_source_serves_an_instance_and_refuses_another_commit(tmp_path):
    archive = tiny_tar(tmp_path / "tiny-1.0.tar.gz")
    checkout = checkout_of(archive, TINY_COMMIT, tmp_path / "cache")
    checkout.export_tree(TINY_COMMIT, tmp_path / "testbed")
    assert (tmp_path / "testbed" / "setup.py").read_bytes() == FILES["setup.py"]
    with pytest.raises(UserError, match=r"base commit 0{40} of instance 't-1' is in none"):
        checkout_of(archive, "0" * 40, tmp_path / "cache")


# --- a real sdist --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def six_sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("pypi")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            SIX,
            "-d",
            str(dest),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    found = sorted(dest.glob("six-*.tar.gz"))
    if done.returncode != 0 or not found:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"pip cannot download {SIX}'s sdist from the package index: {last}")
    return found[0]


def test_a_real_sdist_from_pypi_gets_the_pinned_base_commit(six_sdist, tmp_path):
    assert sha256_of(six_sdist) == SIX_SHA256  # the bytes PyPI serves for six 1.16.0
    assert sdist_commit(six_sdist) == SIX_COMMIT
    checkout = checkout_of(six_sdist, SIX_COMMIT, tmp_path / "cache")
    checkout.export_tree(SIX_COMMIT, tmp_path / "testbed")
    assert (tmp_path / "testbed" / "six.py").is_file()
    assert (tmp_path / "testbed" / "PKG-INFO").read_text().startswith("Metadata-Version")


def test_a_real_sdist_gets_the_same_commit_under_a_hostile_git_config(six_sdist, hostile_git):
    assert sdist_commit(six_sdist) == SIX_COMMIT


# --- python -m evalrepro.sources.repos sdist-commit ---------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro.sources.sdist", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_prints_what_a_dataset_author_pins(tmp_path):
    archive = tiny_tar(tmp_path / "tiny-1.0.tar.gz")
    done = run_cli("sdist-commit", str(archive))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"base_commit: {TINY_COMMIT}\nsha256: {sha256_of(archive)}\n"


def test_the_command_refuses_an_archive_of_a_git_repository_in_one_line(tmp_path):
    repo = tmp_path / "lib"
    make_repo(repo)
    done = run_cli("sdist-commit", str(tar_of(repo, tmp_path / "lib.tar.gz", "lib")))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "holds a git repository: its base commits are its own" in done.stderr
    missing = run_cli("sdist-commit", str(tmp_path / "nope.tar.gz"))
    assert (missing.returncode, missing.stderr.count("\n")) == (2, 1)
