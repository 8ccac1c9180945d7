"""Per test, a transition; per instance, a verdict: from the status maps of the runs before
the gold patch (base + test patch) and after it (base + test patch + gold patch).

A test passes in a run exactly when the grader's own FAIL_TO_PASS rule says it passed
(``grade.grading.fail_to_pass_ok``: PASSED, XFAIL or XPASS; absent, failed, errored,
skipped or an unknown token is not passing), so that a list derived here grades the gold
patch as resolved by the same rule that will judge every patch. The tests considered are
those any run reports. Then, per test:

* the repeats of one side disagree, or (with ``environment.rerun_failed``) it failed in
  a run and passed when re-run alone, which also finds a test that fails only after
  another test ran: ``flaky`` (left out of every list);
* skipped in every run of both sides: ``SKIPPED``;
* otherwise the one outcome of each side names the transition (``FAIL_TO_PASS``, ...).

SWE-bench's ``get_eval_tests_report(..., calculate_to_fail=True)`` names the same four
lists; ``tests/test_validation_transitions.py`` checks the derived lists against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from evalrepro.grade.grading import fail_to_pass_ok, resolve_key
from evalrepro.grade.parsers import Status
from evalrepro.records.validation import (
    FlakyBound,
    InstanceValidation,
    RunFacts,
    TestTransition,
    Transition,
)

_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")


def passes(test: str, statuses: dict[str, str]) -> bool:
    return fail_to_pass_ok(test, statuses) is True


def _skipped(test: str, statuses: dict[str, str]) -> bool:
    key = resolve_key(test, statuses)
    return key is not None and statuses[key] == Status.SKIPPED


def transitions_of(
    before: Sequence[dict[str, str]],
    after: Sequence[dict[str, str]],
    passed_alone: Mapping[str, int] | None = None,
) -> list[TestTransition]:
    """Each reported test's transition over the runs of both sides (in test-id order);
    ``passed_alone``: per test, the runs in which it failed and then passed alone."""
    passed_alone = passed_alone or {}
    assert before and after, "each side has at least one run"
    repeats = max(len(before), len(after))
    tests = sorted({test for run in [*before, *after] for test in run})
    found = []
    for test in tests:
        before_passed = sum(passes(test, run) for run in before)
        after_passed = sum(passes(test, run) for run in after)
        transition: Transition
        alone = passed_alone.get(test, 0)
        if alone or before_passed not in (0, len(before)) or after_passed not in (0, len(after)):
            transition = "flaky"
        elif all(_skipped(test, run) for run in [*before, *after]):
            transition = "SKIPPED"
        else:
            was = "PASS" if before_passed else "FAIL"
            now = "PASS" if after_passed else "FAIL"
            transition = f"{was}_TO_{now}"  # type: ignore[assignment]
        found.append(
            TestTransition(
                test=test,
                transition=transition,
                before_passed=before_passed,
                after_passed=after_passed,
                repeats=repeats,
                passed_alone=alone,
            )
        )
    return found


def _numbered(
    before: Sequence[RunFacts], after: Sequence[RunFacts]
) -> list[tuple[str, int, RunFacts]]:
    return [
        (side, number, run)
        for side, runs in (("before", before), ("after", after))
        for number, run in enumerate(runs, start=1)
    ]


def unusable(before: Sequence[RunFacts], after: Sequence[RunFacts]) -> tuple[str, str] | None:
    """The verdict and detail of an instance its runs already make unusable, in the
    documented order (``records.validation.Verdict``), or None."""
    numbered = _numbered(before, after)
    # A run whose score is invalid for what ran in it reported something other than the
    # tests' outcome: nothing it reported is used, and no other run outweighs it.
    for side, number, run in numbered:
        if not run.trusted:
            return "run_untrusted", f"{side} the gold patch, run {number}: {run.problem}"
    for side, number, run in numbered:
        if not run.ran:
            return "tests_not_run", f"{side} the gold patch, run {number}: {run.problem}"
    everything = [run for *_, run in numbered]
    if not any(passes(t, run.status_map) for run in everything for t in run.status_map):
        # Not one test passed in any run, with the gold patch or without: the environment
        # runs no test to success (a package that cannot be imported, a missing tool), or
        # the test command reports nothing (a log with no results is this too, not a
        # parsing problem: no run gave a log to parse).
        errors = sorted({t for run in everything for t in run.status_map})
        unread = [(side, number, run) for side, number, run in numbered if not run.parsed]
        detail = "no test passed in any run, with the gold patch or without" + (
            f" (reported: {_some(errors)})" if errors else " (none reported)"
        )
        if unread:
            side, number, run = unread[0]
            more = f" (and {len(unread) - 1} more runs)" if len(unread) > 1 else ""
            detail += f"; {side} the gold patch, run {number}: {run.problem}{more}"
        return "tests_not_run", detail
    for side, number, run in numbered:
        if not run.parsed:
            return "log_unparseable", f"{side} the gold patch, run {number}: {run.problem}"
    return None


def settled(before: Sequence[RunFacts], after: Sequence[RunFacts]) -> str:
    """Why more runs cannot change what the instance gives, or "" when they can: a run
    already makes it unusable, or every test reported has already both passed and failed
    (no test can be listed). A test seen one way only needs every planned run."""
    if not before or not after:
        return ""
    # One run that is untrusted, did not finish, or cannot be read makes the instance
    # unusable whatever the others say (no test passing in any run so far does not: a
    # later run may pass one).
    if any(not (run.trusted and run.ran and run.parsed) for run in [*before, *after]):
        found = unusable(before, after)
        assert found is not None
        return f"{found[0]} whatever the other runs say (the detail names the run)"
    alone = Counter(test for run in [*before, *after] for test in run.passed_alone)
    transitions = transitions_of(
        [r.status_map for r in before], [r.status_map for r in after], alone
    )
    if transitions and all(t.transition == "flaky" for t in transitions):
        return "every test reported has both passed and failed: none can be listed"
    return ""


def validate_instance(
    instance_id: str,
    before: Sequence[RunFacts],
    after: Sequence[RunFacts],
    *,
    declared: tuple[list[str], list[str]] | None = None,
    bound: FlakyBound | None = None,
) -> InstanceValidation:
    """The instance's verdict and derived lists; ``declared``: the dataset's own
    (FAIL_TO_PASS, PASS_TO_PASS), whose every disagreement with the derived is listed;
    ``bound``: the runs made and the flakiness bound they reach, recorded as given."""
    found = unusable(before, after)
    if found is not None:
        verdict, detail = found
        return InstanceValidation(
            instance_id=instance_id,
            verdict=verdict,  # type: ignore[arg-type]
            detail=detail,
            bound=bound,
        )
    everything = [*before, *after]
    alone = Counter(test for run in everything for test in run.passed_alone)
    transitions = transitions_of(
        [r.status_map for r in before], [r.status_map for r in after], alone
    )
    lists = {name: [t.test for t in transitions if t.transition == name] for name in _LISTS}
    flaky = [t.test for t in transitions if t.transition == "flaky"]
    detail = ""
    if lists["PASS_TO_FAIL"]:
        verdict = "gold_breaks_tests"
        detail = f"the gold patch breaks {_some(lists['PASS_TO_FAIL'])}"
    elif not lists["FAIL_TO_PASS"]:
        verdict = "no_fail_to_pass"
        detail = "no test fails before the gold patch and passes after it"
    elif flaky:
        verdict = "flaky_tests"
        detail = f"flaky, left out of the lists: {_some(flaky)}"
    else:
        verdict = "valid"
    return InstanceValidation(
        instance_id=instance_id,
        verdict=verdict,  # type: ignore[arg-type]
        detail=detail,
        fail_to_pass=lists["FAIL_TO_PASS"],
        pass_to_pass=lists["PASS_TO_PASS"],
        fail_to_fail=lists["FAIL_TO_FAIL"],
        pass_to_fail=lists["PASS_TO_FAIL"],
        flaky=flaky,
        transitions=transitions,
        disagreements=_disagreements(transitions, declared) if declared else [],
        bound=bound,
    )


def _disagreements(
    transitions: list[TestTransition], declared: tuple[list[str], list[str]]
) -> list[str]:
    derived = {t.test: t.transition for t in transitions}
    lines = []
    for name, tests in zip(("FAIL_TO_PASS", "PASS_TO_PASS"), declared, strict=True):
        for test in tests:
            found = derived.get(test, "not reported by any run")
            if found != name:
                lines.append(f"{name} declares {test}: derived {found}")
    listed = {*declared[0], *declared[1]}
    for test, found in derived.items():
        if found in ("FAIL_TO_PASS", "PASS_TO_PASS") and test not in listed:
            lines.append(f"derived {found} {test}: the dataset lists it in neither")
    return lines


def _some(tests: list[str], shown: int = 3) -> str:
    more = f" and {len(tests) - shown} more" if len(tests) > shown else ""
    return ", ".join(tests[:shown]) + more
