"""The harness's diff of an agent's working tree: what the agent leaves is files, never git.

An agent runs as root in its sandbox and can rewrite everything in the repository's
``.git``: config (``diff.external``, ``core.fsmonitor``, filters), attributes, hooks,
replace refs, the index. A ``git diff`` run in that repository would record what those
say, and run the agent's code. So no git command ever runs in or on the agent's
repository. Instead:

1. the base tree is copied out of a container of the instance's image that no process
   ever ran in (``podman cp`` of a created container: the image's bytes, the repository
   at the base commit), and the agent's tree out of its sandbox when it stops, both as
   bounded tar streams, read by podman itself, not by a program the agent could replace;
2. each is unpacked here into a private folder with Python's ``tar`` extraction filter
   (nothing outside the folder, no device, no setuid bit), every ``.git`` left out, hard
   links and special files refused, within a count of entries;
3. a new file that the base commit's ignore rules (its ``.gitignore`` files, never the
   agent's) or the harness's own (compiled-Python caches, ``HARNESS_IGNORES``) ignore is
   left out, as ``git add -A`` would leave it: an agent that ran the code leaves
   ``__pycache__`` behind, which is not its answer;
4. the diff is ``git diff --no-index --binary`` of the two folders, with no config, no
   attributes, no external diff or text conversion (``--no-index`` reads no
   ``.gitattributes`` in the trees; symbolic links are compared as links, never
   followed), bounded, and never built whole when it is over its bound: first what the
   diff must hold at least (every line of a new or deleted text file, the growth or
   shrinkage of a changed one) is summed from the files' sizes, and a sum over the bound
   is refused before git runs; then git's output is read as it comes and git is killed
   at the first byte over the bound, or at ``DIFF_SECONDS`` (a rewrite of a large text
   file in place, which git's line diff may take minutes over).

The patch that comes out is then evaluated as a saved patch is, in a fresh sandbox.
"""

from __future__ import annotations

import io
import os
import selectors
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath

from evalrepro.build.tarball import normalised
from evalrepro.errors import UserError

#: Entries a tree may have (files, folders, links), by default.
MAX_ENTRIES = 200_000
#: Seconds git may take over the diff of an agent's tree before it is refused.
DIFF_SECONDS = 300
#: Files larger than this are binary to git (``core.bigFileThreshold``'s default).
_BIG_FILE = 512 << 20
#: How much of a file git reads to tell text from binary (a NUL in it: binary).
_FIRST_FEW_BYTES = 8000
#: New files the harness never takes into an agent's patch, whatever the repository says
#: (gitignore syntax): what running Python leaves behind.
HARNESS_IGNORES = "__pycache__/\n*.py[cod]\n"


class TreeError(UserError):
    """A working tree that cannot be diffed (too large, or holding what is refused)."""


def unpack_tree(data: bytes, dest: Path, *, max_entries: int = MAX_ENTRIES) -> None:
    """Unpack the tar ``data`` of one folder (``podman cp NAME:/path -``: its members
    start with the folder's name) into ``dest``, without ``.git`` anywhere.

    Only folders, regular files and symbolic links are made (a link is made, never
    followed: no member may lie inside a link or a file, and names are unique), each at
    its normalised path under ``dest``; every member is checked before the first is
    written."""
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except tarfile.TarError as error:
        raise TreeError(f"the working tree is not a tar stream ({error})") from None
    with archive:
        try:
            members = _checked(archive, max_entries)
            for info, path in members:
                target = dest.joinpath(*path.parts)
                # Every folder above is a folder of this tree (checked), never a link.
                target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                if info.isdir():
                    target.mkdir(mode=0o755, exist_ok=True)
                elif info.issym():
                    os.symlink(info.linkname, target)
                else:
                    source = archive.extractfile(info)
                    assert source is not None  # a regular member has content
                    mode = 0o755 if info.mode & 0o111 else 0o644
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                    with os.fdopen(os.open(target, flags, mode), "wb") as handle:
                        shutil.copyfileobj(source, handle, 1 << 20)
        except UserError as error:
            raise TreeError(f"the working tree cannot be taken: {error}") from None
        except (tarfile.TarError, OSError, ValueError) as error:
            raise TreeError(f"the working tree cannot be unpacked here ({error})") from None


