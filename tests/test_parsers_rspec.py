"""RSpec: SWE-bench's ``rspec_transformed_json`` reproduced, and the native ``rspec_json``.

Every corpus case is run by RSpec 3.12 twice: its JSON report through SWE-bench's jq
transform, and the report itself; both logs are checked as committed and as produced by
a fresh run (``live``; skipped without rspec and jq). swebench's map of each transformed
log is spelled out key by key against RSpec's report (docs/grading.md, "RSpec").
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import assert_compat_matches_swebench, compat_parse, live_logs_fixture
from tests.runners.rspec import CASE_NAMES, NATIVE, produce, unavailable

CORPUS = load_corpus("rspec")
CALC = "./spec/calc_spec.rb::Calc "

live_logs = live_logs_fixture("rspec", produce, unavailable=unavailable)

COMPAT_READING: dict[str, dict[str, str]] = {
    "passing": {"Math adds": "PASSED", "Math nested multiplies": "PASSED"},
    "mixed": {
        # "Calc adds" passed in calc_spec.rb and failed in other_spec.rb: one key
        "Calc adds": "FAILED",
        "Calc fails": "FAILED",
        "Calc errors": "FAILED",
        # skipped and pending examples have no entry; a pending one that passes fails
        "Calc is pending but passes": "FAILED",
        "Calc has - passed in its name - failed": "PASSED",
        "Calc nested adds": "FAILED",
    },
    # a spec printed to stdout: jq cannot parse the report, nothing is left
    "prints": {},
    # a spec file does not load: RSpec runs nothing (rspec_json: an ERROR, no run)
    "load_error": {},
}
MIXED_TRUTH = {
    f"{CALC}adds": "PASSED",
    f"{CALC}errors": "FAILED",
    f"{CALC}fails": "FAILED",
    f"{CALC}has - passed in its name - failed": "PASSED",
    f"{CALC}is pending and fails as expected": "SKIPPED",
    f"{CALC}is pending but passes": "FAILED",
    f"{CALC}is skipped": "SKIPPED",
    f"{CALC}nested adds": "FAILED",
    "./spec/other_spec.rb::Calc adds": "FAILED",
}


def _check(log: CorpusLog) -> None:
    case, kind = log.case.rsplit("_", 1)
    if case == "mixed":
        assert log.truth == MIXED_TRUTH
    if kind == "transformed":
        assert_compat_matches_swebench(log)
        statuses = get_parser("rspec_transformed_json").parse(log.text).statuses
        assert {k: str(v) for k, v in statuses.items()} == COMPAT_READING[case]
        return
    parsed = get_parser(NATIVE).parse(log.text)
    assert {k: str(v) for k, v in parsed.statuses.items()} == log.truth
    assert parsed.problems == ()
    assert parsed.suite_ran is (case != "load_error")


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_committed_log(log: CorpusLog) -> None:
    _check(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_live_log(live_logs: dict[str, CorpusLog], case: str) -> None:
    _check(live_logs[case])


def test_parsers_are_registered_under_swebench_and_native_names() -> None:
    assert get_parser("parse_log_rspec_transformed_json").name == "rspec_transformed_json"
    assert get_parser("rspec_transformed_json").family is Family.SWEBENCH
    assert get_parser(NATIVE).family is Family.NATIVE


def test_compat_matches_anywhere_after_some_text() -> None:
    parsed = compat_parse("rspec_transformed_json", "x - passed by\n - failed\n  y - failed\n")
    assert parsed.statuses == {"x": Status.PASSED, "y": Status.FAILED}


def test_native_two_reports_and_wrong_summary_are_problems() -> None:
    report = (
        '{"version":"3","examples":[{"file_path":"./a.rb","full_description":"A b",'
        '"status":"passed"}],"summary":{"example_count":2,"failure_count":0,'
        '"pending_count":0,"errors_outside_of_examples_count":0}}'
    )
    parsed = get_parser(NATIVE).parse(f"printed{report}\n{report}\n")
    assert parsed.statuses == {"./a.rb::A b": Status.PASSED}
    assert parsed.problems[0].startswith("2 RSpec JSON reports")
    assert "example_count 2, its examples show 1" in parsed.problems[1]
