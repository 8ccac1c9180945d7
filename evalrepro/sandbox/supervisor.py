"""The trial supervisor: one attempt's phases, run where the code under test cannot reach.

It runs as the container's root, from the base image's own Python in isolated mode
(``python3 -I -S``), from a read-only mount outside the repo and the venv, with the
standard library only. The code under test only ever runs as the unprivileged test user
(who owns ``/testbed`` and can write nothing the supervisor keeps), with a pipe for its
output. The phases, in order::

    apply the model patch      as the test user: git apply, git apply --reject, patch
                               --fuzz=5; the tree is put back between tries
    protect                    files that collect, configure or run the tests, changed
                               by the patch, are restored to the base commit (or only
                               recorded, or make the trial invalid: the dataset's policy)
    reset                      the test patch's files are written as base + test patch
                               from the harness's own git store, then verified (every
                               process of the test user killed first)
    hide                       what says which tests are new (the repository's .git,
                               the harness's store) locked to root; the test user is
                               asked to read it, and the test patch and the program
    run the tests              as the test user, in a user namespace of its own (so the
                               process cap is this trial's), under a watchdog
                               (memory, processes, disk written, files created,
                               output, time); no bytecode cache but the image's is read
                               or written (an empty prefix of root's)
    fresh runs, re-runs        single tests, each alone in a fresh process, judged by
                               exit status (the re-runs: the failing tests the host names
                               on this process's stdin, the only thing it reads there),
                               each from the state the tests started from; the
                               second runner's are fresh runs of a plain driver
                               (``plain.py``) instead of the runner

Everything the host learns comes from one framed stream on this process's own stdout
(the code under test has no handle on it): ``FRAME`` headers (kind, length), then
events (JSON), harness log text, and the test output as data. The region of test output
is delimited by the framing, never by marker text that the tests can print.

The host imports this module for ``FRAME`` and the kinds, and for ``protected_reason``
(which files count as test infrastructure), so that each is defined once.
"""

from __future__ import annotations

import configparser
import ctypes
import fnmatch
import hashlib
import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

#: Version of the stream protocol and of the program this supervisor reads.
PROTOCOL = 1
#: A frame: kind (one byte), payload length (big-endian), then the payload.
FRAME = struct.Struct(">cI")
KIND_EVENT = b"E"  # a JSON object with an "event" key
KIND_LOG = b"L"  # harness log text (for people: test_output.txt before the region)
KIND_OUTPUT = b"O"  # test output bytes, in order: the region
MAX_PAYLOAD = 1 << 20
OUTPUT_CHUNK = 1 << 16

#: The fd number of the exit guard's pipe in the test processes (high: rarely reused).
GUARD_FD = 1017
GUARD_MODULE = "_evalrepro_guard"
#: Sorted first among .pth files, so its exit hook is registered first and runs last.
GUARD_PTH = "00-evalrepro-guard.pth"

#: Directory names that hold tests (the nearest such ancestor of a test file is a
#: test folder: everything in it is test infrastructure).
TEST_DIR_NAMES = frozenset({"test", "tests", "testing", "t", "spec", "__tests__"})
#: Files whose named sections configure the test run: only a change to those sections
#: counts as a change to test infrastructure. Keys are top-level tables/sections
#: (dotted for TOML and JSON).
#: Files whose pytest configuration pytest itself is asked about (``pytest_reading``).
PYTEST_READS = ("setup.cfg", "pyproject.toml", "tox.ini")

#: Compiled Python: what runs instead of a source when it sits beside it or in its cache.
BYTECODE_SUFFIXES = (".pyc", ".pyo")

SECTION_FILES = {
    "setup.cfg": ("tool:pytest", "pytest", "nosetests", "tool:nose"),
    "pyproject.toml": ("tool.pytest", "tool.nose"),
    "package.json": ("scripts", "jest", "mocha", "ava"),
}

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWUSER = 0x10000000
_TICK = 0.1  # watchdog period, seconds
_TOOL_TIMEOUT = 300  # seconds for one patch tool or git call
_TOOL_OUTPUT = 1 << 20  # bytes of a tool's output kept for the log
_GUARD_LINE = 8192
_DRAIN_SECONDS = 5.0
_REQUEST_SECONDS = 120.0  # the host's word on what to re-run, once the tests finished
_REQUEST_BYTES = 1 << 22


# --- the stream ------------------------------------------------------------------------


