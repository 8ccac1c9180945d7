"""Source trees (sdists) as one commit, made the same on every machine.

:func:`sdist_commit` is the base commit of a source tree archive; ``python -m
evalrepro.sources.sdist sdist-commit FILE`` prints it and the archive's sha256, what a
dataset pins for an ``archive`` source of it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from evalrepro.errors import UserError
from evalrepro.sources.commits import Signature, commit_directory, init_repository
from evalrepro.sources.git import RepoError, git
from evalrepro.sources.unpack import extract, file_sha256, git_dir_in

#: The commit a source tree is given: fixed, so its SHA depends on the files alone.
SDIST_SIGNATURE = Signature("evalrepro", "sdist@evalrepro.invalid", 946_684_800)  # 2000-01-01
SDIST_MESSAGE = "Source distribution"


def commit_sdist(tree: Path, dest: Path, archive: Path) -> None:
    git_dir = init_repository(dest, bare=True)
    try:
        commit_directory(
            _strip_top(tree),
            git_dir,
            signature=SDIST_SIGNATURE,
            message=SDIST_MESSAGE,
            index_file=dest.parent / "index",
        )
    except RepoError as error:
        raise UserError(f"archive {archive}: its files cannot be one commit ({error})") from None


def _strip_top(tree: Path) -> Path:
    """The tree without the one top-level directory an sdist has (``name-1.0/``)."""
    entries = list(tree.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return tree


def sdist_commit(archive: Path) -> str:
    """The base commit of a source tree archive (an sdist .tar.gz or .zip, no .git).

    One commit, no parent, on branch ``main``, of the archive's files after stripping
    the single top-level directory if that is all the archive holds: each regular file
    byte for byte, mode 100755 if its owner may execute it and 100644 otherwise,
    symlinks as links, empty directories dropped; no ``.gitignore`` or ``.gitattributes``
    applies. Author and committer ``evalrepro <sdist@evalrepro.invalid>``, both dated
    2000-01-01T00:00:00Z (+0000), message ``Source distribution``; SHA-1 object ids. It
    depends on the files alone: the same on every machine, under any git config, and the
    same for a .zip and a .tar.gz of the same files.
    """
    with tempfile.TemporaryDirectory(prefix="evalrepro-sdist-") as scratch:
        tree = Path(scratch) / "tree"
        extract(archive, tree)
        if git_dir_in(tree, archive) is not None:
            raise UserError(
                f"archive {archive} holds a git repository: its base commits are its own"
            )
        dest = Path(scratch) / "repo.git"
        commit_sdist(tree, dest, archive)
        return git("rev-parse", "refs/heads/main", git_dir=dest)


# --- python -m evalrepro.sources.sdist ------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalrepro.sources.sdist")
    commands = parser.add_subparsers(dest="command", required=True)
    sdist = commands.add_parser(
        "sdist-commit", help="the base commit and sha256 of a source tree archive (an sdist)"
    )
    sdist.add_argument("archive", type=Path)
    args = parser.parse_args(argv)
    try:
        if not args.archive.is_file():
            raise UserError(f"{args.archive}: no such file")
        commit = sdist_commit(args.archive)
    except (UserError, RepoError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"base_commit: {commit}\nsha256: {file_sha256(args.archive)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
