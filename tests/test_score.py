"""Observation -> Score: infrastructure, then patch, then log, then tests; never reversed."""

import pytest

from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import get_parser
from evalrepro.grade.score import JUDGEMENT, score
from evalrepro.records.observation import ExecutionStatus, ParserStatus, PatchStatus, Resolution
from evalrepro.records.score import Outcome
from evalrepro.sample import Sample

F2P = "tests/test_a.py::test_fixed"
P2P = "tests/test_a.py::test_kept"


def sample(f2p=(F2P,), p2p=(P2P,), **extra):
    return Sample(
        instance_id="demo__a-1",
        repo="demo/a",
        base_commit="abc",
        test_patch="",
        FAIL_TO_PASS=list(f2p),
        PASS_TO_PASS=list(p2p),
        **extra,
    )


def eval_log(*region: str, exit_code: int | None = 0) -> str:
    tail = [] if exit_code is None else [f">>>>> Test Exit Code: {exit_code}"]
    lines = [
        "+ git apply test.patch",
        ">>>>> Start Test Output",
        *region,
        ">>>>> End Test Output",
        *tail,
    ]
    return "\n".join(lines) + "\n"


PASSING_LOG = eval_log(f"PASSED {F2P}", f"PASSED {P2P}")


def grade(text, parser="pytest", instance=None, **facts):
    observation = observe(text, instance or sample(), get_parser(parser), **facts)
    return observation, score(observation)


def test_all_listed_tests_passing_resolves():
    observation, result = grade(PASSING_LOG, patch_status=PatchStatus.APPLIED)
    assert observation.parser_status is ParserStatus.OK
    assert result.outcome is Outcome.RESOLVED
    assert result.resolution is Resolution.FULL


def test_a_partial_fix_is_unresolved_and_says_partial():
    instance = sample(f2p=(F2P, "tests/test_a.py::test_other"))
    log = eval_log(
        f"PASSED {F2P}", f"PASSED {P2P}", "FAILED tests/test_a.py::test_other - x", exit_code=1
    )
    _, result = grade(log, instance=instance)
    assert (result.outcome, result.resolution) == (Outcome.UNRESOLVED, Resolution.PARTIAL)


def test_an_infrastructure_error_is_invalid_whatever_the_log_says():
    _, result = grade(PASSING_LOG, infrastructure_error="image build failed")
    assert (result.outcome, result.reason) == (Outcome.INVALID, "infrastructure_error")
    assert result.detail == "image build failed"


def test_a_rejected_patch_is_unresolved_even_if_a_log_shows_passes():
    _, result = grade(PASSING_LOG, patch_status=PatchStatus.REJECTED)
    assert (result.outcome, result.reason) == (Outcome.UNRESOLVED, "patch_rejected")


def test_an_empty_or_corrupt_patch_is_unresolved_not_dropped():
    _, result = grade(PASSING_LOG, patch_status=PatchStatus.INVALID)
    assert (result.outcome, result.reason) == (Outcome.UNRESOLVED, "patch_invalid")


def test_a_timeout_is_invalid():
    _, result = grade(eval_log(f"PASSED {F2P}"), execution_status=ExecutionStatus.TIMEOUT)
    assert (result.outcome, result.reason) == (Outcome.INVALID, "timeout")


def test_swebench_timeout_line_outside_the_region_means_timeout():
    text = ">>>>> Start Test Output\nPASSED " + F2P + "\n>>>>> Tests Timed Out\n"
    observation, result = grade(text)
    assert observation.execution_status is ExecutionStatus.TIMEOUT
    assert result.outcome is Outcome.INVALID


def test_swebench_patch_apply_failed_line_means_rejected():
    observation, result = grade(">>>>> Patch Apply Failed\n")
    assert observation.patch_status is PatchStatus.REJECTED
    assert result.outcome is Outcome.UNRESOLVED


