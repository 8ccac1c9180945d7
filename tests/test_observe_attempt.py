"""An attempt's Observation from its supervisor report, and the Score it gets.

What is guaranteed (``evalrepro/observation.py`` ``observe_attempt``, then ``score``):
every row of ``score.JUDGEMENT`` that a supervisor report can produce is produced by the
facts it names, and the first matching row decides, in the table's order:

* infrastructure (the runtime's error, a malformed stream, the supervisor's error
  event, no start event, a sandbox that ended before its tests, a test patch that does
  not apply, a region that no longer matches) before anything the patch did;
* an empty or unsafe patch (refused before the container, or a link leaving the
  tree found by the supervisor after it applied), a rejected patch;
* a test reset that did not hold, test infrastructure changed under the ``invalid``
  policy, suspect code under the ``invalid`` suspect policy (the static scan, or a
  framework function replaced at the runner's exit by a file the patch changed);
* a timeout (the supervisor's, or the host's deadline during the tests), each resource
  limit, a sandbox that died in the tests, tests that never ran;
* a runner that left without Python's shutdown while reporting success (exit code 0
  only: a failing exit code lets the log decide);
* an unparseable log; then the tests themselves.

``patch_invalid`` is not reachable from here: a patch check's problem is always
``empty`` or ``unsafe: ...``, which rows before it take.

The test output is the demo's first instance's real ``pytest -rA -v`` output, failing
(base commit + test patch) and passing (with the gold patch).
"""

from __future__ import annotations

import pytest

from evalrepro.config.experiment import compose
from evalrepro.grade.observation import observe_attempt
from evalrepro.grade.parsers import get_parser
from evalrepro.grade.score import JUDGEMENT, score
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshResult, FreshRun
from evalrepro.records.observation import ExecutionStatus, ParserStatus, PatchStatus, Resolution
from evalrepro.records.score import Outcome
from evalrepro.records.supervision import (
    DoneEvent,
    ErrorEvent,
    FreshEvent,
    GuardEvent,
    PatchEvent,
    Peak,
    ProtectedFile,
    ProtectEvent,
    Replaced,
    ResetEvent,
    RuntimeFacts,
    StartEvent,
    StopReason,
    SupervisorReport,
)
from evalrepro.rules.patchcheck import check_patch, patch_bytes
from evalrepro.runtimes import supervision
from evalrepro.runtimes.supervision import StreamReader, region_text
from evalrepro.sandbox.protocol import FRAME, KIND_EVENT, KIND_OUTPUT, PROTOCOL

# Aliases: pytest would try to collect classes named Test* imported here.
StartedEvent = supervision.TestsStartedEvent
FinishedEvent = supervision.TestsFinishedEvent

#: ``pytest -rA -v -p no:cacheprovider tests/test_eval.py`` on demo__calc-1's base commit
#: with its test patch: the FAIL_TO_PASS test fails (exit code 1).
FAILING_REGION = """\
============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-9.2.0, pluggy-1.7.0 -- /opt/venv/bin/python
rootdir: /testbed
collecting ... collected 12 items

tests/test_eval.py::test_arithmetic[1 + 2-3.0] PASSED                    [  8%]
tests/test_eval.py::test_arithmetic[7 - 2 - 1-4.0] PASSED                [ 16%]
tests/test_eval.py::test_arithmetic[2 * 3 + 4-10.0] PASSED               [ 25%]
tests/test_eval.py::test_arithmetic[2 * (3 + 4)-14.0] PASSED             [ 33%]
tests/test_eval.py::test_arithmetic[7 / 2-3.5] PASSED                    [ 41%]
tests/test_eval.py::test_leading_minus PASSED                            [ 50%]
tests/test_eval.py::test_power PASSED                                    [ 58%]
tests/test_eval.py::test_minus_binds_looser_than_power PASSED            [ 66%]
tests/test_eval.py::test_power_binds_tighter_than_product PASSED         [ 75%]
tests/test_eval.py::test_power_is_right_associative FAILED               [ 83%]
tests/test_eval.py::test_unbalanced_parenthesis PASSED                   [ 91%]
tests/test_eval.py::test_trailing_tokens PASSED                          [100%]

=================================== FAILURES ===================================
_______________________ test_power_is_right_associative ________________________

    def test_power_is_right_associative():
>       assert evaluate("2 ^ 3 ^ 2") == 512.0
E       AssertionError: assert 64.0 == 512.0
E        +  where 64.0 = evaluate('2 ^ 3 ^ 2')

tests/test_eval.py:37: AssertionError
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_eval.py::test_arithmetic[1 + 2-3.0]
PASSED tests/test_eval.py::test_arithmetic[7 - 2 - 1-4.0]
PASSED tests/test_eval.py::test_arithmetic[2 * 3 + 4-10.0]
PASSED tests/test_eval.py::test_arithmetic[2 * (3 + 4)-14.0]
PASSED tests/test_eval.py::test_arithmetic[7 / 2-3.5]
PASSED tests/test_eval.py::test_leading_minus
PASSED tests/test_eval.py::test_power
PASSED tests/test_eval.py::test_minus_binds_looser_than_power
PASSED tests/test_eval.py::test_power_binds_tighter_than_product
PASSED tests/test_eval.py::test_unbalanced_parenthesis
PASSED tests/test_eval.py::test_trailing_tokens
FAILED tests/test_eval.py::test_power_is_right_associative - AssertionError: ...
========================= 1 failed, 11 passed in 0.02s =========================
"""

