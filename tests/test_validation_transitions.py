"""Validation's judgement of tests and instances, from the status maps of repeated runs
before and after the gold patch: the transitions SWE-bench names, flaky tests apart, and
the verdict that says why an instance can or cannot be resolved.
"""

from __future__ import annotations

import json
import random

import pytest
from swebench.harness.constants import FAIL_TO_FAIL, FAIL_TO_PASS, PASS_TO_FAIL, PASS_TO_PASS
from swebench.harness.grading import get_eval_tests_report

from evalrepro.config.experiment import FlakyBoundSettings, ValidationSettings
from evalrepro.grade.score import score
from evalrepro.records.base import read_record
from evalrepro.records.canary import CanaryCheck
from evalrepro.records.observation import (
    ExecutionStatus,
    Observation,
    ParserStatus,
    SuspectFinding,
)
from evalrepro.records.observation import (
    TestGroup as Group,
)
from evalrepro.records.observation import (
    TestsReport as Report,
)
from evalrepro.records.validation import RunFacts, ValidationReport
from evalrepro.validation.dataset import write_validated
from evalrepro.validation.run import facts_of
from evalrepro.validation.transitions import settled, transitions_of, validate_instance

P, F, S, E = "PASSED", "FAILED", "SKIPPED", "ERROR"


def runs(*maps: dict[str, str]) -> list[RunFacts]:
    return [RunFacts(status_map=m) for m in maps]


def kinds(before, after) -> dict[str, str]:
    return {t.test: t.transition for t in transitions_of(before, after)}


def test_each_test_gets_the_transition_its_two_sides_agree_on():
    before = [{"fixed": F, "kept": P, "broken": P, "dead": E, "skip": S}] * 3
    after = [{"fixed": P, "kept": P, "broken": F, "dead": F, "skip": S, "new": P}] * 3
    assert kinds(before, after) == {
        "fixed": "FAIL_TO_PASS",
        "kept": "PASS_TO_PASS",
        "broken": "PASS_TO_FAIL",
        "dead": "FAIL_TO_FAIL",
        "skip": "SKIPPED",
        # Absent before (its file did not import without the fix) is failing, as graded.
        "new": "FAIL_TO_PASS",
    }


def test_a_test_whose_repeats_disagree_is_flaky_with_its_pass_counts():
    before = [{"t": F, "u": F}, {"t": F, "u": F}, {"t": F, "u": F}]
    after = [{"t": P, "u": P}, {"t": F, "u": P}, {"t": P, "u": P}]
    (flaky, stable) = transitions_of(before, after)
    assert (flaky.transition, flaky.before_passed, flaky.after_passed) == ("flaky", 0, 2)
    assert stable.transition == "FAIL_TO_PASS"


def test_derived_lists_grade_as_swebench_grades_them():
    before = [{"a": F, "b": P, "c": P, "d": F, "e": S, "g[1]": E}] * 2
    after = [{"a": P, "b": P, "c": F, "d": F, "e": P, "g[1]": P}] * 2
    result = validate_instance("x", runs(*before), runs(*after))
    gold = {
        FAIL_TO_PASS: result.fail_to_pass,
        PASS_TO_PASS: result.pass_to_pass,
        FAIL_TO_FAIL: result.fail_to_fail,
        PASS_TO_FAIL: result.pass_to_fail,
    }
    # After the gold patch, SWE-bench's own report: every F2P and P2P test succeeds...
    report = get_eval_tests_report(after[0], gold, calculate_to_fail=True)
    assert report[FAIL_TO_PASS]["failure"] == [] and report[PASS_TO_PASS]["failure"] == []
    assert sorted(report[FAIL_TO_PASS]["success"]) == ["a", "e", "g[1]"]
    # ... and before it, every F2P test fails and every P2F test passes.
    report = get_eval_tests_report(before[0], gold, calculate_to_fail=True)
    assert report[FAIL_TO_PASS]["success"] == []
    assert report[PASS_TO_FAIL]["success"] == ["c"]


