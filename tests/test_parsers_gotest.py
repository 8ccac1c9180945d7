"""go test: SWE-bench's ``gotest`` parser reproduced, and the native ``gotest_json``.

Every corpus case is one Go module run twice, ``go test -v`` and ``go test -json``; both
logs are checked as committed and as produced by a fresh run (``live``, needs ``go``).
Where swebench's map of the ``-v`` log differs from the runner's own event stream, the
difference is spelled out below and in docs/grading.md ("Go, Rust, ...").
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import (
    assert_compat_matches_swebench,
    compat_parse,
    live_logs_fixture,
)
from tests.runners.gotest import (
    CASE_NAMES,
    FORGED_DIFFERENCE,
    NATIVE,
    UNTERMINATED_DIFFERENCE,
    missing_tools,
    produce,
)

CORPUS = load_corpus("gotest")
VERBOSE = [log for log in CORPUS if log.compat]
JSON = [log for log in CORPUS if log.native]
M = "example.com/corpus"


def _go_missing() -> str | None:
    return "the live go test run needs go on PATH" if missing_tools() else None


live_logs = live_logs_fixture("gotest", produce, unavailable=_go_missing)


def compat(text: str) -> ParsedLog:
    return compat_parse("gotest", text)


def native(text: str) -> ParsedLog:
    return get_parser(NATIVE).parse(text)


# What swebench's map of each -v log gets wrong against go's own events: per case, the
# truth entries it loses or merges ({truth id: what swebench's map says, None: absent}).
COMPAT_LOSSES: dict[str, dict[str, str | None]] = {
    "passing": {},
    "mixed": {
        # one name in two packages: one key, the package printed last wins
        f"{M}/a::TestShared": "FAILED",
        # a package that did not build, and one whose TestMain failed after its tests
        # passed: no result line, so no entry, and the passing tests hide the failure
        f"{M}/d": None,
        f"{M}/e": None,
    },
    "unterminated": {
        # the result line follows output without a newline: swebench misses it (and so
        # does go 1.19's own event stream, which has the test start with no outcome)
        f"{M}/u::TestPrintsNoNewline": None,
        f"{M}/u::TestFailsNoNewline": None,
    },
    "forged": {},
}

# What the native parser says where go 1.19's event stream is wrong (the named differences).
NATIVE_CORRECTIONS: dict[str, dict[str, Status]] = {
    "unterminated": {
        f"{M}/u::TestPrintsNoNewline": Status.PASSED,
        f"{M}/u::TestFailsNoNewline": Status.FAILED,
    },
    "forged": {},
}


def compat_losses(log: CorpusLog) -> dict[str, str | None]:
    """Truth entries that swebench's map of ``log`` does not reproduce under Go's name."""
    assert log.truth is not None
    ours = {k: str(v) for k, v in get_parser("gotest").parse(log.text).statuses.items()}
    losses: dict[str, str | None] = {}
    for test_id, status in log.truth.items():
        name = test_id.split("::", 1)[1] if "::" in test_id else None
        said = ours.get(name) if name is not None else None
        if said != status:
            losses[test_id] = said
    return losses


def assert_native_right(log: CorpusLog) -> None:
    assert log.truth is not None
    parsed = native(log.text)
    assert parsed.suite_ran
    case = log.case.removesuffix("_json")
    if NATIVE not in log.known_differences:
        assert parsed.statuses == log.truth
        assert parsed.problems == ()
        return
    expected = {**log.truth, **NATIVE_CORRECTIONS[case]}
    assert parsed.statuses == expected
    if case == "forged":
        assert parsed.problems and "never started" in parsed.problems[0]
    else:
        assert parsed.problems == ()


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", VERBOSE, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog) -> None:
    assert_compat_matches_swebench(log)


@pytest.mark.parametrize("log", VERBOSE, ids=lambda log: log.case)
def test_swebench_loses_exactly_the_documented_tests_on_committed_log(log: CorpusLog) -> None:
    assert compat_losses(log) == COMPAT_LOSSES[log.case.removesuffix("_v")]


@pytest.mark.parametrize("log", JSON, ids=lambda log: log.case)
def test_native_parser_equals_go_events_on_committed_log(log: CorpusLog) -> None:
    assert_native_right(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES
    named = {log.case: log.known_differences for log in JSON}
    assert named["unterminated_json"] == {NATIVE: UNTERMINATED_DIFFERENCE}
    assert named["forged_json"] == {NATIVE: FORGED_DIFFERENCE}


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_both_parsers_on_live_log(live_logs: dict[str, CorpusLog], case: str) -> None:
    log = live_logs[case]
    if log.compat:
        assert_compat_matches_swebench(log)
        assert compat_losses(log) == COMPAT_LOSSES[case.removesuffix("_v")]
    else:
        assert_native_right(log)


# --- registration ----------------------------------------------------------------------


def test_parsers_are_registered_under_swebench_and_native_names() -> None:
    assert get_parser("parse_log_gotest").name == "gotest"
    assert get_parser("gotest").family is Family.SWEBENCH
    assert get_parser(NATIVE).family is Family.NATIVE


def test_command_advice_names_the_missing_flag() -> None:
    assert get_parser("gotest").command_advice("go test ./...") is not None
    assert get_parser("gotest").command_advice("go test -v ./...") is None
    assert get_parser(NATIVE).command_advice("go test -v ./...") is not None
    assert get_parser(NATIVE).command_advice("go test -json ./...") is None


# --- compat quirks (each also checked against swebench by ``compat``) ------------------


def test_compat_strips_indentation_and_ignores_unterminated_result_lines() -> None:
    text = (
        "--- FAIL: TestA (0.00s)\n"
        "    --- PASS: TestA/sub_one (0.01s)\n"
        "out--- PASS: TestB (0.00s)\n"
        "--- SKIP: TestC (0.00s)\r\n"
    )
    assert compat(text).statuses == {
        "TestA": Status.FAILED,
        "TestA/sub_one": Status.PASSED,
        "TestC": Status.SKIPPED,
    }


def test_compat_suite_ran_only_with_a_result_line() -> None:
    assert compat("FAIL\texample.com/x [build failed]\n").suite_ran is False
    assert compat("ok  \texample.com/x\t0.01s\n").suite_ran is False


# --- native rules on hand-made streams (the corpus covers the real shapes) -----------


def _events(*events: str) -> str:
    return "\n".join(events) + "\n"


def test_native_a_test_killed_before_its_outcome_is_an_error_and_the_stream_must_end() -> None:
    text = _events(
        '{"Action":"run","Package":"p","Test":"TestA"}',
        '{"Action":"output","Package":"p","Test":"TestA","Output":"panic: x\\n"}',
    )
    parsed = native(text)
    assert parsed.statuses == {"p::TestA": Status.ERROR}
    assert parsed.problems == ("package p has no final pass/fail event",)


def test_native_second_outcome_and_events_after_the_package_ended_are_problems() -> None:
    text = _events(
        '{"Action":"run","Package":"p","Test":"TestA"}',
        '{"Action":"pass","Package":"p","Test":"TestA"}',
        '{"Action":"fail","Package":"p","Test":"TestA"}',
        '{"Action":"pass","Package":"p"}',
        '{"Action":"run","Package":"p","Test":"TestB"}',
    )
    problems = native(text).problems
    assert any("second outcome" in p for p in problems)
    assert any("after package p ended" in p for p in problems)


def test_native_go_1_24_build_fail_event_is_a_package_error() -> None:
    text = _events(
        '{"ImportPath":"p [p.test]","Action":"build-output","Output":"x.go:1: bad\\n"}',
        '{"ImportPath":"p [p.test]","Action":"build-fail"}',
        '{"Action":"start","Package":"p"}',
        '{"Action":"output","Package":"p","Output":"FAIL\\tp [build failed]\\n"}',
        '{"Action":"fail","Package":"p","FailedBuild":"p [p.test]"}',
    )
    parsed = native(text)
    assert parsed.statuses["p"] is Status.ERROR
    assert parsed.suite_ran is False


def test_native_empty_or_plain_text_log_did_not_run() -> None:
    assert native("").suite_ran is False
    assert native("FAIL\tp [build failed]\n").statuses == {"p": Status.ERROR}
