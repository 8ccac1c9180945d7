"""Django: SWE-bench's ``django`` parser reproduced, and the native ``django_full`` parser.

Every corpus log (Django's runner at ``--verbosity 2 --parallel 1``) is checked twice:
as committed and as produced by a fresh run of ``python -m django test`` (``live``).
The compat quirks are shown on synthetic lines (each also checked against swebench)
and, where the real corpus shows them, on the real log.
"""

from __future__ import annotations

import random

import pytest
from swebench.harness.log_parsers.python import parse_log_django

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import (
    assert_compat_matches_swebench,
    assert_native_matches_truth,
    compat_parse,
    live_logs_fixture,
)
from tests.reference import reference_spec, swebench_status_map
from tests.runners.django import CASE_NAMES, produce

CORPUS = load_corpus("django")
MIXED = next(log for log in CORPUS if log.case == "mixed")

live_logs = live_logs_fixture("django", produce)


def compat(text: str) -> ParsedLog:
    return compat_parse("django", text)


def native(text: str) -> ParsedLog:
    return get_parser("django_full").parse(text)


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
    assert {log.case for log in CORPUS if log.known_differences} == {"forged"}


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
    assert get_parser("parse_log_django").name == "django"
    assert get_parser("django").family is Family.SWEBENCH
    assert get_parser("django_full").family is Family.NATIVE
    assert not get_parser("django").fail_only and not get_parser("django_full").fail_only


# --- compat quirks, on synthetic lines ---------------------------------------------------


def test_compat_keys_a_documented_test_by_its_docstring_line() -> None:
    text = "test_a (m.C.test_a)\nAdds two numbers. ... ok\ntest_b (m.C) ... ok\n"
    assert compat(text).statuses == {
        "Adds two numbers.": Status.PASSED,
        "test_b (m.C)": Status.PASSED,
    }


def test_compat_keys_error_blocks_by_the_bare_method_name() -> None:
    text = "FAIL: test_a (m.C.test_a)\nERROR: setUpClass (m.D)\nFAIL: test_s (m.C.test_s) (i=1)\n"
    assert compat(text).statuses == {
        "test_a": Status.FAILED,
        "setUpClass": Status.ERROR,
        "test_s": Status.FAILED,
    }


def test_compat_keeps_subtest_parameters_of_stripped_subtest_lines() -> None:
    text = "test_s (m.C.test_s) ... \n  test_s (m.C.test_s) (i=1) ... FAIL\n"
    assert compat(text).statuses == {"test_s (m.C.test_s) (i=1)": Status.FAILED}


def test_compat_line_starting_with_ok_passes_the_last_line_with_dots() -> None:
    assert compat("test_a (m.C) ... computing\nok\n").statuses == {"test_a (m.C)": Status.PASSED}
    # Also output that merely starts with "ok", and a bare FAIL after it is not read.
    assert compat("test_a (m.C) ... x\nokay then\nFAIL\n").statuses == {
        "test_a (m.C)": Status.PASSED
    }
    # Lines are stripped first, so "test_b (m.C) ... " (verdict to come) has no " ... ".
    assert compat("test_b (m.C) ... \nok\n").statuses == {}


def test_compat_never_keys_expected_failures_or_unexpected_successes() -> None:
    text = "test_a (m.C) ... expected failure\ntest_b (m.C) ... unexpected success\n"
    assert compat(text).statuses == {}


def test_compat_skipped_anywhere_in_a_line_is_a_skip() -> None:
    assert compat("test_a (m.C) ... skipped 'why' ... ok\n").statuses == {
        "test_a (m.C) ... skipped 'why'": Status.PASSED,
        "test_a (m.C)": Status.SKIPPED,
    }


def test_compat_version_docstring_line_is_passed_even_under_a_fail_header() -> None:
    text = (
        "test_version (m.C.test_version)\n--version is equivalent to version ... FAIL\n"
        "FAIL: test_version (m.C.test_version)\n--version is equivalent to version\n"
    )
    assert compat(text).statuses == {
        "--version is equivalent to version": Status.PASSED,
        "test_version": Status.FAILED,
    }


def test_compat_cuts_only_the_django_7188_migration_prefix() -> None:
    text = (
        "Applying sites.0002_alter_domain_unique...test_no_migrations (m.C) ... ok\n"
        "  Applying auth.0012_x...test_a (m.C) ... ok\n"
    )
    assert compat(text).statuses == {
        "test_no_migrations (m.C)": Status.PASSED,
        "Applying auth.0012_x...test_a (m.C)": Status.PASSED,
    }


def test_compat_pass_suffixes_include_uppercase_ok_with_one_or_two_spaces() -> None:
    text = "test_a (m.C) ... OK\ntest_b (m.C) ...  OK\n"
    assert compat(text).statuses == {"test_a (m.C)": Status.PASSED, "test_b (m.C)": Status.PASSED}


def test_compat_whole_log_patterns_pass_a_test_interrupted_by_runner_chatter() -> None:
    # The chatter holds " ... " itself, so the line rule passes the wrong line; the
    # regex pass then also keys the interrupted test.
    text = (
        "test_a (m.C) ... Testing against Django installed in '/x' with up to 4 processes\n"
        "Importing application x ... done\nSystem check identified no issues (0 silenced).\nok\n"
        "test_b (m.C) ... Internal Server Error: /boom/\nok\n"
    )
    assert compat(text).statuses == {
        "Importing application x": Status.PASSED,
        "test_a (m.C)": Status.PASSED,
        "test_b (m.C)": Status.PASSED,
    }