#: The same run with the gold patch applied: every test passes (exit code 0).
PASSING_REGION = """\
============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-9.2.0, pluggy-1.7.0 -- /opt/venv/bin/python
rootdir: /testbed
collecting ... collected 12 items

tests/test_eval.py::test_arithmetic[1 + 2-3.0] PASSED                    [  8%]
tests/test_eval.py::test_arithmetic[7 - 2 - 1-4.0] PASSED                [ 16%]
tests/test_eval.py::test_arithmetic[2 * 3 + 4-10.0] PASSED               [ 25%]
tests/test_eval.py::test_arithmetic[2 * (3 + 4)-14.0] PASSED             [ 33%]
tests/test_eval.py::test_arithmetic[7 / 2-3.5] PASSED                    [ 41%]
tests/test_eval.py::test_leading_minus PASSED                            [ 50%]
tests/test_eval.py::test_power PASSED                                    [ 58%]
tests/test_eval.py::test_minus_binds_looser_than_power PASSED            [ 66%]
tests/test_eval.py::test_power_binds_tighter_than_product PASSED         [ 75%]
tests/test_eval.py::test_power_is_right_associative PASSED               [ 83%]
tests/test_eval.py::test_unbalanced_parenthesis PASSED                   [ 91%]
tests/test_eval.py::test_trailing_tokens PASSED                          [100%]

==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_eval.py::test_arithmetic[1 + 2-3.0]
PASSED tests/test_eval.py::test_arithmetic[7 - 2 - 1-4.0]
PASSED tests/test_eval.py::test_arithmetic[2 * 3 + 4-10.0]
PASSED tests/test_eval.py::test_arithmetic[2 * (3 + 4)-14.0]
PASSED tests/test_eval.py::test_arithmetic[7 / 2-3.5]
PASSED tests/test_eval.py::test_leading_minus
PASSED tests/test_eval.py::test_power
PASSED tests/test_eval.py::test_minus_binds_looser_than_power
PASSED tests/test_eval.py::test_power_binds_tighter_than_product
PASSED tests/test_eval.py::test_power_is_right_associative
PASSED tests/test_eval.py::test_unbalanced_parenthesis
PASSED tests/test_eval.py::test_trailing_tokens
============================== 12 passed in 0.02s ==============================
"""


# --- the demo instance ---------------------------------------------------------------


@pytest.fixture(scope="module")
def demo():
    """(sample, parser, protection, check) of the demo's first instance, gold patch."""
    config = compose(["+experiment=demo"])
    sample = config.dataset.load()[0]
    assert sample.instance_id == "demo__calc-1"
    protection = instance_test_spec(config.dataset, sample).eval_script.protection
    check = check_patch(patch_bytes(sample.patch), protection)
    assert check.problem is None and check.suspects == ()
    return sample, get_parser("pytest_full"), protection, check


