"""Test-level judgement: a status map against FAIL_TO_PASS / PASS_TO_PASS.

The rules are SWE-bench v5's (../shared/docs/semantics.md, "Grading"):

* passed(t): t is in the map with PASSED or XFAIL;
* failed(t): t is absent, or FAILED / ERROR; for FAIL_TO_PASS also SKIPPED (a patch
  that makes every F2P test skip must not resolve);
* maintained(t) (PASS_TO_PASS): passed, or SKIPPED (a skip is not a regression);
* FAIL_ONLY runners print only failures: a test passes unless it is explicitly FAILED
  (the caller has already required evidence that the suite ran);
* a truncated parametrized id (more ``[`` than ``]``, SWE-bench issue 290) may match the
  keys it prefixes, only when they all agree on pass vs fail.

XPASS is not in swebench's vocabulary (its parsers drop it, so compat maps never hold
it). Native parsers report it, and it counts as passed: the test body ran and passed.
Counting it as neither would shrink the denominator, so a patch that turned F2P tests
into non-strict xfails would resolve.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evalrepro.grade.parsers import Status
from evalrepro.records.observation import TestGroup, TestsReport

_PASSING = frozenset({Status.PASSED, Status.XFAIL, Status.XPASS})
_FAILING = frozenset({Status.FAILED, Status.ERROR})


def resolve_key(test: str, statuses: Mapping[str, str]) -> str | None:
    """The status-map key for ``test``, tolerating truncated parametrized ids."""
    if test in statuses:
        return test
    if test.count("[") > test.count("]"):
        candidates = [key for key in statuses if key.startswith(test)]
        if candidates and len({statuses[key] in _PASSING for key in candidates}) == 1:
            return candidates[0]
    return None


def _status(test: str, statuses: Mapping[str, str]) -> str | None:
    key = resolve_key(test, statuses)
    return None if key is None else statuses[key]


# A verdict is True (passed), False (failed) or None: a compatible parser may record a
# token that is no status (swebench's ``ERROR:``), which swebench counts in neither list.


def fail_to_pass_ok(test: str, statuses: Mapping[str, str]) -> bool | None:
    """A FAIL_TO_PASS test must pass: absent, failing and skipped all fail."""
    status = _status(test, statuses)
    if status in _PASSING:
        return True
    if status is None or status in _FAILING or status == Status.SKIPPED:
        return False
    return None


def pass_to_pass_ok(test: str, statuses: Mapping[str, str]) -> bool | None:
    """A PASS_TO_PASS test must be maintained: passing or skipped."""
    status = _status(test, statuses)
    if status in _PASSING or status == Status.SKIPPED:
        return True
    if status is None or status in _FAILING:
        return False
    return None


def fail_only_ok(test: str, statuses: Mapping[str, str]) -> bool:
    # SWE-bench looks the id up exactly here: no prefix matching for FAIL_ONLY.
    return statuses.get(test) != Status.FAILED


def _split(
    tests: Sequence[str],
    judge: Callable[[str, Mapping[str, str]], bool | None],
    statuses: Mapping[str, str],
) -> TestGroup:
    verdicts = {test: judge(test, statuses) for test in tests}
    return TestGroup(
        success=[test for test in tests if verdicts[test] is True],
        failure=[test for test in tests if verdicts[test] is False],
    )


def tests_report(
    statuses: Mapping[str, str],
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
    *,
    fail_only: bool = False,
) -> TestsReport:
    if fail_only:
        return TestsReport(
            fail_to_pass=_split(fail_to_pass, fail_only_ok, statuses),
            pass_to_pass=_split(pass_to_pass, fail_only_ok, statuses),
        )
    return TestsReport(
        fail_to_pass=_split(fail_to_pass, fail_to_pass_ok, statuses),
        pass_to_pass=_split(pass_to_pass, pass_to_pass_ok, statuses),
    )
