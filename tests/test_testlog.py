"""Reading a bare eval log: swebench 5.0.2's rules, and the strict rules.

Strict (``read_test_log(text)``, or ``rules="strict"``): only the text between one start
and one end marker line is test output, and only lines outside it are the harness's.
swebench (``rules="swebench"``): exactly what swebench's ``get_logs_eval`` reads.
"""

import pytest

from evalrepro.grade.testlog import HarnessEvent, RegionStatus, read_test_log


def log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_region_is_the_text_between_the_markers_and_the_exit_code_follows_the_end():
    result = read_test_log(
        log(
            "+ pip install -e .",
            "PASSED outside::before",
            ">>>>> Start Test Output",
            "PASSED a.py::t",
            ">>>>> End Test Output",
            ">>>>> Test Exit Code: 1",
        )
    )
    assert result.region_status is RegionStatus.OK
    assert result.region == "PASSED a.py::t"
    assert result.exit_code == 1


def test_set_x_trace_lines_that_echo_a_marker_are_not_markers():
    # SWE-bench's eval scripts run under `set -x`, so every echo is traced on stderr.
    result = read_test_log(
        log(
            "+ echo '>>>>> Start Test Output'",
            ">>>>> Start Test Output",
            "ok",
            "+ echo '>>>>> End Test Output'",
            ">>>>> End Test Output",
            "+ echo '>>>>> Test Exit Code: 0'",
            ">>>>> Test Exit Code: 0",
        )
    )
    assert result.region_status is RegionStatus.OK
    assert result.region == "ok\n+ echo '>>>>> End Test Output'"
    assert result.exit_code == 0


def test_a_second_end_marker_printed_by_the_code_under_test_makes_the_log_suspect():
    result = read_test_log(
        log(
            ">>>>> Start Test Output",
            "FAILED a.py::t",
            ">>>>> End Test Output",
            "PASSED a.py::t",
            ">>>>> End Test Output",
        )
    )
    assert result.region_status is RegionStatus.SUSPECT
    assert result.region == ""


def test_a_fake_start_marker_also_makes_the_log_suspect():
    text = log(">>>>> Start Test Output", ">>>>> Start Test Output", "x", ">>>>> End Test Output")
    assert read_test_log(text).region_status is RegionStatus.SUSPECT


def test_end_before_start_is_suspect():
    text = log(">>>>> End Test Output", "x", ">>>>> Start Test Output")
    assert read_test_log(text).region_status is RegionStatus.SUSPECT


def test_a_log_cut_off_before_the_end_marker_has_no_region():
    # e.g. the container was killed by the timeout while the tests ran
    result = read_test_log(log(">>>>> Start Test Output", "PASSED a.py::t"))
    assert result.region_status is RegionStatus.NO_MARKERS
    assert "End Test Output" in result.detail


def test_an_exit_code_line_inside_the_region_is_ignored():
    result = read_test_log(
        log(">>>>> Start Test Output", ">>>>> Test Exit Code: 0", ">>>>> End Test Output")
    )
    assert result.exit_code is None


def test_a_log_without_exit_code_line_still_parses_as_older_swebench_logs_do():
    result = read_test_log(log(">>>>> Start Test Output", "x", ">>>>> End Test Output"))
    assert result.usable and result.exit_code is None


def test_harness_events_count_only_outside_the_region():
    inside = read_test_log(
        log(">>>>> Start Test Output", ">>>>> Tests Timed Out", ">>>>> End Test Output")
    )
    assert inside.events == ()
    outside = read_test_log(log(">>>>> Start Test Output", "slow...", ">>>>> Tests Timed Out"))
    assert outside.events == (HarnessEvent.TESTS_TIMED_OUT,)


def test_the_tool_that_applied_the_model_patch_is_read_from_before_the_region():
    result = read_test_log(
        log(
            ">>>>> Applied Patch (patch_fuzz)",
            ">>>>> Start Test Output",
            ">>>>> Applied Patch (git_apply)",
            ">>>>> End Test Output",
        )
    )
    assert result.patch_method == "patch_fuzz"


# --- both rules: SWE-bench 4.x/5.x logs, whose markers are ``set -x`` traces ------------

SWEBENCH_5_LOG = log(
    "+ git apply -v -",
    "+ : '>>>>> Start Test Output'",
    "+ pytest -rA tests/test_a.py",
    "PASSED tests/test_a.py::t",
    "+ SWEBENCH_TEST_EXIT_CODE=0",
    "+ : '>>>>> End Test Output'",
    "+ echo '>>>>> Test Exit Code: 0'",
    ">>>>> Test Exit Code: 0",
    "+ git checkout abc tests/test_a.py",
)


