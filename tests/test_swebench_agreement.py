"""Differential suite: a bare log is graded exactly as swebench 5.0.2 grades it.

Read by the ``swebench`` rules (the default for bare logs), every (log, compatible
parser) pair gives swebench's own answer key for key: ``get_logs_eval``'s "found"
exactly when our parser status is OK, its status map, then ``get_eval_tests_report``'s
FAIL_TO_PASS / PASS_TO_PASS success and failure lists and ``get_resolution_status``'s
verdict, for several instances derived from the tests each log holds (all pass, one
F2P fails, one P2P fails, skipped, absent, failing only, truncated ids). The logs are

* every log of the runner corpus, wrapped as an eval log in both of SWE-bench's shapes
  (3.x ``echo`` markers, 4.x/5.x ``: '<marker>'`` traces), with and without the
  exit-code line;
* real eval logs in SWE-bench's layout (``tests/corpus/swebench_eval/``): eval scripts
  shaped like 5.0.2's really run by bash over pytest, Django, mocha (FAIL_ONLY) and
  SymPy, two of them staging forgeries that swebench resolves; regenerated live too.

The ``strict`` rules are the distrusting reading; where they depart from swebench's,
each departure is a named test below, with what swebench does and why strict does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import Family, get_parser, parser_names
from evalrepro.grade.score import score
from evalrepro.records.observation import Observation, ParserStatus
from evalrepro.records.score import Outcome
from evalrepro.sample import Sample
from tests.corpus import CorpusLog, all_corpus
from tests.corpus_swebench import EvalLog, load_eval_logs
from tests.reference import (
    FAILING,
    instance_variants,
    swebench_grade,
    swebench_logs_eval,
    swebench_status_map,
)
from tests.runners.swebench_eval import CASES as EVAL_CASES
from tests.runners.swebench_eval import available, produce

Shape = Literal["echo", "colon"]
EVAL_LOGS = load_eval_logs()


def eval_log(region: str, exit_code: int | None, shape: Shape = "echo") -> str:
    """``region`` as SWE-bench's harness logs it, ``set -x`` traces included: 3.x scripts
    ``echo`` the markers (trace line, then the marker), 4.x/5.x run ``: '<marker>'``."""
    lines = [
        "+ source /opt/miniconda3/bin/activate",
        "+ git checkout abc123 tests/test_x.py",
        "+ git apply -v -",
        "Checking patch tests/test_x.py...",
        "Applied patch tests/test_x.py cleanly.",
    ]
    if shape == "echo":
        lines += ["+ echo '>>>>> Start Test Output'", ">>>>> Start Test Output"]
    else:
        lines += ["+ : '>>>>> Start Test Output'"]
    lines += [region.rstrip("\n"), "+ SWEBENCH_TEST_EXIT_CODE=1"]
    if shape == "echo":
        lines += ["+ echo '>>>>> End Test Output'", ">>>>> End Test Output"]
    else:
        lines += ["+ : '>>>>> End Test Output'"]
    if exit_code is not None:
        lines += [
            f"+ echo '>>>>> Test Exit Code: {exit_code}'",
            f">>>>> Test Exit Code: {exit_code}",
        ]
    lines.append("+ git checkout abc123 tests/test_x.py")
    return "\n".join(lines) + "\n"


def sample(f2p, p2p=(), *, fail_only: bool = False) -> Sample:
    return Sample(
        instance_id="ref__ref-1",
        repo="ref/ref",
        base_commit="abc123",
        test_patch="",
        FAIL_TO_PASS=list(f2p),
        PASS_TO_PASS=list(p2p),
        eval_type="fail_only" if fail_only else None,
    )


def assert_graded_as_swebench(
    text: str, parser: str, f2p: list[str], p2p: list[str], tmp_path: Path, context: str
) -> Observation:
    """Our swebench-rules Observation of ``text`` is swebench's answer, key for key."""
    fail_only = get_parser(parser).fail_only
    observation = observe(text, sample(f2p, p2p, fail_only=fail_only), get_parser(parser))
    reference = swebench_grade(text, parser, f2p, p2p, tmp_path, fail_only=fail_only)
    assert observation.log_rules == "swebench", context
    resolved = score(observation).outcome is Outcome.RESOLVED
    if reference is None:
        assert observation.parser_status is not ParserStatus.OK, context
        # swebench's get_logs_eval: ({}, False), no lists; key for key, a compatible
        # parser keeps nothing of a log it cannot read either.
        assert observation.status_map == {}, context
        assert observation.tests is None, context
        assert not resolved, context
        return observation
    assert observation.parser_status is ParserStatus.OK, context
    assert observation.status_map == reference["status_map"], context
    assert observation.tests is not None, context
    assert observation.tests.fail_to_pass.model_dump() == reference["fail_to_pass"], context
    assert observation.tests.pass_to_pass.model_dump() == reference["pass_to_pass"], context
    assert str(observation.tests.resolution) == reference["resolution"], context
    assert resolved == reference["resolved"], context
    return observation