def judge(
    demo, report, region=None, *, check=None, protection=None, canaries=(), fresh=(), agent=None
):
    sample, parser, default_protection, default_check = demo
    protection = protection or default_protection
    observation = observe_attempt(
        sample,
        parser,
        protection,
        check or default_check,
        report=report,
        region=region,
        canaries=canaries,
        fresh=fresh,
        agent=agent,
    )
    return observation, score(observation)


# --- synthetic reports -----------------------------------------------------------------

START = StartEvent(event="start", protocol=PROTOCOL, python="3.11.2", uid=0, pid=1)
PATCH = PatchEvent(
    event="patch",
    status="applied",
    method="git_apply",
    changed=["calc/evaluator.py"],
    changed_total=1,
    seconds=0.05,
)
PROTECT = ProtectEvent(event="protect", policy="restore", touched=[], touched_total=0)
RESET = ResetEvent(
    event="reset", ok=True, reason=None, detail="", test_files=1, verified=1, seconds=0.01
)
GUARD = GuardEvent(event="guard", sites=["/opt/venv/lib/python3.11/site-packages"])
STARTED = StartedEvent(event="tests_started", user_namespace=True, new_user_namespaces="refused")
RAN = (START, PATCH, PROTECT, RESET, GUARD, STARTED)
FIELDS = {"tests_started": "tests_started", "tests_finished": "tests"}


def finished(
    exit_code: int | None = 0,
    *,
    stopped: StopReason | None = None,
    runner_exit: str = "clean",
    runner_detail: str = "",
    replaced: list[Replaced] | None = None,
    changed_during_run: list[str] | None = None,
) -> FinishedEvent:
    return FinishedEvent(
        event="tests_finished",
        exit_code=exit_code,
        signal=None,
        seconds=0.3,
        output_bytes=2048,
        output_truncated=False,
        stopped=stopped,
        runner_exit=runner_exit,
        runner_detail=runner_detail,
        replaced=replaced or [],
        changed_during_run=changed_during_run or [],
        peak=Peak(memory=40 << 20, pids=2, disk=0),
    )


def report(*events, complete: bool = True, **facts) -> SupervisorReport:
    """A report holding these events (``complete``: the done event came)."""
    fields = {FIELDS.get(e.event, e.event): e for e in events}
    return SupervisorReport(complete=complete, **fields, **facts)


def ran(finish: FinishedEvent, *events, **facts) -> SupervisorReport:
    """A whole attempt whose tests ran and ended with ``finish``."""
    return report(*(events or RAN), finish, **facts)


def reason_of(result) -> tuple[Outcome, str]:
    return result.outcome, result.reason


# --- tests passed / failed (the reference points) --------------------------------------


def test_the_gold_patchs_passing_output_resolves(demo):
    observation, result = judge(demo, ran(finished(0)), PASSING_REGION)
    assert reason_of(result) == (Outcome.RESOLVED, "tests_passed")
    assert result.resolution is Resolution.FULL
    assert observation.source == "supervisor"
    assert (observation.patch_status, observation.patch_method) == (
        PatchStatus.APPLIED,
        "git_apply",
    )
    assert (observation.reset, observation.runner_exit) == ("verified", "clean")
    assert observation.execution_status is ExecutionStatus.COMPLETED
    assert observation.parser_status is ParserStatus.OK
    assert observation.test_exit_code == 0
    assert len(observation.status_map) == 12


def test_the_failing_output_is_unresolved(demo):
    observation, result = judge(demo, ran(finished(1)), FAILING_REGION)
    assert reason_of(result) == (Outcome.UNRESOLVED, "tests_failed")
    assert result.resolution is Resolution.NO
    assert observation.status_map["tests/test_eval.py::test_power_is_right_associative"] == (
        "FAILED"
    )


