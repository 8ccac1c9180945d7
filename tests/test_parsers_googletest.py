"""GoogleTest: SWE-bench's ``googletest`` parser reproduced; ``junit_xml`` natively.

Every corpus case is a C++ test binary built against Debian's gtest and run twice, its
console output and its XML report; both logs are checked as committed and as produced
by a fresh build and run (``live``; skipped without g++ and libgtest-dev). swebench's
map of each console log is spelled out key by key against GoogleTest's report
(docs/grading.md, "GoogleTest").
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import (
    assert_compat_matches_swebench,
    assert_native_matches_truth,
    compat_parse,
    live_logs_fixture,
)
from tests.runners.googletest import CASE_NAMES, produce, unavailable

CORPUS = load_corpus("googletest")

live_logs = live_logs_fixture("googletest", produce, unavailable=unavailable)

COMPAT_READING: dict[str, dict[str, str]] = {
    "passing": {"Math.Adds": "PASSED", "Math.Multiplies": "PASSED"},
    "mixed": {
        "Calc.Adds": "PASSED",
        "Calc.Fails": "FAILED",
        # Calc.Skipped (GTEST_SKIP) and Calc.DISABLED_Later have no entry
        "Calc.Prints": "PASSED",
        # the test printed "[       OK ] Invented.Test (0 ms)"
        "Invented.Test": "PASSED",
        # a failing parameterized or typed test is keyed with its parameter
        "Values/Param.IsOne/0": "PASSED",
        "Values/Param.IsOne/1, where GetParam() = 2": "FAILED",
        "Typed/0.IsIntegral": "PASSED",
        "Typed/1.IsIntegral, where TypeParam = double": "FAILED",
        "Other.Adds": "PASSED",
    },
    "forged": {"Forge.Fails": "FAILED", "Forge.Prints": "PASSED"},
}
MIXED_TRUTH = {
    "Calc#Adds": "PASSED",
    "Calc#DISABLED_Later": "SKIPPED",
    "Calc#Fails": "FAILED",
    "Calc#Prints": "PASSED",
    "Calc#Skipped": "SKIPPED",
    "Other#Adds": "PASSED",
    "Typed/0#IsIntegral": "PASSED",
    "Typed/1#IsIntegral": "FAILED",
    "Values/Param#IsOne/0": "PASSED",
    "Values/Param#IsOne/1": "FAILED",
}


def _check(log: CorpusLog) -> None:
    case, kind = log.case.rsplit("_", 1)
    if case == "mixed":
        assert log.truth == MIXED_TRUTH
    if kind == "console":
        assert_compat_matches_swebench(log)
        statuses = get_parser("googletest").parse(log.text).statuses
        assert {k: str(v) for k, v in statuses.items()} == COMPAT_READING[case]
    else:
        assert_native_matches_truth(log)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_committed_log(log: CorpusLog) -> None:
    _check(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_live_log(live_logs: dict[str, CorpusLog], case: str) -> None:
    _check(live_logs[case])


def test_parser_is_registered_under_swebench_name() -> None:
    assert get_parser("parse_log_googletest").name == "googletest"
    assert get_parser("googletest").family is Family.SWEBENCH


def test_compat_takes_the_mark_anywhere_in_the_line() -> None:
    text = "noise [  FAILED  ] A.b (1 ms)\n[  SKIPPED ] A.c (0 ms)\n[  FAILED  ] A.d\n"
    assert compat_parse("googletest", text).statuses == {"A.b": Status.FAILED}


def test_native_disabled_tests_are_skipped_and_left_out_of_the_ran_count() -> None:
    report = (
        '<testsuite name="A" tests="2" failures="0" skipped="0">'
        '<testcase name="b" classname="A" status="run"/>'
        '<testcase name="DISABLED_c" classname="A" status="notrun"/></testsuite>\n'
    )
    ran = "[==========] 1 test from 1 test suite ran. (0 ms total)\n"
    parsed = get_parser("junit_xml").parse(ran + report)
    assert parsed.statuses == {"A#b": Status.PASSED, "A#DISABLED_c": Status.SKIPPED}
    assert parsed.problems == ()
    wrong = get_parser("junit_xml").parse(ran.replace("1 test from", "2 tests from") + report)
    assert wrong.problems == ("GoogleTest says 2 tests ran, the reports show 1",)
