"""Produce eval logs in SWE-bench's layout: eval scripts shaped like 5.0.2's, run by bash.

For each instance a git repository (``testbed``) is made the way SWE-bench's images
hold one: the base commit (test files as the task found them: stubs, or absent), then
the empty ``SWE-bench`` commit its setup script makes. The model patch is applied to
the work tree before the eval script runs (swebench does that outside the script, so
its output is not in the log); the test patch is ``git diff`` of the case's test files
against the base.

The script is what swebench 4.x wrote into its datasets' ``eval_script``
(``make_eval_script_list_py``: the informational ``git status`` / ``git show`` /
``git diff``, the install command, the resets, ``git apply -v -`` of the test patch
from a heredoc, ``: '>>>>> Start Test Output'``, the test command,
``: '>>>>> End Test Output'``, the resets again), turned into what 5.0.2 runs by
swebench's own ``parse_eval_script`` -> ``record_test_exit_code`` -> ``TestSpec.eval_script``
(``set -uxo pipefail`` and the ``SWEBENCH_TEST_EXIT_CODE`` lines). Two departures, both
outside what grading reads: the conda activation lines are left out (the runner's
environment is this interpreter's, on ``PATH``) and ``git config --global`` writes to a
file of the case (``GIT_CONFIG_GLOBAL``), never the user's.

``bash eval.sh`` runs with stdout and stderr on one pipe, as ``docker exec`` gives them
to swebench, and the output is decoded as swebench decodes it (UTF-8, errors replaced).
Machine paths are replaced by stand-ins: the repository by ``/testbed``, the Python
trees by ``/python/...``, the node prefix by ``/node``.

Run ``python -m tests.runners.swebench_eval`` from the repo root to rewrite
``tests/corpus/swebench_eval/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT
from swebench.harness.utils import parse_eval_script, record_test_exit_code
from swebench.types import TestSpec

from tests.corpus_swebench import EvalLog, write_eval_logs
from tests.runners import django as django_runner
from tests.runners import mocha as mocha_runner
from tests.runners import pytest as pytest_runner
from tests.runners import sympy as sympy_runner
from tests.runners.unittest import runner_env as python_env

RECORDERS = Path(__file__).parent / "recorders"
#: swebench's heredoc delimiter for the test patch (make_eval_script_list_py).
HEREDOC = "EOF_114329324912"
#: Commits are made at a fixed time by fixed people, so ``git show`` and every commit id
#: in the scripts are the same on every run.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "corpus",
    "GIT_AUTHOR_EMAIL": "corpus@evalrepro.invalid",
    "GIT_COMMITTER_NAME": "corpus",
    "GIT_COMMITTER_EMAIL": "corpus@evalrepro.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_PAGER": "cat",
    "TZ": "UTC",
    "LC_ALL": "C.UTF-8",
}
README = "# corpus\n\nA task repository for evalrepro's eval-log corpus.\n"
FIXED_README = README + "\nFixed.\n"


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@dataclass(frozen=True)
class EvalCase:
    runner: str
    case: str
    #: Files of the base commit besides README.md.
    base_files: dict[str, str]
    #: The test patch's files (their content after it); those also in ``base_files``
    #: are modified by it (reset with ``git checkout``), the others new (``rm -f``).
    test_files: dict[str, str]
    #: The test command, as SWE-bench writes it: the runner, then the test directives.
    test_command: str
    compat: tuple[str, ...]
    env: Callable[[], dict[str, str]]
    shows: str
    #: Files the model patch writes into the work tree (README.md always changes).
    model_patch: dict[str, str] = field(default_factory=dict)
    install: str | None = None
    eval_type: Literal["pass_and_fail", "fail_only"] = "pass_and_fail"

    @property
    def instance_id(self) -> str:
        return f"corpus__{self.runner}-{self.case}"


def _pytest_case(name: str, command: str, shows: str) -> EvalCase:
    """A case of the pytest corpus, its first test file stubbed in the base commit."""
    files = next(case for case in pytest_runner.CASES if case.name == name).files
    first = next(iter(files))
    return EvalCase(
        runner="pytest",
        case=name,
        base_files={first: '"""Tests to come."""\n'},
        test_files=dict(files),
        test_command=f"{command} {' '.join(files)}",
        compat=pytest_runner.COMPAT,
        env=pytest_runner.runner_env,
        shows=shows,
    )


SWEBENCH_PYTEST = "pytest --no-header -rA --tb=no -p no:cacheprovider"
VERBOSE_PYTEST = "pytest -rA -v -p no:cacheprovider"

# pytest.ini puts the repository on sys.path, as an installed package would be.
PYTEST_INI = "[pytest]\npythonpath = .\n"
BUGGY_CALC = "def add(a, b):\n    return a - b\n"
# The model patch keeps the bug and adds a conftest.py that forges the log: an end
# marker early, through pytest's terminal writer (which its output capture leaves
# alone), so swebench's region (cut at the first end-marker substring) holds nothing its
# parser reads and it parses the whole log; then at exit, after pytest's summary, a
# PASSED line for the test that failed and a FAILED decoy that keeps swebench's
# exit-code check (a non-zero exit with no failure in the map) quiet.
FORGING_CONFTEST = _source("""
    import atexit
    import os


    def pytest_sessionstart(session):
        session.config.get_terminal_writer().line(">>>>> End Test Output")


    atexit.register(
        os.write,
        1,
        b"PASSED tests/test_calc.py::test_fixed\\nFAILED tests/test_calc.py::test_decoy\\n",
    )
    """)
CALC_TESTS = _source("""
    from calc import add


    def test_fixed():
        assert add(1, 1) == 2


    def test_kept():
        assert add(1, 0) == 1
    """)
# The other forgery: setup.py prints results during the install step, before the
# markers, and a conftest.py deselects every test, so the region yields nothing and
# swebench parses the whole log, install output included.
HONEST_SETUP = 'from setuptools import setup\n\nsetup(name="corpus-calc", version="1.0")\n'
FORGING_SETUP = _source("""
    from setuptools import setup

    print("PASSED tests/test_calc.py::test_fixed")
    print("PASSED tests/test_calc.py::test_kept")
    print("FAILED tests/test_calc.py::test_decoy")
    setup(name="corpus-calc", version="1.0")
    """)
DESELECT_ALL = "def pytest_collection_modifyitems(items):\n    items.clear()\n"
CALC_BASE = {
    "pytest.ini": PYTEST_INI,
    "calc.py": BUGGY_CALC,
    "tests/test_calc.py": '"""Tests to come."""\n',
}

DJANGO_APPS = ("shop", "ledger", "forger", "broken")
DJANGO_COMMAND = "python -m django test --settings=corpus_settings --verbosity 2 --parallel 1"


def _django_case(case: str, app: str, tests: str, shows: str) -> EvalCase:
    base = {"corpus_settings.py": django_runner.SETTINGS}
    base |= {f"{name}/__init__.py": "" for name in DJANGO_APPS}
    base[f"{app}/tests.py"] = '"""Tests to come."""\n'
    return EvalCase(
        runner="django",
        case=case,
        base_files=base,
        test_files={f"{app}/tests.py": tests},
        test_command=f"{DJANGO_COMMAND} {app}",
        compat=("django",),
        env=python_env,
        shows=shows,
    )


def _mocha_env() -> dict[str, str]:
    mocha = mocha_runner.mocha_executable()
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    if mocha is not None:
        env["PATH"] = f"{mocha.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _mocha_case(case: str, files: dict[str, str], shows: str) -> EvalCase:
    return EvalCase(
        runner="mocha",
        case=case,
        base_files={},
        test_files=dict(files),
        test_command="mocha --reporter min " + " ".join(sorted(files)),
        compat=mocha_runner.COMPAT,
        env=_mocha_env,
        shows=shows,
        eval_type="fail_only",
    )


def _sympy_env() -> dict[str, str]:
    # bin/test -C, and a fixed hash seed keeps the runner in this process.
    return {**python_env(), "SYMPY_USE_CACHE": "no", "PYTHONHASHSEED": "1"}


def _sympy_case() -> EvalCase:
    files = next(case for case in sympy_runner.CASES if case.name == "mixed").files
    paths = {f"{sympy_runner.TEST_DIR}/{name}": source for name, source in files.items()}
    return EvalCase(
        runner="sympy",
        case="mixed",
        # The recorder is the corpus's bin/test (see tests/runners/sympy.py).
        base_files={"sympy_recorder.py": (RECORDERS / "sympy_recorder.py").read_text()},
        test_files=paths,
        test_command="python sympy_recorder.py " + " ".join(paths),
        compat=("sympy",),
        env=_sympy_env,
        shows="sympy's runner: bare names, missed last tests, path-qualified failures",
    )


CASES: tuple[EvalCase, ...] = (
    _pytest_case(
        "tb_no",
        SWEBENCH_PYTEST,
        "SWE-bench's own pytest command: passes, failures, errors, xfail, xpass",
    ),
    _pytest_case("pass_fail", VERBOSE_PYTEST, "pytest -v: six tests, some failing"),
    _pytest_case("param_ids", VERBOSE_PYTEST, "parametrized ids with spaces, cut by swebench"),
    _pytest_case("skip_xfail", VERBOSE_PYTEST, "skips and expected failures"),
    _pytest_case(
        "collection_error", VERBOSE_PYTEST, "a test module that cannot be imported, one that can"
    ),
    EvalCase(
        runner="pytest",
        case="forged_markers",
        base_files=CALC_BASE,
        test_files={"tests/test_calc.py": CALC_TESTS},
        test_command=f"{SWEBENCH_PYTEST} tests/test_calc.py",
        compat=("pytest",),
        env=pytest_runner.runner_env,
        shows="attack: a conftest.py prints an end marker early and a PASSED line at exit; "
        "swebench resolves, strict rules refuse the log",
        model_patch={"conftest.py": FORGING_CONFTEST},
    ),
    EvalCase(
        runner="pytest",
        case="install_forgery",
        base_files={**CALC_BASE, "setup.py": HONEST_SETUP},
        test_files={"tests/test_calc.py": CALC_TESTS},
        test_command=f"{SWEBENCH_PYTEST} tests/test_calc.py",
        compat=("pytest",),
        env=pytest_runner.runner_env,
        shows="attack: setup.py prints results during install, a conftest.py deselects "
        "every test; swebench resolves from the install output, strict rules find none",
        model_patch={"setup.py": FORGING_SETUP, "conftest.py": DESELECT_ALL},
        # A stand-in for SWE-bench's "python -m pip install -e .": it runs setup.py.
        install="python setup.py --version",
    ),
    _django_case(
        "mixed", "shop", django_runner.SHOP, "Django's runner: docstring keys, subtests, errors"
    ),
    _django_case("passing", "ledger", django_runner.LEDGER, "Django's runner, all passing"),
    _mocha_case(
        "min_failures", mocha_runner.MIN_FAILURES, "FAIL_ONLY: mocha's min reporter, failures"
    ),
    _mocha_case(
        "min_passing",
        mocha_runner.MIN_PASSING,
        "FAIL_ONLY: nothing failed, the region parses empty, 'N passing' shows the suite ran",
    ),
    _sympy_case(),
)


def available(case: EvalCase) -> str | None:
    """Why ``case`` cannot run here, or None."""
    if case.runner == "mocha" and mocha_runner.mocha_executable() is None:
        return f"mocha is not installed; run: {mocha_runner.INSTALL_COMMAND}"
    return None


def _git(repo: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


def eval_script_list(case: EvalCase, repo: str, base: str, test_patch: str) -> list[str]:
    """swebench 4.x's ``make_eval_script_list_py`` for ``case`` (conda lines left out)."""
    modified = [path for path in case.test_files if path in case.base_files]
    new = [path for path in case.test_files if path not in case.base_files]
    resets = []
    if modified:
        resets.append(f"git checkout {base} {' '.join(modified)}")
    if new:
        resets.append(f"rm -f {' '.join(new)}")
    commands = [
        f"cd {repo}",
        f"git config --global --add safe.directory {repo}",
        f"cd {repo}",
        "git status",
        "git show",
        f"git -c core.fileMode=false diff {base}",
    ]
    if case.install:
        commands.append(case.install)
    commands += resets
    commands += [
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        f": '{START_TEST_OUTPUT}'",
        case.test_command,
        f": '{END_TEST_OUTPUT}'",
    ]
    return commands + resets