def test_a_whole_stream_read_back_by_its_region_resolves(demo, tmp_path):
    # The path an attempt takes: the stream, test_output.txt, the region by byte range.
    def frame(kind, payload):
        return FRAME.pack(kind, len(payload)) + payload

    stream = b"".join(frame(KIND_EVENT, e.model_dump_json().encode()) for e in RAN)
    stream += frame(KIND_OUTPUT, PASSING_REGION.encode())
    stream += frame(KIND_EVENT, finished(0).model_dump_json().encode())
    stream += frame(KIND_EVENT, DoneEvent(event="done").model_dump_json().encode())
    reader = StreamReader(1 << 20)
    reader.feed(stream)
    read = reader.finish(RuntimeFacts(exit_code=0))
    region = region_text(reader.output, read.region)
    assert region == PASSING_REGION
    assert reason_of(judge(demo, read, region)[1]) == (Outcome.RESOLVED, "tests_passed")


# --- infrastructure -------------------------------------------------------------------


def test_a_runtime_error_is_infrastructure(demo):
    failed = SupervisorReport(runtime=RuntimeFacts(error="image not found (podman exit 125)"))
    observation, result = judge(demo, failed)
    assert reason_of(result) == (Outcome.INVALID, "infrastructure_error")
    assert result.detail == "image not found (podman exit 125)"
    assert observation.execution_status is ExecutionStatus.NOT_RUN


def test_a_runtime_error_is_infrastructure_even_when_the_tests_passed(demo):
    whole = ran(finished(0), runtime=RuntimeFacts(error="podman failed: conmon died"))
    _, result = judge(demo, whole, PASSING_REGION)
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        "podman failed: conmon died",
    )


def test_a_malformed_stream_is_infrastructure_whatever_came_before(demo):
    problem = "the supervisor's stream is malformed: a frame of unknown kind b'Z'"
    _, result = judge(demo, ran(finished(0), stream_problem=problem), PASSING_REGION)
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        problem,
    )


def test_a_malformed_stream_beats_a_rejected_patch(demo):
    rejected = PATCH.model_copy(update={"status": "rejected", "method": None})
    problem = "the supervisor's stream is malformed: a second 'patch' event"
    _, result = judge(demo, report(START, rejected, stream_problem=problem))
    assert reason_of(result) == (Outcome.INVALID, "infrastructure_error")


def test_the_supervisors_error_event_is_infrastructure(demo):
    error = ErrorEvent(event="error", phase="trial", detail="HarnessError: git read-tree failed")
    _, result = judge(demo, report(START, PATCH, PROTECT, error))
    assert reason_of(result) == (Outcome.INVALID, "infrastructure_error")
    assert (
        result.detail == "supervisor failed in its trial phase: HarnessError: git read-tree failed"
    )


def test_a_report_without_a_start_event_is_infrastructure(demo):
    _, result = judge(demo, report(complete=False, runtime=RuntimeFacts(exit_code=1)))
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        "the supervisor never started",
    )


def test_a_sandbox_that_ended_before_the_tests_is_infrastructure(demo):
    _, result = judge(demo, report(START, PATCH, PROTECT, complete=False))
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        "the sandbox ended before the tests started",
    )


def test_a_host_deadline_before_the_tests_is_infrastructure_not_a_timeout(demo):
    cut = report(START, PATCH, complete=False, runtime=RuntimeFacts(deadline_passed=True))
    _, result = judge(demo, cut)
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        "the sandbox did not reach its tests by the host's deadline",
    )


def test_a_test_patch_that_does_not_apply_is_infrastructure_not_the_patchs_fault(demo):
    failed = ResetEvent(
        event="reset", ok=False, reason="test_patch_failed", detail="git apply failed: corrupt"
    )
    observation, result = judge(demo, report(START, PATCH, PROTECT, failed))
    assert reason_of(result) == (Outcome.INVALID, "infrastructure_error")
    assert (
        result.detail
        == "the test patch does not apply to the base commit (git apply failed: corrupt)"
    )
    assert observation.reset == "failed"


def test_a_region_that_no_longer_matches_is_infrastructure(demo):
    # read_region gave None: test_output.txt does not hold the recorded bytes.
    _, result = judge(demo, ran(finished(0)), None)
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        "test_output.txt does not hold the recorded test output",
    )