def _checked(
    archive: tarfile.TarFile, max_entries: int
) -> list[tuple[tarfile.TarInfo, PurePosixPath]]:
    """The members below the folder, ``.git`` left out, each with its path; refused: a
    special file or hard link, a name outside the folder, a name twice, a member inside
    a file or a link, more than ``max_entries``."""
    members = []
    kinds: dict[PurePosixPath, str] = {}
    for count, info in enumerate(archive, start=1):
        if count > max_entries:
            raise TreeError(f"the working tree has more than {max_entries} entries")
        parts = normalised(info.name, f"member {info.name!r}", "working tree").parts[1:]
        if not parts or ".git" in parts:
            continue
        if info.isdir():
            kind = "folder"
        elif info.isreg() or info.issym():
            kind = "file" if info.isreg() else "link"
        else:
            raise TreeError(f"the working tree holds a special file or hard link: {info.name!r}")
        path = PurePosixPath(*parts)
        for depth in range(1, len(parts)):
            parent = PurePosixPath(*parts[:depth])
            if kinds.setdefault(parent, "folder") != "folder":
                raise TreeError(f"the working tree has {info.name!r} inside a file or link")
        if path in kinds and (kind != "folder" or kinds[path] != "folder"):
            raise TreeError(f"the working tree names {info.name!r} twice")
        kinds[path] = kind
        members.append((info, path))
    # Folders first (an implied folder is made before what lies in it).
    members.sort(key=lambda member: (len(member[1].parts), member[0].isdir() is False))
    return members


def harness_diff(
    base_tar: bytes, work_tar: bytes, *, limit: int, max_entries: int = MAX_ENTRIES
) -> bytes:
    """The git-format, binary-safe diff that turns the base tree into the agent's (both
    tar streams of the repository folder; ``a/`` and ``b/`` paths, as ``git diff`` writes
    them); more than ``limit`` bytes of it is a :class:`TreeError`."""
    with tempfile.TemporaryDirectory(prefix="evalrepro-diff-") as scratch:
        root = Path(scratch)
        # Unpacked as a and b, compared from their parent: the paths are a/... and b/...
        for name, data in (("a", base_tar), ("b", work_tar)):
            (root / name).mkdir()
            unpack_tree(data, root / name, max_entries=max_entries)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CEILING_DIRECTORIES": scratch,
            "LC_ALL": "C",
        }
        for path in _ignored(root, _new_files(root / "a", root / "b"), env):
            (root / "b" / path).unlink()
        least = _least_diff(root / "a", root / "b")
        if least > limit:
            raise TreeError(
                f"the working tree's diff is at least {least} bytes, over the limit of {limit}"
            )
        patch = _bounded_git(
            [
                "-c",
                "core.attributesFile=" + os.devnull,
                "diff",
                "--no-index",
                "--binary",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--no-renames",
                "--no-prefix",
                "a",
                "b",
            ],
            root,
            env,
            limit,
        )
        return patch


def _least_diff(base: Path, work: Path) -> int:
    """Bytes the diff of ``base`` to ``work`` holds at least, from the files alone: all of
    a new or deleted text file (each of its lines is in the diff), and the difference in
    size of a changed one (its added lines are at least that much longer than its
    removed ones, or the other way round). Binary files count nothing: git compresses
    them."""
    least = 0
    seen: set[str] = set()
    for side, other in ((work, base), (base, work)):
        for folder, _, files in os.walk(side):
            for name in files:
                path = Path(folder) / name
                relative = path.relative_to(side).as_posix()
                if relative in seen or path.is_symlink():
                    continue
                seen.add(relative)
                twin = other / relative
                if not os.path.lexists(twin) or twin.is_symlink() or twin.is_dir():
                    least += _text_size(path) or 0
                elif path.stat().st_size != twin.stat().st_size:  # else: nothing to read
                    size, size_twin = _text_size(path), _text_size(twin)
                    if size is not None and size_twin is not None:
                        least += abs(size - size_twin)
    return least