class Stream:
    """The one channel to the host: frames written to a private duplicate of stdout."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def frame(self, kind: bytes, payload: bytes) -> None:
        for start in range(0, max(len(payload), 1), MAX_PAYLOAD):
            chunk = payload[start : start + MAX_PAYLOAD]
            data = FRAME.pack(kind, len(chunk)) + chunk
            view = memoryview(data)
            while view:
                written = os.write(self.fd, view)
                view = view[written:]

    def event(self, name: str, **facts: object) -> None:
        event = as_text({"event": name, **facts})
        self.frame(KIND_EVENT, json.dumps(event, sort_keys=True).encode())

    def log(self, text: str) -> None:
        self.frame(KIND_LOG, neutralize(text).encode("utf-8", "backslashreplace"))


def neutralize(text: str) -> str:
    """Tool output in the harness log cannot pose as a harness line (``>>>>> ...``)."""
    lines = text.splitlines()
    return "".join(
        ("| " + line if line.lstrip().startswith((">>>>>", "+ : '>>>>>")) else line) + "\n"
        for line in lines
    )


# --- names: bytes shown as text --------------------------------------------------------

_C_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r"}
_C_UNESCAPES = {letter: chr(code) for code, letter in _C_ESCAPES.items()} | {'"': '"', "\\": "\\"}


def quote_name(raw: bytes) -> str:
    """A file name's bytes as text, losslessly and unambiguously (docs/threat-model.md).

    A name that is UTF-8 without control characters and does not start with ``"`` is
    itself. Any other is quoted as git quotes names: in double quotes, ``"`` and ``\\``
    escaped, control characters as C escapes (``\\n``, ``\\t``, ...) and every byte
    that is not part of a UTF-8 character as three octal digits (``"\\377.py"``); UTF-8
    characters stay as they are. :func:`unquote_name` gives the bytes back.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and not text.startswith('"') and not _has_control(text):
        return text
    out = []
    for char in raw.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\{code - 0xDC00:03o}")
        elif code in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        elif char in '"\\':
            out.append("\\" + char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def unquote_name(text: str) -> bytes:
    """The bytes of a name :func:`quote_name` showed as ``text``."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text.encode("utf-8", "surrogatepass")
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            digits = body[i + 1 : i + 4]
            if len(digits) == 3 and all(d in "01234567" for d in digits):
                out.append(int(digits, 8) & 0xFF)
                i += 4
                continue
            out += _C_UNESCAPES.get(body[i + 1], body[i + 1]).encode("utf-8", "surrogatepass")
            i += 2
            continue
        out += char.encode("utf-8", "surrogatepass")
        i += 1
    return bytes(out)


def _has_control(text: str) -> bool:
    return any(ord(char) < 0x20 or ord(char) == 0x7F for char in text)


def name_bytes(name: str) -> bytes:
    """The bytes of a name as this process holds it (``os`` decodes with surrogateescape;
    a surrogate that came through JSON is kept as its three bytes)."""
    try:
        return os.fsencode(name)
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def shown(name: str) -> str:
    """A file name from the tree as the host sees it: :func:`quote_name` of its bytes."""
    return quote_name(name_bytes(name))


def as_text(value: object) -> object:
    """Every string in ``value`` (JSON-shaped) that holds a lone surrogate (a name from
    the tree, an OS error quoting one, a guard record) escaped by :func:`shown`: what
    goes to the host is always Unicode text."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return shown(value)
        return value
    if isinstance(value, dict):
        return {as_text(key): as_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_text(item) for item in value]
    return value


# --- test infrastructure ---------------------------------------------------------------


def protected_reason(path: str, protection: dict) -> str | None:
    """Why ``path`` (relative, posix) is test infrastructure under ``protection``, if it is.

    Files named in SECTION_FILES are not answered here: only a change to their test
    sections counts, which needs their content (``sections_changed``). Compiled bytecode
    is, whatever the patterns: it runs in place of a source nobody verified.
    """
    if is_bytecode(path):
        return "compiled bytecode (runs in place of its source)"
    for folder in protection.get("test_dirs", ()):
        if path == folder or path.startswith(folder + "/"):
            return f"in test folder {folder}/"
    name = path.rsplit("/", 1)[-1]
    for pattern in protection.get("patterns", ()):
        subject = path if "/" in pattern else name
        if fnmatch.fnmatchcase(subject, pattern):
            return f"matches {pattern}"
    return None


def is_bytecode(path: str) -> bool:
    """A ``.pyc`` / ``.pyo`` file, or anything in a ``__pycache__`` folder (or that folder)."""
    return path.endswith(BYTECODE_SUFFIXES) or "__pycache__" in path.split("/")


def bytecode_source(path: str) -> str | None:
    """The source a bytecode file stands for (``a/__pycache__/m.cpython-311.pyc`` and the
    legacy ``a/m.pyc``: ``a/m.py``), or None."""
    if not path.endswith(BYTECODE_SUFFIXES):
        return None
    folder, _, name = path.rpartition("/")
    parts = folder.split("/") if folder else []
    if parts and parts[-1] == "__pycache__":
        parts, name = parts[:-1], name.split(".", 1)[0] + ".pyc"
    return "/".join([*parts, name[: -len(".pyc")] + ".py"])


def sections_changed(name: str, old: bytes | None, new: bytes | None) -> list[str]:
    """The test sections of a SECTION_FILES file that differ between two versions."""
    keys = SECTION_FILES.get(name, ())
    before, after = _sections(name, old), _sections(name, new)
    if before is None or after is None:
        # Unparseable on one side: the test sections cannot be shown to be unchanged.
        return list(keys) if before != after or before is None else []
    return [key for key in keys if before.get(key) != after.get(key)]


def _sections(name: str, data: bytes | None) -> dict | None:
    if data is None:
        return {}
    text = data.decode("utf-8", "replace")
    try:
        if name == "setup.cfg":
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            parser.read_string(text)
            return {s: dict(parser.items(s, raw=True)) for s in parser.sections()}
        if name == "pyproject.toml":
            try:
                import tomllib
            except ImportError:  # the python3 of an older suite (3.9): compare the text
                return _toml_tables_as_text(text)
            return _flatten_tables(tomllib.loads(text))
        loaded = json.loads(text)
        return loaded if isinstance(loaded, dict) else None
    except Exception:  # any parse failure: see sections_changed
        return None


#: The test run's PATH (its interpreter is the runner's).
TEST_PATH = "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: pytest's own reading of one config file (``findpaths.load_config_dict_from_file``, the
#: function its inifile discovery calls), in a fresh interpreter of the test environment,
#: isolated (-I: no repository, no PYTHON* variables on the path), as the test user.
_PYTEST_READS = """
import json, pathlib, sys
try:
    from _pytest.config.findpaths import load_config_dict_from_file
except Exception:
    print(json.dumps({"pytest": False}))
    raise SystemExit(0)
try:
    found = load_config_dict_from_file(pathlib.Path(sys.argv[1]))
except Exception as error:
    found = {"error": type(error).__name__ + ": " + str(error)[:200]}
print(json.dumps({"pytest": True, "config": found}, sort_keys=True, default=repr))
"""


def runner_python(path: str = TEST_PATH) -> str | None:
    """The interpreter the test command finds first (the runner's), if any."""
    for folder in path.split(":"):
        for name in ("python3", "python"):
            candidate = os.path.join(folder, name)
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def pytest_reading(
    python: str | None, name: str, data: bytes | None, user: User | None = None
) -> str | None:
    """What pytest reads as its configuration in file ``name`` holding ``data`` (None: no
    such file), as JSON text; None when the environment has no pytest to ask. ``user``:
    who runs the interpreter (the test user: the environment's code is the patch's when
    the repository is installed in it)."""
    if python is None:
        return None
    if data is None:
        return "absent"
    folder = tempfile.mkdtemp(prefix="evalrepro-reading-", dir="/tmp")
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, name)
        with open(path, "wb") as handle:
            handle.write(data)
        os.chmod(path, 0o644)
        ids = {} if user is None else {"user": user.uid, "group": user.gid, "extra_groups": []}
        done = subprocess.run(
            [python, "-I", "-c", _PYTEST_READS, path],
            cwd=folder,
            env={"PATH": TEST_PATH, "LC_ALL": "C.UTF-8", "HOME": folder},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
            **ids,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unreadable: {error}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        answer = json.loads(done.stdout.decode("utf-8", "replace"))
    except ValueError:
        return f"unreadable: exit {done.returncode}"
    if not isinstance(answer, dict) or not answer.get("pytest"):
        return None
    return json.dumps(answer.get("config"), sort_keys=True)


def _toml_tables_as_text(text: str) -> dict:
    """Each ``[table]`` of a TOML file as its text, with the tables above it as prefixes
    (``tool.pytest`` holds ``[tool.pytest.ini_options]``): enough to see which changed."""
    tables: dict = {}
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped.strip("[]").strip()
            continue
        if stripped and not stripped.startswith("#"):
            parts = current.split(".")
            for depth in range(1, len(parts) + 1):
                key = ".".join(parts[:depth])
                tables[key] = tables.get(key, "") + stripped + "\n"
    return tables


def _flatten_tables(table: dict, prefix: str = "") -> dict:
    flat: dict = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        flat[dotted] = value
        if isinstance(value, dict):
            flat.update(_flatten_tables(value, dotted + "."))
    return flat


# --- the tree: snapshots and restores --------------------------------------------------


def snapshot(root: str, skip: frozenset[str] = frozenset()) -> dict[str, tuple]:
    """Every entry under ``root`` (not following links, skipping .git and the relative
    paths in ``skip``) with its stat facts.

    Two snapshots differ exactly where a tool wrote: a patch cannot choose an inode or
    a nanosecond mtime.
    """
    entries: dict[str, tuple] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as listing:
                items = list(listing)
        except OSError:
            continue
        for item in items:
            if item.name == ".git":
                continue
            path = f"{rel}/{item.name}" if rel else item.name
            if path in skip:
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            entries[path] = (
                stat.S_IFMT(st.st_mode),
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                st.st_ino,
                st.st_ctime_ns,
            )
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
    return entries


def escaping_links(root: str, paths: list[str]) -> list[str]:
    """Links among ``paths`` that resolve outside ``root`` or into its .git.

    The host refuses such patches before any container; this is the same rule on what
    the tools really wrote, through links that were already in the repository.
    """
    top = os.path.realpath(root)
    found = []
    for path in paths:
        full = os.path.join(root, path)
        if not os.path.islink(full):
            continue
        resolved = os.path.realpath(full)
        inside = resolved == top or resolved.startswith(top + "/")
        if not inside or ".git" in os.path.relpath(resolved, top).split("/"):
            found.append(
                "a symbolic link that leaves the repository "
                f"({shown(path)} -> {shown(os.readlink(full))})"
            )
    return found


def changed_paths(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    # A directory's own stat changes when an entry in it does: that is not a change of
    # the directory unless its kind changed or it appeared or went.
    return sorted(
        p
        for p in changed
        if not (p in before and p in after and before[p][0] == after[p][0] == stat.S_IFDIR)
    )


class SavedState:
    """What the test user may write (the repository and every other writable folder), as
    it was when the tests started, kept in a folder of root's that the test user cannot
    enter; ``restore`` puts back everything a run changed since.

    Each fresh run and each re-run starts from this state, so nothing a run before it
    wrote (a file in /tmp, a marker in its home, bytecode in ``__pycache__``) can make it
    pass. Every test process is dead when it is used (the kill(-1) that ends a run): no
    one races it, and a changed parent is put back before anything below it."""

    def __init__(self, roots: list[str], store: str, skip: list[str]) -> None:
        self.roots = roots
        self.store = store
        #: Per root: the relative paths of the supervisor's own folders inside it.
        self.skip = [
            frozenset(
                os.path.relpath(s, root) for s in skip if s.startswith(root.rstrip("/") + "/")
            )
            for root in roots
        ]
        self.baseline: list[dict[str, tuple]] = []
        for index, root in enumerate(roots):
            entries = snapshot(root, self.skip[index])
            saved = os.path.join(store, str(index))
            os.mkdir(saved, 0o700)
            for rel in sorted(entries):
                _copy_entry(os.path.join(root, rel), os.path.join(saved, rel), recurse=False)
            self.baseline.append(entries)

    def restore(self) -> int:
        """Put back what changed since the state was saved (or last restored); how many
        paths were put back."""
        count = 0
        for index, root in enumerate(self.roots):
            before = self.baseline[index]
            now = snapshot(root, self.skip[index])
            changed = changed_paths(before, now)
            moded = [
                p
                for p in before.keys() & now.keys()
                if before[p][0] == now[p][0] == stat.S_IFDIR and before[p][1] != now[p][1]
            ]  # folders whose mode changed (changed_paths leaves folders out)
            done: set[str] = set()
            for rel in changed:  # sorted: a folder before what it holds
                parts = rel.split("/")
                if any("/".join(parts[:depth]) in done for depth in range(1, len(parts))):
                    continue  # put back with its folder
                full = os.path.join(root, rel)
                if rel in now:
                    _remove(full)
                if rel in before:
                    _copy_entry(os.path.join(self.store, str(index), rel), full, recurse=True)
                done.add(rel)
            for rel in moded:
                os.chmod(os.path.join(root, rel), stat.S_IMODE(before[rel][1]))
            if done or moded:
                self.baseline[index] = snapshot(root, self.skip[index])
            count += len(done) + len(moded)
        return count


def _copy_entry(source: str, target: str, *, recurse: bool) -> None:
    """``source`` (not followed) at ``target`` with its kind, content, mode, owner and
    times; a folder with what it holds when ``recurse``. Sockets and devices are not
    kept (a run's state cannot depend on one: nothing outlives its processes)."""
    st = os.lstat(source)
    kind = stat.S_IFMT(st.st_mode)
    if kind == stat.S_IFDIR:
        os.mkdir(target, 0o700)
        if recurse:
            with os.scandir(source) as listing:
                for item in listing:
                    _copy_entry(item.path, os.path.join(target, item.name), recurse=True)
    elif kind == stat.S_IFLNK:
        os.symlink(os.readlink(source), target)
    elif kind == stat.S_IFREG:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "rb") as reader, os.fdopen(out, "wb") as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)
    elif kind == stat.S_IFIFO:
        os.mkfifo(target, 0o600)
    else:
        return
    os.lchown(target, st.st_uid, st.st_gid)
    if kind != stat.S_IFLNK:
        os.chmod(target, stat.S_IMODE(st.st_mode))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def root_folder(prefix: str, mode: int) -> str:
    """A new empty folder of root's with ``mode``, where no other user can replace it (its
    parent and the parent's ancestors are root's and writable by root alone)."""
    for parent in ("/var/lib", "/"):
        try:
            chain = [parent] + [
                os.path.dirname(parent.rstrip("/")) or "/" for _ in range(parent.count("/"))
            ]
            if all(_root_only(os.lstat(p)) for p in chain):
                folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
                os.chmod(folder, mode)
                return folder
        except OSError:
            continue
    raise HarnessError("no folder of root's alone for the supervisor (/var/lib, /)")


