"""Every Python process of a test run compiles from the verified sources.

The supervisor gives the test run an empty folder of root's as its bytecode cache prefix
(``PYTHONPYCACHEPREFIX``) and ``PYTHONDONTWRITEBYTECODE``; the exit guard, loaded into
every Python process from ``site`` on, sets the same whatever the process's environment
says (code under test may start a child with a cleared environment). So a ``.pyc``
planted in ``__pycache__`` beside a module (an unchecked hash-based one, which CPython
loads without looking at the source) or pytest's own assertion-rewriting cache is never
read, and no process writes bytecode beside the sources. These run real interpreters
with the guard as the supervisor's ``.pth`` loads it.
"""

from __future__ import annotations

import importlib.util
import inspect
import marshal
import os
import py_compile
import struct
import sys
from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from evalrepro.sandbox import GUARD
from evalrepro.sandbox.exitguard import GUARD_MODULE, GUARD_PTH, guard_module
from tests.test_framework_shadowing import image_env, run_in


def planted_env(root: Path, prefix: Path | None) -> Path:
    python, site = image_env(root)
    (site / f"{GUARD_MODULE}.py").write_bytes(
        guard_module(str(GUARD), False, None if prefix is None else str(prefix))
    )
    (site / GUARD_PTH).write_text(f"import {GUARD_MODULE}\n")
    return python


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    folder = tmp_path / "pycache-prefix"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A module whose source says "source", and an unchecked .pyc of it that says "planted"."""
    repo = tmp_path / "testbed"
    (repo / "calc").mkdir(parents=True)
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "evaluator.py").write_text("VALUE = 'source'\n")
    planted = tmp_path / "planted.py"
    planted.write_text("VALUE = 'planted'\n")
    py_compile.compile(
        str(planted),
        cfile=str(repo / "calc" / "__pycache__" / f"evaluator.{sys.implementation.cache_tag}.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        doraise=True,
    )
    return repo


PRINT = ["-c", "import calc.evaluator as e; print(e.VALUE)"]


def cached(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*.pyc"))


def test_without_a_prefix_the_planted_bytecode_runs(tmp_path, repo):
    python = planted_env(tmp_path / "venv", None)
    assert run_in(python, repo, *PRINT).strip() == "planted"


def test_with_the_prefix_the_source_runs_and_nothing_is_written(tmp_path, repo, prefix):
    python = planted_env(tmp_path / "venv", prefix)
    before = cached(repo)
    env = {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
    assert run_in(python, repo, *PRINT, env=env).strip() == "source"
    # A child whose parent cleared its environment: the guard sets the same.
    assert run_in(python, repo, *PRINT, guard=False).strip() == "source"
    assert cached(repo) == before
    assert list(prefix.iterdir()) == []


def test_pytests_own_rewritten_test_modules_are_not_read_from_a_cache(tmp_path, prefix):
    repo = tmp_path / "testbed"
    (repo / "tests").mkdir(parents=True)
    source = repo / "tests" / "test_x.py"
    source.write_text("def test_x():\n    assert 1 == 2\n")
    # pytest's cache entry for the module (checked by the source's hash, or its mtime and
    # size), holding a test that passes.
    st = source.stat()
    code = compile("def test_x():\n    pass\n", str(source), "exec")
    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    cache = repo / "tests" / "__pycache__" / f"test_x.{tag}.pyc"
    cache.parent.mkdir()
    if "source_hash" in inspect.getsource(rewrite._read_pyc):  # pytest 8.4 on
        header = b"\x03\x00\x00\x00" + importlib.util.source_hash(source.read_bytes())[:8]
    else:
        header = b"\x00\x00\x00\x00" + struct.pack(
            "<II", int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF
        )
    cache.write_bytes(importlib.util.MAGIC_NUMBER + header + marshal.dumps(code))
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_x.py"]
    assert "1 passed" in run_in(planted_env(tmp_path / "plain", None), repo, *args)
    shown = run_in(planted_env(tmp_path / "venv", prefix), repo, *args, guard=False)
    assert "1 failed" in shown, shown
