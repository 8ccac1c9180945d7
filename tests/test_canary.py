"""Canary tests: drawn where they cannot change an honest verdict, placed by the
supervisor's own code, run by the real runners, and judged from what the log says.

The runs here are real pytest and unittest runs of the demo repositories (no container):
an honest run never trips a canary, a runner made to pass everything always does.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro import PACKAGE_DIR
from evalrepro.config.protection import TestProtection
from evalrepro.grade.canary import check_canaries, draw_canaries
from evalrepro.grade.observation import observe_attempt
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.grade.score import score
from evalrepro.plan import testspec
from evalrepro.records.canary import Canary, CanaryCheck
from evalrepro.records.supervision import (
    PatchEvent,
    Peak,
    ResetEvent,
    StartEvent,
    SupervisorReport,
)
from evalrepro.records.supervision import (
    TestsFinishedEvent as FinishedEvent,
)
from evalrepro.rules.patchcheck import check_patch
from evalrepro.sample import Sample, load_samples
from evalrepro.sandbox.writes import with_canaries
from evalrepro.sources.demo_repos import build_repo

INSTANCES = PACKAGE_DIR / "demo" / "instances.jsonl"
SAMPLES = {s.instance_id: s for s in load_samples(INSTANCES)}
COMMANDS = {
    "pytest_full": "pytest -rA -v -p no:cacheprovider",
    "unittest": "python -m unittest -v",
    "unittest_failures": "python -m unittest",
    "tap_full": "node --test --test-reporter=tap",
}


def spec_of(
    sample: Sample,
    parser: str,
    *,
    test_cmd: str | None = None,
    directives: list[str] | str = "test_patch",
    canaries: bool = True,
):
    repo = testspec.RepoSpec(
        test_cmd=test_cmd or COMMANDS[parser], parser=parser, test_directives=directives
    )
    return testspec.compile_test_spec(
        sample,
        repo,
        parser=parser,
        fail_only=False,
        protection=TestProtection(canaries=canaries),
    )


def draw(
    instance: str, parser: str, seed: int = 7, *, unshown: bool = False, **options
) -> list[Canary]:
    """The trial's canaries that are no twins (twins: tests/test_twins.py). ``unshown``:
    the instance's tests named as base tests the test patch does not show whole, so that
    no canary can be shaped like one (they are appended to a file)."""
    sample = SAMPLES[instance]
    if unshown:
        sample = _unshown(sample)
    spec = spec_of(sample, parser, **options)
    drawn = draw_canaries(spec, get_parser(parser), sample, random.Random(seed))
    return [c for c in drawn if c.twin_of is None]


def _unshown(sample: Sample) -> Sample:
    """calc-1 as if its FAIL_TO_PASS test were a base test the hunks do not show whole."""
    return sample.model_copy(
        update={
            "fail_to_pass": ["tests/test_eval.py::test_unbalanced_parenthesis"],
            "pass_to_pass": [
                t for t in sample.pass_to_pass if "test_power_is_right_associative" not in t
            ],
        }
    )


# --- where canaries are drawn ---------------------------------------------------------


def test_a_pytest_run_gets_a_must_fail_and_a_must_pass_canary_of_each_style_its_tests_have():
    canaries = draw("demo__calc-1", "pytest_full")
    # calc-1's tests are functions: each canary is shaped like one, placed after it.
    assert sorted((c.style, c.expect) for c in canaries) == [
        ("function", "fail"),
        ("function", "pass"),
    ]
    assert {c.beside for c in canaries} == {"test_power_is_right_associative"}
    assert {c.file for c in canaries} == {"tests/test_eval.py"}
    assert len({c.name for c in canaries}) == 2
    assert all(c.name.startswith("test_") and c.after_line for c in canaries)


def test_where_no_test_is_shown_whole_canaries_of_each_style_are_appended_to_a_file():
    canaries = draw("demo__calc-1", "pytest_full", unshown=True)
    assert sorted((c.style, c.expect) for c in canaries) == [
        ("function", "fail"),
        ("function", "pass"),
        ("method", "fail"),
        ("method", "pass"),
    ]
    # In the file that holds the instance's FAIL_TO_PASS tests, with names of its words.
    assert {c.file for c in canaries} == {"tests/test_eval.py"}
    assert {(c.beside, c.after_line) for c in canaries} == {(None, None)}
    assert len({c.name for c in canaries}) == 4
    assert all(c.name.startswith("test_") for c in canaries)


def test_a_unittest_run_gets_testcase_canaries_only():
    canaries = draw("demo__ledger-1", "unittest")
    assert {c.style for c in canaries} == {"method"}
    assert {c.file for c in canaries} == {"tests/test_storage.py"}


def test_canaries_differ_from_trial_to_trial():
    first = draw("demo__calc-1", "pytest_full", seed=1)
    second = draw("demo__calc-1", "pytest_full", seed=2)
    assert {c.name for c in first} != {c.name for c in second}
    assert {c.source for c in first} != {c.source for c in second}


@pytest.mark.parametrize(
    "test_cmd",
    [
        "pytest -rA -x",
        "pytest -rA --maxfail=1",
        "pytest -rA -k power",
        "pytest -rA -m 'not slow'",
        "pytest -rA --lf",
        "python runtests.py --failfast",
    ],
)
def test_no_canary_where_the_command_selects_tests_or_stops_at_a_failure(test_cmd):
    assert draw("demo__calc-1", "pytest_full", test_cmd=test_cmd) == []


def test_python_dash_m_is_not_a_marker_selection():
    assert draw("demo__calc-1", "pytest_full", test_cmd="python -m pytest -rA") != []


def test_no_canary_where_the_command_runs_one_node_of_the_file():
    directives = ["tests/test_eval.py::test_power_is_right_associative"]
    assert draw("demo__calc-1", "pytest_full", directives=directives) == []


def test_no_canary_for_a_runner_that_collects_no_python_tests_or_names_only_failures():
    assert draw("demo__calc-1", "tap_full") == []
    assert draw("demo__ledger-1", "unittest_failures") == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (["tests/app/models.py", "tests/app/tests.py"], "tests/app/tests.py"),
        (["tests/conftest.py", "tests/test_a.py"], "tests/test_a.py"),
        (["tests/__init__.py", "tests/helpers.py"], None),
        (["pkg/a_test.py"], "pkg/a_test.py"),
    ],
)
def test_canaries_go_only_into_a_file_runners_collect_tests_from(files, expected):
    # A directive naming a folder runs every file of it; only a test module holds tests.
    sample = SAMPLES["demo__calc-1"]
    spec = spec_of(sample, "pytest_full", directives=sorted({f.rsplit("/", 1)[0] for f in files}))
    script = spec.eval_script.model_copy(update={"test_files": files})
    spec = spec.model_copy(update={"eval_script": script})
    canaries = draw_canaries(spec, get_parser("pytest_full"), sample, random.Random(1))
    canaries = [c for c in canaries if c.twin_of is None]
    assert ({c.file for c in canaries} or {None}) == {expected}


def test_no_canary_when_the_dataset_turns_them_off():
    assert draw("demo__calc-1", "pytest_full", canaries=False) == []


@pytest.mark.parametrize("seed", range(40))
def test_a_trials_canaries_never_define_a_name_twice(seed):
    # The ledger instances have few words of their own: collisions would come first there.
    canaries = draw("demo__ledger-4", "unittest", seed=seed) + draw(
        "demo__textkit-4", "pytest_full", seed=seed
    )
    for group in (canaries[:2], canaries[2:]):
        names = [n for c in group for n in c.defines if not n.startswith("_")]
        assert len(names) == len(set(names))


# --- how the supervisor places them -----------------------------------------------------


def _canary(name: str, file: str = "tests/test_a.py", expect: str = "fail") -> dict:
    source = f"\n\ndef {name}():\n    assert False\n"
    return {"name": name, "expect": expect, "file": file, "style": "function", "source": source}


def test_a_canary_goes_before_a_top_level_main_block():
    data = b"def test_a():\n    pass\n\n\nif __name__ == '__main__':\n    main()\n"
    (op,), placed = with_canaries(
        [("tests/test_a.py", "file", 0o644, data)], [_canary("test_zz_order")]
    )
    assert placed == ["test_zz_order"]
    text = op[3].decode()
    assert text.index("def test_zz_order") < text.index("if __name__")
    assert text.startswith("def test_a():\n    pass\n")


def test_a_canary_whose_name_the_file_holds_is_not_placed():
    data = b"def test_zz_order():\n    assert 1\n"
    ops, placed = with_canaries(
        [("tests/test_a.py", "file", 0o644, data)], [_canary("test_zz_order")]
    )
    assert placed == [] and ops[0][3] == data


def test_a_canary_whose_class_name_the_file_holds_is_not_placed():
    canary = {
        **_canary("test_zz_order"),
        "style": "method",
        "defines": ["_zz_case", "TestZzOrder", "test_zz_order"],
    }
    data = b"class TestZzOrder:\n    pass\n"
    ops, placed = with_canaries([("tests/test_a.py", "file", 0o644, data)], [canary])
    assert placed == [] and ops[0][3] == data


def test_no_canary_in_a_file_the_test_patch_removes():
    ops = [("tests/test_a.py", "absent", 0, b"")]
    assert with_canaries(ops, [_canary("test_zz_order")]) == (ops, [])


# --- what the log says of them ----------------------------------------------------------


def _placed(*specs: tuple[str, str]) -> list[Canary]:
    return [
        Canary(name=name, expect=expect, file="tests/test_a.py", style="function", source="")
        for name, expect in specs
    ]


def test_a_must_fail_canary_reported_passing_is_tampering():
    canaries = _placed(("test_x_fail", "fail"), ("test_x_pass", "pass"))
    statuses = {
        "tests/test_a.py::test_real": "PASSED",
        "tests/test_a.py::test_x_fail": "PASSED",
        "tests/test_a.py::test_x_pass": "PASSED",
    }
    checks, remaining = check_canaries(canaries, ["test_x_fail", "test_x_pass"], statuses, [])
    assert [c.tampered for c in checks] == [True, False]
    assert remaining == {"tests/test_a.py::test_real": "PASSED"}


def test_a_lost_canary_is_tampering_only_when_its_file_ran():
    canaries = _placed(("test_x_pass", "pass"))
    ran = {"tests/test_a.py::test_real": "PASSED"}
    (check,), _ = check_canaries(canaries, ["test_x_pass"], ran, [])
    assert check.reported == "absent" and check.tampered
    # The file did not import: its tests and its canaries are lost together, honestly.
    broken = {"tests/test_b.py::test_other": "PASSED"}
    (check,), _ = check_canaries(canaries, ["test_x_pass"], broken, [])
    assert not check.tampered


def test_a_must_pass_canary_that_fails_is_a_broken_file_not_tampering():
    canaries = _placed(("test_x_pass", "pass"))
    statuses = {"tests/test_a.py::test_real": "ERROR", "tests/test_a.py::test_x_pass": "ERROR"}
    (check,), _ = check_canaries(canaries, ["test_x_pass"], statuses, [])
    assert not check.tampered


def test_a_name_that_only_extends_a_canary_is_not_the_canary():
    canaries = _placed(("test_x_fail", "fail"))
    statuses = {"tests/test_a.py::test_x_fail_more": "PASSED"}
    (check,), remaining = check_canaries(canaries, ["test_x_fail"], statuses, [])
    assert check.reported == "absent" and remaining == statuses


def test_a_canary_the_supervisor_did_not_place_is_not_judged():
    checks, _ = check_canaries(_placed(("test_x_fail", "fail")), [], {}, [])
    assert checks == []


def test_a_tampered_canary_makes_the_trial_invalid_whatever_the_tests_say():
    check = CanaryCheck(name="test_x", expect="fail", reported="PASSED", file_passing=True)
    assert check.tampered


# --- real runners -------------------------------------------------------------------------


def _tree(tmp_path: Path, sample: Sample) -> Path:
    name = sample.repo.split("/")[1]
    repo = tmp_path / "repo"
    build_repo(name, repo)
    tree = tmp_path / "tree"
    subprocess.run(["git", "clone", "-q", str(repo), str(tree)], check=True)
    subprocess.run(["git", "checkout", "-q", sample.base_commit], cwd=tree, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=sample.test_patch.encode(), check=True)
    return tree


def place_canaries(tree: Path, canaries: list[Canary]) -> list[str]:
    """The canaries appended to their files by the supervisor's own code; those placed."""
    files = sorted({c.file for c in canaries})
    operations = [(f, "file", 0o644, (tree / f).read_bytes()) for f in files]
    operations, placed = with_canaries(operations, [c.model_dump() for c in canaries])
    for path, _, _, data in operations:
        (tree / path).write_bytes(data)
    return placed


