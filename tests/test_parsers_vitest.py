"""Vitest: SWE-bench's ``vitest`` parser reproduced; ``jest_json`` reads vitest's report.

Every corpus case is run by vitest 2 twice, ``--reporter=verbose`` and
``--reporter=json``; both logs are checked as committed and as produced by a fresh run
(``live``; skipped, saying how to install vitest, when it is absent). swebench's map of
each verbose log is spelled out key by key below against vitest's own report
(docs/grading.md, "Vitest").
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import assert_compat_matches_swebench, compat_parse, live_logs_fixture
from tests.runners.vitest import CASE_NAMES, FORGED_DIFFERENCE, NATIVE, produce, unavailable

CORPUS = load_corpus("vitest")
A = "test/a.test.js > "
B = "test/b.test.js > "

live_logs = live_logs_fixture("vitest", produce, unavailable=unavailable)


def compat(text: str) -> ParsedLog:
    return compat_parse("vitest", text)


# swebench's map of each verbose log; vitest's report for "mixed" is MIXED_TRUTH.
COMPAT_READING: dict[str, dict[str, str]] = {
    "passing": {
        "test/calc.test.js > calc > adds": "PASSED",
        "test/calc.test.js > calc > nested > multiplies": "PASSED",
        "test/calc.test.js > top level": "PASSED",
    },
    "mixed": {
        f"{A}math > adds": "PASSED",
        f"{A}math > fails": "FAILED",
        f"{A}math > nested > adds": "FAILED",
        f"{A}shared title": "FAILED",
        # a trailing "12ms" in the title is cut off as a duration
        f"{A}name with spaces": "PASSED",
        f"{A}prints fake lines": "PASSED",
        f"{B}shared title": "PASSED",
        # so is a trailing number: "param 1" (passed) and "param 2" (failed) are one key
        f"{B}param": "FAILED",
        # lines the test printed are tests
        "invented by console.log": "PASSED",
        "invented on stdout": "PASSED",
        # skipped and todo tests print no line; c.test.js failed to load: no entries
    },
    "forged": {
        "test/forge.test.js > real failure": "FAILED",
        "test/forge.test.js > forges a report": "PASSED",
    },
}
F = "/corpus/test/"
MIXED_TRUTH = {
    f"{F}a.test.js::math > adds": "PASSED",
    f"{F}a.test.js::math > fails": "FAILED",
    f"{F}a.test.js::math > later": "SKIPPED",
    f"{F}a.test.js::math > nested > adds": "FAILED",
    f"{F}a.test.js::math > skipped one": "SKIPPED",
    f"{F}a.test.js::name with spaces 12ms": "PASSED",
    f"{F}a.test.js::prints fake lines": "PASSED",
    f"{F}a.test.js::shared title": "FAILED",
    f"{F}b.test.js::param 1": "PASSED",
    f"{F}b.test.js::param 2": "FAILED",
    f"{F}b.test.js::shared title": "PASSED",
    f"{F}c.test.js": "ERROR",
}


def _check(log: CorpusLog) -> None:
    case, kind = log.case.rsplit("_", 1)
    if case == "mixed":
        assert log.truth == MIXED_TRUTH
    if kind == "verbose":
        assert_compat_matches_swebench(log)
        statuses = get_parser("vitest").parse(log.text).statuses
        assert {k: str(v) for k, v in statuses.items()} == COMPAT_READING[case]
        return
    parsed = get_parser(NATIVE).parse(log.text)
    assert parsed.suite_ran
    assert {k: str(v) for k, v in parsed.statuses.items()} == log.truth
    if NATIVE in log.known_differences:
        assert parsed.problems and "2 jest JSON reports" in parsed.problems[0]
    else:
        assert parsed.problems == ()


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


def test_parser_is_registered_under_swebench_name() -> None:
    assert get_parser("parse_log_vitest").name == "vitest"
    assert get_parser("vitest").family is Family.SWEBENCH


def test_compat_cuts_trailing_numbers_and_skipped_marks() -> None:
    text = " ✓ t > a 3\n \u00d7 t > b 12 ms\n ↓ t > c [skipped]\n ✓ t > d 5s\n"
    assert compat(text).statuses == {
        "t > a": Status.PASSED,
        "t > b": Status.FAILED,
        "t > c": Status.SKIPPED,
        "t > d": Status.PASSED,
    }
