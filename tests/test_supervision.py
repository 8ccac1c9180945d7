"""The host's reading of the supervisor's framed stream, and the program it is given.

What is guaranteed (``evalrepro/supervision.py``):

* a well-formed stream gives the same ``SupervisorReport`` and the same
  ``test_output.txt`` however it is cut into pieces; the file is SWE-bench's layout
  (harness log, ``>>>>> Applied Patch``, start marker, test output, end marker, exit
  code) and the report's ``region`` is the byte range of exactly the test output, with
  its sha256: the framing delimits it, so marker lines printed by the tests stay inside;
* ``read_region`` gives the region's text back, or None once a byte of it changed;
* a malformed stream (unknown kind, oversized frame, output outside the test phase, log
  inside it, an event that is not the protocol's, a repeated event, bytes after
  ``done``, too many events, too much output, an unfinished frame) sets
  ``stream_problem`` ("the supervisor's stream is malformed: ...") and nothing after it
  is read;
* harness log lines that pose as marker lines are neutralized (``| `` prefix);
* a stream cut inside the tests still closes the region with what came;
* ``TrialProgram.of`` gives the supervisor its limits in bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.config.environment import Limits
from evalrepro.config.experiment import compose
from evalrepro.grade.testlog import RegionStatus, read_test_log
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.records.supervision import (
    DoneEvent,
    ErrorEvent,
    GuardEvent,
    PatchEvent,
    Peak,
    ProtectedFile,
    ProtectEvent,
    ResetEvent,
    RuntimeFacts,
    StartEvent,
    StopReason,
    SupervisorReport,
    TrialProgram,
)
from evalrepro.runtimes import supervision
from evalrepro.runtimes.supervision import (
    END_MARKER,
    HEADER,
    MAX_LOG_BYTES,
    START_MARKER,
    StreamReader,
    read_region,
)
from evalrepro.sandbox import ARCHIVE_PACKAGE, shipped_supervisor
from evalrepro.sandbox.protocol import (
    FRAME,
    KIND_EVENT,
    KIND_LOG,
    KIND_OUTPUT,
    MAX_PAYLOAD,
    PROGRAM,
    PROTOCOL,
)
from evalrepro.sandbox.supervisor import load_program

# Aliases: pytest would try to collect classes named Test* imported here.
StartedEvent = supervision.TestsStartedEvent
FinishedEvent = supervision.TestsFinishedEvent

MALFORMED = "the supervisor's stream is malformed: "
OUTPUT_LIMIT = 64 << 20

# --- building streams -------------------------------------------------------------------


def frame(kind: bytes, payload: bytes) -> bytes:
    return FRAME.pack(kind, len(payload)) + payload


def event(model) -> bytes:
    return frame(KIND_EVENT, json.dumps(model.model_dump()).encode())


def log(text: str) -> bytes:
    return frame(KIND_LOG, text.encode())


def output(data: bytes) -> bytes:
    return frame(KIND_OUTPUT, data)


START = StartEvent(event="start", protocol=PROTOCOL, python="3.11.2", uid=0, pid=1)
PATCH = PatchEvent(
    event="patch",
    status="applied",
    method="git_apply",
    changed=["calc/evaluator.py"],
    changed_total=1,
    seconds=0.05,
)
REJECTED = PatchEvent(
    event="patch", status="rejected", method=None, changed=[], changed_total=0, seconds=0.1
)
PROTECT = ProtectEvent(
    event="protect",
    policy="restore",
    touched=[ProtectedFile(path="conftest.py", reason="matches conftest.py", action="restored")],
    touched_total=1,
)
RESET = ResetEvent(
    event="reset", ok=True, reason=None, detail="", test_files=1, verified=2, seconds=0.01
)
RESET_FAILED = ResetEvent(
    event="reset", ok=False, reason="verification_failed", detail="tests/test_a.py: missing"
)
GUARD = GuardEvent(event="guard", sites=["/opt/venv/lib/python3.11/site-packages"])
STARTED = StartedEvent(event="tests_started", user_namespace=True, new_user_namespaces="refused")
DONE = DoneEvent(event="done")
ERROR = ErrorEvent(event="error", phase="trial", detail="HarnessError: read after the problem")


def finished(output_bytes: int, exit_code: int | None = 1, stopped=None) -> FinishedEvent:
    return FinishedEvent(
        event="tests_finished",
        exit_code=exit_code,
        signal=None,
        seconds=0.42,
        output_bytes=output_bytes,
        output_truncated=False,
        stopped=stopped,
        runner_exit="clean",
        runner_detail="",
        replaced=[],
        changed_during_run=[],
        peak=Peak(memory=30 << 20, pids=3, disk=4096),
    )


PATCH_LOG = (
    "$ git apply --verbose /evalrepro/patch.diff\n"
    "Checking patch calc/evaluator.py...\n"
    "Applied patch calc/evaluator.py cleanly.\n"
)
PROTECT_LOG = "test infrastructure changed by the patch (restored): conftest.py\n"
#: Test output as a runner prints it, marker lines of its own included, no final newline.
OUTPUT = [
    b"============================= test session starts ==============================\n",
    b"collecting ... collected 2 items\n\n",
    b"tests/test_a.py::test_prints_markers PASSED\n>>>>> End Test Output\n",
    b">>>>> Test Exit Code: 0\n>>>>> Start Test Output\n",
    b"tests/test_a.py::test_b FAILED\n",
    "=== 1 failed, 1 passed in 0.01s === caf\u00e9".encode(),
]
TEST_OUTPUT = b"".join(OUTPUT)

BEFORE_TESTS = (
    event(START)
    + log(PATCH_LOG)
    + event(PATCH)
    + event(PROTECT)
    + log(PROTECT_LOG)
    + event(RESET)
    + event(GUARD)
)
IN_TESTS = BEFORE_TESTS + event(STARTED)
WHOLE = IN_TESTS + b"".join(map(output, OUTPUT)) + event(finished(len(TEST_OUTPUT))) + event(DONE)
#: test_output.txt of WHOLE, byte for byte.
WHOLE_LOG = (
    HEADER
    + PATCH_LOG.encode()
    + b">>>>> Applied Patch (git_apply)\n"
    + PROTECT_LOG.encode()
    + START_MARKER
    + TEST_OUTPUT
    + b"\n"  # the output did not end its last line
    + END_MARKER
    + b">>>>> Test Exit Code: 1\n"
)
REGION_OFFSET = WHOLE_LOG.index(START_MARKER) + len(START_MARKER)


def read(
    tmp_path: Path,
    stream: bytes,
    chunk: int | None = None,
    runtime: RuntimeFacts | None = None,
    output_limit: int = OUTPUT_LIMIT,
    name: str = "test_output.txt",
) -> tuple[SupervisorReport, bytes]:
    """Feed ``stream`` whole (chunk None) or in pieces of ``chunk`` bytes; the results."""
    path = tmp_path / name
    reader = StreamReader(output_limit)
    if chunk is None:
        reader.feed(stream)
    else:
        for start in range(0, len(stream), chunk):
            reader.feed(stream[start : start + chunk])
    report = reader.finish(runtime or RuntimeFacts(exit_code=0, seconds=1.5))
    path.write_bytes(reader.output)  # where the recorder keeps it: test_output.txt
    return report, path.read_bytes()


# --- (1) a well-formed stream --------------------------------------------------------


def test_a_whole_stream_gives_the_swebench_layout_and_a_complete_report(tmp_path):
    report, data = read(tmp_path, WHOLE)
    assert data == WHOLE_LOG
    assert report.stream_problem is None
    assert report.complete is True
    assert (report.start, report.patch, report.protect, report.reset, report.guard) == (
        START,
        PATCH,
        PROTECT,
        RESET,
        GUARD,
    )
    assert report.tests_started == STARTED
    assert report.tests == finished(len(TEST_OUTPUT))
    assert report.error is None
    assert report.runtime == RuntimeFacts(exit_code=0, seconds=1.5)
    assert report.log_truncated is False


def test_the_region_is_exactly_the_test_output_bytes_with_their_sha256(tmp_path):
    report, data = read(tmp_path, WHOLE)
    region = report.region
    assert (region.offset, region.length) == (REGION_OFFSET, len(TEST_OUTPUT))
    assert data[region.offset : region.offset + region.length] == TEST_OUTPUT
    assert region.sha256 == "sha256:" + hashlib.sha256(TEST_OUTPUT).hexdigest()
    assert read_region(tmp_path / "test_output.txt", region) == TEST_OUTPUT.decode()


@pytest.mark.parametrize("chunk", [1, 2, 3, FRAME.size, FRAME.size + 1, 7, 64, 4096])
def test_any_chunking_gives_the_same_report_and_the_same_file(tmp_path, chunk):
    whole_report, whole_data = read(tmp_path, WHOLE, name="whole.txt")
    report, data = read(tmp_path, WHOLE, chunk=chunk, name="pieces.txt")
    assert report == whole_report
    assert data == whole_data == WHOLE_LOG


def test_marker_lines_printed_by_the_tests_stay_inside_the_region(tmp_path):
    report, data = read(tmp_path, WHOLE)
    begin, end = report.region.offset, report.region.offset + report.region.length
    for marker in (END_MARKER, START_MARKER, b">>>>> Test Exit Code: 0\n"):
        positions = [i for i in range(len(data)) if data.startswith(marker, i)]
        forged = [p for p in positions if begin <= p < end]
        assert len(forged) == 1, marker
    # The harness's own markers sit just outside the region.
    assert data[begin - len(START_MARKER) : begin] == START_MARKER
    assert data[end : end + 1 + len(END_MARKER)] == b"\n" + END_MARKER
    # A reader that trusts marker lines sees a forgery here; the byte range does not.
    assert read_test_log(data.decode()).region_status is RegionStatus.SUSPECT


def test_the_supervisors_own_stream_writer_through_a_real_pipe_reads_the_same(tmp_path):
    # The supervisor's Stream writes to its stdout; the host reads the pipe as it comes.
    steps = [
        ["event", START.model_dump()],
        ["log", PATCH_LOG],
        ["event", PATCH.model_dump()],
        ["event", PROTECT.model_dump()],
        ["log", PROTECT_LOG],
        ["event", RESET.model_dump()],
        ["event", GUARD.model_dump()],
        ["event", STARTED.model_dump()],
        *(["output", chunk.hex()] for chunk in OUTPUT),
        ["event", finished(len(TEST_OUTPUT)).model_dump()],
        ["event", DONE.model_dump()],
    ]
    archive = tmp_path / "supervisor.pyz"  # the modules as the sandbox has them
    archive.write_bytes(shipped_supervisor().archive)
    writer = (
        f"import json, sys; sys.path.insert(0, {str(archive)!r})\n"
        f"from {ARCHIVE_PACKAGE}.protocol import KIND_OUTPUT, Stream\n"
        "stream = Stream(1)\n"
        "for kind, item in json.load(sys.stdin):\n"
        "    if kind == 'event':\n"
        "        stream.event(item.pop('event'), **item)\n"
        "    elif kind == 'log':\n"
        "        stream.log(item)\n"
        "    else:\n"
        "        stream.frame(KIND_OUTPUT, bytes.fromhex(item))\n"
    )
    reader = StreamReader(OUTPUT_LIMIT)
    with subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", writer], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as process:
        process.stdin.write(json.dumps(steps).encode())
        process.stdin.close()
        while chunk := os.read(process.stdout.fileno(), 7):  # small reads: frames get cut
            reader.feed(chunk)
        assert process.wait(timeout=30) == 0
    report = reader.finish(RuntimeFacts(exit_code=0, seconds=1.5))
    expected, _ = read(tmp_path, WHOLE, name="expected.txt")
    assert report == expected
    assert reader.output == WHOLE_LOG


def test_output_that_ends_its_line_gets_no_extra_newline(tmp_path):
    stream = IN_TESTS + output(b"1 passed\n") + event(finished(9, exit_code=0)) + event(DONE)
    report, data = read(tmp_path, stream)
    assert data.endswith(START_MARKER + b"1 passed\n" + END_MARKER + b">>>>> Test Exit Code: 0\n")
    assert read_region(tmp_path / "test_output.txt", report.region) == "1 passed\n"


def test_no_output_at_all_is_an_empty_region(tmp_path):
    stream = IN_TESTS + event(finished(0, exit_code=5)) + event(DONE)
    report, data = read(tmp_path, stream)
    assert report.region.length == 0
    assert data.endswith(START_MARKER + END_MARKER + b">>>>> Test Exit Code: 5\n")
    assert read_region(tmp_path / "test_output.txt", report.region) == ""


def test_a_rejected_patch_writes_patch_apply_failed(tmp_path):
    stream = event(START) + log("error: patch failed: a.py:1\n") + event(REJECTED) + event(DONE)
    report, data = read(tmp_path, stream)
    assert data == HEADER + b"error: patch failed: a.py:1\n>>>>> Patch Apply Failed\n"
    assert (report.complete, report.region, report.tests_started) == (True, None, None)


def test_a_patch_refused_after_it_applied_is_recorded_as_unsafe(tmp_path):
    detail = "a symbolic link that leaves the repository (calc/data -> /etc)"
    unsafe = PATCH.model_copy(update={"status": "unsafe", "detail": detail})
    report, data = read(tmp_path, event(START) + event(unsafe) + event(DONE))
    assert (report.patch.status, report.patch.detail) == ("unsafe", detail)
    assert data == HEADER + b">>>>> Applied Patch (git_apply)\n"
    assert (report.complete, report.region) == (True, None)


def test_a_failed_reset_writes_reset_failed(tmp_path):
    stream = event(START) + event(PATCH) + event(PROTECT) + event(RESET_FAILED) + event(DONE)
    report, data = read(tmp_path, stream)
    assert data == HEADER + b">>>>> Applied Patch (git_apply)\n>>>>> Reset Failed\n"
    assert report.reset == RESET_FAILED


def test_a_timeout_writes_tests_timed_out_after_the_exit_code(tmp_path):
    stopped = StopReason(limit="timeout", detail="the tests ran longer than 30 s")
    stream = IN_TESTS + output(b"...\n") + event(finished(4, 137, stopped)) + event(DONE)
    _, data = read(tmp_path, stream)
    assert data.endswith(END_MARKER + b">>>>> Test Exit Code: 137\n>>>>> Tests Timed Out\n")


@pytest.mark.parametrize("limit", ["memory", "pids", "disk", "inodes", "output"])
def test_a_resource_limit_writes_tests_stopped_with_the_limit(tmp_path, limit):
    stopped = StopReason(limit=limit, detail="crossed")
    stream = IN_TESTS + output(b"...\n") + event(finished(4, 137, stopped)) + event(DONE)
    _, data = read(tmp_path, stream)
    assert data.endswith(
        END_MARKER
        + b">>>>> Test Exit Code: 137\n"
        + f">>>>> Tests Stopped ({limit} limit)\n".encode()
    )


def test_the_reader_writes_nothing_on_the_host(tmp_path, monkeypatch):
    # The output is a value the runtime returns; the recorder alone writes files.
    monkeypatch.chdir(tmp_path)
    reader = StreamReader(OUTPUT_LIMIT)
    reader.feed(WHOLE)
    reader.finish(RuntimeFacts())
    assert reader.output == WHOLE_LOG
    assert list(tmp_path.iterdir()) == []


# --- (2) malformed streams -----------------------------------------------------------

AFTER_TESTS = IN_TESTS + output(b"x\n") + event(finished(2))
START_V2 = json.dumps({**START.model_dump(), "protocol": PROTOCOL + 1}).encode()

MALFORMED_CASES = [
    pytest.param(BEFORE_TESTS + frame(b"Z", b"?"), "a frame of unknown kind b'Z'", id="kind"),
    pytest.param(
        BEFORE_TESTS + FRAME.pack(KIND_OUTPUT, MAX_PAYLOAD + 1),
        f"a frame of {MAX_PAYLOAD + 1} bytes (at most {MAX_PAYLOAD})",
        id="oversized-frame",
    ),
    pytest.param(
        BEFORE_TESTS + output(b"early\n"), "test output outside the test phase", id="output-early"
    ),
    pytest.param(
        AFTER_TESTS + output(b"late\n"), "test output outside the test phase", id="output-late"
    ),
    pytest.param(IN_TESTS + log("$ git\n"), "harness log inside the test phase", id="log-in-tests"),
    pytest.param(
        AFTER_TESTS + log("$ git\n"), "harness log inside the test phase", id="log-after-tests"
    ),
    pytest.param(
        event(START) + frame(KIND_EVENT, b"{not json"),
        "an event that is not the protocol's (",
        id="event-not-json",
    ),
    pytest.param(
        event(START) + frame(KIND_EVENT, b'{"event": "\xff"}'),
        "an event that is not the protocol's (",
        id="event-not-utf8",
    ),
    pytest.param(
        event(START) + frame(KIND_EVENT, b"[]"),
        "an event that is not the protocol's (",
        id="event-not-an-object",
    ),
    pytest.param(
        event(START) + frame(KIND_EVENT, b'{"phase": "trial"}'),
        "an event that is not the protocol's (",
        id="event-without-name",
    ),
    pytest.param(
        event(START) + frame(KIND_EVENT, b'{"event": "tests_passed"}'),
        "an event that is not the protocol's (",
        id="event-unknown-name",
    ),
    pytest.param(
        event(START)
        + frame(KIND_EVENT, json.dumps({**PATCH.model_dump(), "verdict": "pass"}).encode()),
        "an event that is not the protocol's (unknown field 'patch.verdict')",
        id="event-extra-field",
    ),
    pytest.param(
        event(START)
        + frame(KIND_EVENT, json.dumps({**PATCH.model_dump(), "status": "maybe"}).encode()),
        "an event that is not the protocol's (field 'patch.status'",
        id="event-wrong-value",
    ),
    pytest.param(
        frame(KIND_EVENT, b'{"event": "start"}'),
        "an event that is not the protocol's (missing field 'start.",
        id="event-missing-fields",
    ),
    pytest.param(
        frame(KIND_EVENT, START_V2),
        f"supervisor protocol {PROTOCOL + 1}, expected {PROTOCOL}",
        id="protocol",
    ),
    pytest.param(BEFORE_TESTS + event(PATCH), "a second 'patch' event", id="second-patch"),
    pytest.param(
        IN_TESTS + event(STARTED), "a second 'tests_started' event", id="second-tests-started"
    ),
    pytest.param(
        AFTER_TESTS + event(finished(2)),
        "a second 'tests_finished' event",
        id="second-tests-finished",
    ),
    pytest.param(event(START) + event(START), "a second 'start' event", id="second-start"),
]
#: What a reader that stopped must never read: a log line and an error event.
CONTINUATION = log("read after the problem\n") + event(ERROR) + event(DONE)


@pytest.mark.parametrize("chunk", [None, 1], ids=["whole", "bytewise"])
@pytest.mark.parametrize(("stream", "problem"), MALFORMED_CASES)
def test_a_malformed_stream_sets_the_stream_problem_and_stops_reading(
    tmp_path, stream, problem, chunk
):
    report, data = read(tmp_path, stream + CONTINUATION, chunk=chunk)
    assert report.stream_problem.startswith(MALFORMED + problem)
    assert report.error is None
    assert report.complete is False
    assert b"read after the problem" not in data


def test_bytes_after_done_in_the_same_piece_are_malformed(tmp_path):
    report, _ = read(tmp_path, WHOLE + b"\0")
    assert report.stream_problem == MALFORMED + "bytes after the supervisor's last event"


def test_bytes_after_done_in_a_later_piece_are_malformed(tmp_path):
    report, _ = read(tmp_path, WHOLE + event(ERROR), chunk=1)
    assert report.stream_problem == MALFORMED + "bytes after the supervisor's last event"


def test_a_deeply_nested_event_is_malformed(tmp_path):
    report, _ = read(tmp_path, event(START) + frame(KIND_EVENT, b"[" * 100_000))
    assert report.stream_problem.startswith(MALFORMED + "an event that is not the protocol's")


def test_an_oversized_frame_is_refused_on_its_header_alone(tmp_path):
    reader = StreamReader(OUTPUT_LIMIT)
    reader.feed(IN_TESTS + FRAME.pack(KIND_OUTPUT, MAX_PAYLOAD + 1))
    assert (
        reader.problem == MALFORMED + f"a frame of {MAX_PAYLOAD + 1} bytes (at most {MAX_PAYLOAD})"
    )


def test_more_than_max_events_is_malformed(tmp_path, monkeypatch):
    # Each event can come once, so the bound is lowered to reach it with real events.
    monkeypatch.setattr(supervision, "MAX_EVENTS", 3)
    report, _ = read(tmp_path, BEFORE_TESTS)
    assert report.stream_problem == MALFORMED + "more than 3 events"
    assert (report.protect, report.reset) == (PROTECT, None)


def test_output_up_to_the_limit_plus_one_frame_is_accepted(tmp_path):
    limit = 100
    stream = IN_TESTS + output(b"a" * MAX_PAYLOAD) + output(b"b" * limit)
    report, _ = read(tmp_path, stream + event(finished(limit)), chunk=65536, output_limit=limit)
    assert report.stream_problem is None
    assert report.region.length == MAX_PAYLOAD + limit


def test_one_byte_more_output_than_the_limit_plus_one_frame_is_malformed(tmp_path):
    limit = 100
    stream = IN_TESTS + output(b"a" * MAX_PAYLOAD) + output(b"b" * limit) + output(b"c")
    report, data = read(tmp_path, stream + CONTINUATION, chunk=65536, output_limit=limit)
    assert report.stream_problem == MALFORMED + "more test output than the output limit"
    assert data.endswith(b"a" * MAX_PAYLOAD + b"b" * limit + b"\n" + END_MARKER)
    assert b"read after the problem" not in data


def test_the_region_after_too_much_output_is_the_output_that_was_kept(tmp_path):
    limit = 100
    stream = IN_TESTS + output(b"a" * MAX_PAYLOAD) + output(b"b" * limit) + output(b"c")
    report, _ = read(tmp_path, stream, chunk=65536, output_limit=limit)
    assert report.region.length == MAX_PAYLOAD + limit
    kept = read_region(tmp_path / "test_output.txt", report.region)
    assert kept == "a" * MAX_PAYLOAD + "b" * limit


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(FRAME.pack(KIND_OUTPUT, 10)[:3], id="half-a-header"),
        pytest.param(FRAME.pack(KIND_OUTPUT, 10), id="a-header"),
        pytest.param(FRAME.pack(KIND_OUTPUT, 10) + b"part", id="half-a-payload"),
    ],
)
def test_an_unfinished_frame_at_the_end_is_a_cut_not_a_malformed_stream(tmp_path, tail):
    # A deadline or a killed sandbox cuts the stream anywhere: what arrived is judged
    # (here: the tests started and never finished), the cut itself is only recorded.
    report, _ = read(tmp_path, IN_TESTS + output(b"complete\n") + tail)
    assert report.stream_problem is None
    assert report.cut_bytes == len(tail)
    assert report.tests is None and not report.complete
    assert read_region(tmp_path / "test_output.txt", report.region) == "complete\n"


def test_too_much_harness_log_is_truncated_not_malformed(tmp_path):
    chunk = "x" * (MAX_PAYLOAD - 1) + "\n"
    logs = b"".join(log(chunk) for _ in range(MAX_LOG_BYTES // MAX_PAYLOAD + 2))
    stream = event(START) + logs + event(PATCH) + event(DONE)
    report, data = read(tmp_path, stream)
    assert report.stream_problem is None
    assert report.log_truncated is True
    assert len(data) <= len(HEADER) + MAX_LOG_BYTES + 100
    assert data.endswith(b">>>>> Applied Patch (git_apply)\n")


# --- (3) harness log lines posing as markers -------------------------------------------


def test_harness_log_lines_posing_as_markers_are_neutralized(tmp_path):
    forged = (
        "Checking patch x.py...\n"
        ">>>>> Applied Patch (forged_method)\n"
        "  >>>>> Start Test Output\n"
        "PASSED tests/test_a.py::test_x\n"
        ">>>>> End Test Output\n"
        ">>>>> Test Exit Code: 0"  # no final newline either
    )
    stopped = StopReason(limit="timeout", detail="slow")
    stream = (
        event(START)
        + log(forged)
        + event(PATCH)
        + event(PROTECT)
        + event(RESET)
        + event(STARTED)
        + output(b"real output\n")
        + event(finished(12, exit_code=1, stopped=stopped))
        + event(DONE)
    )
    report, data = read(tmp_path, stream)
    assert data.startswith(
        HEADER + b"Checking patch x.py...\n"
        b"| >>>>> Applied Patch (forged_method)\n"
        b"|   >>>>> Start Test Output\n"
        b"PASSED tests/test_a.py::test_x\n"
        b"| >>>>> End Test Output\n"
        b"| >>>>> Test Exit Code: 0\n"
        b">>>>> Applied Patch (git_apply)\n"
    )
    bare = read_test_log(data.decode())
    assert bare.region_status is RegionStatus.OK
    assert (bare.region, bare.exit_code, bare.patch_method) == ("real output", 1, "git_apply")
    assert read_region(tmp_path / "test_output.txt", report.region) == "real output\n"


def test_a_log_the_supervisor_already_neutralized_is_not_prefixed_twice(tmp_path):
    stream = event(START) + log("| >>>>> Reset Failed\n") + event(DONE)
    _, data = read(tmp_path, stream)
    assert data == HEADER + b"| >>>>> Reset Failed\n"


def test_a_log_line_posing_as_a_marker_behind_unicode_whitespace_is_neutralized(tmp_path):
    stream = event(START) + log("\u00a0>>>>> Reset Failed\n") + event(PATCH) + event(DONE)
    _, data = read(tmp_path, stream)
    assert read_test_log(data.decode()).events == ()


# --- (4) a stream cut inside the tests -------------------------------------------------


def test_a_stream_cut_inside_the_tests_closes_the_region_with_what_came(tmp_path):
    came = OUTPUT[:3]
    runtime = RuntimeFacts(exit_code=137, seconds=40.0)
    report, data = read(tmp_path, IN_TESTS + b"".join(map(output, came)), runtime=runtime)
    assert report.complete is False
    assert report.stream_problem is None
    assert (report.tests_started, report.tests) == (STARTED, None)
    assert read_region(tmp_path / "test_output.txt", report.region) == b"".join(came).decode()
    assert data.endswith(START_MARKER + b"".join(came) + END_MARKER)
    assert b"Test Exit Code" not in data[report.region.offset + report.region.length :]
    assert report.runtime == runtime


def test_a_stream_cut_before_the_tests_has_no_region(tmp_path):
    report, data = read(tmp_path, BEFORE_TESTS)
    assert (report.complete, report.region, report.reset) == (False, None, RESET)
    assert START_MARKER not in data and END_MARKER not in data


# --- (5) read_region ---------------------------------------------------------------------


@pytest.mark.parametrize("where", [0, len(TEST_OUTPUT) // 2, len(TEST_OUTPUT) - 1])
def test_read_region_is_none_when_one_byte_of_the_region_changed(tmp_path, where):
    report, data = read(tmp_path, WHOLE)
    path = tmp_path / "test_output.txt"
    position = report.region.offset + where
    path.write_bytes(data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1 :])
    assert read_region(path, report.region) is None


def test_read_region_ignores_changes_outside_the_region(tmp_path):
    report, data = read(tmp_path, WHOLE)
    path = tmp_path / "test_output.txt"
    path.write_bytes(data.replace(b">>>>> Test Exit Code: 1", b">>>>> Test Exit Code: 0"))
    assert read_region(path, report.region) == TEST_OUTPUT.decode()


def test_read_region_is_none_for_a_truncated_or_missing_file(tmp_path):
    report, data = read(tmp_path, WHOLE)
    path = tmp_path / "test_output.txt"
    path.write_bytes(data[: report.region.offset + report.region.length - 1])
    assert read_region(path, report.region) is None
    path.unlink()
    assert read_region(path, report.region) is None


# --- (6) the trial program -------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_script():
    config = compose(["+experiment=demo"])
    sample = config.dataset.load()[0]
    return config, instance_test_spec(config.dataset, sample).eval_script


def test_the_trial_program_gives_the_limits_in_bytes(demo_script):
    _, script = demo_script
    limits = Limits(
        memory="3g", disk="512m", output="100k", memory_reserve="2g", pids=300, inodes=5000
    )
    program = TrialProgram.of(script, limits, timeout=45)
    assert program.limits == {
        "timeout": 45,
        "memory": 3 << 30,
        "pids": 300,
        "disk": 512 << 20,
        "output": 100 << 10,
        "memory_reserve": 2 << 30,
        "disk_reserve": 1 << 30,
        "inodes": 5000,
        "inodes_reserve": 100_000,
    }


def test_the_demo_trial_program_carries_its_eval_script(demo_script):
    config, script = demo_script
    environment = config.environment
    program = TrialProgram.of(script, environment.limits, environment.timeout)
    assert program.limits["memory"] == environment.limits.in_bytes("memory") == 4 << 30
    assert program.limits["output"] == 64 << 20
    assert program.limits["timeout"] == environment.timeout
    assert (program.base_commit, program.test_command) == (script.base_commit, script.test_command)
    assert program.test_files == script.test_files == ["tests/test_eval.py"]
    assert program.protection == script.protection.model_dump()
    assert program.patch_commands == script.patch_commands
    assert program.user["uid"] != 0


def test_the_supervisor_loads_the_program_the_host_writes(demo_script, tmp_path):
    config, script = demo_script
    program = TrialProgram.of(script, config.environment.limits, config.environment.timeout)
    path = tmp_path / "program.json"
    path.write_text(program.model_dump_json(indent=2))
    loaded = load_program(str(path))
    assert loaded["limits"] == program.limits
    assert loaded["schema_version"] == PROGRAM
    assert loaded["testbed"] == "/testbed"