def _root_only(st: os.stat_result) -> bool:
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == 0
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


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
            timeout=_TOOL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise HarnessError(f"git {args[0]} failed: {message[-1] if message else '?'}")
        return done.stdout

    def hash_kind(self) -> str:
        kind = self.run("rev-parse", "--show-object-format").decode().strip()
        return kind or "sha1"

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


class HarnessError(Exception):
    """The harness could not do its own part (not something the patch did)."""


def git_blob_id(data: bytes, kind: str) -> str:
    digest = hashlib.sha256() if kind == "sha256" else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


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


def _remove(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # does not follow links
    else:
        os.unlink(path)


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
            _remove(full)
            os.mkdir(full, 0o755)
            continue
        _remove(full)
        if kind == "link":
            os.symlink(data, full)
        elif kind == "file":
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(full, mode)  # the umask must not decide the executable bit


def verify_writes(root: str, operations: list[tuple], hash_kind: str) -> list[str]:
    """What differs from the expected state; empty when every path is as written."""
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
            if git_blob_id(content, hash_kind) != git_blob_id(data, hash_kind):
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


# --- no new user namespaces for the code under test ------------------------------------

#: (audit arch, unshare, clone, clone3) per machine.
_SYSCALLS = {
    "x86_64": (0xC000003E, 272, 56, 435),
    "aarch64": (0xC00000B7, 97, 220, 435),
}
_LD_W_ABS, _JEQ_K, _JSET_K, _JGE_K, _RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def no_user_namespaces_filter(machine: str) -> list[tuple[int, int, int, int]] | None:
    """A seccomp program: unshare/clone with CLONE_NEWUSER fail with EPERM, clone3 with
    ENOSYS (its flags cannot be read; glibc then falls back to clone), other ABIs of the
    machine (i386, x32) are refused. In a user namespace of its own, code under test could
    mount a tmpfs the watchdog never sees."""
    numbers = _SYSCALLS.get(machine)
    if numbers is None:
        return None
    audit, unshare, clone, clone3 = numbers
    deny, nosys = _RET_ERRNO | 1, _RET_ERRNO | 38
    x32 = (_JGE_K, 0, 1, 0x40000000) if machine == "x86_64" else (_JEQ_K, 0, 1, 0xFFFFFFFF)
    return [
        (_LD_W_ABS, 0, 0, 4),  # 0: A = arch
        (_JEQ_K, 1, 0, audit),  # 1: this machine's ABI -> 3
        (_RET_K, 0, 0, deny),  # 2: another ABI
        (_LD_W_ABS, 0, 0, 0),  # 3: A = syscall number
        x32,  # 4: x32 (x86_64) -> 5
        (_RET_K, 0, 0, deny),  # 5
        (_JEQ_K, 0, 1, clone3),  # 6: clone3 -> 7
        (_RET_K, 0, 0, nosys),  # 7
        (_JEQ_K, 1, 0, unshare),  # 8: unshare -> 10
        (_JEQ_K, 0, 3, clone),  # 9: clone -> 10, else 13
        (_LD_W_ABS, 0, 0, 16),  # 10: A = flags (low word of the first argument)
        (_JSET_K, 0, 1, _CLONE_NEWUSER),  # 11: CLONE_NEWUSER -> 12, else 13
        (_RET_K, 0, 0, deny),  # 12
        (_RET_K, 0, 0, _RET_ALLOW),  # 13
    ]


def install_seccomp(libc: ctypes.CDLL, program: list[tuple[int, int, int, int]]) -> None:
    """Load ``program`` for this process and its children (no_new_privs must be set)."""
    raw = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(raw)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(program), ctypes.addressof(buffer))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


# --- running as the test user ----------------------------------------------------------


class User:
    def __init__(self, spec: dict) -> None:
        self.uid = int(spec["uid"])
        self.gid = int(spec["gid"])
        self.name = str(spec["name"])
        self.home = str(spec["home"])

    def drop(self) -> None:
        os.setgroups([])
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)


def as_user(user: User, function, *args) -> str | None:
    """Run ``function(*args)`` in a child with the test user's ids; its error, if any."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_end)
            user.drop()
            os.umask(0o022)
            function(*args)
        except BaseException as error:  # report anything, never raise past the fork
            os.write(write_end, f"{type(error).__name__}: {error}".encode()[:4000])
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    message = _read_all(read_end, 4096)
    os.waitpid(pid, 0)
    return message.decode("utf-8", "replace") or None


def _read_all(fd: int, most: int) -> bytes:
    chunks = []
    total = 0
    with os.fdopen(fd, "rb") as handle:
        while True:
            chunk = handle.read(4096)
            if not chunk:
                break
            if total < most:
                chunks.append(chunk[: most - total])
            total += len(chunk)
    return b"".join(chunks)


def tool_env(user: User) -> dict[str, str]:
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": user.home,
        "USER": user.name,
        "LOGNAME": user.name,
        "LC_ALL": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }


# --- what the tests may not see ------------------------------------------------------


def lock_away(path: str) -> str | None:
    """``path`` (a folder or a file; a link: what it resolves to) made root's alone, closed
    to every other user; the path locked, or None when there is none. Only the top needs
    it: nothing under a folder the test user cannot enter can be opened by it, whoever
    owns what is inside (root owns it, so the test user cannot open it again)."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    os.chown(target, 0, 0, follow_symlinks=False)
    os.chmod(target, 0o700 if stat.S_ISDIR(st.st_mode) else 0o600)
    return target