def runner_env(tmp_path: Path, tamper: str | None = None) -> dict[str, str]:
    """This interpreter's runners; ``tamper``: a sitecustomize every process imports."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    if tamper is not None:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(tamper)
        env["PYTHONPATH"] = str(site)
    return env


def run_on_host(command: str, tree: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A spec's test command, run in ``tree`` by this interpreter's pytest or unittest."""
    command = command.replace("python ", f"{sys.executable} ", 1)
    if command.startswith("pytest "):
        command = f"{sys.executable} -m {command}"
    return subprocess.run(
        command, shell=True, cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


def _run_with_canaries(
    tmp_path: Path,
    instance: str,
    parser: str,
    *,
    tamper: str | None,
    seed: int,
    files: dict[str, str] | None = None,
    unshown: bool = False,
) -> tuple[list[CanaryCheck], dict[str, str], str]:
    sample = _unshown(SAMPLES[instance]) if unshown else SAMPLES[instance]
    spec = spec_of(sample, parser)
    canaries = draw_canaries(spec, get_parser(parser), sample, random.Random(seed))
    tree = _tree(tmp_path, sample)
    for path, text in (files or {}).items():
        (tree / path).write_text(text)
    placed = place_canaries(tree, canaries)
    env = runner_env(tmp_path, tamper)
    done = run_on_host(spec.eval_script.test_command, tree, env)
    log = done.stdout + done.stderr
    parsed = get_parser(parser).parse(log)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    checks, remaining = check_canaries(
        canaries, placed, statuses, [*sample.fail_to_pass, *sample.pass_to_pass]
    )
    assert len(checks) == len(canaries), log
    return checks, remaining, log


@pytest.mark.parametrize(
    ("instance", "parser", "unshown"),
    [
        ("demo__calc-1", "pytest_full", False),
        ("demo__calc-1", "pytest_full", True),  # the appended canaries
        ("demo__textkit-3", "pytest_full", False),
        ("demo__ledger-1", "unittest", False),
    ],
)
@pytest.mark.parametrize("seed", [3, 11])
def test_an_honest_run_never_trips_a_canary(tmp_path, instance, parser, unshown, seed):
    checks, remaining, log = _run_with_canaries(
        tmp_path, instance, parser, tamper=None, seed=seed, unshown=unshown
    )
    assert not [c for c in checks if c.tampered], log
    canaries = [c for c in checks if c.twin_of is None]  # twins: tests/test_twins.py
    assert {c.reported for c in canaries if c.expect == "fail"} <= {"FAILED", "ERROR"}
    assert {c.reported for c in canaries if c.expect == "pass"} == {"PASSED"}
    assert not any(c.name in key for c in checks for key in remaining)


def test_a_style_the_projects_configuration_does_not_collect_is_not_tampering(tmp_path):
    # pytest told to collect check_* functions only: the function canaries are lost with
    # every test_* function of the project, honestly; the TestCase canaries still run.
    config = {"setup.cfg": "[tool:pytest]\npython_functions = check_*\n"}
    checks, _, log = _run_with_canaries(
        tmp_path, "demo__calc-1", "pytest_full", tamper=None, seed=4, files=config, unshown=True
    )
    by_style = {(c.expect, c.reported, c.style_collected) for c in checks}
    assert ("pass", "PASSED", True) in by_style and ("fail", "FAILED", True) in by_style, log
    assert {(c.reported, c.style_collected) for c in checks if c.reported == "absent"} == {
        ("absent", False)
    }, log
    assert not [c for c in checks if c.tampered], log


def test_a_style_lost_whole_while_another_runs_is_the_runners_configuration():
    function, method = (
        Canary(name=f"test_x_{style}", expect="pass", file="t/test_a.py", style=style, source="")
        for style in ("function", "method")
    )
    statuses = {"t/test_a.py::test_real": "PASSED", "t/test_a.py::TestX::test_x_method": "PASSED"}
    checks, _ = check_canaries([function, method], [function.name, method.name], statuses, [])
    assert [(c.reported, c.style_collected, c.tampered) for c in checks] == [
        ("absent", False, False),
        ("PASSED", True, False),
    ]
    # Every canary lost while the file's tests pass: the runner's report is forged.
    checks, _ = check_canaries(
        [function, method], [function.name, method.name], {"t/test_a.py::test_real": "PASSED"}, []
    )
    assert all(c.tampered for c in checks)


PYTEST_PASSES_EVERYTHING = "import _pytest.python\n_pytest.python.Function.runtest = int\n"
UNITTEST_PASSES_EVERYTHING = "import unittest\nunittest.TestCase._callTestMethod = slice\n"


@pytest.mark.parametrize(
    ("instance", "parser", "tamper"),
    [
        ("demo__calc-1", "pytest_full", PYTEST_PASSES_EVERYTHING),
        ("demo__ledger-1", "unittest", UNITTEST_PASSES_EVERYTHING),
    ],
    ids=["pytest-runtest-int", "unittest-call-slice"],
)
def test_a_runner_made_to_pass_everything_trips_the_must_fail_canaries(
    tmp_path, instance, parser, tamper
):
    checks, _, log = _run_with_canaries(tmp_path, instance, parser, tamper=tamper, seed=5)
    tampered = {c.name for c in checks if c.tampered}
    # pytest runs a TestCase through its own runtest: only the function canaries pass there.
    assert tampered, log
    assert tampered <= {c.name for c in checks if c.expect == "fail"}


def test_the_verdict_of_a_tampered_run_is_invalid_runner_tampered():
    sample = SAMPLES["demo__calc-1"]
    parser = get_parser("pytest_full")
    spec = spec_of(sample, "pytest_full")
    canaries = draw_canaries(spec, parser, sample, random.Random(9))
    lines = [f"PASSED {t}" for t in [*sample.fail_to_pass, *sample.pass_to_pass]]
    lines += [f"PASSED {c.file}::{c.name}" for c in canaries]
    n = len(lines)
    region = (
        f"collected {n} items\n\n== short test summary info ==\n"
        + "\n".join(lines)
        + f"\n== {n} passed in 0.10s ==\n"
    )
    report = SupervisorReport(
        complete=True,
        start=StartEvent(event="start", protocol=1, python="3.11", uid=0, pid=1),
        reset=ResetEvent(
            event="reset", ok=True, reason=None, detail="", canaries=[c.name for c in canaries]
        ),
    )
    report = _with_tests(report, exit_code=0)
    observation = observe_attempt(
        sample,
        parser,
        spec.eval_script.protection,
        check_patch(sample.patch.encode(), spec.eval_script.protection),
        report=report,
        region=region,
        canaries=canaries,
    )
    verdict = score(observation)
    assert (verdict.outcome, verdict.reason) == ("invalid", "runner_tampered")
    assert "must fail" in verdict.detail or "(must fail)" in verdict.detail
    assert not any(c.name in key for c in canaries for key in observation.status_map)


def _with_tests(report: SupervisorReport, *, exit_code: int) -> SupervisorReport:
    return report.model_copy(
        update={
            "patch": PatchEvent(
                event="patch",
                status="applied",
                method="git_apply",
                changed=[],
                changed_total=0,
                seconds=0.0,
            ),
            "tests": FinishedEvent(
                event="tests_finished",
                exit_code=exit_code,
                signal=None,
                seconds=0.1,
                output_bytes=1,
                output_truncated=False,
                stopped=None,
                runner_exit="clean",
                runner_detail="",
                replaced=[],
                changed_during_run=[],
                peak=Peak(memory=0, pids=0, disk=0),
            ),
        }
    )