def test_an_attempt_without_a_report_is_infrastructure(demo):
    _, result = judge(demo, None)
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "infrastructure_error"),
        "the attempt has no supervisor report",
    )


# --- the patch ---------------------------------------------------------------------------


def test_an_empty_patch_is_unresolved_and_never_ran(demo):
    _, _, protection, _ = demo
    observation, result = judge(demo, None, check=check_patch(b"  \n", protection))
    assert reason_of(result) == (Outcome.UNRESOLVED, "patch_empty")
    assert (observation.patch_status, observation.execution_status) == (
        PatchStatus.INVALID,
        ExecutionStatus.NOT_RUN,
    )


def test_an_unsafe_patch_is_unresolved_and_says_why(demo):
    _, _, protection, _ = demo
    unsafe = b"--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-root\n+owned\n"
    observation, result = judge(demo, None, check=check_patch(unsafe, protection))
    assert reason_of(result) == (Outcome.UNRESOLVED, "patch_unsafe")
    assert result.detail.startswith("a path that leaves the repository")
    assert observation.patch_problem == "unsafe: " + result.detail


def test_a_patch_that_applied_a_link_leaving_the_tree_is_unsafe(demo):
    detail = "a symbolic link that leaves the repository (calc/data -> /etc)"
    unsafe = PATCH.model_copy(update={"status": "unsafe", "detail": detail})
    observation, result = judge(demo, report(START, unsafe))
    assert (reason_of(result), result.detail) == ((Outcome.UNRESOLVED, "patch_unsafe"), detail)
    assert observation.patch_status is PatchStatus.INVALID
    assert observation.execution_status is ExecutionStatus.NOT_RUN


def test_a_rejected_patch_is_unresolved(demo):
    rejected = PatchEvent(
        event="patch", status="rejected", method=None, changed=[], changed_total=0, seconds=0.2
    )
    observation, result = judge(demo, report(START, rejected))
    assert reason_of(result) == (Outcome.UNRESOLVED, "patch_rejected")
    assert observation.patch_status is PatchStatus.REJECTED
    assert observation.execution_status is ExecutionStatus.NOT_RUN


# --- what the patch did to the test setup -------------------------------------------------


def test_a_test_reset_that_did_not_verify_is_invalid(demo):
    failed = ResetEvent(
        event="reset",
        ok=False,
        reason="verification_failed",
        detail="tests/test_eval.py: content differs from the expected file",
    )
    _, result = judge(demo, report(START, PATCH, PROTECT, failed))
    assert reason_of(result) == (Outcome.INVALID, "test_reset_failed")
    assert result.detail == "tests/test_eval.py: content differs from the expected file"


CONFTEST = ProtectedFile(
    path="tests/conftest.py", reason="in test folder tests/", action="recorded"
)


def test_test_infrastructure_changed_under_the_invalid_policy_is_invalid(demo):
    _, _, protection, _ = demo
    invalid = protection.model_copy(update={"policy": "invalid"})
    changed = PATCH.model_copy(update={"changed": ["calc/evaluator.py", "tests/conftest.py"]})
    protect = ProtectEvent(event="protect", policy="invalid", touched=[CONFTEST], touched_total=1)
    observation, result = judge(demo, report(START, changed, protect), protection=invalid)
    assert reason_of(result) == (Outcome.INVALID, "test_infrastructure_changed")
    assert result.detail == "tests/conftest.py (in test folder tests/)"
    assert observation.protected == [CONFTEST]


def test_test_infrastructure_restored_before_the_tests_does_not_count_against_them(demo):
    restored = CONFTEST.model_copy(update={"action": "restored"})
    protect = ProtectEvent(event="protect", policy="restore", touched=[restored], touched_total=1)
    observation, result = judge(
        demo, ran(finished(0), START, PATCH, protect, RESET, STARTED), PASSING_REGION
    )
    assert reason_of(result) == (Outcome.RESOLVED, "tests_passed")
    assert observation.protected == [restored]


ASSERT_EQUAL = "unittest.case.TestCase.assertEqual"