def test_verdicts_name_why_an_instance_cannot_be_resolved():
    ok = validate_instance("x", runs({"t": F}), runs({"t": P}))
    assert (ok.verdict, ok.fail_to_pass) == ("valid", ["t"])
    nothing = validate_instance("x", runs({"t": P}), runs({"t": P}))
    assert nothing.verdict == "no_fail_to_pass" and nothing.pass_to_pass == ["t"]
    breaks = validate_instance("x", runs({"t": F, "u": P}), runs({"t": P, "u": F}))
    assert breaks.verdict == "gold_breaks_tests" and "u" in breaks.detail
    flaky = validate_instance("x", runs({"t": F, "u": P}, {"t": F, "u": F}), runs(*[{"t": P}] * 2))
    assert (flaky.verdict, flaky.flaky, flaky.fail_to_pass) == ("flaky_tests", ["u"], ["t"])
    broken = RunFacts(status_map={}, ran=False, problem="the tests did not start: no module x")
    down = validate_instance("x", runs({"t": F}), [broken])
    assert down.verdict == "tests_not_run" and "no module x" in down.detail
    nothing_passes = validate_instance("x", runs({"tests/t.py": E}), runs({"tests/t.py": E}))
    assert nothing_passes.verdict == "tests_not_run" and "tests/t.py" in nothing_passes.detail
    garbled = RunFacts(status_map={}, parsed=False, problem="no markers")
    assert validate_instance("x", [garbled], runs({"t": P})).verdict == "log_unparseable"


def test_every_disagreement_with_the_declared_lists_is_listed():
    result = validate_instance(
        "x",
        runs({"a": F, "b": P, "c": F}),
        runs({"a": P, "b": P, "c": P}),
        declared=(["a", "b"], ["gone"]),
    )
    assert result.disagreements == [
        "FAIL_TO_PASS declares b: derived PASS_TO_PASS",
        "PASS_TO_PASS declares gone: derived not reported by any run",
        "derived FAIL_TO_PASS c: the dataset lists it in neither",
    ]


def test_a_run_that_applies_no_patch_is_given_none():
    from evalrepro.records.testspec import ResolvedProtection
    from evalrepro.rules.patchcheck import check_patch

    protection = ResolvedProtection(policy="restore", suspect="invalid", patterns=[], test_dirs=[])
    assert check_patch(b"", protection, without_patch=True).problem is None
    refused = check_patch(b"diff --git a/x b/x\n", protection, without_patch=True).problem
    assert refused is not None and refused.startswith("unsafe:")
    # Anywhere else, an empty patch is the target's (empty) answer, as before.
    assert check_patch(b"", protection).problem == "empty"


def test_the_html_report_shows_test_ids_from_logs_as_text_only():
    from evalrepro.records.validation import ValidationReport
    from evalrepro.report.validation import validation_html

    hostile = "<script>alert(1)</script>"
    instance = validate_instance("x", runs({hostile: P}, {hostile: F}), runs({hostile: P}))
    report = ValidationReport(
        dataset="d",
        repeats=2,
        before_lockfile="",
        after_lockfile="",
        harness_version="0",
        instances=[instance],
    )
    page = validation_html(report)
    assert hostile not in page and "&lt;script&gt;" in page


# --- what a run is worth: its score decides ---------------------------------------------


def observed(**fields) -> Observation:
    """One run's observation, as the grader records it for validation (no lists to grade:
    an empty report), with the fields that matter."""
    empty = Group(success=[], failure=[])
    ok = fields.get("parser_status", ParserStatus.OK) is ParserStatus.OK
    return Observation(
        instance_id="x",
        parser="pytest_full",
        tests=Report(fail_to_pass=empty, pass_to_pass=empty) if ok else None,
        **({"parser_status": ParserStatus.OK, "status_map": {}} | fields),
    )


def judged(observation: Observation) -> RunFacts:
    return facts_of(observation, score(observation))


