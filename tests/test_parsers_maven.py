"""Maven Surefire: SWE-bench's ``maven`` parser reproduced, and the native ``junit_xml``.

The corpus is one JUnit 5 project really run by Maven (offline): once per test with
``set -x`` as SWE-bench runs it (compatible parser), and whole with its JUnit XML
reports printed (native parser). Logs are checked as committed and as produced by a
fresh run (``live``; skipped where Maven cannot run the project offline).
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import (
    assert_compat_matches_swebench,
    assert_native_matches_truth,
    compat_parse,
    live_logs_fixture,
)
from tests.runners.maven import CASE_NAMES, produce, unavailable

CORPUS = load_corpus("maven")
C = "com.example.CalcTest"

live_logs = live_logs_fixture("maven", produce, unavailable=unavailable)


def compat(text: str) -> ParsedLog:
    return compat_parse("maven", text)


def native(text: str) -> ParsedLog:
    return get_parser("junit_xml").parse(text)


# swebench's map of the per-test log, key by key, against Surefire's reports of the same
# runs: (swebench key, its status, the reports' {id: status} for that selection).
PER_TEST_READING = [
    ("CalcTest#adds", "PASSED", {f"{C}#adds": "PASSED"}),
    ("CalcTest#fails", "FAILED", {f"{C}#fails": "FAILED"}),
    # an exception is an error to Surefire; the build just fails
    ("CalcTest#errors", "FAILED", {f"{C}#errors": "ERROR"}),
    # a disabled test run alone: skipped, the build succeeds, so PASSED
    ("CalcTest#disabled", "PASSED", {f"{C}#disabled": "SKIPPED"}),
    # no such test: nothing ran, and with failIfNoSpecifiedTests=false the build succeeds
    ("CalcTest#absent", "PASSED", {}),
    # a whole class is one entry
    ("OtherTest", "PASSED", {"com.example.OtherTest#adds": "PASSED"}),
    # bash's trace quotes a glob, and the quote stays in the key; two tests, one entry
    (
        "CalcTest#param*'",
        "FAILED",
        {f"{C}#param(int)[1]": "PASSED", f"{C}#param(int)[2]": "FAILED"},
    ),
]


def assert_per_test_reading(log: CorpusLog) -> None:
    assert log.truth is not None
    statuses = {k: str(v) for k, v in get_parser("maven").parse(log.text).statuses.items()}
    assert statuses == {key: status for key, status, _ in PER_TEST_READING}
    reported: dict[str, str] = {}
    for _, _, truth in PER_TEST_READING:
        reported.update(truth)
    assert log.truth == reported


def _check(log: CorpusLog) -> None:
    if log.compat:
        assert_compat_matches_swebench(log)
        assert_per_test_reading(log)
    else:
        assert_native_matches_truth(log)


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_committed_log(log: CorpusLog) -> None:
    _check(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES
    assert [log.case for log in CORPUS if log.compat] == ["per_test"]


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_live_log(live_logs: dict[str, CorpusLog], case: str) -> None:
    _check(live_logs[case])


# --- registration ----------------------------------------------------------------------


def test_parsers_are_registered_under_swebench_and_native_names() -> None:
    assert get_parser("parse_log_maven").name == "maven"
    assert get_parser("maven").family is Family.SWEBENCH
    assert get_parser("junit_xml").family is Family.NATIVE


# --- compat quirks (each also checked against swebench by ``compat``) ------------------


def test_compat_pairs_commands_and_results_first_in_first_out() -> None:
    text = (
        "+ mvn test -Dtest=A#a\n"
        "+ mvn test -Dtest=B#b -q\n"
        "[INFO] BUILD FAILURE\n"
        "[INFO] BUILD SUCCESS\n"
        "[INFO] BUILD SUCCESS\n"
        "+ mvn test -Dtest=C#c\n"
    )
    # the third result had no command yet; C#c takes it at the end
    assert compat(text).statuses == {
        "A#a": Status.FAILED,
        "B#b": Status.PASSED,
        "C#c": Status.PASSED,
    }
    assert compat("[INFO] BUILD SUCCESS\n").suite_ran is False


# --- native rules on hand-made reports (the corpus covers Surefire's real shapes) ----


def test_native_reads_testsuites_roots_and_numbers_a_repeated_id() -> None:
    text = (
        "console\n<testsuites><testsuite name='s' tests='2' failures='0' errors='0'>"
        "<testcase classname='k' name='t'/><testcase classname='k' name='u'>"
        "<skipped/></testcase></testsuite></testsuites>\n"
        "<testsuite name='s' tests='1'><testcase classname='k' name='t'>"
        "<failure/></testcase></testsuite>\n"
    )
    parsed = native(text)
    assert parsed.statuses == {
        "k#t": Status.PASSED,
        "k#u": Status.SKIPPED,
        "k#t [#2]": Status.FAILED,
    }
    assert parsed.problems == ()


def test_native_counts_that_disagree_and_broken_reports_are_problems() -> None:
    text = "<testsuite name='s' tests='3'><testcase classname='k' name='t'/></testsuite>\n"
    assert native(text).problems == ("line 1: suite 's' says tests 3, its test cases show 1",)
    broken = native("<testsuite name='s'><testcase classname='k' name='t'>\n")
    assert broken.problems and "does not parse" in broken.problems[0]
    assert native("no reports here\n").suite_ran is False


def test_compat_a_printed_build_success_passes_the_test_whatever_the_build_says() -> None:
    text = (
        "+ mvn test -Dtest=A#a\nBUILD SUCCESS\n[INFO] BUILD FAILURE\n"
        "+ mvn test -Dtest=B#b\n[INFO] BUILD SUCCESS\n"
    )
    # A's own FAILURE line is left over; B gets its own line, so A's is dropped...
    assert compat(text).statuses == {"A#a": Status.PASSED, "B#b": Status.PASSED}
    # ...unless a command ends up without a result line: then it takes the left-over one
    cut = text.removesuffix("[INFO] BUILD SUCCESS\n")
    assert compat(cut).statuses == {"A#a": Status.PASSED, "B#b": Status.FAILED}
