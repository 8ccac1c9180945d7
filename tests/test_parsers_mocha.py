"""mocha ``--reporter min``: SWE-bench's FAIL_ONLY ``eslint`` parser reproduced.

Every corpus log is checked as committed and as produced by a fresh mocha run
(``live``; skipped, saying how to install it, when mocha is absent).
"""

from __future__ import annotations

import random
import re

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import assert_compat_matches_swebench, compat_parse, live_logs_fixture
from tests.runners.mocha import CASES, INSTALL_COMMAND, mocha_executable, produce

CORPUS = load_corpus("mocha")
CASE_NAMES = [spec.case for spec in CASES]


def _mocha_missing() -> str | None:
    return None if mocha_executable() else f"mocha is not installed; run: {INSTALL_COMMAND}"


live_logs = live_logs_fixture("mocha", produce, unavailable=_mocha_missing)


def eslint(text: str) -> ParsedLog:
    return compat_parse("eslint", text)


def _count(text: str, word: str) -> int:
    match = re.search(rf"^\s*(\d+) {word}", text, re.M)
    return int(match.group(1)) if match else 0


def assert_min_counts_match_truth(log: CorpusLog) -> None:
    """The min log and the json run saw the same outcomes (the truth is for this log)."""
    assert log.truth is not None
    outcomes = list(log.truth.values())
    assert _count(log.text, "passing") == outcomes.count("PASSED")
    assert _count(log.text, "failing") == outcomes.count("FAILED")
    assert _count(log.text, "pending") == outcomes.count("SKIPPED")


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog) -> None:
    assert_compat_matches_swebench(log)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_committed_min_log_agrees_with_json_truth_on_counts(log: CorpusLog) -> None:
    assert_min_counts_match_truth(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_compat_parser_equals_swebench_on_live_log(
    live_logs: dict[str, CorpusLog], case: str
) -> None:
    assert_compat_matches_swebench(live_logs[case])
    assert_min_counts_match_truth(live_logs[case])


# --- what the parser records --------------------------------------------------------------


def test_eslint_is_a_fail_only_swebench_parser_under_both_names() -> None:
    parser = get_parser("parse_log_eslint")
    assert (parser.name, parser.family, parser.fail_only) == ("eslint", Family.SWEBENCH, True)


def test_passing_run_records_nothing_but_shows_the_suite_ran() -> None:
    log = next(log for log in CORPUS if log.case == "min_passing")
    assert eslint(log.text) == ParsedLog(statuses={}, suite_ran=True)


def test_plain_failure_key_is_mocha_full_title_with_trailing_colon() -> None:
    log = next(log for log in CORPUS if log.case == "min_hook_error")
    failed = {title for title, status in (log.truth or {}).items() if status == "FAILED"}
    assert eslint(log.text).statuses == {f"{title}:": Status.FAILED for title in failed}


# --- quirks, each reproduced from swebench ---------------------------------------------


def _failure(number: int, path: list[str], message: str) -> str:
    lines = [f"  {number}) {path[0]}"]
    lines += [f"{' ' * (5 + 2 * depth)}{title}" for depth, title in enumerate(path[1:], 1)]
    lines[-1] += ":"
    return "\n".join([*lines, f"     {message}", "      at Context.<anonymous> (t.js:1:1)", ""])


def test_title_containing_error_cuts_the_key_short() -> None:
    text = _failure(1, ["suite", "throws TypeError on bad input"], "TypeError: bad")
    assert eslint(text).statuses == {"suite": Status.FAILED}


def test_top_level_suite_starting_with_error_gives_the_empty_key() -> None:
    text = _failure(1, ["Errors are reported", "works"], "AssertionError: no")
    assert eslint(text).statuses == {"": Status.FAILED}


def test_message_without_error_swallows_the_next_failure_or_is_lost() -> None:
    first = _failure(1, ["suite", "custom"], "Oops: bad")
    second = _failure(2, ["suite", "plain"], "AssertionError: no")
    merged = eslint(first + "\n" + second).statuses
    assert len(merged) == 1
    (key,) = merged
    assert key.startswith("suite custom: Oops: bad at Context") and key.endswith("2) suite plain:")
    assert eslint(first).statuses == {}


def test_numbered_console_output_counts_as_a_failure() -> None:
    text = "  3) printed by a test\n     Error: not a mocha failure\n\n  1 passing (2ms)\n"
    assert eslint(text).statuses == {"printed by a test": Status.FAILED}


def test_suite_ran_needs_a_nonzero_passing_count_or_a_failure() -> None:
    assert eslint("\n  1 passing (2ms)\n").suite_ran is True
    assert eslint("\n  0 passing (1ms)\n").suite_ran is False
    assert eslint("").suite_ran is False
    only_failures = "\n  0 passing (1ms)\n  1 failing\n\n" + _failure(1, ["s", "t"], "Error: x")
    assert eslint(only_failures) == ParsedLog(statuses={"s t:": Status.FAILED}, suite_ran=True)


def test_eslint_equals_swebench_on_recombined_corpus_lines() -> None:
    # Lines of every corpus log shuffled into new logs: whatever the input, the two
    # maps are the same.
    rng = random.Random(7)
    lines = [line for log in CORPUS for line in log.text.split("\n")]
    lines += ["  12) a\n\tb", " Error", "\x1b[31m  1) red\x1b[0m", "  1)", "Error"]
    for _ in range(200):
        eslint("\n".join(rng.choices(lines, k=rng.randint(0, 40))))
