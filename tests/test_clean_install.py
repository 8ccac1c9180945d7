"""evalrepro as a user installs it: from its wheel, into an empty venv, with one extra or none.

The test venv has every extra and the test tools, which pull in much more: a module that
imports a package only another package depends on works here and is a traceback for a
user (``filelock`` was). Two checks:

- statically, every third-party import of every module maps to a distribution declared
  directly in the dependencies, or in the extra of the module that needs it;
- for real, the wheel is installed from PyPI (pip's cache) into a fresh venv, then each
  extra is added and removed again: every module imports, every entry point loads, every
  command answers ``--help``, and a missing extra is one line naming it.

The venv part takes a few minutes on a loaded machine; scripts/test runs it with the suite.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).with_name("clean_install_probe.py")
#: Code that runs in another Python environment than evalrepro's: the driver runs in the
#: agent's own venv (agents/venvs.py installs mini-swe-agent there), the demo repos are
#: projects of their own.
ELSEWHERE = ("evalrepro/agents/mini_swe_agent_driver.py", "evalrepro/demo/repos/")
#: Packages whose modules may need their extra when they load: the commands that use them
#: check for the extra first and say so in one line (evalrepro.database.require_team_extra).
NEEDS_EXTRA = {"evalrepro.database": "team"}
#: Extras a user installs (``test`` is the suite's own).
USER_EXTRAS = ("parquet", "dask", "team")


@dataclass(frozen=True)
class Import:
    name: str  # dotted, as the statement names it
    module: str
    where: str  # path:line
    on_load: bool  # runs when the module is imported (not inside a function)


def declared() -> dict[str, set[str]]:
    """The distributions each extra declares ("" for the dependencies), canonical names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lists = {"": project["dependencies"]}
    lists |= {extra: project["optional-dependencies"][extra] for extra in USER_EXTRAS}
    return {
        extra: {canonicalize_name(Requirement(line).name) for line in lines}
        for extra, lines in lists.items()
    }


@cache
def third_party_imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted((ROOT / "evalrepro").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(ELSEWHERE):
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(), rel)
        for node, on_load in _imports(tree, on_load=True):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "evalrepro" and top not in sys.stdlib_module_names:
                    found.append(Import(name, module, f"{rel}:{node.lineno}", on_load))
    return found


def _imports(node: ast.AST, *, on_load: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, on_load
        inside = on_load and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        yield from _imports(child, on_load=inside)


@cache
def _owners() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


@cache
def distribution(name: str) -> str:
    """The installed distribution (canonical name) that provides the import ``name``."""
    parts = name.split(".")
    owners = {canonicalize_name(d) for d in _owners()[parts[0]]}
    if len(owners) > 1 and len(parts) > 1:
        # A namespace package (google.*): the distribution that holds the subpackage.
        folder = "/".join(parts[:2])
        owners = {
            owner
            for owner in owners
            if any(
                str(file).startswith(folder + "/") or str(file) == folder + ".py"
                for file in importlib.metadata.files(owner) or []
            )
        }
    assert len(owners) == 1, f"import {name}: provided by {sorted(owners) or 'nothing installed'}"
    return owners.pop()


def needed_extra(module: str) -> str | None:
    for package, extra in NEEDS_EXTRA.items():
        if module == package or module.startswith(package + "."):
            return extra
    return None


def test_every_third_party_import_is_declared_directly_in_its_extra():
    lists = declared()
    problems = []
    for found in third_party_imports():
        dist = distribution(found.name)
        extras = {extra for extra, dists in lists.items() if dist in dists}
        if not extras:
            problems.append(f"{found.where}: import {found.name}: {dist} is in no dependency list")
        elif found.on_load and "" not in extras and needed_extra(found.module) not in extras:
            problems.append(
                f"{found.where}: import {found.name} when {found.module} loads: {dist} is "
                f"only in the extra {sorted(extras)}, not in the dependencies"
            )
    assert problems == []


def test_the_static_check_sees_an_import_of_an_undeclared_package():
    # The check above is only as good as its scan: filelock, imported at the top of
    # agents/venvs.py, is seen as a third-party import provided by the filelock
    # distribution, and would be flagged if the dependencies did not name it.
    (found,) = [i for i in third_party_imports() if i.name == "filelock"]
    assert found.module == "evalrepro.agents.venvs" and found.on_load
    assert distribution(found.name) == "filelock" and "filelock" in declared()[""]
    lazy = [i for i in third_party_imports() if i.name == "s3fs"]
    assert lazy and not any(i.on_load for i in lazy)
    assert distribution("google.protobuf") == "protobuf"


def import_names(extras: set[str]) -> list[str]:
    """What the probe imports: every third-party name the code imports whose distribution
    is declared in ``extras``, and the distributions of those extras no statement imports
    (psycopg, found by name)."""
    lists = declared()
    dists = set().union(*(lists[extra] for extra in extras))
    names = {found.name for found in third_party_imports() if distribution(found.name) in dists}
    imported = {distribution(name) for name in names}
    for dist in dists - imported:
        names |= {
            top
            for top, owners in _owners().items()
            if dist in {canonicalize_name(o) for o in owners} and canonicalize_name(top) == dist
        }
    return sorted(names)


# --- for real: the wheel in a fresh venv -------------------------------------------------


def _run(*args: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(arg) for arg in args], capture_output=True, text=True, timeout=1800, **kwargs
    )
    assert done.returncode == 0, f"{' '.join(map(str, args))}:\n{done.stdout}\n{done.stderr}"
    return done