def test_a_framework_function_replaced_by_a_file_the_patch_changed_is_suspect(demo):
    # The supervisor reports only replacements by files the patch changed (relative
    # paths; see GuardRecords in tests/test_sandbox_supervisor.py): the host trusts that.
    replaced = [Replaced(target=ASSERT_EQUAL, file="calc/evaluator.py")]
    observation, result = judge(demo, ran(finished(0, replaced=replaced)), PASSING_REGION)
    assert reason_of(result) == (Outcome.INVALID, "suspect_patch")
    assert result.detail.startswith(
        "calc/evaluator.py, holds code that replaced a test framework function while the tests ran"
    )
    [finding] = observation.suspects
    assert (finding.rule, finding.path) == ("framework_replaced", "calc/evaluator.py")
    assert ASSERT_EQUAL in finding.text


def test_test_files_the_run_itself_changed_are_suspect(demo):
    changed = ["tests/test_tokenizer.py (a test file: content differs from the expected file)"]
    observation, result = judge(demo, ran(finished(0, changed_during_run=changed)), PASSING_REGION)
    assert reason_of(result) == (Outcome.INVALID, "suspect_patch")
    [finding] = observation.suspects
    assert (finding.rule, finding.path) == ("changed_during_run", "tests/test_tokenizer.py")


def test_no_replacement_reported_is_not_suspect(demo):
    observation, result = judge(demo, ran(finished(0, replaced=[])), PASSING_REGION)
    assert reason_of(result) == (Outcome.RESOLVED, "tests_passed")
    assert observation.suspects == []


def test_suspect_code_under_the_record_policy_is_only_recorded(demo):
    _, _, protection, _ = demo
    record = protection.model_copy(update={"suspect": "record"})
    replaced = [Replaced(target="sys.exit", file="calc/evaluator.py")]
    observation, result = judge(
        demo, ran(finished(0, replaced=replaced)), PASSING_REGION, protection=record
    )
    assert reason_of(result) == (Outcome.RESOLVED, "tests_passed")
    assert [s.rule for s in observation.suspects] == ["framework_replaced"]


def test_suspect_code_found_by_the_static_scan_is_suspect(demo):
    sample, _, protection, _ = demo
    patch = sample.patch.replace(
        "+        return base ** self.power()\n",
        "+        return base ** self.power()\n+        os._exit(0)\n",
    ).replace("@@ -47,11 +47,12 @@", "@@ -47,11 +47,13 @@")
    check = check_patch(patch_bytes(patch), protection)
    assert check.problem is None and [s.rule for s in check.suspects] == ["hard_exit"]
    _, result = judge(demo, ran(finished(0)), PASSING_REGION, check=check)
    assert reason_of(result) == (Outcome.INVALID, "suspect_patch")
    assert result.detail.startswith("calc/evaluator.py, line ")
    assert "leaves the interpreter at once, without its normal shutdown (`os._exit(0)`): " in (
        result.detail
    )


# --- how the run ended -----------------------------------------------------------------------


def test_a_supervisor_timeout_is_invalid_whatever_the_log_says(demo):
    stopped = StopReason(limit="timeout", detail="the tests ran longer than 30 s")
    observation, result = judge(demo, ran(finished(137, stopped=stopped)), PASSING_REGION)
    assert reason_of(result) == (Outcome.INVALID, "timeout")
    assert result.detail == "the tests ran longer than 30 s"
    assert observation.execution_status is ExecutionStatus.TIMEOUT


def test_the_host_deadline_passing_during_the_tests_is_a_timeout(demo):
    cut = report(*RAN, complete=False, runtime=RuntimeFacts(deadline_passed=True))
    observation, result = judge(demo, cut, PASSING_REGION[:300])
    assert reason_of(result) == (Outcome.INVALID, "timeout")
    assert result.detail == "the tests outran the host's deadline: container removed"
    assert observation.infrastructure_error is None


@pytest.mark.parametrize("limit", ["memory", "pids", "disk", "inodes", "output"])
def test_each_resource_limit_is_invalid_with_its_own_reason(demo, limit):
    stopped = StopReason(limit=limit, detail=f"{limit} crossed")
    observation, result = judge(demo, ran(finished(137, stopped=stopped)), PASSING_REGION)
    assert reason_of(result) == (Outcome.INVALID, f"limit_{limit}")
    assert result.detail == f"{limit} crossed"
    assert (observation.execution_status, observation.limit) == (ExecutionStatus.LIMIT, limit)


