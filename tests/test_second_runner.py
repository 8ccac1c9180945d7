"""The second runner: FAIL_TO_PASS tests run once more by a plain driver, without their
test framework, and a test that passed under its runner and fails there is
``differs_under_test``.

Drawn only where the driver can stand in for the runner; the driver decides from the
verified files, before any code of the repository runs, whether a test allows a plain
run (and says so by an exit no code under test can make). The runs here are real
unittest runs of the demo's ledger and real driver runs (no container); the pytest side
is tests/adversarial/test_under_test.py's, in the demo's images.
"""

from __future__ import annotations

import random
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalrepro.config.protection import TestProtection
from evalrepro.grade.canary import draw_canaries
from evalrepro.grade.fresh import RUNNERS, check_fresh
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.records.base import parse_record
from evalrepro.records.fresh import FreshCheck, FreshResult, FreshRun
from evalrepro.records.observation import Observation
from evalrepro.run.undertest import DRIVER, draw_second_runs
from evalrepro.sandbox.plain import NotApplicable
from evalrepro.sandbox.plain import plan as driver_plan
from tests.adversarial.test_under_test import UNITTEST_MAIN
from tests.test_canary import SAMPLES, _tree, place_canaries, run_on_host, runner_env, spec_of
from tests.test_fresh import EXITS_ZERO


def plan(instance: str, parser: str, second: int = 3, seed: int = 3, **options):
    sample = SAMPLES[instance]
    spec = spec_of(sample, parser, **options)
    protection = spec.eval_script.protection.model_copy(update={"second_runner": second})
    spec = spec.model_copy(
        update={"eval_script": spec.eval_script.model_copy(update={"protection": protection})}
    )
    canaries = draw_canaries(spec, get_parser(parser), sample, random.Random(seed))
    runs, note = draw_second_runs(spec, get_parser(parser), sample, canaries, random.Random(seed))
    return sample, spec, canaries, runs, note


# --- what is drawn ------------------------------------------------------------------------


def test_the_second_runner_is_off_unless_the_dataset_asks_for_it():
    assert TestProtection().second_runner == 0
    assert plan("demo__calc-1", "pytest_full", second=0)[3:] == ([], "")


@pytest.mark.parametrize(
    ("instance", "parser", "style", "first"),
    [
        ("demo__calc-1", "pytest_full", "pytest", "0"),
        ("demo__ledger-1", "unittest", "unittest", "1"),
    ],
)
def test_the_fail_to_pass_tests_and_a_must_fail_canary_run_under_the_plain_driver(
    instance, parser, style, first
):
    sample, _, canaries, runs, note = plan(instance, parser, second=5)
    assert note == ""
    assert {r.runner for r in runs} == {"plain"}
    assert sorted(r.test for r in runs if r.expect == "pass") == sorted(sample.fail_to_pass)
    (lone,) = [r for r in runs if r.expect == "fail"]
    assert lone.test in {c.name for c in canaries if c.expect == "fail" and c.twin_of is None}
    for run in runs:
        # python3 of the test run's PATH, isolated and without site until the driver
        # decided; the working folder first only where python -m puts it there.
        argv = shlex.split(run.command)
        assert argv[:4] == ["python3", "-I", "-S", "-c"]
        assert argv[4] == DRIVER
        assert argv[5:7] == [style, first]
        if run.expect == "pass":
            assert argv[7] == RUNNERS[get_parser(parser).runner].select(run.test)


def test_where_the_driver_cannot_stand_in_for_the_runner_there_is_a_note():
    assert plan("demo__calc-1", "tap_full")[3:] == (
        [],
        "second runner: parser tap_full's runner has no plain driver",
    )
    runs, note = plan("demo__calc-1", "pytest_full", test_cmd="tox -e py -- -rA")[3:]
    assert runs == [] and "not the pytest runner's own" in note
    for command, option in (
        ("pytest -rA -p xdist", "-p xdist"),
        ("python -m pytest -rA --import-mode=importlib", "--import-mode=importlib"),
        ("pytest -rA -pmyplugin", "-pmyplugin"),
    ):
        runs, note = plan("demo__calc-1", "pytest_full", test_cmd=command)[3:]
        assert runs == [] and f"test command's {option} changes" in note, note
    # -p no:NAME only turns a plugin off.
    assert plan("demo__calc-1", "pytest_full", test_cmd="pytest -rA -p no:cacheprovider")[4] == ""
    runs, note = plan("demo__calc-1", "pytest_full", canaries=False)[3:]
    assert runs == [] and "no must-fail canary" in note


