"""Only the text between one start and one end marker is test output."""

from evalrepro.testlog import HarnessEvent, RegionStatus, read_test_log


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