def still_readable(paths: list[str]) -> None:
    """Run as the test user: fails naming each of ``paths`` it can list or read."""
    found = []
    for path in paths:
        try:
            os.listdir(path)
            found.append(path)
            continue
        except NotADirectoryError:
            pass
        except OSError:
            continue
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            found.append(path)
        except OSError:
            continue
    if found:
        raise PermissionError("readable by the test user: " + ", ".join(found))


def kill_leftovers() -> None:
    """Every process but init and this one killed, in one ``kill(-1)``, and what was ours
    reaped: before the reset, nothing of the test user's (a daemon left by a tool or by
    code pytest's config reader imported) may watch the test files being written."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


# --- the test run ----------------------------------------------------------------------


class Watchdog:
    """Measures the test user's processes together and says when a limit is crossed."""

    def __init__(
        self, uid: int, limits: dict, fs_path: str, roots: list[str] | None = None
    ) -> None:
        self.uid = uid
        self.limits = limits
        self.fs_path = fs_path
        self.peak = {"memory": 0, "pids": 0, "disk": 0, "inodes": 0}
        self.reaped_io_base = _io_written(os.getpid())
        #: Files and folders under the folders the test user can write (None: no limit).
        self.inodes = None if roots is None or "inodes" not in limits else InodeCount(roots)

    def processes(self) -> list[tuple[int, int]]:
        """(pid, threads) of every process of the test user in this container."""
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/status", "rb") as handle:
                    status = handle.read(4096)
            except OSError:
                continue
            uid = threads = None
            for line in status.split(b"\n"):
                if line.startswith(b"Uid:"):
                    uid = int(line.split()[1])
                elif line.startswith(b"Threads:"):
                    threads = int(line.split()[1])
            if uid == self.uid:
                found.append((int(name), threads or 1))
        return found

    def check(self) -> tuple[str, str] | None:
        procs = self.processes()
        pids = sum(threads for _, threads in procs)
        self.peak["pids"] = max(self.peak["pids"], pids)
        if pids >= self.limits["pids"]:
            return "pids", f"{pids} tasks reached the limit of {self.limits['pids']}"
        memory = _memory(pid for pid, _ in procs)
        self.peak["memory"] = max(self.peak["memory"], memory)
        if memory > self.limits["memory"]:
            return "memory", (
                f"{_size(memory)} in use by the test processes together, "
                f"limit {_size(self.limits['memory'])}"
            )
        available = _mem_available()
        if available is not None and available < self.limits["memory_reserve"]:
            return "memory", (
                f"the machine has {_size(available)} available, below the "
                f"reserve of {_size(self.limits['memory_reserve'])}"
            )
        written = sum(_io_written(pid) for pid, _ in procs)
        written += _io_written(os.getpid()) - self.reaped_io_base
        self.peak["disk"] = max(self.peak["disk"], written)
        if written > self.limits["disk"]:
            return "disk", f"{_size(written)} written, limit {_size(self.limits['disk'])}"
        if self.inodes is not None:
            created = self.inodes.step()
            self.peak["inodes"] = max(self.peak["inodes"], created)
            if created > self.limits["inodes"]:
                return "inodes", (
                    f"{created} files and folders created, limit {self.limits['inodes']}"
                )
        try:
            fs = os.statvfs(self.fs_path)
        except OSError:
            return None
        free = fs.f_bavail * fs.f_frsize
        if free < self.limits["disk_reserve"]:
            return "disk", (
                f"the filesystem has {_size(free)} free, below the reserve of "
                f"{_size(self.limits['disk_reserve'])}"
            )
        reserve = self.limits.get("inodes_reserve", 0)
        if fs.f_files and fs.f_favail < reserve:  # f_files 0: the filesystem has no count
            return "inodes", (
                f"the filesystem has {fs.f_favail} free inodes, below the reserve of {reserve}"
            )
        return None

    def last_count(self) -> tuple[str, str] | None:
        """After the tests: one whole count of what they left (a flood made between two
        passes by tests that then ended at once is counted here), bounded by the limit."""
        if self.inodes is None:
            return None
        created = self.inodes.recount(self.limits["inodes"])
        self.peak["inodes"] = max(self.peak["inodes"], created)
        if created > self.limits["inodes"]:
            return "inodes", (
                f"{created} files and folders created, limit {self.limits['inodes']} "
                "(counted after the tests)"
            )
        return None


#: Entries the inode count reads per watchdog tick, and how often a new pass starts.
_INODE_SLICE = 20_000
_INODE_PERIOD = 1.0


