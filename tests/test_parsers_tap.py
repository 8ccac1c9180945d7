"""TAP: SWE-bench's ``tap`` parser reproduced, and the native ``tap_full`` parser.

Every corpus log (node --test, Test::More) is checked twice: as committed and as
produced by a fresh run of the runners (``live``).
"""

from __future__ import annotations

import random

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import (
    assert_compat_matches_swebench,
    assert_native_matches_truth,
    compat_parse,
    live_logs_fixture,
)
from tests.runners.tap import CASES, missing_tools, produce

CORPUS = load_corpus("tap")
CASE_NAMES = [spec.case for spec in CASES]


def _live_tools_missing() -> str | None:
    missing = missing_tools()
    return f"the live TAP run needs {', '.join(missing)} on PATH" if missing else None


live_logs = live_logs_fixture("tap", produce, unavailable=_live_tools_missing)


def compat(text: str) -> ParsedLog:
    return compat_parse("tap", text)


def native(text: str) -> ParsedLog:
    return get_parser("tap_full").parse(text)


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog) -> None:
    assert_compat_matches_swebench(log)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_native_parser_equals_runner_truth_on_committed_log(log: CorpusLog) -> None:
    assert_native_matches_truth(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_compat_parser_equals_swebench_on_live_log(
    live_logs: dict[str, CorpusLog], case: str
) -> None:
    assert_compat_matches_swebench(live_logs[case])


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_native_parser_equals_runner_truth_on_live_log(
    live_logs: dict[str, CorpusLog], case: str
) -> None:
    assert_native_matches_truth(live_logs[case])


# --- registration ----------------------------------------------------------------------


def test_parsers_are_registered_under_swebench_and_native_names() -> None:
    assert get_parser("parse_log_tap").name == "tap"
    assert get_parser("tap").family is Family.SWEBENCH
    assert get_parser("tap_full").family is Family.NATIVE
    assert not get_parser("tap").fail_only and not get_parser("tap_full").fail_only


# --- compat quirks (each also checked against swebench by ``compat``) ------------------


def test_compat_key_keeps_dash_and_directive_and_todo_failure_is_failed() -> None:
    parsed = compat("ok 1 - x # SKIP why\nnot ok 2 - y # TODO later\nok 3 - a \\# b\n")
    assert parsed.statuses == {
        "- x # SKIP why": Status.PASSED,
        "- y # TODO later": Status.FAILED,
        "- a \\# b": Status.PASSED,
    }


def test_compat_ignores_nesting_so_same_names_collide_and_the_later_wins() -> None:
    text = "    ok 1 - step\n    1..1\nnot ok 1 - step\n1..1\n"
    assert compat(text).statuses == {"- step": Status.FAILED}


def test_compat_keys_assertion_level_tap_by_message() -> None:
    text = "1..4\nok 1 - is equal\nnot ok 2 - is equal\nok 3\nok 4 # skip no network\n"
    # Two assertions with one message are one entry; an unnamed one is not recorded,
    # and an unnamed skip is keyed by its directive.
    assert compat(text).statuses == {
        "- is equal": Status.FAILED,
        "# skip no network": Status.PASSED,
    }


def test_compat_counts_any_result_shaped_line_but_not_node_relayed_comments() -> None:
    text = "# ok 99 - relayed by node\nok 98 - printed raw\n"
    assert compat(text).statuses == {"- printed raw": Status.PASSED}


def test_compat_suite_ran_from_node_totals_or_a_result() -> None:
    assert compat("TAP version 13\n1..0\n# tests 0\n").suite_ran is False
    assert compat("").suite_ran is False
    assert compat("# tests 3\n# pass 3\n").suite_ran is True
    assert compat("ok 1 - x\n").suite_ran is True


def test_compat_agrees_with_swebench_on_corpus_logs_with_node_comments() -> None:
    log = next(log for log in CORPUS if log.case == "node_fake_lines")
    # node relays a test's own output as comments, so no fake key reaches the map.
    assert set(compat(log.text).statuses) == {
        "- prints fake results",
        "- real failure",
        "- real pass",
    }


# --- native parser: ids and statuses -----------------------------------------------------


def test_native_ids_join_nested_names_with_separator() -> None:
    text = (
        "TAP version 13\n# Subtest: outer\n    # Subtest: inner\n        ok 1 - leaf\n"
        "        1..1\n    ok 1 - inner\n    1..1\nok 1 - outer\n1..1\n"
    )
    assert native(text).statuses == {
        "outer > inner > leaf": Status.PASSED,
        "outer > inner": Status.PASSED,
        "outer": Status.PASSED,
    }


def test_native_unescapes_names_and_strips_one_leading_dash() -> None:
    text = "ok 1 - a \\# b \\\\ c\nok 2 - - dash\nok 3 plain\n1..3\n"
    assert set(native(text).statuses) == {"a # b \\ c", "- dash", "plain"}


def test_native_names_unnamed_results_by_number_and_numbers_repeats() -> None:
    text = "1..4\nok 1\nok 2 - same\nnot ok 3 - same\nok 4 # skip no network\n"
    assert native(text).statuses == {
        "#1": Status.PASSED,
        "same": Status.PASSED,
        "same [#2]": Status.FAILED,
        "#4": Status.SKIPPED,
    }


def test_native_directives_skip_todo_case_insensitively() -> None:
    text = (
        "ok 1 - a # SKIP why\nok 2 - b # skipped\nnot ok 3 - c # TODO later\n"
        "ok 4 - d # todo\nnot ok 5 - e # not a directive\n1..5\n"
    )
    assert native(text).statuses == {
        "a": Status.SKIPPED,
        "b": Status.SKIPPED,
        "c": Status.XFAIL,
        "d": Status.XPASS,
        "e": Status.FAILED,
    }


def _node_result(number: int, name: str, ok: bool, **yaml: str) -> str:
    lines = [f"{'ok' if ok else 'not ok'} {number} - {name}", "  ---", "  duration_ms: 1.0"]
    lines += [f"  {key}: '{value}'" for key, value in yaml.items()]
    return "\n".join([*lines, "  ...", ""])


def test_native_suites_have_no_entry_unless_they_failed_on_their_own() -> None:
    child = "    ok 1 - child\n    1..1\n"
    text = (
        child
        + _node_result(1, "passing suite", True, type="suite")
        + "    not ok 1 - child\n    1..1\n"
        + _node_result(2, "failing through child", False, type="suite",
                       failureType="subtestsFailed")
        + child
        + _node_result(3, "after hook fails", False, type="suite", failureType="hookFailed")
        + "1..3\n"
    )  # fmt: skip
    assert native(text).statuses == {
        "passing suite > child": Status.PASSED,
        "failing through child > child": Status.FAILED,
        "after hook fails > child": Status.PASSED,
        "after hook fails": Status.ERROR,
    }


def test_native_hook_failures_and_cancellations_are_errors_timeouts_failures() -> None:
    text = (
        _node_result(1, "hook", False, failureType="hookFailed")
        + _node_result(2, "cancelled", False, failureType="cancelledByParent")
        + _node_result(3, "timeout", False, failureType="testTimeoutFailure")
        + "1..3\n"
    )
    assert native(text).statuses == {
        "hook": Status.ERROR,
        "cancelled": Status.ERROR,
        "timeout": Status.FAILED,
    }


def test_native_ignores_result_shaped_lines_inside_yaml_blocks() -> None:
    text = "ok 1 - real\n  ---\n  error: |-\n    ok 2 - inside yaml\n  ...\n1..1\n"
    parsed = native(text)
    assert parsed.statuses == {"real": Status.PASSED}
    assert parsed.problems == ()


def test_native_reads_several_tap_streams_in_one_log() -> None:
    stream = "TAP version 13\nok 1 - x\n1..1\n"
    parsed = native(stream + stream)
    assert parsed.statuses == {"x": Status.PASSED, "x [#2]": Status.PASSED}
    assert parsed.problems == ()


# --- native parser: evidence and problems -------------------------------------------------


def test_native_empty_output_is_no_evidence_and_no_problem() -> None:
    assert native("") == ParsedLog(statuses={}, suite_ran=False, problems=())


def test_native_skip_all_plan_ran_nothing() -> None:
    parsed = native("1..0 # SKIP no database\n")
    assert (parsed.statuses, parsed.suite_ran, parsed.problems) == ({}, False, ())


def test_native_suite_ran_from_totals_else_plan() -> None:
    assert native("ok 1 - x\n1..1\n").suite_ran is True
    assert native("1..1\n").suite_ran is False
    assert native("TAP version 13\n1..0\n# tests 0\n").suite_ran is False


def _node_log(case: str) -> str:
    return next(log.text for log in CORPUS if log.case == case)


def test_native_forged_line_in_node_output_breaks_plan_and_totals() -> None:
    text = _node_log("node_fake_lines").replace("1..3\n", "ok 4 - forged\n1..3\n")
    problems = native(text).problems
    assert any("plan 1..3 but 4 results" in p for p in problems)
    assert any("node's totals say tests 3" in p for p in problems)


def test_native_forged_line_after_node_totals_is_out_of_sequence() -> None:
    parsed = native(_node_log("node_mixed") + "ok 5 - fake\n")
    assert any("out of sequence" in p for p in parsed.problems)
    assert parsed.statuses["fake"] is Status.PASSED


def test_native_totals_that_disagree_with_lines_are_a_problem() -> None:
    text = _node_log("node_passing").replace("# pass 6", "# pass 7")
    assert native(text).problems == ("node's totals say pass 7, the result lines show 6",)


def test_native_structural_breakage_is_a_problem() -> None:
    broken = {
        "no plan": "ok 1 - a\n",
        "plan mismatch": "1..2\nok 1 - a\n",
        "out of sequence": "ok 1 - a\nok 3 - b\n1..2\n",
        "second plan": "1..1\nok 1 - a\n1..1\n",
        "bail out": "1..2\nok 1 - a\nBail out! database gone\n",
        "unterminated yaml": "ok 1 - a\n  ---\n  error: x\n1..1\n",
        "subtest without parent": "    ok 1 - child\n    1..1\n",
    }
    for what, text in broken.items():
        assert native(text).problems, what


def test_compat_equals_swebench_on_recombined_corpus_lines() -> None:
    # Lines of every corpus log shuffled into new logs, with the odd line ending:
    # whatever the input, the two maps are the same.
    rng = random.Random(7)
    lines = [line for log in CORPUS for line in log.text.split("\n")]
    lines += ["ok 1 x\x0by", "ok ١٢ arabic digits", "\u2028ok 3 - sep", "ok 4 -\r", "ok  5 - x"]
    for _ in range(200):
        compat(rng.choice(["\n", "\r\n"]).join(rng.choices(lines, k=rng.randint(0, 40))))