def _text_size(path: Path) -> int | None:
    """The size of a file git diffs as text (None: one it diffs as binary)."""
    size = path.stat().st_size
    if size > _BIG_FILE:
        return None
    with path.open("rb") as handle:
        return None if b"\0" in handle.read(_FIRST_FEW_BYTES) else size


def _bounded_git(args: list[str], cwd: Path, env: dict[str, str], limit: int) -> bytes:
    """``git ARGS``' stdout, as :func:`_git`, read as it comes: git is killed, and the
    diff refused, at the first byte over ``limit`` or after :data:`DIFF_SECONDS`."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            ["git", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=errors
        )
        assert process.stdout is not None
        kept = bytearray()
        over = ""
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                remaining = started + DIFF_SECONDS - time.monotonic()
                if remaining <= 0:
                    over = f"the working tree's diff took git more than {DIFF_SECONDS} s"
                    break
                if not selector.select(min(remaining, 1.0)):
                    continue
                chunk = os.read(process.stdout.fileno(), 1 << 20)
                if not chunk:
                    break
                kept += chunk
                if len(kept) > limit:
                    over = (
                        f"the working tree's diff is more than {len(kept)} bytes, "
                        f"over the limit of {limit}"
                    )
                    break
        if over:
            process.kill()
        process.stdout.close()
        code = process.wait()
        if over:
            raise TreeError(over)
        if code not in (0, 1):
            errors.seek(0)
            last = errors.read(1 << 16).decode(errors="replace").strip().splitlines() or ["?"]
            raise TreeError(f"git diff of the working tree failed: {last[-1][:300]}")
    return bytes(kept)


def _new_files(base: Path, work: Path) -> list[str]:
    """Paths of the files and links of ``work`` that ``base`` does not have."""
    new = []
    for folder, folders, files in os.walk(work):
        here = Path(folder).relative_to(work)
        for name in [*files, *(f for f in folders if (Path(folder) / f).is_symlink())]:
            path = (here / name).as_posix()
            if not os.path.lexists(base / path):
                new.append(path)
    return sorted(new)


def _ignored(root: Path, paths: list[str], env: dict[str, str]) -> list[str]:
    """Which of ``paths`` the base tree's ignore rules, or the harness's, ignore: asked of
    ``git check-ignore`` in a repository of the harness's own whose work tree is the base
    tree (its ``.gitignore`` files are the base commit's)."""
    if not paths:
        return []
    rules = root / "harness-ignores"
    rules.write_text(HARNESS_IGNORES)
    git_dir = root / "ignores.git"
    _git(["init", "-q", "--bare", str(git_dir)], root, env)
    found = _git(
        [
            f"--git-dir={git_dir}",
            f"--work-tree={root / 'a'}",
            "-c",
            f"core.excludesFile={rules}",
            "check-ignore",
            "--no-index",
            "--stdin",
            "-z",
        ],
        root,
        env,
        stdin=b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in paths),
    )
    return [item.decode("utf-8", "surrogateescape") for item in found.split(b"\0") if item]


def _git(args: list[str], cwd: Path, env: dict[str, str], stdin: bytes = b"") -> bytes:
    """``git ARGS``' stdout; exit 1 is an answer (the trees differ, nothing is ignored),
    anything else a :class:`TreeError` naming the command and git's last line."""
    done = subprocess.run(
        ["git", *args], input=stdin, cwd=cwd, env=env, capture_output=True, check=False
    )
    if done.returncode not in (0, 1):
        last = done.stderr.decode(errors="replace").strip().splitlines() or ["?"]
        name = next(arg for arg in args if not arg.startswith("-") and "=" not in arg)
        raise TreeError(f"git {name} of the working tree failed: {last[-1][:300]}")
    return done.stdout