class InodeCount:
    """Files and folders the tests created (net): entries under the folders the test user
    can write, less those there before the tests. No counter of the kernel's is this
    trial's alone (a filesystem's free inodes are every trial's), so the tree is walked:
    at most ``_INODE_SLICE`` entries a tick (a flood costs a bounded time per tick), a
    new pass at most every ``_INODE_PERIOD`` seconds."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = roots
        self._pending: list[str] = []
        self._listing = None
        self._partial = 0
        self._next_pass = 0.0
        self._last = 0
        self.baseline = 0
        while not self._walk(1 << 62):
            pass
        self.baseline = self._partial

    def step(self) -> int:
        """Walk on for a slice; entries created so far (the larger of the last whole
        pass and the pass under way)."""
        if self._pending or self._listing is not None or time.monotonic() >= self._next_pass:
            self._walk(_INODE_SLICE)
        return max(self._last, self._partial) - self.baseline

    def recount(self, limit: int) -> int:
        """A new whole pass, read to its end or to ``limit`` entries past the baseline
        (enough to say the limit was crossed); the entries created."""
        self._pending, self._listing, self._partial = [], None, 0
        self._walk(self.baseline + limit + 1)
        if self._listing is not None:
            self._listing.close()
            self._listing = None
        return self._partial - self.baseline

    def _walk(self, budget: int) -> bool:
        """Read up to ``budget`` entries; True when a whole pass ended."""
        if not self._pending and self._listing is None:
            self._pending, self._partial = list(self.roots), 0
        seen = 0
        while seen < budget:
            if self._listing is None:
                if not self._pending:
                    self._last = self._partial
                    self._next_pass = time.monotonic() + _INODE_PERIOD
                    return True
                try:
                    self._listing = os.scandir(self._pending.pop())
                except OSError:
                    continue
            entry = next(self._listing, None)
            if entry is None:
                self._listing.close()
                self._listing = None
                continue
            seen += 1
            self._partial += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    self._pending.append(entry.path)
            except OSError:
                continue
        return False


def writable_roots(user: User, testbed: str) -> list[str]:
    """The folders the test user can create files in: the repository, its home, and any
    folder up to three levels below / that it owns or may write (``/tmp``, ``/var/tmp``,
    ``/dev/shm``, ``/run/lock``, ...), outermost only."""
    found = {testbed.rstrip("/") or "/", user.home.rstrip("/")}
    stack = [("/", 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.path in ("/proc", "/sys") or entry.path in found:
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (
                st.st_mode & stat.S_IWOTH
                or (st.st_uid == user.uid and st.st_mode & stat.S_IWUSR)
                or (st.st_gid == user.gid and st.st_mode & stat.S_IWGRP)
            ):
                found.add(entry.path)
            elif depth < 2:
                stack.append((entry.path, depth + 1))
    return sorted(p for p in found if not any(p.startswith(q + "/") for q in found if q != "/"))


def _memory(pids) -> int:
    """Anonymous and shared memory of these processes together, each page counted once.

    PSS splits shared pages among their users; shared-memory objects held open but not
    mapped (a memfd written with write()) are counted by inode, once.
    """
    total = 0
    mapped: set[tuple[int, int]] = set()
    held: dict[tuple[int, int], int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle.read().split(b"\n"):
                    if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                        total += int(line.split()[1]) * 1024
            with open(f"/proc/{pid}/maps", "rb") as handle:
                for line in handle.read().split(b"\n"):
                    fields = line.split(None, 5)
                    if len(fields) == 6 and fields[5].startswith(
                        (b"/memfd:", b"/dev/shm/", b"/SYSV")
                    ):
                        major, minor = fields[3].split(b":")
                        mapped.add((os.makedev(int(major, 16), int(minor, 16)), int(fields[4])))
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if not target.startswith(("/memfd:", "/dev/shm/")):
                        continue
                    st = os.stat(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                held[(st.st_dev, st.st_ino)] = st.st_blocks * 512
        except OSError:
            continue  # the process went away, or hides: the machine reserve still holds
    total += sum(size for key, size in held.items() if key not in mapped)
    return total


def _io_written(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/io", "rb") as handle:
            fields = dict(line.split(b": ") for line in handle.read().split(b"\n") if line)
        return int(fields[b"write_bytes"]) - int(fields.get(b"cancelled_write_bytes", 0))
    except (OSError, KeyError, ValueError):
        return 0


def cgroup_counters() -> dict[str, int]:
    """The container's own cgroup: out-of-memory kills and refused forks so far.

    Only a cgroup with a limit set is the container's own (root podman); rootless on
    cgroup v1 there is none, and what is mounted is not ours to read.
    """
    counters: dict[str, int] = {}
    for limit_file, events_file, key, name in (
        ("memory/memory.limit_in_bytes", "memory/memory.oom_control", b"oom_kill", "oom_kill"),
        ("memory.max", "memory.events", b"oom_kill", "oom_kill"),
        ("pids/pids.max", "pids/pids.events", b"max", "pids_max"),
        ("pids.max", "pids.events", b"max", "pids_max"),
    ):
        try:
            with open(f"/sys/fs/cgroup/{limit_file}", "rb") as handle:
                limit = handle.read().strip()
            if limit == b"max" or (limit.isdigit() and int(limit) >= 1 << 60):
                continue
            with open(f"/sys/fs/cgroup/{events_file}", "rb") as handle:
                for line in handle.read().split(b"\n"):
                    fields = line.split()
                    if len(fields) == 2 and fields[0] == key:
                        counters[name] = int(fields[1])
        except (OSError, ValueError):
            continue
    return counters


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as handle:
            for line in handle:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


class GuardRecords:
    """The exit guard's lines: which Python processes started, which exited normally.

    Written by code that runs inside the process under test, so they are evidence only
    for a *failure* (a missing exit record, a framework function replaced): they can
    never make a trial pass.
    """

    def __init__(self, changed: set[str] | None = None, testbed: str = "/testbed") -> None:
        self.started: dict[int, int] = {}  # pid -> ppid
        self.exited: set[int] = set()
        self.redirected: set[int] = set()
        self.findings: list[dict] = []
        #: Only replacements by code in files the patch changed count (the repo's own
        #: conftest may patch a framework on purpose).
        self.changed = changed
        self.testbed = testbed.rstrip("/") + "/"
        self._partial = b""
        self._discarding = False  # inside a line that grew past _GUARD_LINE

    def feed(self, data: bytes) -> None:
        lines = data.split(b"\n")
        last = lines.pop()
        for line in lines:
            if self._discarding:
                self._discarding = False  # the rest of an overlong line: dropped
                self._partial = b""
                continue
            line = self._partial + line
            self._partial = b""
            if len(line) <= _GUARD_LINE:
                self._line(line)
        if self._discarding:
            return
        self._partial += last
        if len(self._partial) > _GUARD_LINE:
            self._partial, self._discarding = b"", True

    def _line(self, line: bytes) -> None:
        kind, _, rest = line.partition(b" ")
        try:
            if kind == b"S" and len(self.started) < 100_000:
                pid, ppid = rest.split()[:2]
                self.started.setdefault(int(pid), int(ppid))
            elif kind == b"X":
                pid, _, payload = rest.partition(b" ")
                self.exited.add(int(pid))
                facts = json.loads(payload) if payload.startswith(b"{") else {}
                if not isinstance(facts, dict):
                    return
                if facts.get("redirected") is True:
                    self.redirected.add(int(pid))
                replaced = facts.get("replaced")
                for item in replaced[:20] if isinstance(replaced, list) else []:
                    if isinstance(item, dict) and len(self.findings) < 50:
                        self._finding(str(item.get("target"))[:300], str(item.get("file")))
        except (ValueError, AttributeError, TypeError, RecursionError):
            pass  # malformed: guard lines are untrusted

    def _finding(self, target: str, file: str) -> None:
        relative = file[len(self.testbed) :] if file.startswith(self.testbed) else None
        if relative is None or (self.changed is not None and relative not in self.changed):
            return
        finding = {"target": target, "file": shown(relative)[:500]}
        if finding not in self.findings:
            self.findings.append(finding)

    def runner_exit(self, main: int) -> tuple[str, str]:
        """clean / abnormal / unknown for the test command's Python runner processes."""
        runners = [pid for pid in self.started if pid == main]
        if not runners:
            runners = [pid for pid, ppid in self.started.items() if ppid == main]
        if not runners:
            return "unknown", "no Python runner reported to the exit guard"
        missing = [pid for pid in runners if pid not in self.exited]
        if missing:
            return "abnormal", (
                f"the test runner (pid {missing[0]}) ended without Python's normal "
                "shutdown (os._exit or a fatal signal)"
            )
        redirected = [pid for pid in runners if pid in self.redirected]
        if redirected:
            return "abnormal", (
                f"the test runner (pid {redirected[0]}) ended with its stdout or stderr "
                "sent away from the harness's pipe"
            )
        return "clean", ""


def guard_module(source: str, site_hooks: bool, pycache_prefix: str | None = None) -> bytes:
    """The exit guard as installed: its switches (``_SITE_HOOKS``: the repository's own
    sitecustomize and usercustomize run; ``_PYCACHE_PREFIX``: where every process looks
    for bytecode, None: as usual) as the first lines, then the module's source."""
    with open(source, "rb") as handle:
        return (
            b"_SITE_HOOKS = %s\n" % repr(bool(site_hooks)).encode()
            + b"_PYCACHE_PREFIX = %s\n" % repr(pycache_prefix).encode()
            + handle.read()
        )