def compat_cases() -> list[tuple[CorpusLog, str]]:
    return [(log, parser) for log in all_corpus() for parser in log.compat]


# --- the runner corpus, wrapped in SWE-bench's two eval-log shapes ----------------------


@pytest.mark.parametrize("shape", ["echo", "colon"])
@pytest.mark.parametrize(
    ("log", "parser"),
    compat_cases(),
    ids=[f"{log.runner}/{log.case}/{parser}" for log, parser in compat_cases()],
)
def test_swebench_rules_grade_every_corpus_log_as_swebench_does(log, parser, shape, tmp_path):
    statuses = swebench_status_map(parser, log.text)
    has_failures = any(s in FAILING for s in statuses.values())
    for exit_code in (None, 1 if has_failures else 0):
        text = eval_log(log.text, exit_code, shape)
        for label, f2p, p2p in instance_variants(statuses):
            context = f"{label}, exit code {exit_code}"
            assert_graded_as_swebench(text, parser, f2p, p2p, tmp_path, context)


@pytest.mark.parametrize("shape", ["echo", "colon"])
@pytest.mark.parametrize(
    ("log", "parser"),
    compat_cases(),
    ids=[f"{log.runner}/{log.case}/{parser}" for log, parser in compat_cases()],
)
def test_strict_rules_agree_with_swebench_where_both_read_the_region(log, parser, shape, tmp_path):
    # On honest logs the two readings see the same test output: strict never resolves
    # what swebench does not, and where swebench grades, the lists are the same.
    ours = get_parser(parser)
    statuses = swebench_status_map(parser, log.text)
    has_failures = any(s in FAILING for s in statuses.values())
    for exit_code in (None, 1 if has_failures else 0):
        text = eval_log(log.text, exit_code, shape)
        for label, f2p, p2p in instance_variants(statuses):
            instance = sample(f2p, p2p, fail_only=ours.fail_only)
            observation = observe(text, instance, ours, rules="strict")
            assert observation.log_rules == "strict"
            reference = swebench_grade(text, parser, f2p, p2p, tmp_path, fail_only=ours.fail_only)
            context = f"{label}, exit code {exit_code}"
            resolved = score(observation).outcome is Outcome.RESOLVED
            if reference is None:
                assert not resolved, context
                continue
            assert observation.tests is not None, context
            assert observation.tests.fail_to_pass.model_dump() == reference["fail_to_pass"], context
            assert observation.tests.pass_to_pass.model_dump() == reference["pass_to_pass"], context
            assert resolved == reference["resolved"], context


def test_the_corpus_covers_every_compatible_parser():
    compat = {n for n in parser_names() if get_parser(n).family is Family.SWEBENCH}
    covered = {parser for _, parser in compat_cases()}
    assert compat <= covered, f"compatible parsers without a corpus log: {compat - covered}"


