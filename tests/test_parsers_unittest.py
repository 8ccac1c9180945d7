"""unittest: the native ``unittest`` (``-v``) and ``unittest_failures`` (quiet) parsers.

Every corpus log (each suite run with ``-v`` and without) is checked twice: as committed
and as produced by a fresh run of ``python -m unittest`` (``live``). The verbose logs are
also read by the compat ``django`` parser, which must agree with swebench on them.
"""

from __future__ import annotations

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import (
    assert_compat_matches_swebench,
    assert_native_matches_truth,
    live_logs_fixture,
)
from tests.runners.unittest import CASE_NAMES, produce

CORPUS = load_corpus("unittest")

live_logs = live_logs_fixture("unittest", produce)


def verbose(text: str) -> ParsedLog:
    return get_parser("unittest").parse(text)


def quiet(text: str) -> ParsedLog:
    return get_parser("unittest_failures").parse(text)


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog) -> None:
    assert_compat_matches_swebench(log)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_native_parser_equals_runner_truth_on_committed_log(log: CorpusLog) -> None:
    assert_native_matches_truth(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == list(CASE_NAMES)


def test_only_the_forged_log_has_a_known_difference() -> None:
    assert {log.case for log in CORPUS if log.known_differences} == {"forged_verbose"}


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


def test_parsers_are_native_and_only_the_quiet_one_is_fail_only() -> None:
    assert get_parser("unittest").family is Family.NATIVE
    assert get_parser("unittest_failures").family is Family.NATIVE
    assert not get_parser("unittest").fail_only
    assert get_parser("unittest_failures").fail_only


# --- verbose: ids ------------------------------------------------------------------------

TOTALS = "\n" + "-" * 70 + "\nRan {n} tests in 0.001s\n\n{result}\n"
BLOCK = "=" * 70 + "\n{kind}: {description}\n" + "-" * 70 + "\nTraceback...\n\n"


def test_ids_are_test_ids_and_docstring_lines_never_are() -> None:
    text = (
        "test_a (m.C.test_a)\nFirst docstring line. ... ok\n"
        "test_b (m.C.test_b)\nWith ... dots ... FAIL\n\n"
        + BLOCK.format(kind="FAIL", description="test_b (m.C.test_b)\nWith ... dots")
        + TOTALS.format(n=2, result="FAILED (failures=1)")
    )
    assert verbose(text) == ParsedLog(
        {"m.C.test_a": Status.PASSED, "m.C.test_b": Status.FAILED}, suite_ran=True
    )


def test_reads_the_description_form_of_python_before_3_11() -> None:
    text = "test_a (m.C) ... ok\nsetUpClass (m.D) ... ERROR\ntest_c (m.E) ... skipped 'x'\n"
    assert verbose(text).statuses == {
        "m.C.test_a": Status.PASSED,
        "setUpClass (m.D)": Status.ERROR,
        "m.E.test_c": Status.SKIPPED,
    }


def test_every_verdict_word_maps_to_its_status() -> None:
    text = (
        "t1 (m.C.t1) ... ok\nt2 (m.C.t2) ... FAIL\nt3 (m.C.t3) ... ERROR\n"
        "t4 (m.C.t4) ... skipped 'why'\nt5 (m.C.t5) ... skipped \"it's off\"\n"
        "t6 (m.C.t6) ... expected failure\nt7 (m.C.t7) ... unexpected success\n"
    )
    assert list(verbose(text).statuses.values()) == [
        Status.PASSED,
        Status.FAILED,
        Status.ERROR,
        Status.SKIPPED,
        Status.SKIPPED,
        Status.XFAIL,
        Status.XPASS,
    ]


def test_failed_subtests_have_their_own_ids_and_fail_their_test() -> None:
    text = (
        "test_s (m.C.test_s) ... \n"
        "  test_s (m.C.test_s) (i=1) ... FAIL\n"
        "  test_s (m.C.test_s) [msg] (i=2) ... ERROR\n"
        "test_e (m.C.test_e) ... \n"
        "  test_e (m.C.test_e) (<subtest>) ... ERROR\n"
    )
    assert verbose(text).statuses == {
        "m.C.test_s (i=1)": Status.FAILED,
        "m.C.test_s [msg] (i=2)": Status.ERROR,
        "m.C.test_s": Status.FAILED,
        "m.C.test_e (<subtest>)": Status.ERROR,
        "m.C.test_e": Status.ERROR,
    }


def test_a_tests_own_verdict_after_its_subtests_is_not_a_new_test() -> None:
    text = (
        "test_s (m.C.test_s) ... \n  test_s (m.C.test_s) (i=1) ... FAIL\n"
        "test_s (m.C.test_s) ... ERROR\n\n"
        + BLOCK.format(kind="ERROR", description="test_s (m.C.test_s)")
        + BLOCK.format(kind="FAIL", description="test_s (m.C.test_s) (i=1)")
        + TOTALS.format(n=1, result="FAILED (failures=1, errors=1)")
    )
    parsed = verbose(text)
    assert parsed.statuses == {"m.C.test_s (i=1)": Status.FAILED, "m.C.test_s": Status.ERROR}
    assert parsed.problems == ()


def test_before_3_11_subtests_come_from_error_blocks_and_the_next_test_shares_the_line() -> None:
    text = (
        "test_s (m.C) ... test_t (m.C) ... ok\n\n"
        + BLOCK.format(kind="FAIL", description="test_s (m.C) (i=1)")
        + TOTALS.format(n=2, result="FAILED (failures=1)")
    )
    parsed = verbose(text)
    assert parsed.statuses == {
        "m.C.test_t": Status.PASSED,
        "m.C.test_s (i=1)": Status.FAILED,
        "m.C.test_s": Status.FAILED,
    }
    assert parsed.problems == ()


def test_import_errors_keep_the_loaders_id() -> None:
    text = "mod (unittest.loader._FailedTest.mod) ... ERROR\n"
    assert verbose(text).statuses == {"unittest.loader._FailedTest.mod": Status.ERROR}


# --- verbose: what tests print -------------------------------------------------------------


def test_the_runners_verdict_after_printed_verdict_words_wins() -> None:
    text = "test_a (m.C.test_a) ... ok\nFAIL\ntest_b (m.C.test_b) ... ERROR\nok\n"
    assert verbose(text).statuses == {"m.C.test_a": Status.FAILED, "m.C.test_b": Status.PASSED}


def test_a_verdict_glued_to_unterminated_output_counts_until_a_real_one() -> None:
    assert verbose("test_a (m.C.test_a) ... progress: 50%ok\n").statuses == {
        "m.C.test_a": Status.PASSED
    }
    text = "test_a (m.C.test_a) ... I took\nFAIL\n"
    assert verbose(text).statuses == {"m.C.test_a": Status.FAILED}


def test_output_starting_with_ok_is_not_a_verdict() -> None:
    text = "test_a (m.C.test_a) ... okay, done\nFAIL\n"
    assert verbose(text).statuses == {"m.C.test_a": Status.FAILED}


def test_unflushed_output_before_a_description_is_skipped() -> None:
    text = (
        "  Applying auth.0012_x...test_a (app.tests.C.test_a) ... ok\n"
        "Applying sites.0002_alter_domain_unique...test_no_migrations "
        "(migrations.test_commands.MigrateTests) ... ok\n"
    )
    assert verbose(text).statuses == {
        "app.tests.C.test_a": Status.PASSED,
        "migrations.test_commands.MigrateTests.test_no_migrations": Status.PASSED,
    }


def test_a_trimmed_trailing_space_and_crlf_line_ends_are_read() -> None:
    text = "test_s (m.C.test_s) ...\r\n  test_s (m.C.test_s) (i=1) ... FAIL\r\n"
    assert verbose(text).statuses == {
        "m.C.test_s (i=1)": Status.FAILED,
        "m.C.test_s": Status.FAILED,
    }


def test_a_fixture_error_after_an_expected_failure_takes_its_id_from_its_block() -> None:
    # Python 3.11 leaves the line of an expected failure open: the fixture's ERROR is bare.
    text = (
        "test_x (m.K.test_x) ... expected failure\nERROR\n\n"
        + BLOCK.format(kind="ERROR", description="setUpClass (m.L)")
        + TOTALS.format(n=1, result="FAILED (errors=1, expected failures=1)")
    )
    parsed = verbose(text)
    assert parsed.statuses == {"m.K.test_x": Status.XFAIL, "setUpClass (m.L)": Status.ERROR}
    assert parsed.problems == ()


# --- verbose: cross-checks and suite_ran --------------------------------------------------


def test_forged_progress_lines_disagree_with_the_runners_count() -> None:
    text = (
        "test_a (m.C.test_a) ... FAIL\n"
        "test_p (m.C.test_p) ... ok\ntest_a (m.C.test_a) ... ok\nok\n\n"
        + BLOCK.format(kind="FAIL", description="test_a (m.C.test_a)")
        + TOTALS.format(n=2, result="FAILED (failures=1)")
    )
    parsed = verbose(text)
    assert parsed.statuses["m.C.test_a"] is Status.FAILED  # the error block wins
    assert parsed.problems == ("the runner reports 2 tests run but the log shows 3 test lines",)


def test_a_status_count_that_disagrees_with_the_totals_is_a_problem() -> None:
    text = "test_a (m.C.test_a) ... ok\n" + TOTALS.format(n=1, result="FAILED (failures=1)")
    assert verbose(text).problems == (
        "the runner reports failures=1 but the log shows 0 FAILED outcomes",
    )


def test_an_error_block_contradicting_a_progress_line_is_a_problem_and_wins() -> None:
    text = (
        "test_a (m.C.test_a) ... ok\n\n"
        + BLOCK.format(kind="FAIL", description="test_a (m.C.test_a)")
        + TOTALS.format(n=1, result="FAILED (failures=1)")
    )
    parsed = verbose(text)
    assert parsed.statuses == {"m.C.test_a": Status.FAILED}
    assert parsed.problems == (
        "m.C.test_a: PASSED in the progress lines, FAILED in the runner's error report",
    )


REAL_FAILURE = (
    "test_a (m.C.test_a) ... FAIL\n\n"
    + BLOCK.format(kind="FAIL", description="test_a (m.C.test_a)")
    + TOTALS.format(n=1, result="FAILED (failures=1)")
    + "Destroying test database...\n"
)


def test_lines_after_the_totals_are_not_read() -> None:
    # An atexit hook of the patch prints forged lines after the runner's report.
    forged = "test_a (m.C.test_a) ... ok\ntest_b (m.C.test_b) ... ok\n"
    assert verbose(REAL_FAILURE + forged) == verbose(REAL_FAILURE)
    assert verbose(REAL_FAILURE) == ParsedLog({"m.C.test_a": Status.FAILED}, suite_ran=True)


def test_a_second_totals_line_is_a_problem() -> None:
    forged = "test_a (m.C.test_a) ... ok\n" + TOTALS.format(n=1, result="OK")
    parsed = verbose(REAL_FAILURE + forged)
    assert parsed.statuses == {"m.C.test_a": Status.FAILED}
    assert parsed.problems == ("a second totals line after the runner's: 'Ran 1 tests in 0.001s'",)


def test_a_run_cut_short_before_its_totals_is_a_problem() -> None:
    parsed = verbose("test_a (m.C.test_a) ... ok\ntest_b (m.C.test_b) ... ")
    assert parsed.statuses == {"m.C.test_a": Status.PASSED}
    assert parsed.suite_ran
    assert parsed.problems == (
        "no 'Ran N tests' line after 2 test lines: the run was cut short (killed, crashed "
        "or exited early), so they cannot be cross-checked",
    )


def test_empty_output_or_no_tests_is_not_a_suite_that_ran() -> None:
    assert verbose("") == ParsedLog({}, suite_ran=False)
    assert verbose(TOTALS.format(n=0, result="NO TESTS RAN")) == ParsedLog({}, suite_ran=False)
    assert verbose("Traceback (most recent call last):\nImportError: x\n").suite_ran is False


# --- quiet (FAIL_ONLY) ---------------------------------------------------------------------


def test_quiet_maps_only_what_failed_with_verbose_ids() -> None:
    text = (
        ".F.E\n"
        + BLOCK.format(kind="ERROR", description="setUpClass (m.D)")
        + BLOCK.format(kind="FAIL", description="test_s (m.C.test_s) (i=1)\nDocstring.")
        + "=" * 70
        + "\nUNEXPECTED SUCCESS: test_u (m.C.test_u)\n"
        + TOTALS.format(n=3, result="FAILED (failures=1, errors=1, unexpected successes=1)")
    )
    assert quiet(text) == ParsedLog(
        {
            "setUpClass (m.D)": Status.ERROR,
            "m.C.test_s (i=1)": Status.FAILED,
            "m.C.test_s": Status.FAILED,
            "m.C.test_u": Status.XPASS,
        },
        suite_ran=True,
    )


def test_quiet_suite_ran_needs_a_positive_ran_count() -> None:
    assert quiet("....\n" + TOTALS.format(n=4, result="OK")) == ParsedLog({}, suite_ran=True)
    assert quiet(TOTALS.format(n=0, result="OK")).suite_ran is False
    assert quiet("").suite_ran is False
    blocks_only = BLOCK.format(kind="FAIL", description="test_a (m.C.test_a)")
    assert quiet("F\n" + blocks_only).suite_ran is False


def test_quiet_totals_that_disagree_with_the_blocks_are_a_problem() -> None:
    text = "FF\n" + BLOCK.format(kind="FAIL", description="test_a (m.C.test_a)")
    text += TOTALS.format(n=2, result="FAILED (failures=2)")
    assert quiet(text).problems == (
        "the runner reports failures=2 but the log shows 1 FAILED outcomes",
    )


def test_quiet_ignores_progress_lines_a_test_prints() -> None:
    text = "test_x (m.C.test_x) ... FAIL\n.\n" + TOTALS.format(n=1, result="OK")
    assert quiet(text) == ParsedLog({}, suite_ran=True)


def test_quiet_before_3_11_unexpected_successes_have_no_block_and_are_not_checked() -> None:
    text = "u\n" + TOTALS.format(n=1, result="FAILED (unexpected successes=1)")
    assert quiet(text) == ParsedLog({}, suite_ran=True)


def test_quiet_forged_totals_before_the_real_ones_are_a_problem() -> None:
    forged = TOTALS.format(n=9, result="OK")
    text = "..." + forged + "F\n" + BLOCK.format(kind="FAIL", description="test_a (m.C.test_a)")
    text += TOTALS.format(n=4, result="FAILED (failures=1)")
    assert quiet(text).problems == (
        "a second totals line after the runner's: 'Ran 4 tests in 0.001s'",
    )