def install_guard(
    source: str, testbed: str, site_hooks: bool, pycache_prefix: str | None = None
) -> list[str]:
    """Put the exit guard into every site directory of the image; where it went."""
    import glob

    module = guard_module(source, site_hooks, pycache_prefix)
    places = []
    candidates = sorted(glob.glob("/opt/venv/lib/python3*/site-packages"))
    candidates += [p for p in ("/usr/lib/python3/dist-packages",) if os.path.isdir(p)]
    for site in candidates:
        if os.path.realpath(site).startswith(os.path.realpath(testbed) + "/"):
            continue
        for name, data in (
            (GUARD_MODULE + ".py", module),
            (GUARD_PTH, f"import {GUARD_MODULE}\n".encode()),
        ):
            path = os.path.join(site, name)
            _remove(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        places.append(site)
    return places


class TestRun:
    def __init__(
        self,
        program: dict,
        stream: Stream,
        user: User,
        changed: list[str],
        integrity: Callable[[], list[str]] = list,
        *,
        command: str | None = None,
        fresh: bool = False,
    ) -> None:
        """``command``: the test command by default; ``fresh``: a fresh run's (its output
        is counted against the limit, not kept, and the user's site folder is not read:
        the run before could have written to it)."""
        self.integrity = integrity
        self.program = program
        self.command = command or program["test_command"]
        self.fresh = fresh
        self.stream = stream
        self.user = user
        self.limits = program["limits"]
        self.output_bytes = 0
        self.truncated = False
        self.stopped: tuple[str, str] | None = None
        self.status: int | None = None
        self.guard = GuardRecords(set(changed), program["testbed"])
        self.nested = False
        self.guard_fd: int | None = None

    def env(self, guard_inode: int) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("HOME", "USER", "LOGNAME", "PYTHONSAFEPATH")
        }
        env.update(
            PATH=TEST_PATH,
            HOME=self.user.home,
            USER=self.user.name,
            LOGNAME=self.user.name,
            EVALREPRO_GUARD=f"{GUARD_FD}:{guard_inode}:{self.program['testbed']}",
        )
        if self.fresh:
            env["PYTHONNOUSERSITE"] = "1"
        prefix = self.program.get("pycache_prefix")
        if prefix:
            # Every Python process compiles from the verified sources: no cache is read
            # beside them (a planted __pycache__) and none is written (the prefix is
            # root's and empty). The exit guard sets the same for a child whose
            # environment lost these.
            env.update(PYTHONPYCACHEPREFIX=prefix, PYTHONDONTWRITEBYTECODE="1")
        return env

    def launch(self) -> tuple[int, int, int]:
        """Start the test command; (pid, output fd, guard fd)."""
        out_r, out_w = os.pipe()
        guard_r, guard_w = os.pipe()
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        fail_r, fail_w = os.pipe()
        env = self.env(os.fstat(guard_w).st_ino)
        limits = self.limits
        libc = ctypes.CDLL(None, use_errno=True)
        seccomp = (
            None
            if self.program.get("allow_user_namespaces", False)
            else no_user_namespaces_filter(os.uname().machine)
        )
        self.namespaces_blocked = seccomp is not None
        pid = os.fork()
        if pid == 0:  # the test process: nothing here may return
            try:
                for fd in (out_r, guard_r, ready_r, go_w, fail_r):
                    os.close(fd)
                os.setsid()
                with open("/proc/self/oom_score_adj", "w") as handle:
                    handle.write("1000")  # the first the kernel kills, never the supervisor
                nested = (
                    self.program.get("user_namespace", True) and libc.unshare(_CLONE_NEWUSER) == 0
                )
                os.write(ready_w, b"u" if nested else b"n")
                os.read(go_r, 1)
                self.user.drop()
                # After the drop: a change of credentials clears the parent-death signal.
                libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                # In its own user namespace the process cap counts this trial only.
                resource.setrlimit(resource.RLIMIT_NPROC, (limits["pids"], limits["pids"]))
                resource.setrlimit(resource.RLIMIT_DATA, (limits["memory"], limits["memory"]))
                resource.setrlimit(resource.RLIMIT_FSIZE, (limits["disk"], limits["disk"]))
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
                libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
                if seccomp is not None:
                    install_seccomp(libc, seccomp)
                os.chdir(self.program["testbed"])
                os.umask(0o022)
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.dup2(guard_w, GUARD_FD)
                os.execve("/bin/bash", ["/bin/bash", "-c", self.command], env)
            except BaseException as error:
                try:
                    os.write(fail_w, f"{type(error).__name__}: {error}".encode()[:4000])
                finally:
                    os._exit(127)
        for fd in (out_w, guard_w, ready_w, go_r, fail_w):
            os.close(fd)
        mode = os.read(ready_r, 1)
        os.close(ready_r)
        if mode == b"u":
            # Its root is ours (so /proc shows the watchdog even a process that hides),
            # the test user is itself: nothing else of the container is mapped.
            maps = f"0 0 1\n{self.user.uid} {self.user.uid} 1\n"
            gmaps = f"0 0 1\n{self.user.gid} {self.user.gid} 1\n"
            with open(f"/proc/{pid}/uid_map", "w") as handle:
                handle.write(maps)
            with open(f"/proc/{pid}/gid_map", "w") as handle:
                handle.write(gmaps)
            self.nested = True
        os.write(go_w, b"g")
        os.close(go_w)
        failure = _read_all(fail_r, 4096)
        if failure:
            os.waitpid(pid, 0)
            raise HarnessError(f"the test command could not start: {failure.decode()}")
        return pid, out_r, guard_r

    def run(self) -> None:
        self.stream.event("tests_finished", **self.execute())

    def execute(self) -> dict:
        """Run the command to its end (or a limit); the facts of a ``tests_finished``."""
        testbed = self.program["testbed"]
        watchdog = Watchdog(self.user.uid, self.limits, testbed, writable_roots(self.user, testbed))
        counters = cgroup_counters()
        started = time.monotonic()
        pid, out_fd, guard_fd = self.launch()
        self.guard_fd = guard_fd
        if not self.fresh:
            self.stream.event(
                "tests_started",
                user_namespace=self.nested,
                new_user_namespaces="refused" if self.namespaces_blocked else "allowed",
                git="readable" if tests_read_git(self.program) else "hidden",
            )
        deadline = started + self.limits["timeout"]
        poller = select.poll()
        open_fds = {out_fd, guard_fd}
        for fd in open_fds:
            os.set_blocking(fd, False)
            poller.register(fd, select.POLLIN)
        next_tick = started
        while self.status is None and self.stopped is None:
            now = time.monotonic()
            wait = max(0.0, min(next_tick, deadline) - now)
            for fd, _ in poller.poll(int(wait * 1000) + 1):
                if not self._read(fd):
                    poller.unregister(fd)
                    open_fds.discard(fd)
            self._reap(pid)
            now = time.monotonic()
            if self.status is None and now >= deadline:
                self.stopped = ("timeout", f"the tests ran longer than {self.limits['timeout']} s")
            elif self.status is None and now >= next_tick:
                self.stopped = self.stopped or watchdog.check()
                next_tick = now + _TICK
        # The runner is done (or stopped): nothing of the test user may outlive it.
        self._kill_all()
        drain_until = time.monotonic() + _DRAIN_SECONDS
        while open_fds and time.monotonic() < drain_until:
            for fd, _ in poller.poll(100):
                if not self._read(fd):
                    poller.unregister(fd)
                    open_fds.discard(fd)
            self._kill_all()
        while self.status is None:
            self._reap(pid, block=True)
        for fd in (out_fd, guard_fd):
            os.close(fd)
        self._reap(pid)
        if self.stopped is None:
            self.stopped = watchdog.last_count()
        watchdog_peak = dict(watchdog.peak)
        if self.stopped is None:
            # The kernel's own limits (root podman's cgroup) are a backstop: name them.
            after = cgroup_counters()
            if after.get("oom_kill", 0) > counters.get("oom_kill", 0):
                self.stopped = (
                    "memory",
                    "the kernel's out-of-memory killer stopped a test "
                    "process at the container's cgroup limit",
                )
            elif after.get("pids_max", 0) > counters.get("pids_max", 0):
                self.stopped = ("pids", "the container's cgroup refused a fork at its limit")
        exit_code, killed_by = _exit_code(self.status)
        runner = self.guard.runner_exit(pid)
        changed_during_run = self.integrity()
        return dict(
            exit_code=exit_code,
            signal=killed_by,
            seconds=round(time.monotonic() - started, 3),
            output_bytes=self.output_bytes,
            output_truncated=self.truncated,
            stopped=None
            if self.stopped is None
            else {"limit": self.stopped[0], "detail": self.stopped[1]},
            runner_exit=runner[0],
            runner_detail=runner[1],
            replaced=self.guard.findings,
            changed_during_run=changed_during_run,
            peak=watchdog_peak,
        )

    def _read(self, fd: int) -> bool:
        try:
            data = os.read(fd, OUTPUT_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        if fd == self.guard_fd:
            self.guard.feed(data)
            return True
        room = self.limits["output"] - self.output_bytes
        if room <= 0:
            return True
        kept = data[:room]
        self.output_bytes += len(kept)
        if not self.fresh:
            self.stream.frame(KIND_OUTPUT, kept)
        if len(kept) < len(data) or self.output_bytes >= self.limits["output"]:
            self.truncated = True
            self.stopped = self.stopped or (
                "output",
                f"the tests printed more than {_size(self.limits['output'])}",
            )
        return True

    def _reap(self, main: int, block: bool = False) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                if self.status is None:
                    self.status = 0
                return
            if pid == 0:
                return
            if pid == main:
                self.status = status
                if block:
                    return

    def _kill_all(self) -> None:
        # kill(-1) from the container's root: every process but init and this one, in
        # one pass under the kernel's task lock (a fork bomb cannot outrun it).
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _exit_code(status: int | None) -> tuple[int | None, int | None]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None


# --- the phases ------------------------------------------------------------------------


def tests_read_git(program: dict) -> bool:
    """Whether the dataset declared that its tests read the repository's git data."""
    return bool(program["protection"].get("tests_read_git", False))


class Trial:
    def __init__(self, program: dict, stream: Stream, program_path: str | None = None) -> None:
        self.program = program
        self.program_path = program_path
        self.stream = stream
        self.testbed = program["testbed"]
        self.user = User(program["user"])
        self.private = tempfile.mkdtemp(prefix="evalrepro-supervisor-", dir="/var/tmp")
        self.git = Git(program["git_dir"], self.private)
        self.base = program["base_commit"]
        self._python: str | bool | None = False  # the test environment's, when first asked
        self.state: SavedState | None = None  # what the lone runs start from
        self.placed: list[str] = []  # the canaries the reset placed
        self.restored = 0  # paths put back before the lone runs

    def run(self) -> None:
        started = time.monotonic()
        before = snapshot(self.testbed)
        method, changed = self.apply_model_patch(before)
        escapes = escaping_links(self.testbed, changed) if method else []
        self.stream.event(
            "patch",
            status="unsafe" if escapes else "applied" if method else "rejected",
            method=method,
            changed=[shown(path) for path in changed[:2000]],
            changed_total=len(changed),
            detail="; ".join(escapes[:5]),
            seconds=round(time.monotonic() - started, 3),
        )
        if method is None or escapes:
            return
        protected = self.protect(changed)
        if self.program["protection"]["policy"] == "invalid" and protected:
            return  # the trial is invalid by policy: running the tests would change nothing
        kill_leftovers()
        test_files = self.reset_test_files(protected)
        self.hide()
        prefix = root_folder("evalrepro-pycache-", 0o555)
        self.program["pycache_prefix"] = prefix
        if self.program.get("guard", True):
            site_hooks = self.program["protection"].get("site_hooks", False)
            sites = install_guard(self.program["guard_source"], self.testbed, site_hooks, prefix)
            self.stream.event("guard", sites=sites)
        if self.program.get("fresh") or self.program.get("rerun"):
            # Saved before the run: each lone run starts from it, whatever the run wrote.
            store = root_folder("evalrepro-state-", 0o700)
            roots = writable_roots(self.user, self.testbed)
            self.state = SavedState(roots, store, [self.private, store, prefix])
        before_tests = snapshot(self.testbed)
        hash_kind = self.git.hash_kind()

        def integrity() -> list[str]:
            return self.changed_while_running(test_files, before_tests, hash_kind)

        TestRun(self.program, self.stream, self.user, changed, integrity).run()
        if self.program.get("fresh"):
            self.fresh_runs(changed, integrity)
        if self.program.get("rerun"):
            self.reruns(changed, integrity)

    def hide(self) -> None:
        """After the reset, before any test runs: what says which tests are the test
        patch's is made unreadable to the test user, and the test user is asked.

        The test patch and the program are in root's folder from the start (the host
        mounts it so). The repository's ``.git`` and the harness's store hold the base:
        with them, ``git diff`` or ``git show HEAD:<file>`` says which tests are new.
        They are locked away unless the dataset declared that its tests read git
        (``protection.tests_read_git``, recorded in ``tests_started``). Whatever is still
        readable after this is the harness's failure, never a trial that runs."""
        private = [os.path.dirname(self.program["test_patch"]), self.program["test_patch"]]
        if self.program_path is not None:
            private.append(self.program_path)
        locked = []
        if not tests_read_git(self.program):
            for path in (os.path.join(self.testbed, ".git"), self.program["git_dir"]):
                done = lock_away(path)
                if done is not None:
                    locked.append(done)
        # The supervisor's own folder (its index names the test files' blobs) too.
        error = as_user(self.user, still_readable, [*private, *locked, self.private])
        if error:
            raise HarnessError(f"the test user can still read what names the tests: {error}")
        self.stream.log(f"hidden from the tests: {', '.join([private[0], *locked])}")

    def fresh_runs(self, changed: list[str], integrity: Callable[[], list[str]]) -> None:
        """Each fresh run of the program alone, in a process of its own: how it ended.

        A canary the reset did not place has nothing to run. Each run has the trial's
        limits (its timeout too): one test alone takes no longer than the whole run."""
        results = []
        for run in self.program["fresh"]:
            if run["expect"] == "fail" and run["test"] not in self.placed:
                continue
            results.append(self.run_alone(run, changed))
        self.stream.event(
            "fresh", runs=results, changed_during_run=integrity(), restored=self.restored
        )
        self.restored = 0

    def reruns(self, changed: list[str], integrity: Callable[[], list[str]]) -> None:
        """The runs the host names on stdin (it parsed the log: the failing tests, and a
        must-fail canary among them), each alone; a test up to the plan's ``times``, until
        one exits 0; the canary once, if the reset placed it."""
        asked = read_request(0, _REQUEST_SECONDS)
        results = []
        for run in asked or []:
            if run["expect"] == "fail" and run["test"] not in self.placed:
                continue
            times = 1 if run["expect"] == "fail" else self.program["rerun"]["times"]
            for _ in range(times):
                results.append(self.run_alone(run, changed))
                if results[-1]["exit_code"] == 0:
                    break
        self.stream.event(
            "rerun",
            runs=results,
            asked=-1 if asked is None else len(asked),
            changed_during_run=integrity(),
            restored=self.restored,
        )

    def run_alone(self, run: dict, changed: list[str]) -> dict:
        """One run of a single test in a fresh process, from the state the tests started
        from: how it ended (a ``FreshResult``)."""
        if self.state is not None:
            self.restored += self.state.restore()
        test = TestRun(
            self.program, self.stream, self.user, changed, command=run["command"], fresh=True
        )
        facts = test.execute()
        return {
            "test": run["test"],
            "exit_code": facts["exit_code"],
            "signal": facts["signal"],
            "seconds": facts["seconds"],
            "stopped": facts["stopped"]["limit"] if facts["stopped"] else None,
            "runner_exit": facts["runner_exit"],
            "runner": run.get("runner", ""),
        }

    def changed_while_running(
        self, test_files: list[tuple], before: dict[str, tuple], hash_kind: str
    ) -> list[str]:
        """Test files, and files named like test infrastructure, that the run changed.

        Code under test runs as the user who owns /testbed: it could rewrite a test module
        that is yet to be collected, or plant a conftest.py in a folder yet to be visited.
        Other files the tests write (caches, fixtures, temporary files) are theirs.
        """
        found = [
            "{} (a test file: {})".format(*_shown_problem(problem, test_files).split(": ", 1))
            for problem in verify_writes(self.testbed, test_files, hash_kind)
        ]
        patterns = self.program["protection"].get("patterns", ())
        tests = {op[0] for op in test_files}
        for path in changed_paths(before, snapshot(self.testbed)):
            name = path.rsplit("/", 1)[-1]
            source = bytecode_source(path)
            if any(fnmatch.fnmatchcase(path if "/" in p else name, p) for p in patterns):
                found.append(f"{shown(path)} (test infrastructure)")
            elif source is not None and (
                source in tests or protected_reason(source, self.program["protection"])
            ):
                # The tests' processes write no bytecode (an empty prefix of root's): this
                # is code standing in for a test file or test infrastructure.
                found.append(f"{shown(path)} (bytecode of {shown(source)})")
        return found[:50]

    def apply_model_patch(self, before: dict[str, tuple]) -> tuple[str | None, list[str]]:
        env = tool_env(self.user)
        for method, argv in self.program["patch_commands"]:
            done = _run_as(self.user, argv, self.testbed, env)
            self.stream.log(f"$ {' '.join(argv)}\n{done[1]}")
            after = snapshot(self.testbed)
            changed = changed_paths(before, after)
            if done[0] == 0:
                return method, changed
            if changed:
                self.restore(changed)
        return None, []

    def restore(self, paths: list[str]) -> list[tuple]:
        """Paths back to the base commit (as the test user); the operations done."""
        entries = self.git.entries(self.base, paths)
        contents = self.git.blobs(sorted({e[2] for e in entries.values() if e[1] == "blob"}))
        operations = operations_for(entries, paths, contents)
        error = as_user(self.user, apply_writes, self.testbed, operations)
        if error:
            raise HarnessError(f"restoring {len(paths)} paths failed: {error}")
        return operations

    def protect(self, changed: list[str]) -> list[dict]:
        protection = self.program["protection"]
        touched = []
        sectioned = [
            p
            for p in changed
            if p.rsplit("/", 1)[-1] in SECTION_FILES and protected_reason(p, protection) is None
        ]
        base_contents = {}
        if sectioned:
            entries = self.git.entries(self.base, sectioned)
            blobs = self.git.blobs([e[2] for e in entries.values() if e[1] == "blob"])
            base_contents = {
                p: blobs.get(entries[p][2]) if p in entries else None for p in sectioned
            }
        for path in changed:
            reason = protected_reason(path, protection)
            if reason is None and path in base_contents:
                now = _read_file(os.path.join(self.testbed, path))
                name = path.rsplit("/", 1)[-1]
                sections = sections_changed(name, base_contents[path], now)
                if sections:
                    reason = "changes its test sections " + ", ".join(sections)
                elif name in PYTEST_READS and self._pytest_reads_differently(
                    name, base_contents[path], now
                ):
                    reason = "changes the configuration pytest reads from it"
            if reason is not None:
                touched.append({"path": path, "reason": reason})
        policy = protection["policy"]
        action = {"restore": "restored", "record": "recorded", "invalid": "recorded"}[policy]
        if touched and policy == "restore":
            self.restore([t["path"] for t in touched])
        for item in touched:
            item["action"] = action
        self.stream.event(
            "protect",
            policy=policy,
            touched=[{**item, "path": shown(item["path"])} for item in touched[:2000]],
            touched_total=len(touched),
        )
        if touched:
            self.stream.log(
                f"test infrastructure changed by the patch ({action}): "
                + ", ".join(shown(t["path"]) for t in touched[:50])
            )
        return touched

    def _pytest_reads_differently(self, name: str, old: bytes | None, new: bytes | None) -> bool:
        """Whether pytest itself reads another configuration from the file than at the
        base: the runner's own parser, never a look-alike (a ``\\r`` or ``\\x1c`` that
        configparser keeps inside a line is a line break to pytest)."""
        if self._python is False:
            self._python = runner_python()
        before = pytest_reading(self._python, name, old, self.user)
        if before is None:
            return False  # no pytest in the environment: nothing reads it as pytest does
        return before != pytest_reading(self._python, name, new, self.user)

    def reset_test_files(self, protected: list[dict]) -> list[tuple]:
        """The test patch's files as base + test patch; restored files verified too."""
        started = time.monotonic()
        files = list(self.program["test_files"])
        self.git.run("read-tree", self.base)
        if not self.program["test_patch_empty"]:
            try:
                self.git.run("apply", "--cached", "--whitespace=nowarn", self.program["test_patch"])
            except HarnessError as error:
                self.stream.event("reset", ok=False, reason="test_patch_failed", detail=str(error))
                raise Stop from None
        expected = self.git.index_entries(files) if files else {}
        contents = self.git.blobs(sorted({e[2] for e in expected.values()}))
        planned = self.program.get("canaries", [])
        operations = operations_for(expected, files, contents)
        operations += self._outside_operations(planned, files)
        operations, canaries = with_canaries(operations, planned)
        error = as_user(self.user, apply_writes, self.testbed, operations)
        hash_kind = self.git.hash_kind()
        restored = []
        if self.program["protection"]["policy"] == "restore" and protected:
            paths = [p["path"] for p in protected if p["path"] not in set(files)]
            entries = self.git.entries(self.base, paths)
            blobs = self.git.blobs(sorted({e[2] for e in entries.values() if e[1] == "blob"}))
            restored = operations_for(entries, paths, blobs)
        problems = [f"writing the test files: {error}"] if error else []
        problems += verify_writes(self.testbed, operations + restored, hash_kind)
        self.stream.event(
            "reset",
            ok=not problems,
            reason=None if not problems else "verification_failed",
            detail="; ".join(_shown_problem(p, operations + restored) for p in problems[:20]),
            test_files=len(files),
            verified=len(operations) + len(restored),
            seconds=round(time.monotonic() - started, 3),
            canaries=canaries,
        )
        if problems:
            raise Stop
        self.placed = canaries
        return operations

    def _outside_operations(self, canaries: list[dict], files: list[str]) -> list[tuple]:
        """Writes of the test files outside the test patch: every one the plan kept, and
        any a canary goes into, each as it is in /testbed, and only where that is the
        base's file (the host drew its canaries from the base's bytes; a file the patch
        changed is left as it is). All are written, canaries or not: a file rewritten
        only when it holds canaries would tell code under test where they are."""
        kept = set(self.program.get("outside_files") or [])
        extra = sorted((kept | {c["file"] for c in canaries}) - set(files))
        if not extra:
            return []
        entries = {p: e for p, e in self.git.index_entries(extra).items() if e[0] != "120000"}
        blobs = self.git.blobs(sorted({e[2] for e in entries.values()}))
        found = []
        for path, (mode, _, oid) in sorted(entries.items()):
            if _read_file(os.path.join(self.testbed, path)) == blobs.get(oid):
                found.append((path, "file", 0o755 if mode == "100755" else 0o644, blobs[oid]))
        return found


class Stop(Exception):
    """The phases end here; the events already say why."""


def _shown_problem(problem: str, operations: list[tuple]) -> str:
    """A ``path: what`` problem of :func:`verify_writes` with its path :func:`shown`."""
    for operation in operations:
        if problem.startswith(operation[0] + ": "):
            return shown(operation[0]) + problem[len(operation[0]) :]
    return problem


def _read_file(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(1 << 24)


def _run_as(user: User, argv: list[str], cwd: str, env: dict) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            user=user.uid,
            group=user.gid,
            extra_groups=[],
            umask=0o022,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=_TOOL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or b""
        return 124, output[:_TOOL_OUTPUT].decode("utf-8", "replace") + "\n(timed out)"
    return done.returncode, done.stdout[:_TOOL_OUTPUT].decode("utf-8", "replace")


def read_request(fd: int, seconds: float) -> list[dict] | None:
    """The host's list of runs (JSON, one line, then end of file), or None: no word in
    time, or not a list of runs."""
    deadline = time.monotonic() + seconds
    data = b""
    while len(data) <= _REQUEST_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    try:
        runs = json.loads(data)
    except ValueError:
        return None
    keys = ("test", "expect", "command")
    if not isinstance(runs, list) or not all(
        isinstance(r, dict) and all(isinstance(r.get(k), str) for k in keys) for r in runs
    ):
        return None
    return runs


def load_program(path: str) -> dict:
    with open(path, "rb") as handle:
        program = json.loads(handle.read(1 << 24))
    if program.get("record") != "TrialProgram" or program.get("schema_version") != PROTOCOL:
        raise HarnessError(
            f"{path} is not a TrialProgram of schema {PROTOCOL} (a harness version mismatch)"
        )
    return program


def main(argv: list[str]) -> int:
    # The stream gets a private descriptor; fd 1 then points at stderr, so nothing else
    # in this process (a library's print) can write into the stream.
    stream = Stream(os.dup(1))
    os.dup2(2, 1)
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    phase = "start"
    try:
        stream.event(
            "start",
            protocol=PROTOCOL,
            python=sys.version.split()[0],
            uid=os.geteuid(),
            pid=os.getpid(),
        )
        if os.geteuid() != 0:
            raise HarnessError("the supervisor must run as the container's root")
        phase = "load"
        program = load_program(argv[1])
        phase = "trial"
        Trial(program, stream, argv[1]).run()
    except Stop:
        pass
    except BrokenPipeError:
        return 1  # the host went away; nothing left to tell
    except BaseException as error:  # the harness's own failure: an infrastructure error
        detail = f"{type(error).__name__}: {error}"
        try:
            stream.event("error", phase=phase, detail=detail[:2000])
        except OSError:
            return 1
        if not isinstance(error, (HarnessError, OSError, subprocess.SubprocessError)):
            import traceback

            traceback.print_exc()
    try:
        stream.event("done")
    except OSError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
