"""The short labels of the codes the records carry (a score's reason, the limit that
stopped the tests): what a table, a chart or a trial's view names them by.

``words.py`` holds the sentences, which the grading writes into the records (and which
are part of the harness digest); these labels only name codes for a reader, so the code
that builds a record of what is shown (``evalrepro.run.trial_view``) and the renderers
read the same table, and neither is a stage above the other.
"""

from __future__ import annotations

from evalrepro.records.observation import ExecutionStatus, Observation

#: A limit that stopped the tests, as reports name it.
LIMIT_LABELS: dict[str, str] = {
    "timeout": "timeout",
    "memory": "memory limit",
    "pids": "process limit",
    "disk": "disk limit",
    "inodes": "files-created limit",
    "output": "output limit",
}

#: Score reasons as a reader says them; the code is shown beside the words.
REASON_LABELS: dict[str, str] = {
    "tests_passed": "tests passed",
    "tests_failed": "tests failed",
    "tests_flaky": "failing tests flaky",
    "tests_passed_on_rerun": "passed when re-run (flaky counted as passed)",
    "infrastructure_error": "infrastructure error",
    # An empty patch is the target's answer (unresolved), never an invalid trial.
    "patch_empty": "empty patch",
    "patch_unsafe": "unsafe patch",
    "patch_rejected": "patch does not apply",
    "patch_invalid": "invalid patch",
    "test_reset_failed": "test reset failed",
    "test_infrastructure_changed": "test infrastructure changed",
    "suspect_patch": "suspect patch",
    **{("limit_" if k != "timeout" else "") + k: label for k, label in LIMIT_LABELS.items()},
    "sandbox_died": "sandbox died",
    "not_run": "not run",
    "runner_exit_abnormal": "runner exit abnormal",
    "log_unparseable": "log unparseable",
    "runner_tampered": "runner tampered with (canary)",
    "fresh_disagrees": "log and lone run disagree",
    "differs_under_test": "passes only under its test runner",
}


def reason_label(reason: str) -> str:
    """A score reason in a reader's words (the code itself when this table lacks it)."""
    return REASON_LABELS.get(reason, reason)


def reason_code(reason: str) -> str:
    """The code to show beside the words, when the words are more than the code spelt out."""
    return "" if reason_label(reason).replace(" ", "_") == reason else reason


def stop_of(seen: Observation) -> str | None:
    """The limit that stopped the observed tests ("timeout", "memory", ...), or None."""
    if seen.execution_status is ExecutionStatus.TIMEOUT:
        return "timeout"
    if seen.execution_status is ExecutionStatus.LIMIT:
        return seen.limit or "limit"
    return None


def stopped_by(seen: Observation) -> str:
    """What stopped the observed tests, as reports say it ("timeout", "memory limit"), or
    "" when nothing did."""
    stop = stop_of(seen)
    return "" if stop is None else LIMIT_LABELS.get(stop, stop)