# --- how its results are judged -------------------------------------------------------------


@pytest.mark.parametrize(
    ("exit_code", "runner_exit", "outcome"),
    [
        (0, "clean", "passed"),
        (1, "clean", "failed"),
        # Exit 3 before the exit guard was loaded: the driver's own "no plain run".
        (3, "unknown", "unselected"),
        # Exit 3 from a process the guard saw start: code under test made it.
        (3, "clean", "failed"),
        (3, "abnormal", "failed"),
    ],
)
def test_the_plain_driver_s_exit_says_passed_failed_or_no_plain_run(
    exit_code, runner_exit, outcome
):
    assert RUNNERS["plain"].outcome(exit_code, runner_exit) == outcome


def _both(own: int, plain: int, logged: str = "PASSED", **plain_facts) -> list[FreshCheck]:
    runs = [
        FreshRun(test="t::a", expect="pass", command="pytest t::a", runner="pytest"),
        FreshRun(test="t::a", expect="pass", command="python3 -I -S -c ...", runner="plain"),
    ]
    facts = {"signal": None, "seconds": 0.1, "runner_exit": "clean"}
    results = [
        FreshResult(test="t::a", exit_code=own, **facts),
        FreshResult(test="t::a", exit_code=plain, runner="plain", **(facts | plain_facts)),
    ]
    return check_fresh(runs, results, {"t::a": logged})


def test_a_test_passing_under_its_runner_and_failing_without_it_differs_under_test():
    own, plain = _both(0, 1)
    assert (own.outcome, plain.outcome) == ("passed", "failed")
    assert plain.differs_under_test and not plain.disagrees
    assert not own.differs_under_test and not own.disagrees
    # Failing alone under both: the fresh run's judgement, not this one's.
    own, plain = _both(1, 1)
    assert own.disagrees and not own.differs_under_test
    # A failure in the log is already a failure; no plain run is no judgement.
    assert not _both(0, 1, logged="FAILED")[1].differs_under_test
    assert not _both(0, 3, runner_exit="unknown")[1].differs_under_test


def test_an_observation_of_an_older_schema_reads_its_fresh_checks_as_its_runners_own():
    old = {
        "schema_version": 8,
        "record": "Observation",
        "instance_id": "x",
        "parser": "pytest_full",
        "parser_status": "ok",
        "status_map": {},
        "fresh": [{"test": "t::a", "expect": "pass", "outcome": "failed", "logged": "PASSED"}],
    }
    (check,) = parse_record(old, Observation, where="old.json").fresh
    assert check.runner == "" and check.disagrees and not check.differs_under_test


# --- the driver's own rule: which tests allow a plain run -----------------------------------


def _venv(root: Path, plugins: dict[str, str]) -> str:
    """An environment's layout as the driver reads it: pyvenv.cfg and the installed
    distributions' entry points; its interpreter's path."""
    site = root / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name, entry in plugins.items():
        dist = site / f"{name}-1.0.dist-info"
        dist.mkdir()
        (dist / "entry_points.txt").write_text(f"[pytest11]\n{entry} = {name}.plugin\n")
    return str(root / "venv" / "bin" / "python3")


PLAIN_TEST = "def test_a():\n    assert 1\n"


