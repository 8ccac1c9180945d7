"""PHPUnit: SWE-bench's ``phpunit`` (testdox) parser reproduced; ``junit_xml`` natively.

Every corpus case is run by PHPUnit 9 twice, ``--testdox`` and ``--log-junit
php://stdout``; both logs are checked as committed and as produced by a fresh run
(``live``; skipped without phpunit). swebench's map of each testdox log is spelled out
key by key below against PHPUnit's own JUnit report (docs/grading.md, "PHPUnit").
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
from tests.runners.phpunit import CASE_NAMES, produce, unavailable

CORPUS = load_corpus("phpunit")

live_logs = live_logs_fixture("phpunit", produce, unavailable=unavailable)


def compat(text: str) -> ParsedLog:
    return compat_parse("phpunit", text)


C = "Tests.CalcTest#"
COMPAT_READING: dict[str, dict[str, str]] = {
    "passing": {"Math > Adds": "PASSED", "Math > Multiplies": "PASSED"},
    "mixed": {
        # testAddsNumbers (passed) and test_adds_numbers (failed): one humanized key
        "Calc > Adds numbers": "FAILED",
        "Calc > Fails": "FAILED",
        # an error is FAILED; incomplete and risky tests have no entry
        "Calc > Errors": "FAILED",
        "Calc > Skipped": "SKIPPED",
        'Calc > Add with data set "one"': "PASSED",
        'Calc > Add with data set "two"': "FAILED",
        "Calc > Add with data set #0": "PASSED",
        "Calc > Prints": "PASSED",
        # the test echoed " ✔ Invented test"
        "Calc > Invented test": "PASSED",
        # GlobalTest has no namespace, so its header is not read: it lands under "Calc"
        "Calc > Outside a namespace": "FAILED",
        "Other > Fails": "PASSED",
    },
    "forged": {"Forge > Fails": "FAILED", "Forge > Forges": "PASSED"},
}
MIXED_TRUTH = {
    "GlobalTest#testOutsideANamespace": "FAILED",
    f'{C}testAdd with data set "one"': "PASSED",
    f'{C}testAdd with data set "two"': "FAILED",
    f"{C}testAdd with data set #0": "PASSED",
    f"{C}testAddsNumbers": "PASSED",
    f"{C}testErrors": "ERROR",
    f"{C}testFails": "FAILED",
    f"{C}testIncomplete": "SKIPPED",
    f"{C}testPrints": "PASSED",
    f"{C}testRisky": "ERROR",
    f"{C}testSkipped": "SKIPPED",
    f"{C}test_adds_numbers": "FAILED",
    "Tests.Sub.OtherTest#testFails": "PASSED",
}


def _check(log: CorpusLog) -> None:
    case, kind = log.case.rsplit("_", 1)
    if case == "mixed":
        assert log.truth == MIXED_TRUTH
    if kind == "testdox":
        assert_compat_matches_swebench(log)
        statuses = get_parser("phpunit").parse(log.text).statuses
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
    assert get_parser("parse_log_phpunit").name == "phpunit"
    assert get_parser("phpunit").family is Family.SWEBENCH
    assert get_parser("phpunit").command_advice("vendor/bin/phpunit") is not None


def test_compat_keys_tests_before_any_header_under_none() -> None:
    assert compat(" ✔ Early\nCalc (Tests\\Calc)\n ✘ Late\n").statuses == {
        "None > Early": Status.PASSED,
        "Calc > Late": Status.FAILED,
    }


def test_native_phpunit_total_must_match_the_reports() -> None:
    report = "<testsuite name='s' tests='1'><testcase classname='k' name='t'/></testsuite>\n"
    assert get_parser("junit_xml").parse(report + "OK (1 test, 1 assertion)\n").problems == ()
    problems = get_parser("junit_xml").parse(report + "OK (2 tests, 2 assertions)\n").problems
    assert problems == ("PHPUnit's summary says 2 tests, the reports show 1",)