def test_nothing_parsed_is_not_all_passed():
    # terminal-bench's all([]) == True trap, with empty F2P and P2P lists making it worse
    observation, result = grade(
        eval_log("error: no such option: -rA", exit_code=4), instance=sample(f2p=(), p2p=())
    )
    assert observation.parser_status is ParserStatus.EMPTY
    assert (result.outcome, result.reason) == (Outcome.INVALID, "log_unparseable")


def test_a_log_that_never_reached_the_end_marker_is_invalid():
    observation, result = grade(">>>>> Start Test Output\nPASSED " + F2P + "\n")
    assert observation.parser_status is ParserStatus.NO_MARKERS
    assert result.outcome is Outcome.INVALID


def test_forged_passed_lines_with_a_failing_exit_code_are_untrusted():
    # The code under test printed PASSED lines; the test command still exited 1.
    observation, result = grade(eval_log(f"PASSED {F2P}", f"PASSED {P2P}", exit_code=1))
    assert observation.parser_status is ParserStatus.UNTRUSTED
    assert "exited 1" in observation.parser_detail
    assert result.outcome is Outcome.INVALID


def test_a_failing_exit_code_with_reported_failures_is_consistent():
    log = eval_log(f"FAILED {F2P} - assert 1 == 2", f"PASSED {P2P}", exit_code=1)
    observation, result = grade(log)
    assert observation.parser_status is ParserStatus.OK
    assert (result.outcome, result.resolution) == (Outcome.UNRESOLVED, Resolution.NO)


def test_fail_only_runs_need_evidence_that_the_suite_ran():
    instance = sample(eval_type="fail_only")
    silent = eval_log("", exit_code=0)
    _, result = grade(silent, parser="unittest_failures", instance=instance)
    assert result.outcome is Outcome.INVALID
    ran = eval_log("", "-" * 70, "Ran 2 tests in 0.001s", "", "OK", exit_code=0)
    _, result = grade(ran, parser="unittest_failures", instance=instance)
    assert result.outcome is Outcome.RESOLVED


def test_the_order_of_judgement_is_infrastructure_patch_setup_run_log():
    reasons = [reason for reason, *_ in JUDGEMENT]
    assert reasons == [
        "infrastructure_error",
        "agent_budget_exhausted",
        "agent_error",
        "agent_no_diff",
        "patch_empty",
        "patch_unsafe",
        "patch_rejected",
        "patch_invalid",
        "test_reset_failed",
        "test_infrastructure_changed",
        "suspect_patch",
        "timeout",
        "limit_memory",
        "limit_pids",
        "limit_disk",
        "limit_inodes",
        "limit_output",
        "sandbox_died",
        "not_run",
        "runner_exit_abnormal",
        "log_unparseable",
        "runner_tampered",
        "fresh_disagrees",
        "differs_under_test",
    ]


@pytest.mark.parametrize("patch_status", [PatchStatus.REJECTED, PatchStatus.INVALID])
def test_infrastructure_beats_patch(patch_status):
    _, result = grade(PASSING_LOG, patch_status=patch_status, infrastructure_error="podman died")
    assert result.reason == "infrastructure_error"


def test_every_reason_and_every_suspect_rule_has_words_for_a_reviewer():
    from evalrepro.grade.score import JUDGEMENT, TEST_REASONS
    from evalrepro.records.words import REASON_WORDS, SUSPECT_WORDS
    from evalrepro.rules.patchcheck import SUSPECT_RULES

    reasons = {reason for reason, *_ in JUDGEMENT} | set(TEST_REASONS)
    assert reasons <= set(REASON_WORDS), reasons - set(REASON_WORDS)
    rules = {rule for rule, _, _ in SUSPECT_RULES} | {"framework_replaced", "changed_during_run"}
    assert rules <= set(SUSPECT_WORDS), rules - set(SUSPECT_WORDS)
    assert all(what and why for what, why in SUSPECT_WORDS.values())