# --- real eval logs in SWE-bench's layout -----------------------------------------------


def eval_log_cases(logs: list[EvalLog]) -> list[tuple[EvalLog, str]]:
    return [(log, parser) for log in logs for parser in log.compat]


def assert_eval_log_graded_as_swebench(log: EvalLog, parser: str, tmp_path: Path) -> None:
    fail_only = log.eval_type == "fail_only"
    statuses, _ = swebench_logs_eval(log.text, parser, tmp_path, fail_only=fail_only)
    for label, f2p, p2p in instance_variants(statuses):
        assert_graded_as_swebench(
            log.text, parser, f2p, p2p, tmp_path, f"{log.instance_id}: {label}"
        )


@pytest.mark.parametrize(
    ("log", "parser"),
    eval_log_cases(EVAL_LOGS),
    ids=[f"{log.instance_id}/{parser}" for log, parser in eval_log_cases(EVAL_LOGS)],
)
def test_real_swebench_eval_logs_are_graded_as_swebench_grades_them(log, parser, tmp_path):
    assert_eval_log_graded_as_swebench(log, parser, tmp_path)


def test_the_real_eval_logs_have_swebench_5_shape_and_cover_pytest_django_and_fail_only():
    runners = {log.runner for log in EVAL_LOGS}
    assert {"pytest", "django", "mocha", "sympy"} <= runners
    assert any(log.eval_type == "fail_only" for log in EVAL_LOGS)
    for log in EVAL_LOGS:
        assert log.eval_script.startswith("#!/bin/bash\nset -uxo pipefail\n")
        assert "\n: '>>>>> Start Test Output'\n" in log.eval_script
        assert "\nSWEBENCH_TEST_EXIT_CODE=$?\n: '>>>>> End Test Output'\n" in log.eval_script
        assert "\n+ : '>>>>> Start Test Output'\n" in log.text
        assert "\n+ echo '>>>>> Test Exit Code: " in log.text


def test_the_committed_eval_logs_are_every_generated_case():
    assert [log.instance_id for log in EVAL_LOGS] == [case.instance_id for case in EVAL_CASES]


def trace_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("+ ")]


@pytest.fixture(scope="module")
def live_eval_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, EvalLog]:
    runnable = tuple(case for case in EVAL_CASES if available(case) is None)
    return {log.instance_id: log for log in produce(tmp_path_factory.mktemp("eval"), runnable)}


@pytest.mark.live
@pytest.mark.parametrize("committed", EVAL_LOGS, ids=[log.instance_id for log in EVAL_LOGS])
def test_a_fresh_run_of_each_eval_script_is_graded_as_swebench_grades_it(
    live_eval_logs, committed, tmp_path
):
    if committed.instance_id not in live_eval_logs:
        case = next(c for c in EVAL_CASES if c.instance_id == committed.instance_id)
        pytest.skip(available(case) or "not produced")
    fresh = live_eval_logs[committed.instance_id]
    # The same script, traced the same way; only the runner's own output may move on.
    assert fresh.eval_script == committed.eval_script
    assert trace_lines(fresh.text) == trace_lines(committed.text)
    for parser in fresh.compat:
        assert_eval_log_graded_as_swebench(fresh, parser, tmp_path)


# --- strict rules: the named differences -------------------------------------------------


def eval_log_by_id(instance_id: str) -> EvalLog:
    return next(log for log in EVAL_LOGS if log.instance_id == instance_id)


CALC_F2P = ["tests/test_calc.py::test_fixed"]
CALC_P2P = ["tests/test_calc.py::test_kept"]


