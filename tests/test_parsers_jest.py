"""Jest: SWE-bench's ``jest`` parser reproduced, and the native ``jest_json``.

Every corpus case is run by jest 29 twice, ``--verbose`` and ``--json``; both logs are
checked as committed and as produced by a fresh run (``live``; skipped, saying how to
install jest, when it is absent). swebench's map of each verbose log is spelled out key
by key below against jest's own report (docs/grading.md, "Jest").
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import assert_compat_matches_swebench, compat_parse, live_logs_fixture
from tests.runners.jest import CASE_NAMES, FORGED_DIFFERENCE, NATIVE, produce, unavailable

CORPUS = load_corpus("jest")
A = "/corpus/test/a.test.js::"
B = "/corpus/test/b.test.js::"

live_logs = live_logs_fixture("jest", produce, unavailable=unavailable)


def compat(text: str) -> ParsedLog:
    return compat_parse("jest", text)


# swebench's map of each verbose log, and what jest's report says of the same tests.
COMPAT_READING: dict[str, dict[str, str]] = {
    "passing": {"adds": "PASSED", "multiplies": "PASSED", "top level": "PASSED"},
    "mixed": {
        # bare titles: "math > adds" passed, "math > nested > adds" failed, one key
        "adds": "FAILED",
        "fails": "FAILED",
        # a skipped test is renamed; the todo "math > later" has no entry
        "skipped skipped one": "SKIPPED",
        # one title in two files: a.test.js's FAILED, then b.test.js's PASSED
        "shared title": "PASSED",
        "name with spaces ünïcødé (1 ms) and parens": "PASSED",
        "prints fake lines": "PASSED",
        # lines the test printed (console.log, indented, and raw stdout) are tests
        "invented by console.log": "PASSED",
        "invented on stdout": "PASSED",
        "param 1": "PASSED",
        "param 2": "FAILED",
        # c.test.js failed to run: no entry, where jest reports an error
    },
    "forged": {"real failure": "FAILED", "forges a report": "PASSED"},
}
MIXED_TRUTH = {
    f"{A}math > adds": "PASSED",
    f"{A}math > fails": "FAILED",
    f"{A}math > later": "SKIPPED",
    f"{A}math > nested > adds": "FAILED",
    f"{A}math > skipped one": "SKIPPED",
    f"{A}name with spaces ünïcødé (1 ms) and parens": "PASSED",
    f"{A}prints fake lines": "PASSED",
    f"{A}shared title": "FAILED",
    f"{B}param 1": "PASSED",
    f"{B}param 2": "FAILED",
    f"{B}shared title": "PASSED",
    "/corpus/test/c.test.js": "ERROR",
}


def _check(log: CorpusLog) -> None:
    case, kind = log.case.rsplit("_", 1)
    if case == "mixed":
        assert log.truth == MIXED_TRUTH
    if kind == "verbose":
        assert_compat_matches_swebench(log)
        statuses = get_parser("jest").parse(log.text).statuses
        assert {k: str(v) for k, v in statuses.items()} == COMPAT_READING[case]
        return
    parsed = get_parser(NATIVE).parse(log.text)
    assert parsed.suite_ran
    assert {k: str(v) for k, v in parsed.statuses.items()} == log.truth
    if NATIVE in log.known_differences:
        assert parsed.problems and "2 jest JSON reports" in parsed.problems[0]
    else:
        assert parsed.problems == ()


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_committed_log(log: CorpusLog) -> None:
    _check(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES
    forged = next(log for log in CORPUS if log.case == "forged_json")
    assert forged.known_differences == {NATIVE: FORGED_DIFFERENCE}


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_live_log(live_logs: dict[str, CorpusLog], case: str) -> None:
    _check(live_logs[case])


# --- registration and rules -------------------------------------------------------------


def test_parsers_are_registered_under_swebench_and_native_names() -> None:
    assert get_parser("parse_log_jest").name == "jest"
    assert get_parser("jest").family is Family.SWEBENCH
    assert get_parser(NATIVE).family is Family.NATIVE
    assert get_parser("jest").command_advice("npx jest") is not None
    assert get_parser(NATIVE).command_advice("npx jest --json") is None


def test_compat_suite_ran_from_jest_totals_without_test_lines() -> None:
    assert compat("Tests:       3 passed, 3 total\n").suite_ran is True
    assert compat("Tests:       0 total\n").suite_ran is False


def test_native_totals_must_match_the_tests() -> None:
    text = (
        '{"numTotalTests": 2, "numPassedTests": 2, "testResults": [{"name": "/t.js",'
        ' "status": "passed", "assertionResults": [{"ancestorTitles": ["a"],'
        ' "title": "b", "status": "passed"}]}]}\n'
    )
    parsed = get_parser(NATIVE).parse(text)
    assert parsed.statuses == {"/t.js::a > b": Status.PASSED}
    assert len(parsed.problems) == 2
    assert get_parser(NATIVE).parse("Tests: 1 passed\n").suite_ran is False
