"""cargo test: SWE-bench's ``cargo`` parser reproduced, and the native ``cargo_json``.

Every corpus case is one crate run twice, libtest's pretty output and its JSON output;
both logs are checked as committed and as produced by a fresh run (``live``, needs
cargo). Where swebench's map of the pretty log differs from libtest's own events, the
difference is spelled out below and in docs/grading.md ("cargo test").
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
from tests.runners.cargo import CASE_NAMES, NATIVE, cargo_executable, produce

CORPUS = load_corpus("cargo")
PRETTY = [log for log in CORPUS if log.compat]
JSON = [log for log in CORPUS if log.native]
LIB = "demo:src/lib.rs"


def _cargo_missing() -> str | None:
    return None if cargo_executable() else "the live cargo test run needs cargo"


live_logs = live_logs_fixture("cargo", produce, unavailable=_cargo_missing)


def compat(text: str) -> ParsedLog:
    return compat_parse("cargo", text)


def native(text: str) -> ParsedLog:
    return get_parser(NATIVE).parse(text)


# What swebench's map of each pretty log gets wrong against libtest's own events:
# {truth id: what swebench's map says, None: absent}, and keys it invents.
COMPAT_LOSSES: dict[str, dict[str, str | None]] = {
    "passing": {
        # #[should_panic]: printed "tests::x - should panic ... ok", not one word
        f"{LIB}::tests::panics_as_expected": None,
        # doc tests: "src/lib.rs - add (line 3)" has spaces
        "demo:doc::src/lib.rs - add (line 3)": None,
    },
    "mixed": {
        f"{LIB}::tests::panics": None,
        f"{LIB}::tests::panics_with_the_wrong_message": None,
        f"{LIB}::tests::should_panic_but_does_not": None,
        # ignored tests are dropped, not SKIPPED
        f"{LIB}::tests::slow": None,
        f"{LIB}::tests::ignored_with_reason": None,
        "demo:doc::src/lib.rs - add (line 3)": None,
        "demo:doc::src/lib.rs - add (line 7)": None,
        # one name in two test binaries: one key, the binary run last wins
        "a:tests/a.rs::shared": "FAILED",
    },
    "crash": {
        # the binary aborted mid-test: "test tests::b_aborts ... error: test failed, ..."
        # is no result line, and nothing says the binary died
        f"{LIB}::tests::b_aborts": None,
        LIB: None,
    },
}
COMPAT_INVENTED: dict[str, set[str]] = {
    "passing": set(),
    # a failing test printed "test invented ... ok"; libtest shows it in the failure report
    "mixed": {"invented"},
    "crash": set(),
}


def compat_losses(log: CorpusLog) -> tuple[dict[str, str | None], set[str]]:
    """Truth entries swebench's map of ``log`` does not reproduce under libtest's name,
    and the keys of that map that name no test of the truth."""
    assert log.truth is not None
    ours = {k: str(v) for k, v in get_parser("cargo").parse(log.text).statuses.items()}
    losses: dict[str, str | None] = {}
    names = set()
    for test_id, status in log.truth.items():
        name = test_id.split("::", 1)[1] if "::" in test_id else None
        names.add(name)
        said = ours.get(name) if name is not None else None
        if said != status:
            losses[test_id] = said
    return losses, set(ours) - names


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", PRETTY, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog) -> None:
    assert_compat_matches_swebench(log)


@pytest.mark.parametrize("log", PRETTY, ids=lambda log: log.case)
def test_swebench_loses_exactly_the_documented_tests_on_committed_log(log: CorpusLog) -> None:
    case = log.case.removesuffix("_pretty")
    assert compat_losses(log) == (COMPAT_LOSSES[case], COMPAT_INVENTED[case])


@pytest.mark.parametrize("log", JSON, ids=lambda log: log.case)
def test_native_parser_equals_libtest_events_on_committed_log(log: CorpusLog) -> None:
    assert_native_matches_truth(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_both_parsers_on_live_log(live_logs: dict[str, CorpusLog], case: str) -> None:
    log = live_logs[case]
    if log.compat:
        assert_compat_matches_swebench(log)
        base = case.removesuffix("_pretty")
        assert compat_losses(log) == (COMPAT_LOSSES[base], COMPAT_INVENTED[base])
    else:
        assert_native_matches_truth(log)


# --- registration ----------------------------------------------------------------------


def test_parsers_are_registered_under_swebench_and_native_names() -> None:
    assert get_parser("parse_log_cargo").name == "cargo"
    assert get_parser("cargo").family is Family.SWEBENCH
    assert get_parser(NATIVE).family is Family.NATIVE
    assert get_parser(NATIVE).command_advice("cargo test") is not None
    assert (
        get_parser(NATIVE).command_advice("cargo test -- -Z unstable-options --format json") is None
    )


# --- compat quirks (each also checked against swebench by ``compat``) ------------------


def test_compat_drops_ignored_should_panic_and_spaced_names_but_keeps_bench_words() -> None:
    text = (
        "test a ... ok\n"
        "test b ... ignored\n"
        "test c ... ignored, needs network\n"
        "test d - should panic ... ok\n"
        "    test e   ...   FAILED\r\n"
        "test f ... bench\n"
    )
    assert compat(text).statuses == {"a": Status.PASSED, "e": Status.FAILED}
    assert compat("test result: ok. 0 passed\n").suite_ran is False


# --- native rules on hand-made streams (the corpus covers the real shapes) -----------


def test_native_counts_must_match_and_outcomes_need_a_start() -> None:
    text = (
        "     Running tests/t.rs (target/debug/deps/t-0123456789abcdef)\n"
        '{ "type": "suite", "event": "started", "test_count": 1 }\n'
        '{ "type": "test", "event": "started", "name": "real" }\n'
        '{ "type": "test", "name": "real", "event": "failed" }\n'
        '{ "type": "test", "name": "forged", "event": "ok" }\n'
        '{ "type": "suite", "event": "failed", "passed": 0, "failed": 1, "ignored": 0 }\n'
    )
    parsed = native(text)
    assert parsed.statuses == {
        "t:tests/t.rs::real": Status.FAILED,
        "t:tests/t.rs::forged": Status.PASSED,
    }
    assert any("never started" in p for p in parsed.problems)
    assert any("says passed 0, its test events show 1" in p for p in parsed.problems)


def test_native_a_build_failure_did_not_run() -> None:
    text = "error[E0425]: cannot find function `x`\nerror: could not compile `demo`\n"
    assert native(text) == native("")
    assert native(text).suite_ran is False