def _pip(python: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    quiet = ("-q", "--disable-pip-version-check", "--no-input")
    return _run(python, "-m", "pip", *args[:1], *quiet, *args[1:])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _pip(Path(sys.executable), "wheel", "--no-deps", "--wheel-dir", out, ROOT)
    (built,) = out.glob("evalrepro-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its dependencies only (no extra, no test tools)."""
    folder = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", folder)
    python = folder / "bin" / "python"
    # Real installs from the index (pip's cache makes the downloads cheap); bytecode is
    # compiled on import, not for every file installed.
    _pip(python, "install", "--no-compile", f"evalrepro @ {wheel.as_uri()}")
    return folder


@contextmanager
def with_extra(venv: Path, wheel: Path, extra: str) -> Iterator[None]:
    """The venv with ``extra`` added; afterwards what the extra added is removed again (one
    venv, not one per extra: the dependencies are installed once)."""
    python = venv / "bin" / "python"
    before = _installed(python)
    _pip(python, "install", "--no-compile", f"evalrepro[{extra}] @ {wheel.as_uri()}")
    try:
        yield
    finally:
        added = sorted(set(_installed(python)) - set(before))
        if added:
            _pip(python, "uninstall", "-y", *added)


def _installed(python: Path) -> list[str]:
    listed = _run(python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check")
    return [canonicalize_name(entry["name"]) for entry in json.loads(listed.stdout)]


def probe(venv: Path, extras: set[str]) -> dict:
    # -I: the venv's own site-packages only (no PYTHONPATH, no user site, not tests/).
    done = _run(venv / "bin" / "python", "-I", PROBE, *import_names(extras), cwd=venv)
    return json.loads(done.stdout.splitlines()[-1])


def assert_probe_passes(found: dict, extras: set[str]) -> None:
    failures = found["failures"]
    assert failures["entry_points"] == {}
    assert failures["imports"] == {}
    assert failures["help"] == {}
    # A module may fail to load only for want of its extra, when that is not installed.
    assert {
        module: error
        for module, error in failures["modules"].items()
        if needed_extra(module) in (None, *extras) or not error.startswith("ModuleNotFoundError")
    } == {}
    from evalrepro.cli import COMMANDS

    assert len(found["commands"]) == len(COMMANDS)


@pytest.mark.clean_install
@pytest.mark.xdist_group("clean_install")
def test_the_wheel_alone_imports_every_module_and_answers_every_help(venv: Path, tmp_path):
    assert "filelock" in _installed(venv / "bin" / "python")
    assert_probe_passes(probe(venv, {""}), {""})
    evalrepro = venv / "bin" / "evalrepro"
    assert "COMMAND" in _run(evalrepro, "--help", cwd=tmp_path).stdout
    # The demo's configs ship in the wheel and compose there.
    composed = _run(evalrepro, "config", "+experiment=demo_agent", cwd=tmp_path).stdout
    assert "mini_swe_agent" in composed
    # A command that needs an extra: one line naming it, no traceback.
    done = subprocess.run(
        [evalrepro, "runs"], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith("pip install 'evalrepro[team]'")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.clean_install
@pytest.mark.xdist_group("clean_install")
@pytest.mark.parametrize("extra", USER_EXTRAS)
def test_each_extra_imports_its_modules_and_packages(venv: Path, wheel: Path, extra, tmp_path):
    with with_extra(venv, wheel, extra):
        assert_probe_passes(probe(venv, {"", extra}), {"", extra})
        if extra == "team":
            # The migrations ship in the wheel and run (Alembic on a fresh SQLite file).
            code = (
                "import sys; from evalrepro.database.engine import open_database; "
                "open_database(sys.argv[1])"
            )
            _run(venv / "bin" / "python", "-I", "-c", code, tmp_path / "team.db", cwd=tmp_path)
            assert (tmp_path / "team.db").stat().st_size > 0
    assert not set(_installed(venv / "bin" / "python")) & (declared()[extra] - declared()[""])
