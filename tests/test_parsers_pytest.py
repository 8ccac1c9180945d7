"""pytest: SWE-bench's five pytest parsers reproduced, and the native ``pytest_full`` and
``pytest_summary`` parsers.

Every corpus log (tests/corpus/pytest/, made by tests/runners/pytest.py) is checked as
committed and as produced by a fresh pytest run (``live``):

* each compat parser returns swebench 5.0.2's map, key for key and value for value;
* ``pytest_full`` returns pytest's ground truth, the ``truth`` of each log: a plugin's
  dump of every report pytest made, keyed by node id, with XPASS. It also agrees with
  pytest's own JUnit XML once its ids are mapped to (classname, name) by pytest's rule
  and XPASS is written as a pass, which is all JUnit can say (``JUNIT_DIFFERENCES``
  lists where JUnit says otherwise than pytest's reports, and why); the plugin's truth
  is checked against the JUnit XML the same way;
* ``pytest_summary`` returns that truth folded the terminal-bench way.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

from evalrepro.grade.parsers import Family, ParsedLog, Status, get_parser
from evalrepro.grade.parsers.pytest_summary import FOLDED
from tests.corpus import CorpusLog, load_corpus
from tests.corpus_checks import assert_compat_parser_matches_swebench, compat_parse
from tests.reference import swebench_status_map
from tests.runners.pytest import (
    CASES,
    COMPAT,
    corpus_junit_path,
    junit_key,
    junit_statuses,
    junit_xml,
    produce,
)

CORPUS = load_corpus("pytest")
LOGS = {log.case: log for log in CORPUS}
CASE_NAMES = [case.name for case in CASES]
STATUS_WORDS = {str(status) for status in Status}
#: Logs on which pytest_full must report problems (and why), with its map still right.
EXPECTED_PROBLEMS = {
    "vv_forged_message": "a line of a -vv multi-line message forges PASSED in the summary",
    "skips_folded_no_v": "skipped tests cannot be named without -v",
}
#: Where pytest's JUnit XML says something else than pytest's own reports, per case. JUnit
#: has one testcase per test, so a subtest's skip or xfail becomes its test's outcome;
#: pytest's summary, totals and the test's own report say the test passed.
JUNIT_DIFFERENCES: dict[str, dict[tuple[str, str], str]] = {
    "subtests": {
        ("tests.test_subtests", "test_subtests_skip"): "SKIPPED",
        ("tests.test_subtests", "test_subtests_xfail"): "XFAIL",
    },
}


def full(text: str) -> ParsedLog:
    return get_parser("pytest_full").parse(text)


def summary(text: str) -> ParsedLog:
    return get_parser("pytest_summary").parse(text)


def reference(parser: str, text: str) -> dict[str, Status]:
    return compat_parse(parser, text).statuses


def assert_full_matches_truth(log: CorpusLog) -> None:
    """pytest's own version of the shared native check (tests/corpus_checks.py): here a
    log may show that no test ran (usage_error, collection_error), problems are expected
    on the logs of ``EXPECTED_PROBLEMS`` with the map still exact, and the one named
    difference is folded skips, not forged lines."""
    assert log.truth is not None
    parsed = full(log.text)
    if "pytest_full" in log.known_differences:
        # Without -v the folded skips name no test: every other test is right, the
        # skipped ones are missing, and the parser says the map is incomplete.
        skipped = {nodeid for nodeid, status in log.truth.items() if status == "SKIPPED"}
        assert skipped and not skipped & parsed.statuses.keys()
        assert parsed.statuses == {k: v for k, v in log.truth.items() if k not in skipped}
        assert any("skipped" in problem for problem in parsed.problems)
        return
    assert parsed.statuses == log.truth
    assert bool(parsed.problems) == (log.case in EXPECTED_PROBLEMS)


def as_junit(statuses: Mapping[str, str], case: str) -> dict[tuple[str, str], str]:
    """A map as pytest's JUnit XML says it: (classname, name) keys, no XPASS (JUnit
    records a non-strict xpass as a plain pass)."""
    mapped = {junit_key(n): "PASSED" if s == "XPASS" else str(s) for n, s in statuses.items()}
    return mapped | JUNIT_DIFFERENCES.get(case, {})


def assert_full_matches_junit(log: CorpusLog, xml: str) -> None:
    expected = junit_statuses(xml)
    if "pytest_full" in log.known_differences:
        expected = {k: v for k, v in expected.items() if v != "SKIPPED"}
    assert as_junit(full(log.text).statuses, log.case) == expected


def assert_truth_matches_junit(log: CorpusLog, xml: str) -> None:
    assert log.truth is not None
    assert as_junit(log.truth, log.case) == junit_statuses(xml)


def assert_summary_matches_folded_truth(log: CorpusLog) -> None:
    assert log.truth is not None
    folded_skips = "--no-fold-skipped" not in log.command
    expected = {
        nodeid: FOLDED[Status(status)]
        for nodeid, status in log.truth.items()
        if not (folded_skips and status == "SKIPPED")
    }
    assert summary(log.text).statuses == expected


# --- the corpus, committed and live ---------------------------------------------------


def test_committed_corpus_has_every_generated_case() -> None:
    assert [log.case for log in CORPUS] == CASE_NAMES
    for log in CORPUS:
        assert log.compat == COMPAT and log.native == "pytest_full"
        assert corpus_junit_path(log.case).exists()


@pytest.mark.parametrize("parser", COMPAT)
@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_compat_parser_equals_swebench_on_committed_log(log: CorpusLog, parser: str) -> None:
    assert_compat_parser_matches_swebench(log, parser)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_full_parser_equals_pytest_truth_on_committed_log(log: CorpusLog) -> None:
    assert_full_matches_truth(log)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_full_parser_agrees_with_junit_xml_on_committed_log(log: CorpusLog) -> None:
    xml = corpus_junit_path(log.case).read_text(encoding="utf-8")
    assert_full_matches_junit(log, xml)
    assert_truth_matches_junit(log, xml)


@pytest.mark.parametrize("log", CORPUS, ids=lambda log: log.case)
def test_summary_parser_equals_folded_truth_on_committed_log(log: CorpusLog) -> None:
    assert_summary_matches_folded_truth(log)


@pytest.mark.live
def test_every_parser_is_right_on_fresh_pytest_runs(tmp_path: Path) -> None:
    # One test for all cases: the runs are made once, side by side, also under xdist.
    logs = produce(tmp_path)
    assert [log.case for log in logs] == CASE_NAMES
    failures = []
    for log in logs:
        xml = junit_xml(tmp_path, log.case)
        checks = [
            (f"compat {parser}", assert_compat_parser_matches_swebench, (log, parser))
            for parser in log.compat
        ]
        checks += [
            ("pytest_full vs truth", assert_full_matches_truth, (log,)),
            ("pytest_full vs JUnit", assert_full_matches_junit, (log, xml)),
            ("truth vs JUnit", assert_truth_matches_junit, (log, xml)),
            ("pytest_summary vs folded truth", assert_summary_matches_folded_truth, (log,)),
        ]
        for label, check, args in checks:
            try:
                check(*args)
            except AssertionError as error:
                failures.append(f"{log.case}: {label}: {error}")
    assert not failures, "\n".join(failures)


# --- the compat family: swebench's quirks, one rule each ------------------------------


def test_big_log_ids_cut_at_first_space_collapse_1000_tests_into_40_keys() -> None:
    log = LOGS["big_param"]
    assert log.truth is not None
    assert Counter(log.truth.values()) == {"PASSED": 990, "FAILED": 10}
    keys = reference("pytest", log.text)
    assert len(keys) == 40
    assert Counter(keys.values()) == {Status.PASSED: 30, Status.FAILED: 10}
    # One failing "alpha 7" marks all 25 "alpha N" tests failed: the last line wins.
    assert keys["tests/test_big.py::test_big[alpha"] == Status.FAILED
    assert log.truth["tests/test_big.py::test_big[alpha 8]"] == "PASSED"
    assert full(log.text).statuses == log.truth


def test_pytest_cuts_ids_at_first_space_and_later_lines_win() -> None:
    text = "PASSED t.py::test_x[a b]\nFAILED t.py::test_x[a c] - assert 0\n"
    assert reference("pytest", text) == {"t.py::test_x[a": Status.FAILED}


def test_pytest_counts_captured_log_records_as_tests() -> None:
    statuses = reference("pytest", LOGS["captured_log"].text)
    assert statuses["payments:test_logging.py:8"] == Status.ERROR
    assert statuses["payments:test_logging.py:14"] == Status.ERROR  # from a passing test


def test_pytest_counts_status_lines_printed_by_the_code_under_test() -> None:
    # SWE-bench issue 620: a test that never existed passes.
    for case in ("forged_lines", "forged_lines_s"):
        statuses = reference("pytest", LOGS[case].text)
        assert statuses["tests/test_forged.py::test_never_written"] == Status.PASSED
        assert full(LOGS[case].text).statuses == LOGS[case].truth


def test_pytest_records_progress_percentage_as_a_test() -> None:
    assert reference("pytest", "PASSED [100%]\n") == {"[100%]": Status.PASSED}
    assert reference("pytest", "PASSED [ 50%]\n") == {"[": Status.PASSED}


def test_pytest_drops_xpass_and_folded_skips_but_keeps_unfolded_skips() -> None:
    text = (
        "XPASS t.py::test_a - maybe\nSKIPPED [2] t.py:3: no\n"
        "SKIPPED t.py::test_b - unfolded\nPASSED t.py::test_c\n"
    )
    assert reference("pytest", text) == {
        "t.py::test_b": Status.SKIPPED,
        "t.py::test_c": Status.PASSED,
    }
    skip_log = reference("pytest", LOGS["skip_xfail"].text)
    assert "tests/test_marks.py::test_xpass" not in skip_log
    assert not any(status == Status.SKIPPED for status in skip_log.values())


def test_pytest_records_xfail_at_setup_as_test_at() -> None:
    assert reference("pytest", LOGS["skip_xfail"].text)["at"] == Status.XFAIL


def test_pytest_keeps_the_last_of_a_failure_and_its_teardown_error() -> None:
    statuses = reference("pytest", LOGS["setup_errors"].text)
    assert statuses["tests/test_fixtures.py::test_teardown_error_after_pass"] == Status.ERROR
    assert statuses["tests/test_fixtures.py::test_teardown_error_after_failure"] == Status.FAILED


def test_pytest_only_counts_status_words_at_column_zero_without_colour() -> None:
    text = " PASSED t.py::a\n\x1b[32mPASSED\x1b[0m t.py::b\nPASSED\nPASSED t.py::c\r\n"
    assert reference("pytest", text) == {"t.py::c": Status.PASSED}


def test_a_status_token_that_is_not_a_status_is_kept_verbatim_as_swebench_keeps_it() -> None:
    text = "ERROR: file or directory not found: tests/test_missing.py\n"
    assert reference("pytest", text) == {"file": "ERROR:"}
    text = "partial output without newlinePASSED\n"
    assert reference("pytest_v2", text) == {"partial output without": "newlinePASSED"}


def test_pytest_options_shortens_absolute_path_parameters() -> None:
    text = (
        "PASSED t.py::test_a[/usr/lib/libfoo.so]\nPASSED t.py::test_b[//net/x]\n"
        "PASSED t.py::test_c[/a/*.py]\nPASSED t.py::test_d[x]tail\nPASSED t.py::test_e[a b]\n"
    )
    assert reference("pytest_options", text) == {
        "t.py::test_a[/libfoo.so]": Status.PASSED,
        "t.py::test_b[//net/x]": Status.PASSED,
        "t.py::test_c[/a/*.py]": Status.PASSED,
        "t.py::test_d[x]": Status.PASSED,
        "t.py::test_e[a": Status.PASSED,
    }


def test_matplotlib_rewrites_mouse_button_names() -> None:
    statuses = reference("matplotlib", LOGS["param_ids"].text)
    assert statuses["tests/test_ids.py::test_ids[1]"] == Status.PASSED
    assert reference("matplotlib", "FAILED t.py::test[MouseButton.RIGHT]\n") == {
        "t.py::test[3]": Status.FAILED
    }


def test_pytest_v2_keeps_whole_ids_and_the_messages_of_non_failed_lines() -> None:
    statuses = reference("pytest_v2", LOGS["skip_xfail"].text)
    assert statuses["tests/test_marks.py::test_xfail - known bug - #123"] == Status.XFAIL
    statuses = reference("pytest_v2", LOGS["param_ids"].text)
    assert statuses["tests/test_ids.py::test_collapse[alpha gamma]"] == Status.PASSED
    assert statuses["tests/test_ids.py::test_ids[a"] == Status.FAILED  # "a - b" cut at " - "


def test_pytest_v2_strips_colour_codes_even_inside_ids() -> None:
    statuses = reference("pytest_v2", LOGS["param_ids"].text)
    assert statuses["tests/test_ids.py::test_ids]"] == Status.PASSED  # test_ids[10m]
    coloured = "\x1b[32mPASSED\x1b[0m t.py::test_a\n\x1b[31mFAILED\x1b[0m t.py::b - x\n"
    assert reference("pytest_v2", coloured) == {
        "t.py::test_a": Status.PASSED,
        "t.py::b": Status.FAILED,
    }


def test_pytest_v2_records_lines_ending_with_a_status_word() -> None:
    assert reference("pytest_v2", "t.py::test_a PASSED\nt.py::test_b   FAILED\n") == {
        "t.py::test_a": Status.PASSED,
        "t.py::test_b": Status.FAILED,
    }


def test_seaborn_records_only_passes_and_failures() -> None:
    text = (
        "t.py::test_a PASSED   [ 50%]\nt.py::test_b[x y] PASSED\nERROR t.py::test_c\n"
        "SKIPPED t.py::test_d - why\nPASSED t.py::test_e\nFAILED t.py::test_f - boom\n"
        # Holds " PASSED ", so only a second token PASSED would count: nothing is recorded.
        "PASSED t.py::test_g[a PASSED b]\n"
    )
    assert reference("seaborn", text) == {
        "t.py::test_a": Status.PASSED,
        "t.py::test_e": Status.PASSED,
        "t.py::test_f": Status.FAILED,
    }


def test_compat_parsers_match_swebench_on_random_lines() -> None:
    pieces = [
        "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS", " ", "\t", "\r", "\n",
        " - ", "[", "]", "[1]", "[12m", "\x1b", "/", "//", "*", "x", "::", "é", "\xa0",
        "MouseButton.LEFT", " PASSED ",
    ]  # fmt: skip
    rng = random.Random(620)
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 20)))
        for parser in COMPAT:
            assert get_parser(parser).parse(text).statuses == swebench_status_map(parser, text)


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        *((f"{prefix}{repo}", "pytest") for prefix in ("", "parse_log_") for repo in (
            "pytest", "astroid", "flask", "marshmallow", "pvlib", "pyvista", "sqlfluff",
            "xarray",
        )),
        *((f"{prefix}{repo}", "pytest_options") for prefix in ("", "parse_log_")
          for repo in ("pytest_options", "pydicom", "requests", "pylint")),
        *((f"{prefix}{repo}", "pytest_v2") for prefix in ("", "parse_log_")
          for repo in ("pytest_v2", "astropy", "scikit", "sphinx")),
        ("parse_log_matplotlib", "matplotlib"),
        ("parse_log_seaborn", "seaborn"),
    ],
)  # fmt: skip
def test_swebench_names_resolve_to_the_compat_parser(alias: str, name: str) -> None:
    parser = get_parser(alias)
    assert parser.name == name and parser.family is Family.SWEBENCH


def test_compat_suite_ran_is_a_non_empty_map() -> None:
    assert not get_parser("pytest").parse(LOGS["usage_error"].text.replace("ERROR:", "")).suite_ran
    assert get_parser("seaborn").parse("PASSED t.py::a\n").suite_ran


# --- pytest_full ----------------------------------------------------------------------


def test_full_ignores_status_lines_printed_before_pytests_summary() -> None:
    for case in ("forged_lines", "forged_lines_s", "captured_log"):
        parsed = full(LOGS[case].text)
        assert parsed.statuses == LOGS[case].truth and parsed.problems == ()


def test_full_reports_a_forged_line_inside_the_summary_and_keeps_the_failure() -> None:
    parsed = full(LOGS["vv_forged_message"].text)
    nodeid = "tests/test_vv.py::test_fails_with_forged_message"
    assert parsed.statuses[nodeid] == Status.FAILED
    assert any("totals line counts 1 PASSED" in problem for problem in parsed.problems)
    assert any(nodeid in problem for problem in parsed.problems)


def test_full_reports_summary_lines_that_disagree_with_the_totals() -> None:
    text = LOGS["pass_fail"].text.replace("PASSED tests/test_calc.py::test_add\n", "")
    assert full(text).problems == (
        "pytest's totals line counts 2 PASSED but its short test summary lists 1",
    )


def test_full_needs_the_totals_line_and_the_summary() -> None:
    parsed = full("")
    assert parsed == ParsedLog({}, suite_ran=False, problems=parsed.problems)
    assert parsed.problems and "totals line" in parsed.problems[0]
    truncated = LOGS["pass_fail"].text.rsplit("\n", 2)[0]
    assert full(truncated).statuses == LOGS["pass_fail"].truth
    assert full(truncated).problems
    no_summary = "collected 1 item\n\nt.py .\n\n============ 1 passed in 0.01s ============\n"
    assert full(no_summary).problems == (
        "no 'short test summary info' section: pytest was not run with -rA",
        "pytest's totals line counts 1 PASSED but its short test summary lists 0",
    )


def test_full_reads_the_unframed_totals_line_of_quiet_runs() -> None:
    framed = LOGS["tb_no"].text.rstrip("\n").rsplit("\n", 1)
    totals = framed[1].strip("= ")
    assert totals.startswith("2 failed, 3 passed, 1 xfailed, 1 xpassed, 1 error in ")
    parsed = full(f"{framed[0]}\n{totals}\n")
    assert parsed.statuses == LOGS["tb_no"].truth and parsed.problems == ()


def test_full_suite_ran_only_when_a_test_ran() -> None:
    assert full(LOGS["pass_fail"].text).suite_ran
    assert not full(LOGS["usage_error"].text).suite_ran  # "no tests ran"
    collection = full(LOGS["collection_error"].text)
    assert not collection.suite_ran and collection.problems == ()
    assert collection.statuses == {"tests/test_broken.py": Status.ERROR}


def test_full_names_skips_from_progress_lines_or_unfolded_summary() -> None:
    for case in ("skip_xfail", "skips_unfolded", "xdist"):
        assert Status.SKIPPED in full(LOGS[case].text).statuses.values()
        assert full(LOGS[case].text).statuses == LOGS[case].truth


def test_full_settles_ids_holding_dashes_with_or_without_progress_lines() -> None:
    with_v = full(LOGS["param_ids"].text).statuses
    assert with_v["tests/test_ids.py::test_ids[a - b]"] == Status.FAILED
    assert with_v["tests/test_ids.py::test_ids[end - ]"] == Status.PASSED
    without_v = full(LOGS["tb_no"].text).statuses
    assert without_v["tests/test_tb.py::test_pairs[a - b]"] == Status.FAILED
    # Only a progress line can tell that "]" and " - b]" belong to the id.
    text = (
        "t.py::test[a] - b] FAILED  [100%]\n"
        "===== short test summary info =====\nFAILED t.py::test[a] - b] - boom\n"
        "===== 1 failed in 0.01s =====\n"
    )
    assert full(text).statuses == {"t.py::test[a] - b]": Status.FAILED}
    assert summary(text).statuses == {"t.py::test[a]": Status.FAILED}


def test_full_gives_a_test_with_subtests_its_own_outcome() -> None:
    parsed = full(LOGS["subtests"].text)
    assert parsed.statuses == LOGS["subtests"].truth and parsed.problems == ()
    assert parsed.statuses["tests/test_subtests.py::test_subtests_fail"] == Status.FAILED
    assert parsed.statuses["tests/test_subtests.py::test_subtests_skip"] == Status.PASSED


def test_full_keeps_error_over_the_calls_outcome() -> None:
    statuses = full(LOGS["setup_errors"].text).statuses
    assert statuses["tests/test_fixtures.py::test_teardown_error_after_pass"] == Status.ERROR
    assert statuses["tests/test_fixtures.py::test_teardown_error_after_failure"] == Status.ERROR


def test_full_keeps_xpass_strict_xpass_and_xfail_at_setup() -> None:
    statuses = full(LOGS["skip_xfail"].text).statuses
    assert statuses["tests/test_marks.py::test_xpass"] == Status.XPASS
    assert statuses["tests/test_marks.py::test_xpass_strict"] == Status.FAILED
    assert statuses["tests/test_marks.py::test_xfail_not_run"] == Status.XFAIL


def test_full_reads_coloured_output() -> None:
    text = (
        "\x1b[32mPASSED\x1b[0m t.py::test_a\n"
        "\x1b[32m===== \x1b[32m\x1b[1m1 passed\x1b[0m\x1b[32m in 0.01s"
        "\x1b[0m\x1b[32m =====\x1b[0m\n"
    )
    header = "\x1b[36m\x1b[1m===== short test summary info =====\x1b[0m\n"
    parsed = full(header + text)
    assert parsed.statuses == {"t.py::test_a": Status.PASSED} and parsed.problems == ()


# --- pytest_summary -------------------------------------------------------------------


def test_summary_folds_outcomes_the_terminal_bench_way() -> None:
    statuses = summary(LOGS["skip_xfail"].text).statuses
    assert statuses["tests/test_marks.py::test_xfail"] == Status.PASSED
    assert statuses["tests/test_marks.py::test_xpass"] == Status.FAILED
    assert "tests/test_marks.py::test_skip_marker" not in statuses  # folded: unnamed
    unfolded = summary(LOGS["skips_unfolded"].text).statuses
    assert unfolded["tests/test_skips.py::test_skip_marker"] == Status.PASSED
    errors = summary(LOGS["setup_errors"].text).statuses
    assert errors["tests/test_fixtures.py::test_setup_error"] == Status.FAILED


def test_summary_reads_the_last_summary_not_one_printed_by_a_test() -> None:
    parsed = summary(LOGS["forged_lines_s"].text)
    assert parsed.statuses["tests/test_forged.py::test_really_fails"] == Status.FAILED
    assert "tests/test_forged.py::test_never_written" not in parsed.statuses
    assert parsed.problems == ()


def test_summary_needs_the_summary_section() -> None:
    no_summary = "t.py .\n\n============ 1 passed in 0.01s ============\n"
    parsed = summary(no_summary)
    assert parsed.statuses == {} and parsed.suite_ran and parsed.problems


@pytest.mark.parametrize(
    ("test_cmd", "advice"),
    [
        ("pytest -rA -v", None),
        ("python -m pytest -vrA -p no:cacheprovider", None),
        ("pytest -r A --verbose", None),
        ("pytest -rA --no-fold-skipped", None),
        ("pytest -rA -pvplugin", "-v or --no-fold-skipped"),
        ("python -m pytest -rA -v -q", "-v or --no-fold-skipped"),
        ("pytest -rfE -v", "-rA"),
        ("./run_tests.sh -rA", None),  # a wrapper's flags cannot be seen
    ],
)
def test_pytest_full_says_what_a_test_command_visibly_lacks(test_cmd, advice):
    found = get_parser("pytest_full").command_advice(test_cmd)
    if advice is None:
        assert found is None
    else:
        assert found is not None and advice in found