def test_a_sandbox_that_died_during_the_tests_is_invalid(demo):
    cut = report(*RAN, complete=False, runtime=RuntimeFacts(exit_code=137))
    observation, result = judge(demo, cut, PASSING_REGION[:300])
    assert reason_of(result) == (Outcome.INVALID, "sandbox_died")
    assert result.detail == "the sandbox ended while the tests ran (killed or crashed)"
    assert observation.execution_status is ExecutionStatus.ABORTED


def test_tests_that_never_started_in_a_whole_stream_are_not_run(demo):
    observation, result = judge(demo, report(START, PATCH, PROTECT, RESET, GUARD))
    assert reason_of(result) == (Outcome.INVALID, "not_run")
    assert observation.execution_status is ExecutionStatus.NOT_RUN


ABNORMAL = "the test runner (pid 7) ended without Python's normal shutdown (os._exit or ...)"


def test_a_runner_that_skipped_its_shutdown_while_reporting_success_is_invalid(demo):
    tests = finished(0, runner_exit="abnormal", runner_detail=ABNORMAL)
    _, result = judge(demo, ran(tests), PASSING_REGION)
    assert (reason_of(result), result.detail) == (
        (Outcome.INVALID, "runner_exit_abnormal"),
        ABNORMAL,
    )


def test_a_runner_that_skipped_its_shutdown_while_failing_is_judged_by_its_log(demo):
    tests = finished(1, runner_exit="abnormal", runner_detail=ABNORMAL)
    observation, result = judge(demo, ran(tests), FAILING_REGION)
    assert reason_of(result) == (Outcome.UNRESOLVED, "tests_failed")
    assert observation.runner_exit == "abnormal"


def test_an_unknown_runner_exit_is_not_held_against_the_tests(demo):
    _, result = judge(demo, ran(finished(0, runner_exit="unknown")), PASSING_REGION)
    assert reason_of(result) == (Outcome.RESOLVED, "tests_passed")


# --- the log -----------------------------------------------------------------------------------


def test_an_empty_region_is_unparseable(demo):
    observation, result = judge(demo, ran(finished(0)), "")
    assert reason_of(result) == (Outcome.INVALID, "log_unparseable")
    assert observation.parser_status is ParserStatus.UNTRUSTED
    assert "no pytest totals line" in result.detail


NO_TESTS_REGION = """\
============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-9.2.0, pluggy-1.7.0 -- /opt/venv/bin/python
rootdir: /testbed
collecting ... collected 0 items

============================ no tests ran in 0.01s =============================
"""


def test_a_run_that_collected_no_tests_is_unparseable_not_all_passed(demo):
    observation, result = judge(demo, ran(finished(0)), NO_TESTS_REGION)
    assert reason_of(result) == (Outcome.INVALID, "log_unparseable")
    assert observation.parser_status is ParserStatus.EMPTY
    assert result.detail == "no test results in the test output"


def test_passing_lines_with_a_failing_exit_code_are_unparseable(demo):
    observation, result = judge(demo, ran(finished(1)), PASSING_REGION)
    assert reason_of(result) == (Outcome.INVALID, "log_unparseable")
    assert observation.parser_status is ParserStatus.UNTRUSTED
    assert result.detail == "test command exited 1 but the log reports no failing test"


def test_a_region_without_pytests_totals_line_is_unparseable(demo):
    cut = PASSING_REGION.rsplit("\n", 2)[0] + "\n"  # the last line, "12 passed", never came
    assert "12 passed" not in cut
    observation, result = judge(demo, ran(finished(0)), cut)
    assert reason_of(result) == (Outcome.INVALID, "log_unparseable")
    assert observation.parser_status is ParserStatus.UNTRUSTED


# --- the table ---------------------------------------------------------------------------------