@pytest.mark.parametrize(
    ("instance_id", "strict_status"),
    [
        # A conftest.py prints an end marker early (swebench's region is empty, so it
        # parses the whole log) and a PASSED line at exit. Strict: two end markers.
        ("corpus__pytest-forged_markers", ParserStatus.SUSPECT),
        # setup.py prints results at install, before the markers, and a conftest.py
        # deselects every test. Strict: nothing between the markers, nothing graded.
        ("corpus__pytest-install_forgery", ParserStatus.EMPTY),
    ],
)
def test_difference_a_real_forged_run_that_swebench_resolves_is_unscorable_under_strict_rules(
    instance_id, strict_status, tmp_path
):
    log = eval_log_by_id(instance_id)
    reference = swebench_grade(log.text, "pytest", CALC_F2P, CALC_P2P, tmp_path)
    assert reference is not None and reference["resolved"]
    ours = assert_graded_as_swebench(log.text, "pytest", CALC_F2P, CALC_P2P, tmp_path, instance_id)
    assert score(ours).outcome is Outcome.RESOLVED
    strict = observe(log.text, sample(CALC_F2P, CALC_P2P), get_parser("pytest"), rules="strict")
    assert strict.parser_status is strict_status
    assert (score(strict).outcome, score(strict).reason) == (Outcome.INVALID, "log_unparseable")


def test_difference_lines_outside_the_markers_count_only_under_swebench_rules(tmp_path):
    # swebench re-parses the whole log when the region yields nothing, so PASSED lines
    # printed before the markers (e.g. by a patched setup.py during install) resolve
    # the instance there. Strict rules ignore them, and an empty region is unscorable.
    fixed = ["tests/test_x.py::test_fixed"]
    text = "PASSED tests/test_x.py::test_fixed\n" + eval_log("collected 0 items\n", 0)
    reference = swebench_grade(text, "pytest", fixed, [], tmp_path)
    assert reference is not None and reference["resolved"]
    ours = assert_graded_as_swebench(text, "pytest", fixed, [], tmp_path, "outside lines")
    assert "whole log" in ours.parser_detail
    strict = observe(text, sample(fixed), get_parser("pytest"), rules="strict")
    assert strict.status_map == {}
    assert score(strict).outcome is Outcome.INVALID


def test_difference_a_forged_end_marker_makes_the_log_unscorable_under_strict_rules(tmp_path):
    # The code under test prints a fake end marker and a PASSED line after its real
    # failure. swebench grades the forged line (its region is cut at the `echo` trace
    # of the start marker, so it re-parses the whole log, where the last line wins) and,
    # in logs without an exit-code line, resolves. Strict rules refuse two end markers.
    fixed = ["tests/test_x.py::test_fixed"]
    forged = "\n".join(
        ["FAILED tests/test_x.py::test_fixed", ">>>>> End Test Output", f"PASSED {fixed[0]}"]
    )
    text = eval_log(forged, None)
    reference = swebench_grade(text, "pytest", fixed, [], tmp_path)
    assert reference is not None and reference["resolved"]
    assert_graded_as_swebench(text, "pytest", fixed, [], tmp_path, "forged end marker")
    result = score(observe(text, sample(fixed), get_parser("pytest"), rules="strict"))
    assert (result.outcome, result.reason) == (Outcome.INVALID, "log_unparseable")


def test_difference_the_exit_code_is_read_after_the_end_marker_only_under_strict_rules(tmp_path):
    # swebench takes the first "Test Exit Code" line anywhere: one in the model patch's
    # diff (which the eval script prints before the markers) switches its check of the
    # exit code off. Strict rules read the line after the end marker, the harness's.
    fixed = ["tests/test_x.py::test_fixed"]
    diff = "+# >>>>> Test Exit Code: 0\n"
    text = diff + eval_log("PASSED tests/test_x.py::test_fixed\n", 1, "colon")
    reference = swebench_grade(text, "pytest", fixed, [], tmp_path)
    assert reference is not None and reference["resolved"]
    ours = assert_graded_as_swebench(text, "pytest", fixed, [], tmp_path, "early exit code")
    assert ours.test_exit_code == 0
    strict = observe(text, sample(fixed), get_parser("pytest"), rules="strict")
    assert (strict.test_exit_code, strict.parser_status) == (1, ParserStatus.UNTRUSTED)


