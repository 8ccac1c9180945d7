"""SymPy: SWE-bench's ``sympy`` parser reproduced, quirks shown against the runner's truth.

Every corpus log (SymPy's own runner, verbose, as ``bin/test -C --verbose`` runs it) is
checked twice: as committed and as produced by a fresh run (``live``). There is no
native SymPy parser; the truth the runner's reporter records shows what the compatible
parser misses, and the tests below pin those misses down.
"""

from __future__ import annotations

import random

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import assert_compat_matches_swebench, compat_parse, live_logs_fixture
from tests.reference import swebench_status_map
from tests.runners.sympy import CASE_NAMES, produce

CORPUS = load_corpus("sympy")
MIXED = next(log for log in CORPUS if log.case == "mixed")
ALGEBRA = "sympy/corpus/tests/test_algebra.py"
CALCULUS = "sympy/corpus/tests/test_calculus.py"


live_logs = live_logs_fixture("sympy", produce)


def compat(text: str) -> ParsedLog:
    return compat_parse("sympy", text)


def missed(log: CorpusLog) -> set[str]:
    """Tests the runner reports as passed or failed that get no bare-name key."""
    assert log.truth is not None
    statuses = compat(log.text).statuses
    return {
        test_id
        for test_id, status in log.truth.items()
        if status in {"PASSED", "FAILED", "ERROR"} and test_id.split("::")[1] not in statuses
    }


# --- the corpus, committed and live ---------------------------------------------------


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog) -> None:
    assert_compat_matches_swebench(log)


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == list(CASE_NAMES)
    assert all(log.native is None and log.truth for log in CORPUS)


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_compat_parser_equals_swebench_on_live_log(
    live_logs: dict[str, CorpusLog], case: str
) -> None:
    assert_compat_matches_swebench(live_logs[case])


@pytest.mark.live
@pytest.mark.parametrize("case", CASE_NAMES)
def test_compat_misses_the_same_tests_on_live_and_committed_logs(
    live_logs: dict[str, CorpusLog], case: str
) -> None:
    committed = next(log for log in CORPUS if log.case == case)
    assert live_logs[case].truth == committed.truth
    assert missed(live_logs[case]) == missed(committed)


# --- registration ----------------------------------------------------------------------


def test_parser_is_registered_under_its_swebench_names() -> None:
    assert get_parser("parse_log_sympy").name == "sympy"
    assert get_parser("sympy").family is Family.SWEBENCH
    assert not get_parser("sympy").fail_only


# --- quirks, on the real logs --------------------------------------------------------------


def test_compat_misses_the_last_test_of_each_file_and_tests_that_print() -> None:
    # The file verdict "[OK]"/"[FAIL]" is written on the last test's line, which then no
    # longer ends with " ok"/" F"/" E"; a printing test's "ok" lands on a later line.
    assert missed(MIXED) == {
        f"{ALGEBRA}::test_raises",
        f"{ALGEBRA}::test_prints",
        f"{CALCULUS}::test_second_derivative",
    }
    passing = next(log for log in CORPUS if log.case == "passing")
    assert missed(passing) == {"sympy/corpus/tests/test_factor.py::test_factor_constant"}


def test_compat_keys_the_last_test_when_its_line_is_too_long_for_the_verdict() -> None:
    name = "test_a_name_so_long_that_the_verdict_of_the_file_no_longer_fits_on_its_line"
    assert f"{name} ok \n" in MIXED.text
    assert compat(MIXED.text).statuses[name] is Status.PASSED


def test_compat_keys_failures_again_by_their_traceback_header_as_failed() -> None:
    statuses = compat(MIXED.text).statuses
    # SymPy 1.13+ writes "::" for failures and ":" for exceptions; both are FAILED.
    assert statuses[f"{CALCULUS}::test_second_derivative"] is Status.FAILED
    assert statuses[f"{ALGEBRA}::test_rational_sum"] is Status.FAILED
    assert statuses[f"{ALGEBRA}:test_raises_wrong_error"] is Status.FAILED
    assert statuses["test_raises_wrong_error"] is Status.ERROR


def test_compat_never_keys_skips_expected_failures_or_unexpected_passes() -> None:
    statuses = compat(MIXED.text).statuses
    assert MIXED.truth is not None
    assert MIXED.truth[f"{ALGEBRA}::test_needs_gpu"] == "SKIPPED"
    assert not {"test_needs_gpu", "test_known_bug", "test_fixed_bug"} & set(statuses)


# --- quirks, on synthetic lines --------------------------------------------------------------


def test_compat_same_named_tests_of_two_files_share_one_key_and_the_later_wins() -> None:
    text = "sympy/a/tests/test_x.py[2] \ntest_same F\nsympy/b/tests/test_x.py[2] \ntest_same ok\n"
    assert compat(text).statuses == {"test_same": Status.PASSED}


def test_compat_keys_any_line_starting_with_test_underscore() -> None:
    assert compat("test_printed_by_a_test ok\n  test_indented F\n").statuses == {
        "test_printed_by_a_test": Status.PASSED,
        "test_indented": Status.FAILED,
    }


def test_compat_suite_ran_from_the_summary_or_a_keyed_line() -> None:
    assert compat("").suite_ran is False
    summary = "= tests finished: 0 passed, in 0.01 seconds ="
    assert compat(summary).suite_ran is False
    wrapped = " tests finished: 0 passed, 1 skipped, \n2 expected to fail, in 0.01 seconds \n"
    assert compat(wrapped).suite_ran is True
    assert compat("test_a ok\n").suite_ran is True


#: Fragments of SymPy runner output and of the texts swebench's rules look for.
FRAGMENTS = (
    *("test_a", "test_b F", "test_c E", "test_d ok", " ok", " F", " E", " s", " f", "\n"),
    *("\n", " ", "_", "____", ".py:", ".py::", "sympy/a/tests/test_x", "[OK]", "[FAIL]"),
    *("  ", "\r", "tests finished: 1 passed, in 0.1 seconds", "test_"),
)


def test_compat_equals_swebench_on_random_mixes_of_sympy_output() -> None:
    rng = random.Random(20240101)
    for _ in range(500):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 40)))
        assert compat(text).statuses == swebench_status_map("sympy", text), text
