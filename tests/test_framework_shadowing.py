"""A module of the repository cannot stand in for the test framework or the standard
library, and the repository's sitecustomize does not run unless the dataset says so.

The exit guard, loaded into every Python process of a test run, imports unittest,
doctest, pytest, pluggy, iniconfig and every top-level module of the standard library
(``test`` aside) from outside the repository whenever a copy exists there; ``python -m
unittest`` would otherwise run a ``unittest/`` folder or a ``difflib.py`` of the patch's.
The repository's own ``sitecustomize`` and ``usercustomize`` are taken as absent unless
``protection.site_hooks`` is on; the image's own run as usual. These run real
interpreters with the guard as the supervisor's ``.pth`` loads it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.sandbox import GUARD, SANDBOX_DIR
from evalrepro.sandbox.exitguard import GUARD_MODULE, GUARD_PTH, guard_module

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


# --- the standard library and the site hooks, in an environment like the image's -------
#
# The supervisor puts the guard into the site directory of the image's environment with a
# .pth line, so that it is in place from ``site`` on: before sitecustomize, and before
# ``python -m`` puts the repository first on the path. These tests build such an
# environment (a venv with this checkout's pytest on its path) outside the repository.

SITE_HOOK = "print('{who} {name} RAN')\n"


def image_env(root: Path, *, site_hooks: bool = False) -> tuple[Path, Path]:
    """A venv like the image's /opt/venv with the guard installed as the supervisor
    installs it: (its python, its site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    (site,) = root.glob("lib/python3*/site-packages")
    # The image's own packages: pytest and its plugins, outside the repository.
    (site / "environment.pth").write_text(str(Path(pytest.__file__).resolve().parents[1]) + "\n")
    install_guard_into(site, site_hooks=site_hooks)
    return root / "bin" / "python", site


def install_guard_into(site: Path, *, site_hooks: bool) -> None:
    (site / f"{GUARD_MODULE}.py").write_bytes(guard_module(str(GUARD), site_hooks))
    (site / GUARD_PTH).write_text(f"import {GUARD_MODULE}\n")


def run_in(
    python: Path | str, repo: Path, *args: str, guard: bool = True, env: dict | None = None
) -> str:
    """``python *args`` from the repository's folder, as the test command runs."""
    full = {"PATH": "/usr/bin:/bin", **(env or {})}
    if guard:
        full["EVALREPRO_GUARD"] = f"0:0:{repo}"
    done = subprocess.run(
        [str(python), *args],
        cwd=repo,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "testbed").mkdir()
    return tmp_path / "testbed"


LIST_TEST = (
    "import json\nimport unittest\n\n\n"
    "class ListTest(unittest.TestCase):\n"
    "    def test_lists_differ(self):\n"
    "        self.assertEqual(json.loads('[1, 2]'), [1, 3])\n"
)
RUNNERS = {
    "unittest": (["-m", "unittest", "-v"], "FAILED (failures=1)"),
    "pytest": (["-m", "pytest", "-p", "no:cacheprovider", "test_lists.py"], "1 failed"),
}


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_standard_library_modules_of_the_repository_do_not_shadow_the_real_ones(
    tmp_path, repo, runner
):
    # json the test imports, pprint the runners import, difflib what unittest writes its
    # diffs with (pytest imports it only when it reports a failure).
    for name in ("json", "difflib", "pprint"):
        (repo / f"{name}.py").write_text(SHADOW)
    (repo / "test_lists.py").write_text(LIST_TEST)
    python, _ = image_env(tmp_path / "image")
    args, failed = RUNNERS[runner]
    # Without the guard's variable the repository's modules win and "pass" the run...
    assert "SHADOW" in run_in(python, repo, *args, guard=False)
    # ...with it the runner reports the failure with the standard library's own diff.
    shown = run_in(python, repo, *args)
    assert "SHADOW" not in shown, shown
    assert failed in shown and "First differing element 1:" in shown, shown
    assert "- [1, 2]" in shown and "+ [1, 3]" in shown, shown  # difflib's ndiff


def test_a_standard_library_name_with_no_copy_outside_is_the_repositorys(tmp_path):
    # Nothing to take instead (winreg exists on Windows only): imported as usual.
    (tmp_path / "winreg.py").write_text("print('OURS')\n")
    assert "OURS" in run(tmp_path, "import winreg")


def test_compiled_in_and_frozen_modules_import_as_before(tmp_path):
    for name in ("time", "posix", "runpy", "zipimport"):
        (tmp_path / f"{name}.py").write_text(SHADOW)
    code = "import time, posix, runpy, zipimport; print(runpy.run_path, time.time() > 0)"
    shown = run(tmp_path, code)
    assert "SHADOW" not in shown and "function run_path" in shown and "True" in shown, shown


def test_a_test_package_of_the_repository_is_still_its_own(tmp_path, repo):
    # CPython's own test suite is the standard library's `test`; many projects have a
    # top-level test/ package that pytest imports by that name.
    outside = subprocess.run(
        [sys.executable, "-I", "-c", "import test; print(test.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    if outside.returncode != 0:
        pytest.skip("this Python has no `test` package: nothing could shadow it")
    (repo / "test").mkdir()
    (repo / "test" / "__init__.py").write_text("OURS = True\n")
    (repo / "test" / "test_own.py").write_text(
        "from test import OURS\n\n\ndef test_own():\n    assert OURS\n"
    )
    python, _ = image_env(tmp_path / "image")
    shown = run_in(python, repo, "-m", "pytest", "-p", "no:cacheprovider", "test/test_own.py")
    assert "1 passed" in shown, shown
    shown = run_in(python, repo, "-c", "import test; print(test.__file__)")
    assert shown.strip() == str(repo / "test" / "__init__.py"), shown


def user_site_env(root: Path, *, site_hooks: bool) -> tuple[str, Path, dict]:
    """The base Python with a user site directory holding the guard (usercustomize runs
    where the user site is on, outside a venv): (python, the directory, its env)."""
    python = getattr(sys, "_base_executable", sys.executable)
    env = {"PYTHONUSERBASE": str(root)}
    found = subprocess.run(
        [python, "-S", "-c", "import site; print(site.getusersitepackages())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    site = Path(found.stdout.strip())
    site.mkdir(parents=True)
    install_guard_into(site, site_hooks=site_hooks)
    return python, site, env


@pytest.mark.parametrize(
    ("hook", "reach"),
    [
        ("sitecustomize", "PYTHONPATH"),
        ("usercustomize", "PYTHONPATH"),
        # A .pth of a site directory names the repository, as `pip install -e` writes one.
        ("usercustomize", "editable install"),
    ],
)
def test_the_repositorys_site_hooks_run_only_when_the_dataset_says_so(tmp_path, repo, hook, reach):
    (repo / f"{hook}.py").write_text(SITE_HOOK.format(who="REPOSITORY", name=hook))
    for site_hooks in (False, True):
        root = tmp_path / f"image-{site_hooks}"
        if hook == "sitecustomize":
            python, site = image_env(root, site_hooks=site_hooks)
            env = {}
        else:
            python, site, env = user_site_env(root, site_hooks=site_hooks)
        if reach == "PYTHONPATH":
            env["PYTHONPATH"] = str(repo)
        else:
            (site / "__editable__.project-1.0.pth").write_text(f"{repo}\n")
        shown = run_in(python, repo, "-c", "print('tests')", env=env)
        if site_hooks:
            assert shown == f"REPOSITORY {hook} RAN\ntests\n", shown
        else:
            # Not run, and silent: site takes it as no such module at all...
            assert shown == "tests\n", shown
            # ...where without the guard's variable it would have run.
            assert "REPOSITORY" in run_in(python, repo, "-c", "pass", env=env, guard=False)


def test_a_sitecustomize_outside_the_repository_still_runs(tmp_path, repo):
    (repo / "sitecustomize.py").write_text(SITE_HOOK.format(who="REPOSITORY", name="sitecustomize"))
    python, _ = image_env(tmp_path / "image")
    image_hooks = tmp_path / "image-hooks"  # the image's own, on its PYTHONPATH
    image_hooks.mkdir()
    (image_hooks / "sitecustomize.py").write_text(
        SITE_HOOK.format(who="IMAGE", name="sitecustomize")
    )
    # The repository comes first on the path; the copy outside it is the one that runs.
    env = {"PYTHONPATH": f"{repo}:{image_hooks}"}
    assert "REPOSITORY" in run_in(python, repo, "-c", "pass", env=env, guard=False)
    shown = run_in(python, repo, "-c", "print('tests')", env=env)
    assert shown == "IMAGE sitecustomize RAN\ntests\n", shown
