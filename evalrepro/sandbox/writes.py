"""What the supervisor writes into the tree, from the harness's own git store.

``Git`` is the harness's view of the base commit (a root-owned store outside
``/testbed``, with an index and objects of the supervisor's own). From it come the
restores (a protected file back to the base) and the reset (the test patch's files as
base + test patch, with the canaries added: ``with_canaries``). Every write is a list of
operations (``operations_for``), done as the test user (``apply_writes``) and then checked
by content, not by stat data (``verify_writes``).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess

from .protocol import TOOL_TIMEOUT, HarnessError
from .tree import remove


class Git:
    """The harness's own view of the base commit: a root-owned store outside /testbed."""

    def __init__(self, git_dir: str, private: str) -> None:
        self.git_dir = git_dir
        self.index = os.path.join(private, "index")
        # What the reset writes (the blobs of base + test patch, without the canaries)
        # goes to root's private folder, never into the store: a store the tests may
        # read (``tests_read_git``) must not tell the canaries from the test patch.
        objects = os.path.join(private, "objects")
        os.makedirs(objects, mode=0o700, exist_ok=True)
        self.env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": private,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_INDEX_FILE": self.index,
            "GIT_OBJECT_DIRECTORY": objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(git_dir, "objects"),
        }

    def run(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = subprocess.run(
            ["git", "--git-dir", self.git_dir, "-c", "safe.directory=*", *args],
            input=stdin,
            capture_output=True,
            env=self.env,
            timeout=TOOL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise HarnessError(f"git {args[0]} failed: {message[-1] if message else '?'}")
        return done.stdout

    def entries(self, treeish: str, paths: list[str]) -> dict[str, tuple[str, str, str]]:
        """path -> (mode, type, object id) at ``treeish``, for each path that exists there."""
        found: dict[str, tuple[str, str, str]] = {}
        for start in range(0, len(paths), 500):
            batch = paths[start : start + 500]
            listing = self.run(
                "ls-tree", "-z", "--full-tree", treeish, "--", *[":(literal)" + p for p in batch]
            )
            for record in listing.split(b"\0"):
                if not record:
                    continue
                meta, _, name = record.partition(b"\t")
                mode, kind, oid = meta.decode().split()
                found[name.decode("utf-8", "surrogateescape")] = (mode, kind, oid)
        return found

    def index_entries(self, paths: list[str]) -> dict[str, tuple[str, str, str]]:
        """path -> (mode, "blob", object id) in the private index."""
        found: dict[str, tuple[str, str, str]] = {}
        listing = self.run("ls-files", "-s", "-z", "--", *[":(literal)" + p for p in paths])
        for record in listing.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, oid, _stage = meta.decode().split()
            found[name.decode("utf-8", "surrogateescape")] = (mode, "blob", oid)
        return found

    def blobs(self, oids: list[str]) -> dict[str, bytes]:
        if not oids:
            return {}
        out = self.run("cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode())
        contents: dict[str, bytes] = {}
        position = 0
        for oid in oids:
            end = out.index(b"\n", position)
            header = out[position:end].split()
            size = int(header[2])
            contents[oid] = out[end + 1 : end + 1 + size]
            position = end + 1 + size + 1
        return contents


def _ensure_parents(root: str, rel: str) -> None:
    """Every ancestor of ``rel`` a real directory: files or links in the way are removed."""
    current = root
    for part in rel.split("/")[:-1]:
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(current)
            os.mkdir(current, 0o755)


def _missing_parent(root: str, rel: str) -> bool:
    """Whether an ancestor of ``rel`` under ``root`` does not exist."""
    current = root
    for part in rel.split("/")[:-1]:
        current = os.path.join(current, part)
        if not os.path.lexists(current):
            return True
    return False


def apply_writes(root: str, operations: list[tuple]) -> None:
    """(path, kind, mode, data) in path order: "file", "link", "dir" or "absent"."""
    for path, kind, mode, data in sorted(operations, key=lambda op: op[0]):
        full = os.path.join(root, path)
        if kind == "absent" and _missing_parent(root, path):
            continue  # under a folder that went (a folder and its files both absent)
        _ensure_parents(root, path)
        if kind == "dir":
            try:
                if stat.S_ISDIR(os.lstat(full).st_mode):
                    continue
            except FileNotFoundError:
                pass
            remove(full)
            os.mkdir(full, 0o755)
            continue
        remove(full)
        if kind == "link":
            os.symlink(data, full)
        elif kind == "file":
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(full, mode)  # the umask must not decide the executable bit


def verify_writes(root: str, operations: list[tuple]) -> list[str]:
    """What differs from the expected state; empty when every path is as written (a
    file's bytes compared with the expected bytes themselves)."""
    problems = []
    for path, kind, mode, data in operations:
        full = os.path.join(root, path)
        current = root
        broken = False
        for part in path.split("/")[:-1]:
            current = os.path.join(current, part)
            try:
                if not stat.S_ISDIR(os.lstat(current).st_mode):
                    broken = True
            except FileNotFoundError:
                broken = kind != "absent"
            if broken:
                break
        if broken:
            problems.append(f"{path}: a parent folder is not a directory")
            continue
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            if kind != "absent":
                problems.append(f"{path}: missing")
            continue
        if kind == "absent":
            problems.append(f"{path}: should not exist")
        elif kind == "dir":
            if not stat.S_ISDIR(st.st_mode):
                problems.append(f"{path}: not a directory")
        elif kind == "link":
            if not stat.S_ISLNK(st.st_mode) or os.fsencode(os.readlink(full)) != data:
                problems.append(f"{path}: not the expected symbolic link")
        else:
            if not stat.S_ISREG(st.st_mode):
                problems.append(f"{path}: not a regular file")
                continue
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                content = handle.read(len(data) + 1)
            if content != data:
                problems.append(f"{path}: content differs from the expected file")
            elif bool(st.st_mode & 0o100) != bool(mode & 0o100):
                problems.append(f"{path}: executable bit differs")
    return problems


def operations_for(
    entries: dict[str, tuple[str, str, str]], paths: list[str], contents: dict[str, bytes]
) -> list[tuple]:
    operations = []
    for path in paths:
        entry = entries.get(path)
        if entry is None:
            operations.append((path, "absent", 0, b""))
            continue
        mode, kind, oid = entry
        if kind == "tree":
            operations.append((path, "dir", 0o755, b""))
        elif mode == "120000":
            operations.append((path, "link", 0, contents[oid]))
        elif kind == "blob":
            operations.append((path, "file", 0o755 if mode == "100755" else 0o644, contents[oid]))
        # submodules ("commit"): nothing to write
    return operations


_MAIN_BLOCK = re.compile(rb"^if\s+__name__\s*==", re.MULTILINE)


def with_canaries(operations: list[tuple], canaries: list[dict]) -> tuple[list[tuple], list[str]]:
    """The test files' operations with the canaries' code added; the names placed.

    A canary goes into a file the test patch leaves (never one it removes), before a
    top-level ``if __name__`` block (a file run as a script runs its tests there); one
    that defines a name the file already holds is left out, so that nothing of the file
    is shadowed. A twin (``after_line``) goes right after its original's last line (a
    canary shaped like its neighbour there too, or right above its first: ``at_line``),
    and only when the original's lines are those the host made it from (``anchor``)."""
    placed = []
    by_path = {op[0]: index for index, op in enumerate(operations)}
    result = list(operations)
    # Names are looked for, and a twin's lines counted, in the file as the test patch left
    # it (canaries may share an import alias among themselves). Twins go in first, each
    # file's from its last line up, so that the lines counted stay where they were.
    original = {op[0]: op[3] for op in operations}
    twins: dict[str, list[tuple[int, int, bytes]]] = {}
    ordered = [c for c in canaries if c.get("after_line") is not None]
    ordered += [c for c in canaries if c.get("after_line") is None]
    for canary in ordered:
        index = by_path.get(canary["file"])
        if index is None or result[index][1] != "file":
            continue
        path, kind, mode, data = result[index]
        names = [n.encode() for n in [canary["name"], *canary.get("defines", [])]]
        if any(
            re.search(rb"(?<![A-Za-z0-9_])" + re.escape(n) + rb"(?![A-Za-z0-9_])", original[path])
            for n in names
        ):
            continue
        code = canary["source"].encode()
        if canary.get("after_line") is not None:
            lines = re.findall(rb"[^\n]*\n|[^\n]+", original[path])  # git's lines
            first, last = canary.get("first_line") or 0, canary["after_line"]
            if not 1 <= first <= last <= len(lines) or not lines[last - 1].endswith(b"\n"):
                continue
            import hashlib  # here: only twins need it

            seen = hashlib.sha256(b"".join(lines[first - 1 : last])).hexdigest()
            if seen != canary.get("anchor"):
                continue
            # After its original's last line, or (``at_line``) the line above its first;
            # at one line, what goes after a test comes before what goes above the next.
            above = canary.get("at_line") is not None
            twins.setdefault(path, []).append((first - 1 if above else last, int(above), code))
            lines = re.findall(rb"[^\n]*\n|[^\n]+", original[path])  # git's lines
            for at, _, text in sorted(twins[path], key=lambda i: i[:2], reverse=True):
                lines.insert(at, text)
            result[index] = (path, kind, mode, b"".join(lines))
            placed.append(canary["name"])
            continue
        found = _MAIN_BLOCK.search(data)
        if found is None:
            data = data + (b"" if data.endswith(b"\n") or not data else b"\n") + code
        else:
            data = data[: found.start()] + code.lstrip(b"\n") + b"\n\n" + data[found.start() :]
        result[index] = (path, kind, mode, data)
        placed.append(canary["name"])
    return result, placed
