"""The test files a test command runs outside the test patch, found at plan time.

The host draws a trial's canaries (``evalrepro.grade.canary``) from what it holds. A test
patch shows the files it touches; a directive that is a folder, a command that runs the
whole suite, also runs the base's other test files, and a forgery confined to those
(a PASS_TO_PASS test there that the patch breaks, reported passing) would meet no
canary. So the plan reads the base commit's tree from the repository source (the one the
image layers are built from), picks the files the runner collects there with its own
rules, and keeps their bytes, content-addressed (sha256 over the raw bytes), in the
cache; the TestSpec names each by path and digest, so its digest (and the trial ids,
the lockfile, ``verify``) covers them.

Collection rules, by the runner the command names:

* pytest: ``python_files`` from the base's ``pytest.ini`` / ``.pytest.ini`` /
  ``tox.ini`` / ``setup.cfg`` / ``pyproject.toml`` (first that sets a pytest section),
  else ``test_*.py *_test.py``; under each directive that is a folder (or ``testpaths``,
  or the whole tree, when the command names no file).
* anything else Python (``unittest`` discovery, Django's labels): ``test*.py``, under a
  directive that is a folder or a dotted package.

Bounded: at most ``MAX_FILES`` files and ``MAX_BYTES`` bytes are kept (those whose
tests the instance's PASS_TO_PASS list names first: only a PASS_TO_PASS test shown whole
gives a canary a neighbour; then by path). A file larger than ``MAX_FILE_BYTES`` or not
UTF-8 is left out. What is found beyond the bounds is counted in ``outside_left``; each
trial then draws its canaries in a random subset of ``evalrepro.grade.canary.OUTSIDE_PER_TRIAL`` of
the kept files.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import shlex
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path

from evalrepro import atomic
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.records.base import read_record
from evalrepro.records.testspec import CommitTree, OutsideFile, TestSpec
from evalrepro.sources.git import FULL_ID, RepoError

#: Files kept per instance, and their bytes in all.
MAX_FILES = 32
MAX_BYTES = 2 * 1024 * 1024
#: One file's bytes at most (a generated test module is no neighbour).
MAX_FILE_BYTES = 256 * 1024

_PYTEST_DEFAULT = ("test_*.py", "*_test.py")
_UNITTEST_DEFAULT = ("test*.py",)
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_NO_REPLACE_OBJECTS": "1",
    "LC_ALL": "C",
}


def _git(git_dir: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | _GIT_ENV
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd="/",
        check=False,
    )
    if done.returncode != 0:
        message = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        raise RepoError(f"git {args[0]} failed: {message}")
    return done.stdout


def _tree(git_dir: Path, commit: str, cache_dir: Path) -> dict[str, tuple[str, int]]:
    """path -> (blob id, size) of the regular files at ``commit``, kept in the cache by
    the commit's full id (a commit's tree never changes: a warm plan runs no git)."""
    resolved = commit if FULL_ID.fullmatch(commit) else None
    if resolved is None:
        resolved = _git(git_dir, "rev-parse", "--verify", f"{commit}^{{commit}}").decode()
        resolved = resolved.strip()
    kept = trees_of(cache_dir) / f"{resolved}.json"
    try:
        tree = read_record(kept, CommitTree)
    except UserError:  # none kept, or not one this evalrepro reads: listed again
        tree = None
    if tree is not None and tree.commit == resolved:
        return dict(tree.files)
    found = _listed_tree(git_dir, resolved)
    record = CommitTree(commit=resolved, files=found)
    atomic.write_text(kept, record.model_dump_json() + "\n")
    return found


def _listed_tree(git_dir: Path, commit: str) -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    for record in _git(git_dir, "ls-tree", "-r", "-l", "-z", "--full-tree", commit).split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid, size = meta.split()
        if kind == b"blob" and mode in (b"100644", b"100755"):
            found[path.decode("utf-8", "surrogateescape")] = (oid.decode(), int(size))
    return found


def _blobs(git_dir: Path, oids: Sequence[str]) -> dict[str, bytes]:
    if not oids:
        return {}
    out = _git(git_dir, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode())
    contents: dict[str, bytes] = {}
    position = 0
    for oid in oids:
        end = out.index(b"\n", position)
        size = int(out[position:end].split()[2])
        contents[oid] = out[end + 1 : end + 1 + size]
        position = end + 1 + size + 1
    return contents


def _pytest_settings(
    git_dir: Path, tree: dict[str, tuple[str, int]]
) -> tuple[list[str], list[str]]:
    """(python_files, testpaths) of the base's pytest configuration (root only)."""
    for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
        if name not in tree:
            continue
        text = _blobs(git_dir, [tree[name][0]])[tree[name][0]].decode("utf-8", "replace")
        section: dict[str, object] | None = None
        if name == "pyproject.toml":
            try:
                options = tomllib.loads(text).get("tool", {}).get("pytest", {})
            except tomllib.TOMLDecodeError:
                continue
            section = options.get("ini_options") if isinstance(options, dict) else None
        else:
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read_string(text)
            except configparser.Error:
                continue
            for key in ("pytest", "tool:pytest"):
                if parser.has_section(key):
                    section = dict(parser.items(key, raw=True))
                    break
        if section is None:
            continue  # pytest reads on to the next file only if this one has no section

        def words(value: object) -> list[str]:
            return value.split() if isinstance(value, str) else [str(v) for v in value or []]

        return words(section.get("python_files")), words(section.get("testpaths"))
    return [], []