def test_strict_rules_take_the_trace_of_a_colon_marker_command_as_the_marker_line():
    # A 4.x/5.x eval script runs `: '>>>>> Start Test Output'`: its trace is the marker.
    result = read_test_log(SWEBENCH_5_LOG, rules="strict")
    assert result.region_status is RegionStatus.OK
    assert result.region.split("\n") == [
        "+ pytest -rA tests/test_a.py",
        "PASSED tests/test_a.py::t",
        "+ SWEBENCH_TEST_EXIT_CODE=0",
    ]
    assert result.exit_code == 0


def test_strict_rules_count_a_printed_trace_marker_as_a_second_marker():
    text = SWEBENCH_5_LOG.replace(
        "PASSED tests/test_a.py::t", "+ : '>>>>> End Test Output'\nPASSED tests/test_a.py::t"
    )
    assert read_test_log(text, rules="strict").region_status is RegionStatus.SUSPECT


def test_swebench_rules_cut_at_the_first_marker_substrings_quote_of_the_trace_included():
    result = read_test_log(SWEBENCH_5_LOG, rules="swebench")
    assert result.region_status is RegionStatus.OK
    assert result.region == (
        "'\n+ pytest -rA tests/test_a.py\nPASSED tests/test_a.py::t\n"
        "+ SWEBENCH_TEST_EXIT_CODE=0\n+ : '"
    )
    assert (result.exit_code, result.rules) == (0, "swebench")


def test_swebench_rules_cut_an_echo_style_log_to_almost_nothing():
    # 3.x scripts `echo` the marker: the trace line holds it first, so swebench's region
    # is the quote between the trace and the echoed line (it then parses the whole log).
    text = log(
        "+ echo '>>>>> Start Test Output'",
        ">>>>> Start Test Output",
        "PASSED a.py::t",
        "+ echo '>>>>> End Test Output'",
        ">>>>> End Test Output",
    )
    assert read_test_log(text, rules="swebench").region == "'\n"


def test_swebench_rules_take_the_first_exit_code_line_anywhere():
    text = ">>>>> Test Exit Code: 0\n" + SWEBENCH_5_LOG.replace("Code: 0", "Code: 1")
    assert read_test_log(text, rules="swebench").exit_code == 0
    assert read_test_log(text, rules="strict").exit_code == 1


def test_swebench_rules_see_harness_lines_anywhere_even_inside_the_region():
    text = SWEBENCH_5_LOG.replace("PASSED tests/test_a.py::t", "x >>>>> Tests Timed Out x")
    assert read_test_log(text, rules="swebench").events == (HarnessEvent.TESTS_TIMED_OUT,)
    assert read_test_log(text, rules="strict").events == ()


def test_swebench_rules_read_the_log_with_universal_newlines():
    text = SWEBENCH_5_LOG.replace("PASSED tests/test_a.py::t", "50%\rPASSED tests/test_a.py::t")
    assert "\nPASSED tests/test_a.py::t\n" in read_test_log(text, rules="swebench").region
    assert "50%\rPASSED" in read_test_log(text, rules="strict").region


def test_swebench_rules_with_the_only_end_marker_before_the_start_read_to_the_end():
    text = log(">>>>> End Test Output", "x", ">>>>> Start Test Output", "PASSED a.py::t")
    result = read_test_log(text, rules="swebench")
    assert result.region_status is RegionStatus.OK
    assert result.region == "\nPASSED a.py::t\n"


def test_swebench_rules_need_both_markers_somewhere():
    result = read_test_log(log("+ : '>>>>> Start Test Output'", "PASSED a.py::t"), "swebench")
    assert result.region_status is RegionStatus.NO_MARKERS
    assert "End Test Output" in result.detail


def test_the_line_swebenchs_harness_appends_to_a_killed_run_is_a_timeout_under_both_rules():
    killed = SWEBENCH_5_LOG + "\n\nTimeout error: 1800 seconds exceeded."
    assert read_test_log(killed, rules="swebench").harness_timeout
    assert read_test_log(killed, rules="strict").harness_timeout
    # Printed by the tests, inside the region, it is just output.
    inside = SWEBENCH_5_LOG.replace(
        "PASSED tests/test_a.py::t", "Timeout error: 1800 seconds exceeded."
    )
    assert not read_test_log(inside, rules="swebench").harness_timeout
    assert not read_test_log(inside, rules="strict").harness_timeout


def test_rules_other_than_swebench_or_strict_are_refused():
    with pytest.raises(ValueError, match="unknown log rules"):
        read_test_log(SWEBENCH_5_LOG, rules="lenient")  # type: ignore[arg-type]