def test_every_judgement_row_but_patch_invalid_is_reachable_from_a_report(demo):
    _, _, protection, _ = demo
    invalid = protection.model_copy(update={"policy": "invalid"})
    protect = ProtectEvent(event="protect", policy="invalid", touched=[CONFTEST], touched_total=1)
    failed = ResetEvent(event="reset", ok=False, reason="verification_failed", detail="x")
    evil = [Replaced(target="sys.exit", file="/testbed/calc/evaluator.py")]

    def stop(limit):
        return finished(137, stopped=StopReason(limit=limit, detail=limit))

    canary = Canary(
        name="test_power_empty_order",
        expect="pass",
        file="tests/test_eval.py",
        style="function",
        source="",
    )
    placed = RESET.model_copy(update={"canaries": [canary.name]})
    # The FAIL_TO_PASS test, passing in the log, failing alone in a fresh process.
    f2p = "tests/test_eval.py::test_power_is_right_associative"
    alone = FreshRun(test=f2p, expect="pass", command=f"pytest {f2p}", runner="pytest")
    lone = FreshEvent(
        event="fresh",
        runs=[FreshResult(test=f2p, exit_code=1, signal=None, seconds=0.2, runner_exit="clean")],
    )
    # The same test passing alone under pytest, failing under the second runner.
    plain = FreshRun(test=f2p, expect="pass", command="python3 -I -S -c ...", runner="plain")
    second = FreshEvent(
        event="fresh",
        runs=[
            FreshResult(test=f2p, exit_code=0, signal=None, seconds=0.2, runner_exit="clean"),
            FreshResult(
                test=f2p, exit_code=1, signal=None, seconds=0.1, runner_exit="clean", runner="plain"
            ),
        ],
    )

    def agent(status, budget=None):
        return AgentOutcome(status=status, budget=budget, detail=status, adapter="command")

    cases = {
        "infrastructure_error": (judge(demo, None),),
        "agent_budget_exhausted": (
            judge(demo, None, agent=agent("budget_exhausted", "wall_time")),
        ),
        "agent_error": (judge(demo, None, agent=agent("agent_error")),),
        "agent_no_diff": (judge(demo, None, agent=agent("no_diff")),),
        "patch_empty": (judge(demo, None, check=check_patch(b"", protection)),),
        "patch_unsafe": (judge(demo, None, check=check_patch(b"+++ /etc/passwd\n", protection)),),
        "patch_rejected": (
            judge(demo, report(START, PATCH.model_copy(update={"status": "rejected"}))),
        ),
        "test_reset_failed": (judge(demo, report(START, PATCH, PROTECT, failed)),),
        "test_infrastructure_changed": (
            judge(demo, report(START, PATCH, protect), protection=invalid),
        ),
        "suspect_patch": (judge(demo, ran(finished(0, replaced=evil)), PASSING_REGION),),
        "timeout": (judge(demo, ran(stop("timeout")), PASSING_REGION),),
        **{
            f"limit_{name}": (judge(demo, ran(stop(name)), PASSING_REGION),)
            for name in ("memory", "pids", "disk", "inodes", "output")
        },
        "sandbox_died": (judge(demo, report(*RAN, complete=False), ""),),
        "not_run": (judge(demo, report(START, PATCH, PROTECT, RESET)),),
        "runner_exit_abnormal": (
            judge(demo, ran(finished(0, runner_exit="abnormal")), PASSING_REGION),
        ),
        "log_unparseable": (judge(demo, ran(finished(0)), ""),),
        # A canary placed in tests/test_eval.py, lost while that file's tests passed.
        "runner_tampered": (
            judge(
                demo,
                ran(finished(0), START, PATCH, PROTECT, placed, GUARD, STARTED),
                PASSING_REGION,
                canaries=[canary],
            ),
        ),
        "fresh_disagrees": (
            judge(demo, ran(finished(0), *RAN, lone), PASSING_REGION, fresh=[alone]),
        ),
        "differs_under_test": (
            judge(demo, ran(finished(0), *RAN, second), PASSING_REGION, fresh=[alone, plain]),
        ),
    }
    for reason, ((_, result),) in cases.items():
        assert result.reason == reason
    rows = [row[0] for row in JUDGEMENT]
    assert sorted(cases) == sorted(set(rows) - {"patch_invalid"})