TAMPERED = dict(
    status_map={"t": P, "canary": P},
    test_exit_code=0,
    canaries=[CanaryCheck(name="canary", expect="fail", reported=P, file_passing=True)],
)


def test_a_run_whose_score_is_invalid_for_what_ran_in_it_is_not_trusted():
    # The after run's log says the fix works; a must-fail canary passed beside it.
    after = judged(observed(**TAMPERED))
    assert not after.trusted and after.problem.startswith("runner_tampered: canary canary")
    result = validate_instance("x", runs({"t": F}), [after])
    assert result.verdict == "run_untrusted"
    assert "after the gold patch, run 1: runner_tampered" in result.detail
    assert result.fail_to_pass == [] and result.pass_to_pass == []
    # One tampered run among honest ones is enough; it outranks a run that did not finish.
    late = judged(observed(execution_status=ExecutionStatus.TIMEOUT, limit_detail="1800 s"))
    mixed = validate_instance("x", [late, *runs({"t": F})], [*runs({"t": P}), after])
    assert mixed.verdict == "run_untrusted"
    # Suspect code and fresh runs that disagree with the log are the same.
    suspect = observed(
        status_map={"t": P},
        suspect_policy="invalid",
        suspects=[
            SuspectFinding(
                rule="pytest_hook",
                path="conftest.py",
                line=3,
                text="x",
                what="defines a pytest hook",
                why="it can change how every test is reported",
            )
        ],
    )
    assert judged(suspect).problem.startswith("suspect_patch: conftest.py, line 3, defines")
    honest = judged(observed(status_map={"t": P}))
    assert honest.trusted and honest.status_map == {"t": P}


def test_an_untrusted_instance_is_not_written_into_the_validated_dataset(tmp_path):
    source = tmp_path / "d.jsonl"
    source.write_text(json.dumps({"instance_id": "x", "repo": "r"}) + "\n")
    instance = validate_instance("x", runs({"t": F}), [judged(observed(**TAMPERED))])
    report = ValidationReport(
        dataset="d", repeats=1, before_lockfile="", after_lockfile="", harness_version="0",
        instances=[instance],
    )  # fmt: skip
    assert write_validated(source, report, tmp_path / "out.jsonl") == 0
    assert (tmp_path / "out.jsonl").read_text() == ""


def test_a_limit_or_a_timeout_is_a_run_that_did_not_finish_with_its_reason():
    flood = observed(
        execution_status=ExecutionStatus.LIMIT,
        limit="inodes",
        limit_detail="20001 files and folders created, limit 20000",
    )
    found = judged(flood)
    assert (found.trusted, found.ran) == (True, False)
    assert found.problem == (
        "the tests did not finish: limit_inodes: 20001 files and folders created, limit 20000"
    )
    result = validate_instance("x", runs({"t": F}), [found])
    assert result.verdict == "tests_not_run" and "limit_inodes" in result.detail


def test_a_test_command_that_cannot_start_is_said_not_to_have_run_and_why():
    # `test_cmd: nosuch-test-runner`: bash exits 127, nothing is reported.
    missing = judged(observed(parser_status=ParserStatus.EMPTY, test_exit_code=127))
    assert not missing.ran
    assert missing.problem == (
        "the test command did not run: exit status 127, the shell found no such command"
    )
    result = validate_instance("x", [missing], [missing])
    assert result.verdict == "tests_not_run"
    assert result.detail == f"before the gold patch, run 1: {missing.problem}"
    unexecutable = judged(observed(parser_status=ParserStatus.EMPTY, test_exit_code=126))
    assert "exit status 126, the shell found the command but could not execute" in (
        unexecutable.problem
    )