def test_compat_ignores_a_bare_fail_header_where_swebench_raises() -> None:
    with pytest.raises(IndexError):
        parse_log_django("FAIL:\n", reference_spec(parser="django"))
    assert get_parser("django").parse("FAIL:\nERROR:\n") == ParsedLog({}, suite_ran=False)


def test_compat_suite_ran_from_the_ran_line_or_a_keyed_line() -> None:
    assert compat("").suite_ran is False
    assert compat("Ran 0 tests in 0.000s\n\nOK\n").suite_ran is False
    assert compat("Ran 3 tests in 0.010s\n\nOK\n").suite_ran is True
    assert compat("test_a (m.C) ... ok\n").suite_ran is True


#: Fragments of Django output and of the texts swebench's rules look for.
FRAGMENTS = (
    *("test_a (m.C.test_a)", "test_b (m.C)", "Doc line", " ... ", "...", "\n", "\n", "  "),
    *("ok", "OK", " OK", "okay", "FAIL", "ERROR", "FAIL: ", "ERROR: ", "skipped 'x'"),
    *("expected failure", "--version is equivalent to version", "\r", "/"),
    "Applying sites.0002_alter_domain_unique...test_no_migrations",
    *("Testing against Django installed in '/x'", " silenced).", "(0 silenced)"),
    *("System check identified no issues ", "Internal Server Error: /a/"),
)


def test_compat_equals_swebench_on_random_mixes_of_django_output() -> None:
    rng = random.Random(20240101)
    for _ in range(500):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 40)))
        try:
            reference = swebench_status_map("django", text)
        except IndexError:  # the one departure, tested above
            continue
        assert get_parser("django").parse(text).statuses == reference, text


# --- compat quirks, on the real log ------------------------------------------------------


def test_compat_on_real_log_keys_docstrings_and_bare_names_the_truth_does_not_have() -> None:
    statuses = compat(MIXED.text).statuses
    assert statuses["Usernames are unique."] is Status.PASSED
    assert statuses["Rounding ... is exact."] is Status.FAILED
    assert statuses["test_rounds"] is Status.FAILED
    assert statuses["setUpClass"] is Status.ERROR
    assert "shop.tests.Accounts.test_username_is_unique" in MIXED.truth


def test_compat_on_real_log_passes_a_failed_test_whose_line_got_buffered_ok() -> None:
    # Django's migration output sits in stdout's buffer until a test flushes it, so
    # " OK" lands after that test's " ... ": the " ...  OK" suffix passes it.
    test = "test_prints_okay_then_fails (shop.tests.Chatter.test_prints_okay_then_fails)"
    assert f"{test} ...  OK" in MIXED.text
    assert compat(MIXED.text).statuses[test] is Status.PASSED
    assert MIXED.truth["shop.tests.Chatter.test_prints_okay_then_fails"] == "FAILED"


def test_compat_on_real_log_keys_the_first_test_with_the_migration_prefix() -> None:
    statuses = compat(MIXED.text).statuses
    prefixed = [key for key in statuses if key.startswith("Applying ")]
    assert prefixed == [
        "Applying auth.0012_alter_user_first_name_max_length...test_creates_user "
        "(shop.tests.Accounts.test_creates_user)"
    ]


# --- native parser -------------------------------------------------------------------------


def test_native_reads_the_same_real_log_with_full_ids() -> None:
    statuses = native(MIXED.text).statuses
    assert statuses["shop.tests.Accounts.test_creates_user"] is Status.PASSED
    assert statuses["shop.tests.Chatter.test_prints_okay_then_fails"] is Status.FAILED
    assert statuses["shop.tests.Known.test_open_bug"] is Status.XFAIL
    assert statuses["shop.tests.Known.test_fixed_bug"] is Status.XPASS
    assert statuses["setUpClass (shop.tests.KnownFixture)"] is Status.ERROR
    assert not any(key.startswith(("Usernames", "Rounding", "--version")) for key in statuses)


def test_native_reads_the_description_form_of_swebench_era_django_logs() -> None:
    text = (
        "Testing against Django installed in '/testbed/django' with up to 8 processes\n"
        "System check identified no issues (0 silenced).\n"
        "test_a (admin_views.tests.AdminViewTest) ... ok\n"
        "test_b (admin_views.tests.AdminViewTest)\nA docstring. ... FAIL\n\n"
        + "=" * 70
        + "\nFAIL: test_b (admin_views.tests.AdminViewTest)\nA docstring.\n"
        + "-" * 70
        + "\nTraceback...\n\n"
        + "-" * 70
        + "\nRan 2 tests in 0.120s\n\nFAILED (failures=1)\n"
    )
    assert native(text) == ParsedLog(
        {
            "admin_views.tests.AdminViewTest.test_a": Status.PASSED,
            "admin_views.tests.AdminViewTest.test_b": Status.FAILED,
        },
        suite_ran=True,
    )


def test_native_flags_forged_lines_in_the_real_forged_log() -> None:
    log = next(log for log in CORPUS if log.case == "forged")
    parsed = native(log.text)
    assert parsed.statuses["forger.tests.Ledger.test_balance"] is Status.FAILED
    assert parsed.problems == ("the runner reports 2 tests run but the log shows 4 test lines",)