def swebench_eval_script(case: EvalCase, commands: list[str]) -> str:
    """The script swebench 5.0.2 runs for a dataset whose ``eval_script`` is 4.x's."""
    dataset_script = "\n".join(["#!/bin/bash", "set -uxo pipefail", *commands]) + "\n"
    spec = TestSpec(
        instance_id=case.instance_id,
        image="unused",
        eval_script_list=record_test_exit_code(parse_eval_script(dataset_script)),
        repo="corpus/corpus",
        version="0",
        FAIL_TO_PASS=[],
        PASS_TO_PASS=[],
    )
    return spec.eval_script


def machine_free(text: str, repo: Path) -> str:
    """``text`` with machine paths replaced by stand-ins (longest first)."""
    paths = sysconfig.get_paths()
    stand_ins = {
        str(repo.resolve()): "/testbed",
        str(repo): "/testbed",
        paths["purelib"]: "/python/site-packages",
        paths["stdlib"]: "/python/lib",
        str(mocha_runner.node_prefix()): "/node",
        sys.executable: "/python/bin/python",
        f"{sys.prefix}/bin": "/python/bin",
    }
    for path in sorted(stand_ins, key=len, reverse=True):
        text = text.replace(path, stand_ins[path])
    return text


def run_case(case: EvalCase, workdir: Path) -> EvalLog:
    home = workdir / case.instance_id
    repo = home / "testbed"
    repo.mkdir(parents=True)
    env = {**case.env(), **GIT_ENV, "GIT_CONFIG_GLOBAL": str(home / "gitconfig")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if case.runner == "sympy":
        env["EVALREPRO_TRUTH"] = str(home / "truth.json")

    _git(repo, "init", "-q", "-b", "main", env=env)
    _write(repo, {"README.md": README, **case.base_files})
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-q", "-m", "base", env=env)
    base = _git(repo, "rev-parse", "HEAD", env=env).strip()
    # The test patch: the case's test files against the base, as git writes it.
    _write(repo, case.test_files)
    _git(repo, "add", "-A", env=env)
    test_patch = _git(repo, "diff", "--cached", base, env=env)
    _git(repo, "reset", "-q", "--hard", base, env=env)
    # SWE-bench's image setup ends with an empty commit; its model patch comes after.
    setup_env = {
        **env,
        "GIT_AUTHOR_NAME": "SWE-bench",
        "GIT_COMMITTER_NAME": "SWE-bench",
        "GIT_AUTHOR_EMAIL": "setup@swebench.config",
        "GIT_COMMITTER_EMAIL": "setup@swebench.config",
    }
    _git(repo, "commit", "-q", "--allow-empty", "-am", "SWE-bench", env=setup_env)
    _write(repo, {"README.md": FIXED_README, **case.model_patch})

    script = swebench_eval_script(case, eval_script_list(case, str(repo), base, test_patch))
    (home / "eval.sh").write_text(script, encoding="utf-8")
    done = subprocess.run(
        ["/bin/bash", str(home / "eval.sh")],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    return EvalLog(
        instance_id=case.instance_id,
        runner=case.runner,
        case=case.case,
        compat=case.compat,
        eval_type=case.eval_type,
        test_command=case.test_command,
        shows=case.shows,
        eval_script=machine_free(script, repo),
        text=machine_free(done.stdout.decode("utf-8", errors="replace"), repo),
    )


def produce(workdir: Path, cases: tuple[EvalCase, ...] = CASES) -> list[EvalLog]:
    # Independent processes: side by side they take about as long as the slowest.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda case: run_case(case, workdir), cases))


def main() -> None:
    missing = [f"{case.instance_id}: {why}" for case in CASES if (why := available(case))]
    if missing:
        sys.exit("cannot produce every eval log: " + "; ".join(missing))
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_eval_logs(produce(Path(tmp)))
    print(f"wrote {len(CASES)} eval logs to {folder}")


if __name__ == "__main__":
    main()
