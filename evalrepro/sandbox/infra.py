"""Test infrastructure: which files collect, configure or run the tests.

A patch that changes test infrastructure could make failing tests pass without fixing
anything; the protection phase restores such files (or records them, or makes the trial
invalid: the dataset's policy). Which files they are is decided here, by one rule that
the host uses too (``protected_reason``: the plan's protection and the patch checks):
test folders and patterns, compiled bytecode, the test sections of a few config files,
and what pytest itself reads from its config files (``pytest_reading``).
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess

from .user import User

#: Directory names that hold tests (the nearest such ancestor of a test file is a
#: test folder: everything in it is test infrastructure).
TEST_DIR_NAMES = frozenset({"test", "tests", "testing", "t", "spec", "__tests__"})
#: Files whose pytest configuration pytest itself is asked about (``pytest_reading``).
PYTEST_READS = ("setup.cfg", "pyproject.toml", "tox.ini")

#: Compiled Python: what runs instead of a source when it sits beside it or in its cache.
BYTECODE_SUFFIXES = (".pyc", ".pyo")

#: Files whose named sections configure the test run: only a change to those sections
#: counts as a change to test infrastructure. Keys are top-level tables/sections
#: (dotted for TOML and JSON).
SECTION_FILES = {
    "setup.cfg": ("tool:pytest", "pytest", "nosetests", "tool:nose"),
    "pyproject.toml": ("tool.pytest", "tool.nose"),
    "package.json": ("scripts", "jest", "mocha", "ava"),
}


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
            import configparser  # here: only a patch that changes setup.cfg needs it

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
    import shutil  # here, both: only a patch that changes pytest's config needs them
    import tempfile

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
