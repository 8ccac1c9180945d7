"""What a reviewer reads for the codes the records carry: one table each.

The checks that make a finding (``rules/patchcheck.py``'s scan, the supervisor's exit guard
and its watch on the files) and the grading that names a score's reason write these
words into the records; the reports and the viewer only show them. Both sides read this
module, which sits below them (``grade/`` does not import ``run/``).
"""

from __future__ import annotations

#: Suspect-code rule -> (what the patch's line does, why that matters for the verdict).
#: ``what`` reads after "file, line N," and ``why`` after the colon that ends the sentence.
SUSPECT_WORDS: dict[str, tuple[str, str]] = {
    "framework_reassigned": (
        "assigns to an attribute of unittest or its classes",
        "the test framework would then report what the patch's code decides, not what "
        "the tests did, so the trial is suspect",
    ),
    "framework_setattr": (
        "sets attributes of a test framework object",
        "the test framework would then report what the patch's code decides, not what "
        "the tests did, so the trial is suspect",
    ),
    "pytest_internals": (
        "reaches into pytest's internals",
        "code under test that changes the runner can change the results it reports, so "
        "the trial is suspect",
    ),
    "pytest_hook": (
        "defines a pytest hook outside a conftest",
        "a hook can rewrite how tests are collected, run or reported, so the trial is suspect",
    ),
    "sys_modules_tests": (
        "replaces test or framework modules in sys.modules",
        "the tests or the runner that ran may not be the ones the dataset names, so the "
        "trial is suspect",
    ),
    "hard_exit": (
        "leaves the interpreter at once, without its normal shutdown",
        "a runner that exits early can hide failures that its report would have shown, "
        "so the trial is suspect",
    ),
    "exit_replaced": (
        "replaces the interpreter's exit",
        "the runner's exit status could then be the patch's choice rather than the "
        "tests' result, so the trial is suspect",
    ),
    "stdout_rewired": (
        "rewires the process's stdout or stderr",
        "what the log shows of the tests could be written or hidden by the patch's code, "
        "so the trial is suspect",
    ),
    "result_text": (
        "prints text shaped like a test result",
        "a log parser could take it for a result the tests did not give, so the trial is suspect",
    ),
    "infrastructure_named": (
        "names a test infrastructure file (conftest, sitecustomize, pytest.ini, .pth)",
        "code that writes or loads such a file can change how the tests run, so the trial "
        "is suspect",
    ),
    # Not from the scan: the supervisor saw these while the tests ran.
    "framework_replaced": (
        "holds code that replaced a test framework function while the tests ran",
        "the framework that reported the results was not the one installed, so the trial "
        "is suspect",
    ),
    "changed_during_run": (
        "was found changed by the supervisor's watch",
        "a file the tests read or the runner used was rewritten under them, so what was "
        "tested is not what was patched and the trial is suspect",
    ),
}


def suspect_words(rule: str) -> tuple[str, str]:
    """(what, why) of a rule; a rule this table does not know is named, not hidden."""
    return SUSPECT_WORDS.get(
        rule,
        (f"matched the rule {rule}", "a reviewer should read this line before trusting the score"),
    )


#: Score reason -> a sentence saying what happened and what it means for the verdict.
REASON_WORDS: dict[str, str] = {
    "tests_passed": "Every FAIL_TO_PASS and PASS_TO_PASS test passed: the patch resolves the "
    "instance.",
    "tests_failed": "At least one listed test failed or did not run: the patch does not "
    "resolve the instance.",
    "tests_flaky": "Every failing test passed when re-run alone; the dataset counts flaky "
    "tests as failed, so the instance is not resolved.",
    "tests_passed_on_rerun": "Every failing test passed when re-run alone, and the dataset "
    "counts flaky tests as passed: resolved.",
    "infrastructure_error": "The harness or the machine failed, not the patch: the trial says "
    "nothing about the patch and is invalid.",
    "agent_budget_exhausted": "The agent used up its budget before it left a patch: its "
    "answer is no patch, scored unresolved.",
    "agent_error": "The agent's program failed before it left a patch: scored unresolved.",
    "agent_no_diff": "The agent left the repository unchanged: no patch to test, scored "
    "unresolved.",
    "patch_empty": "The patch is empty: nothing to apply, so the instance is not resolved.",
    "patch_unsafe": "The patch names a path outside the repository (or a link out of it, or "
    "into .git): it was never applied, and the trial is scored unresolved.",
    "patch_rejected": "The patch does not apply to the base commit with any of the patch "
    "methods tried: scored unresolved.",
    "patch_invalid": "The patch breaks the input contract (it cannot be read, or applied "
    "safely): it was not tested, scored unresolved.",
    "test_reset_failed": "The test files could not be shown to be the base plus the test "
    "patch when the tests started: the tests that ran may not be the dataset's, so the trial "
    "is invalid.",
    "test_infrastructure_changed": "The patch changed test infrastructure (a conftest, the "
    "runner's configuration) and the dataset's policy makes that invalid: its results cannot "
    "be trusted.",
    "suspect_patch": "The patch has code that reaches into the test framework or its output "
    "(listed below): the log may not say what the tests did, so the trial is invalid.",
    "timeout": "The tests outran their time limit and were killed: no result to grade, invalid.",
    "limit_memory": "The tests hit the memory limit and were stopped: no result to grade, invalid.",
    "limit_pids": "The tests hit the process limit and were stopped: no result to grade, invalid.",
    "limit_disk": "The tests hit the disk limit and were stopped: no result to grade, invalid.",
    "limit_inodes": "The tests hit the files-created limit and were stopped: no result to "
    "grade, invalid.",
    "limit_output": "The tests printed more than the output limit and were stopped: no "
    "result to grade, invalid.",
    "sandbox_died": "The sandbox ended while the tests ran (killed or crashed): no result to "
    "grade, invalid.",
    "not_run": "The tests did not run: nothing to grade, invalid.",
    "runner_exit_abnormal": "The test runner reported success but left without its normal "
    "shutdown: a success that skipped the runner's own end cannot be trusted, invalid.",
    "log_unparseable": "The test log could not be read as a run of the tests (no result "
    "lines, or lines that contradict the runner's totals): invalid.",
    "runner_tampered": "A canary test that must fail passed (or one that must pass failed): "
    "the runner reported something other than what the tests did, so the trial is invalid.",
    "fresh_disagrees": "A test the log reports one way ended the other way when run again "
    "alone in a fresh process: the log cannot be trusted, invalid.",
    "differs_under_test": "A test that passed under its test runner failed when run "
    "without the test framework: the code under test behaves otherwise under test, invalid.",
}


def reason_words(reason: str) -> str:
    """The sentence of a score reason ("" for one this table does not know)."""
    return REASON_WORDS.get(reason, "")