def _pytest(command: str) -> bool:
    try:
        tokens = shlex.split(command)
    except ValueError:
        return False
    return any(t.rsplit("/", 1)[-1] in ("pytest", "py.test") or t == "pytest" for t in tokens)


def collected(
    tree: dict[str, tuple[str, int]],
    directives: Sequence[str],
    patterns: Sequence[str],
    testpaths: Sequence[str],
) -> list[str]:
    """The files of ``tree`` the runner collects for ``directives`` by name ``patterns``."""
    roots: list[str] = []
    folders = {p.rsplit("/", i)[0] for p in tree for i in range(1, p.count("/") + 1)}
    for directive in directives:
        if "::" in directive:
            continue  # one node of a file: nothing else of it runs
        d = directive.rstrip("/")
        if d in folders:
            roots.append(d)
        elif d.replace(".", "/") in folders:
            roots.append(d.replace(".", "/"))  # a dotted package label
        elif f"{d.replace('.', '/')}.py" in tree:
            roots.append(f"{d.replace('.', '/')}.py")  # a dotted module label
        elif d in tree:
            roots.append(d)
    if not directives:
        roots = [p.strip("/") for p in testpaths] or [""]
    found = []
    for path in sorted(tree):
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".py") or "__pycache__" in path.split("/"):
            continue
        inside = any(root == "" or path == root or path.startswith(root + "/") for root in roots)
        if not inside:
            continue
        if path in roots or any(fnmatch.fnmatchcase(name, p) for p in patterns):
            found.append(path)
    return found


def find_outside(git_dir: Path, spec: TestSpec, cache_dir: Path) -> tuple[list[OutsideFile], int]:
    """The test files ``spec``'s command runs at its base commit outside its test patch
    (kept bytes written to the cache's :func:`store_of`), and how many were left out by
    the bounds."""
    store = store_of(cache_dir)
    tree = _tree(git_dir, spec.base_commit, cache_dir)
    if _pytest(spec.test_cmd):
        patterns, testpaths = _pytest_settings(git_dir, tree)
        patterns = patterns or list(_PYTEST_DEFAULT)
    else:
        patterns, testpaths = list(_UNITTEST_DEFAULT), []
    touched = set(spec.eval_script.test_files)
    candidates = [
        p for p in collected(tree, spec.test_directives, patterns, testpaths) if p not in touched
    ]

    def named(path: str) -> bool:
        parts = path.removesuffix(".py").split("/")
        forms = [path] + [".".join(parts[i:]) for i in range(len(parts) - 1)]
        return any(form in test for test in spec.pass_to_pass for form in forms)

    candidates.sort(key=lambda p: (not named(p), p))
    kept: list[OutsideFile] = []
    total = 0
    fitting = [p for p in candidates if tree[p][1] <= MAX_FILE_BYTES]
    chosen: list[str] = []
    for path in fitting:
        if len(chosen) == MAX_FILES or total + tree[path][1] > MAX_BYTES:
            break
        chosen.append(path)
        total += tree[path][1]
    contents = _blobs(git_dir, sorted({tree[p][0] for p in chosen}))
    store.mkdir(parents=True, exist_ok=True)
    for path in chosen:
        data = contents[tree[path][0]]
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        digest = sha256_bytes(data)
        target = store / digest
        if not target.exists():
            staging = store / f".{digest}.{os.getpid()}"
            staging.write_bytes(data)
            os.replace(staging, target)
        kept.append(OutsideFile(path=path, sha256=digest, size=len(data)))
    return kept, len(candidates) - len(kept)


def outside_bytes(spec: TestSpec, store: Path) -> dict[str, bytes]:
    """The kept files' bytes by path, each checked against its digest (a file missing
    from the store, or changed, is left out: no canary there, never a wrong one)."""
    found: dict[str, bytes] = {}
    for entry in spec.outside_files:
        try:
            data = (store / entry.sha256).read_bytes()
        except OSError:
            continue
        if sha256_bytes(data) == entry.sha256:
            found[entry.path] = data
    return found


def store_of(cache_dir: Path) -> Path:
    """Where a cache keeps the outside files' bytes."""
    return Path(cache_dir) / "outside-files"


def trees_of(cache_dir: Path) -> Path:
    """Where a cache keeps commits' trees (:class:`CommitTree`), by full commit id."""
    return Path(cache_dir) / "commit-trees"