def test_the_verdict_follows_the_documented_order_tests_not_run_before_log_unparseable():
    # The test command exits 4 and reports nothing, in every run: no test passed in any
    # run of either side (tests_not_run), not a log to parse (log_unparseable).
    silent = judged(observed(parser_status=ParserStatus.EMPTY, test_exit_code=4))
    assert silent.ran and not silent.parsed and "(exit status 4)" in silent.problem
    result = validate_instance("x", [silent, silent], [silent, silent])
    assert result.verdict == "tests_not_run"
    assert result.detail.startswith("no test passed in any run, with the gold patch or without")
    assert "before the gold patch, run 1: log unparseable" in result.detail
    assert "(and 3 more runs)" in result.detail
    # Where other runs passed tests, one unreadable log is log_unparseable.
    assert validate_instance("x", [silent], runs({"t": P})).verdict == "log_unparseable"


# --- how many runs: the flakiness bound -------------------------------------------------


def test_the_runs_of_a_side_are_the_fewest_that_reach_the_bound():
    for rate, miss in ((0.3, 0.05), (0.25, 0.01), (0.5, 0.5), (0.1, 0.001), (0.5, 0.25)):
        n = FlakyBoundSettings(min_rate=rate, miss_probability=miss).runs()
        assert (1 - rate) ** n <= miss < (1 - rate) ** (n - 1) or n == 1, (rate, miss, n)
    assert ValidationSettings().planned_runs() == 9  # the defaults: 0.3, 0.05
    assert ValidationSettings(repeats=2).planned_runs() == 2
    with pytest.raises(ValueError, match="need 2995 runs of each side, more than 100"):
        FlakyBoundSettings(min_rate=0.001)


def test_a_test_failing_at_the_bounds_rate_is_listed_at_most_as_often_as_it_says():
    # A PASS_TO_PASS test that always passes before the gold patch and fails in 30% of the
    # runs after it (independently), validated 4000 times with the default runs: listed
    # when all n runs after pass, 0.7**9 = 4.0% (the old 3 runs: 34%).
    rng = random.Random(20261206)
    settings = ValidationSettings()
    n, trials = settings.planned_runs(), 4000
    before = runs(*[{"t": P, "fixed": F}] * n)
    listed = 0
    for _ in range(trials):
        after = [{"t": F if rng.random() < 0.3 else P, "fixed": P} for _ in range(n)]
        result = validate_instance("x", before, runs(*after))
        listed += "t" in result.pass_to_pass
    # 4000 draws: the rate's standard error is about 0.3 points.
    assert listed / trials <= settings.flaky.miss_probability
    assert listed / trials == pytest.approx(0.7**n, abs=0.01)


def test_runs_stop_early_only_where_more_cannot_change_the_instance():
    # Every test reported has both passed and failed: none can be listed.
    flaky = runs({"t": P}, {"t": F})
    assert "none can be listed" in settled(flaky, runs({"t": P}, {"t": P}))
    # One test seen one way only: it needs every planned run.
    assert settled(runs({"t": P, "u": F}, {"t": F, "u": F}), runs({"t": P, "u": P}) * 2) == ""
    # A run that makes the instance unusable whatever the others say.
    tampered = judged(observed(**TAMPERED))
    assert settled(runs({"t": F}), [tampered]).startswith("run_untrusted whatever")
    # No test passed yet: a later run may pass one, so no stop; an unreadable log stops.
    assert settled(runs({"t": E}), runs({"t": E})) == ""
    silent = judged(observed(parser_status=ParserStatus.EMPTY, test_exit_code=4))
    assert settled([silent], runs({"t": E})).startswith("tests_not_run whatever")


def test_a_report_of_schema_1_reads_without_bounds(tmp_path):
    old = {
        "record": "ValidationReport",
        "schema_version": 1,
        "dataset": "d",
        "repeats": 3,
        "before_lockfile": "",
        "after_lockfile": "",
        "harness_version": "0",
        "instances": [{"instance_id": "x", "verdict": "valid", "fail_to_pass": ["t"]}],
    }
    path = tmp_path / "old.validation.json"
    path.write_text(json.dumps(old))
    report = read_record(path, ValidationReport)
    assert report.schema_version == 2 and report.min_rate is None
    assert report.instances[0].bound is None and report.instances[0].fail_to_pass == ["t"]