def test_difference_a_harness_line_inside_the_region_counts_only_under_swebench_rules(tmp_path):
    # swebench looks for its harness lines anywhere: printed by the code under test, one
    # stops all grading (never resolved; here the infrastructure is blamed, invalid).
    # Strict rules count them only outside the region, where the harness writes them.
    fixed = ["tests/test_x.py::test_fixed"]
    region = "FAILED tests/test_x.py::test_fixed\n>>>>> Tests Errored\n"
    text = eval_log(region, 1, "colon")
    assert swebench_grade(text, "pytest", fixed, [], tmp_path) is None
    ours = assert_graded_as_swebench(text, "pytest", fixed, [], tmp_path, "harness line")
    assert ours.parser_status is ParserStatus.NOT_PARSED
    assert score(ours).reason == "infrastructure_error"
    strict = score(observe(text, sample(fixed), get_parser("pytest"), rules="strict"))
    assert (strict.outcome, strict.reason) == (Outcome.UNRESOLVED, "tests_failed")


def test_difference_a_carriage_return_ends_a_line_only_under_swebench_rules(tmp_path):
    # swebench opens the log in text mode: "\r" becomes a line break. Strict rules end
    # lines at "\n" only, so a progress line overwritten in place stays one line.
    fixed = ["tests/test_x.py::test_fixed"]
    text = eval_log("progress 50%\rPASSED tests/test_x.py::test_fixed\n", 0, "colon")
    reference = swebench_grade(text, "pytest", fixed, [], tmp_path)
    assert reference is not None and reference["resolved"]
    assert_graded_as_swebench(text, "pytest", fixed, [], tmp_path, "carriage return")
    strict = observe(text, sample(fixed), get_parser("pytest"), rules="strict")
    assert strict.status_map == {}


def test_difference_the_runners_own_count_shows_the_suite_ran_only_under_strict_rules(tmp_path):
    # An empty map is gradable only with evidence that the suite ran. swebench's
    # SUITE_RAN knows JS and TAP totals, not Django's "Ran N tests"; the strict rules take
    # the parser's own evidence. Here nothing is listed, so strict resolves.
    region = "Ran 3 tests in 0.010s\n\nOK\n"
    text = eval_log(region, 0, "colon")
    assert swebench_grade(text, "django", [], [], tmp_path) is None
    assert_graded_as_swebench(text, "django", [], [], tmp_path, "django count")
    strict = observe(text, sample([]), get_parser("django"), rules="strict")
    assert strict.parser_status is ParserStatus.OK
    assert score(strict).outcome is Outcome.RESOLVED


def test_of_a_log_it_cannot_score_a_native_parser_says_more_than_swebench_and_says_so(tmp_path):
    """A runner that printed only passes, then exited 1: swebench's reader keeps nothing
    ({}, not found), and so does every compatible parser; a native parser keeps what it
    read, unscored, and its detail says the map is that."""
    log = next(
        log
        for log in all_corpus()
        if log.native and log.compat and log.truth and set(log.truth.values()) == {"PASSED"}
    )
    text = eval_log(log.text, 1, "colon")
    compat = log.compat[0]
    statuses, found = swebench_logs_eval(text, compat, tmp_path)
    assert (statuses, found) == ({}, False)
    instance = sample([next(iter(log.truth))])
    ours = observe(text, instance, get_parser(compat))
    assert ours.parser_status is not ParserStatus.OK and ours.status_map == {}
    native = observe(text, instance, get_parser(log.native))
    assert native.parser_status is not ParserStatus.OK
    assert native.status_map  # what it read
    said = f"status_map: what {log.native} read of the log, not graded"
    assert native.parser_detail.endswith(said)
    assert score(native).reason == "log_unparseable"