@pytest.mark.parametrize(
    ("files", "selector", "why"),
    [
        ({}, "tests/test_a.py::test_a", None),
        ({"tests/test_a.py": "def test_a(tmp_path):\n    pass\n"}, "tests/test_a.py::test_a", None),
        (
            {"tests/test_a.py": "class TestA:\n    def setup_method(self, m):\n        pass\n\n"
             "    def test_a(self):\n        pass\n"},
            "tests/test_a.py::TestA::test_a",
            None,
        ),
        (
            {"tests/conftest.py": "import os\n\n\ndef helper():\n    pass\n\n\n"
             "collect_ignore = ['x']\n"},
            "tests/test_a.py::test_a",
            None,
        ),
        ({"tests/test_a.py": "def test_a(monkeypatch):\n    pass\n"}, "tests/test_a.py::test_a",
         "asks for fixtures"),
        ({"tests/test_a.py": "import pytest\n\n\n@pytest.mark.skipif(True, reason='x')\n"
          + PLAIN_TEST}, "tests/test_a.py::test_a", "decorator"),
        ({"tests/test_a.py": "import pytest\n\n\n@pytest.mark.slow\n" + PLAIN_TEST},
         "tests/test_a.py::test_a", None),
        ({"tests/test_a.py": "import pytest\npytestmark = pytest.mark.xfail\n" + PLAIN_TEST},
         "tests/test_a.py::test_a", "pytestmark"),
        ({"tests/test_a.py": "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef f():\n"
          "    yield\n\n\n" + PLAIN_TEST}, "tests/test_a.py::test_a", "autouse"),
        ({"conftest.py": "import sys\nsys.path.insert(0, 'src')\n"}, "tests/test_a.py::test_a",
         "runs code at import"),
        ({"tests/conftest.py": "def pytest_runtest_call(item):\n    pass\n"},
         "tests/test_a.py::test_a", "hook"),
        ({"pytest.ini": "[pytest]\nusefixtures = db\n"}, "tests/test_a.py::test_a",
         "configuration sets usefixtures"),
        # A key no installed plugin reads changes nothing (six's pep8ignore).
        ({"setup.cfg": "[tool:pytest]\nminversion = 2.2.0\npep8ignore =\n  x.py ALL\n"},
         "tests/test_a.py::test_a", None),
        ({"setup.cfg": "[tool:pytest]\naddopts = -p myplugin\n"}, "tests/test_a.py::test_a",
         "addopts"),
        ({"tests/test_a.py": "async def test_a():\n    pass\n"}, "tests/test_a.py::test_a",
         "no test function"),
        (
            {"tests/test_a.py": "class TestA(Base):\n    def test_a(self):\n        pass\n"},
            "tests/test_a.py::TestA::test_a",
            "a base the driver cannot tell apart",
        ),
        (
            # The module holds its last definition of a name: that is the test pytest runs.
            {"tests/test_a.py": PLAIN_TEST + "\n\ndef test_a(monkeypatch):\n    pass\n"},
            "tests/test_a.py::test_a",
            "asks for fixtures",
        ),
        ({}, "tests/test_a.py::test_a[1]", "not a plain pytest node id"),
        ({}, "tests/test_a.py::test_b", "no test function"),
    ],
)  # fmt: skip
def test_a_test_allows_a_plain_run_only_without_what_only_its_runner_gives(
    tmp_path, files, selector, why
):
    files = {"tests/__init__.py": "", "tests/test_a.py": PLAIN_TEST, **files}
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    python = _venv(tmp_path, {"pytest_cov": "pytest_cov"})
    if why is None:
        planned = driver_plan("pytest", selector, str(tmp_path), python)
        assert planned["module"] == "tests.test_a"
        # pytest's prepend: the folder above the test's package, then a conftest's.
        assert planned["paths"][0] == str(tmp_path)
        if "tests/conftest.py" in files:
            assert planned["paths"][1] == str(tmp_path)
        return
    with pytest.raises(NotApplicable, match=why):
        driver_plan("pytest", selector, str(tmp_path), python)


def test_a_pytest_plugin_that_could_change_a_run_leaves_no_plain_run(tmp_path):
    (tmp_path / "test_a.py").write_text(PLAIN_TEST)
    python = _venv(tmp_path, {"pytest_django": "django"})
    with pytest.raises(NotApplicable, match="plugin django"):
        driver_plan("pytest", "test_a.py::test_a", str(tmp_path), python)


def test_the_driver_says_no_plain_run_before_the_exit_guard_or_the_repository_loads(tmp_path):
    # The test module would fail at import; the driver never gets that far.
    source = "raise SystemExit(0)\n\n\ndef test_a(monkeypatch):\n    pass\n"
    (tmp_path / "test_a.py").write_text(source)
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", DRIVER, "pytest", "0", "test_a.py::test_a"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "not run by the plain driver: test_a asks for fixtures" in done.stderr


# --- real runs: the demo's ledger under unittest and under the driver ------------------------


def _second_run(tmp_path: Path, append: dict[str, str] | None = None, tamper: str | None = None):
    """ledger-1 with its gold patch: the trial's own unittest run, then the second
    runner's runs, judged against the log."""
    sample, spec, canaries, runs, note = plan("demo__ledger-1", "unittest", second=5)
    assert note == ""
    tree = _tree(tmp_path, sample)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=sample.patch.encode(), check=True)
    for path, text in (append or {}).items():
        with open(tree / path, "a") as handle:
            handle.write(text)
    assert place_canaries(tree, canaries)
    env = runner_env(tmp_path, tamper)
    whole = run_on_host(spec.eval_script.test_command, tree, env)
    parsed = get_parser("unittest").parse(whole.stdout + whole.stderr)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    results, outputs = [], {}
    for run in runs:
        done = run_on_host(run.command, tree, env)
        outputs[run.test] = done.stderr
        facts = {"signal": None, "seconds": 0.0, "runner_exit": "clean", "runner": "plain"}
        results.append(FreshResult(test=run.test, exit_code=done.returncode, **facts))
    return check_fresh(runs, results, statuses), whole, outputs


