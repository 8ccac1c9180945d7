"""A package of the repository cannot stand in for the test framework.

The exit guard, loaded into every Python process of a test run, imports unittest,
doctest, pytest, pluggy and iniconfig from outside the repository whenever a copy exists
there; ``python -m unittest`` would otherwise run a ``unittest/`` folder of the patch's.
These run real interpreters with the guard as the supervisor's ``.pth`` loads it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.run.sandbox import SANDBOX_DIR

SHADOW = "print('SHADOW')\nimport sys\nsys.exit(0)\n"


def run(testbed: Path, code: str, *, python: str = sys.executable, guard: bool = True) -> str:
    env = {"PATH": "/usr/bin:/bin"}
    if guard:
        env["EVALREPRO_GUARD"] = f"0:0:{testbed}"  # no pipe: no records, the import rule holds
    prelude = f"import sys; sys.path.insert(1, {str(SANDBOX_DIR)!r}); import guard; "
    done = subprocess.run(
        [python, "-c", (prelude if guard else "") + code],
        cwd=testbed,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("name", ["unittest", "doctest", "pytest", "_pytest", "pluggy"])
def test_a_framework_package_of_the_repository_is_not_imported(tmp_path, name):
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(SHADOW)
    code = f"import {name}; print({name}.__file__)"
    # Without the guard the repository's copy wins (the cwd is first on the path)...
    assert "SHADOW" in run(tmp_path, code, guard=False)
    # ...with it, the framework is the environment's own.
    shown = run(tmp_path, code)
    assert "SHADOW" not in shown and str(tmp_path) not in shown, shown


def test_a_module_file_of_the_repository_does_not_shadow_either(tmp_path):
    (tmp_path / "unittest.py").write_text(SHADOW)
    shown = run(tmp_path, "import unittest; print(unittest.TestCase)")
    assert "SHADOW" not in shown and "unittest.case.TestCase" in shown, shown


def test_the_repositorys_own_modules_import_as_before(tmp_path):
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc" / "__init__.py").write_text("VALUE = 42\n")
    assert run(tmp_path, "import calc; print(calc.VALUE)").strip() == "42"


def test_a_repository_that_is_the_framework_imports_its_own(tmp_path):
    # Debian's python3 has no pytest: the repository's _pytest is the only one, and is used
    # (pytest's own repository, installed from /testbed).
    (tmp_path / "_pytest").mkdir()
    (tmp_path / "_pytest" / "__init__.py").write_text("print('OURS')\n")
    assert "OURS" in run(tmp_path, "import _pytest", python="/usr/bin/python3")
