"""observe() of a bare log: which rules read it, and what each rule set makes of it.

A bare log comes from elsewhere (``evalrepro grade --log``, a re-grade of SWE-bench's
``test_output.txt``), so it is read by swebench 5.0.2's rules unless the caller asks for
the strict ones; the Observation records which. Key-for-key agreement with swebench is
the differential suite's (``test_swebench_agreement.py``); here are the rest.
"""

from __future__ import annotations

import pytest

from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import get_parser
from evalrepro.grade.score import score
from evalrepro.records.observation import ExecutionStatus, ParserStatus, PatchStatus
from evalrepro.records.score import Outcome
from evalrepro.sample import Sample
from tests.corpus import load_corpus
from tests.corpus_swebench import load_eval_logs

FIXED = "tests/test_x.py::test_fixed"


def sample(f2p=(FIXED,), p2p=(), **extra) -> Sample:
    return Sample(
        instance_id="ref__ref-1",
        repo="ref/ref",
        base_commit="abc",
        test_patch="",
        FAIL_TO_PASS=list(f2p),
        PASS_TO_PASS=list(p2p),
        **extra,
    )


def swebench_5_log(*region: str, exit_code: int = 0, tail: str = "") -> str:
    """A log as swebench 5.0.2's eval script prints it under ``set -uxo pipefail``."""
    lines = [
        "+ : '>>>>> Start Test Output'",
        *region,
        f"+ SWEBENCH_TEST_EXIT_CODE={exit_code}",
        "+ : '>>>>> End Test Output'",
        f"+ echo '>>>>> Test Exit Code: {exit_code}'",
        f">>>>> Test Exit Code: {exit_code}",
    ]
    return "\n".join(lines) + "\n" + tail


def test_a_bare_log_is_read_by_swebench_rules_unless_strict_ones_are_asked_for():
    text = swebench_5_log(f"PASSED {FIXED}")
    default = observe(text, sample(), get_parser("pytest"))
    assert (default.source, default.log_rules) == ("log", "swebench")
    strict = observe(text, sample(), get_parser("pytest"), rules="strict")
    assert strict.log_rules == "strict"
    assert score(default).outcome is score(strict).outcome is Outcome.RESOLVED


@pytest.mark.parametrize("rules", ["swebench", "strict"])
def test_a_real_swebench_5_log_reads_the_same_under_both_rules(rules):
    log = next(log for log in load_eval_logs() if log.instance_id == "corpus__pytest-tb_no")
    instance = sample(["tests/test_tb.py::test_pass"], ["tests/test_tb.py::test_fail"])
    observation = observe(log.text, instance, get_parser("pytest"), rules=rules)
    assert observation.parser_status is ParserStatus.OK
    assert observation.test_exit_code == 1
    assert observation.tests is not None
    assert observation.tests.pass_to_pass.failure == ["tests/test_tb.py::test_fail"]


@pytest.mark.parametrize("rules", ["swebench", "strict"])
def test_the_timeout_line_of_swebenchs_harness_makes_the_log_a_timeout(rules):
    # swebench's run_instance appends it to a run it killed, and makes the instance an
    # error; a re-grade of that log must not turn it into a result.
    killed = swebench_5_log(f"PASSED {FIXED}", tail="\n\nTimeout error: 1800 seconds exceeded.")
    observation = observe(killed, sample(), get_parser("pytest"), rules=rules)
    assert observation.execution_status is ExecutionStatus.TIMEOUT
    assert (score(observation).outcome, score(observation).reason) == (Outcome.INVALID, "timeout")


def test_under_swebench_rules_a_harness_line_anywhere_leaves_nothing_graded():
    text = "+ git apply -v -\n>>>>> Patch Apply Failed\n" + swebench_5_log(f"PASSED {FIXED}")
    observation = observe(text, sample(), get_parser("pytest"))
    assert observation.parser_status is ParserStatus.NOT_PARSED
    assert "Patch Apply Failed" in observation.parser_detail
    assert observation.patch_status is PatchStatus.REJECTED
    assert (observation.status_map, observation.tests) == ({}, None)
    assert score(observation).outcome is Outcome.UNRESOLVED


def test_a_native_parser_under_swebench_rules_still_checks_the_runners_totals():
    # A test prints forged progress lines; Django's own "Ran 2 tests" disagrees.
    forged = next(log for log in load_corpus("django") if log.case == "forged")
    text = swebench_5_log(forged.text, exit_code=1)
    observation = observe(text, sample(), get_parser("django_full"))
    assert observation.log_rules == "swebench"
    assert observation.parser_status is ParserStatus.UNTRUSTED
    assert score(observation).outcome is Outcome.INVALID


def test_a_native_fail_only_parser_under_swebench_rules_gives_its_own_evidence_of_a_run():
    # swebench's SUITE_RAN has no pattern for unittest; the runner's "Ran 2 tests" is
    # the native parser's evidence that an empty list of failures means all passed.
    instance = sample(["test_a (m.T.test_a)"], eval_type="fail_only")
    ran = swebench_5_log("-" * 70, "Ran 2 tests in 0.001s", "", "OK")
    observation = observe(ran, instance, get_parser("unittest_failures"))
    assert observation.parser_status is ParserStatus.OK
    assert score(observation).outcome is Outcome.RESOLVED
    silent = observe(swebench_5_log(""), instance, get_parser("unittest_failures"))
    assert silent.parser_status is ParserStatus.EMPTY


def test_a_supervised_attempts_observation_names_no_log_rules():
    # Its region is the supervisor's byte range: no marker line was read.
    from evalrepro.records.observation import Observation

    assert Observation.model_fields["log_rules"].default is None


PLAIN = f"============ test session starts ============\nPASSED {FIXED}\n===== 1 passed ====="


def test_a_plain_log_is_read_whole_only_when_the_caller_says_so_and_says_it_was():
    # grade --log of a runner's own output: no marker framed anything; the record says
    # so. Everyone else (regrade: swebench's rule) finds no markers in it.
    whole = observe(PLAIN, sample(), get_parser("pytest"), plain="whole_log")
    assert whole.whole_log and whole.parser_status is ParserStatus.OK
    assert "whole log" in whole.parser_detail
    assert score(whole).outcome is Outcome.RESOLVED
    refused = observe(PLAIN, sample(), get_parser("pytest"))
    assert not refused.whole_log and refused.parser_status is ParserStatus.NO_MARKERS
    strict = observe(PLAIN, sample(), get_parser("pytest"), rules="strict", plain="whole_log")
    assert not strict.whole_log and strict.parser_status is ParserStatus.NO_MARKERS


@pytest.mark.parametrize(
    "cut",
    [
        # a harness's log cut short: its start marker, never its end
        f"+ : '>>>>> Start Test Output'\nPASSED {FIXED}\n",
        # no marker, but the exit code line of an eval script
        f"PASSED {FIXED}\n>>>>> Test Exit Code: 1\n",
        # no marker, but the eval script's line for the patch it applied
        f">>>>> Applied Patch (git)\nPASSED {FIXED}\n",
    ],
)
def test_a_harness_log_without_its_markers_is_never_read_whole(cut):
    observation = observe(cut, sample(), get_parser("pytest"), plain="whole_log")
    assert not observation.whole_log
    assert observation.parser_status is ParserStatus.NO_MARKERS
    assert score(observation).outcome is Outcome.INVALID