def test_an_honest_fix_passes_under_the_driver_and_its_canary_fails(tmp_path):
    checks, whole, outputs = _second_run(tmp_path)
    assert {c.outcome for c in checks if c.expect == "pass"} == {"passed"}, outputs
    assert {c.outcome for c in checks if c.expect == "fail"} == {"failed"}, outputs
    assert not any(c.differs_under_test or c.tampered for c in checks), whole.stderr


def test_a_fix_in_force_only_under_unittests_main_differs_under_test(tmp_path):
    checks, whole, outputs = _second_run(tmp_path, append={"ledger/storage.py": UNITTEST_MAIN})
    tests = [c for c in checks if c.expect == "pass"]
    # Under python -m unittest the fix holds; under the driver it does not.
    assert {(c.logged, c.outcome) for c in tests} == {("PASSED", "failed")}, whole.stderr
    assert all(c.differs_under_test for c in tests)
    assert any("AssertionError" in outputs[c.test] for c in tests), outputs


def test_a_driver_process_that_exits_zero_whatever_happens_passes_its_canary(tmp_path):
    checks, _, _ = _second_run(tmp_path, tamper=EXITS_ZERO)
    assert [c.tampered for c in checks if c.expect == "fail"] == [True]


def test_the_driver_is_the_harness_s_own_file():
    source = Path(__file__).parents[1] / "evalrepro" / "sandbox" / "plain.py"
    assert DRIVER == source.read_text()
    assert textwrap.dedent(DRIVER) == DRIVER


# --- the driver's own runs, in an environment of no test framework ---------------------------


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """An environment with nothing installed (no pytest plugin to rule a test out)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python3")


def _drive(python: str, root: Path, style: str, selector: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, "-I", "-S", "-c", DRIVER, style, "0", selector],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTEST_CURRENT_TEST": "x (call)", "PYTEST_VERSION": "8"},
        capture_output=True,
        text=True,
        check=False,
    )


SEES_NO_FRAMEWORK = """
import os
import sys
import unittest


def test_nothing_of_a_framework_is_in_sight():
    assert unittest.TestCase  # the module's own reference is kept
    assert not [n for n in sys.modules if n.split(".")[0] in ("unittest", "pytest", "_pytest")]
    assert not [v for v in os.environ if v.startswith("PYTEST_")]
    assert sys.argv == ["-c"]
    assert getattr(sys.modules["__main__"], "__spec__", None) is None
    frames, frame = [], sys._getframe()
    while frame is not None:
        frames.append(frame.f_code.co_filename)
        frame = frame.f_back
    assert [f for f in frames if f != __file__] == ["<string>"] * (len(frames) - 1)
"""

XUNIT = """
calls = []


def setup_module():
    calls.append("module")


def teardown_module(module):
    assert module.calls[-1] == "method down"


class TestThing:
    @classmethod
    def setup_class(cls):
        calls.append("class")

    def setup_method(self, method):
        calls.append("method " + method.__name__)

    def teardown_method(self):
        calls.append("method down")

    def test_setups_ran_in_pytests_order(self, tmp_path):
        assert calls == ["module", "class", "method test_setups_ran_in_pytests_order"]
        assert tmp_path.is_dir() and not list(tmp_path.iterdir())


def test_fails():
    assert 1 == 2
"""


def test_the_test_sees_no_framework_where_the_driver_calls_it(tmp_path, bare_python):
    (tmp_path / "test_plain.py").write_text(SEES_NO_FRAMEWORK)
    done = _drive(
        bare_python, tmp_path, "pytest", "test_plain.py::test_nothing_of_a_framework_is_in_sight"
    )
    assert done.returncode == 0, done.stderr


def test_the_driver_runs_pytests_xunit_setup_and_reads_a_failure(tmp_path, bare_python):
    (tmp_path / "test_xunit.py").write_text(XUNIT)
    done = _drive(
        bare_python,
        tmp_path,
        "pytest",
        "test_xunit.py::TestThing::test_setups_ran_in_pytests_order",
    )
    assert done.returncode == 0, done.stderr
    done = _drive(bare_python, tmp_path, "pytest", "test_xunit.py::test_fails")
    assert done.returncode == 1 and "assert 1 == 2" in done.stderr
