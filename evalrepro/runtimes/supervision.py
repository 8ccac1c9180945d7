"""The host side of the trial supervisor: the program it is given, the stream it returns.

``TrialProgram`` is what an attempt asks of the supervisor (``program.json``, mounted
read-only): the instance's eval script, the test user, the limits. The supervisor
answers with one framed stream on the container's stdout
(``evalrepro.sandbox.protocol``: ``FRAME``, events, harness log, test output).
:class:`StreamReader` reads it with bounds on every frame and on the whole, and writes
two artifacts:

* ``test_output.txt`` in SWE-bench's layout, for people and for re-grading: the harness
  log, SWE-bench's marker lines, the test output, the exit code;
* ``supervisor.json``, the :class:`SupervisorReport`: every phase's facts and the byte
  range of the test output inside ``test_output.txt``. Grading reads the region from
  that range, never from marker lines (which the tests can print).

Nothing the container sends is trusted beyond its framing: a frame of an unknown kind,
an event that is not one of the models below, or a stream over its bounds ends the
attempt as an infrastructure error, with the container removed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, TypeAdapter, ValidationError

from evalrepro.errors import validation_message
from evalrepro.records.supervision import (
    Event,
    PatchEvent,
    Region,
    ResetEvent,
    RuntimeFacts,
    StartEvent,
    SupervisorReport,
    TestsFinishedEvent,
    TestsStartedEvent,
)
from evalrepro.sandbox.protocol import (
    FRAME,
    KIND_EVENT,
    KIND_LOG,
    KIND_OUTPUT,
    MAX_PAYLOAD,
    PROTOCOL,
)

#: Bounds on what the host reads besides the test output itself.
MAX_EVENTS = 10_000
MAX_LOG_BYTES = 8 << 20
#: The marker lines of SWE-bench's eval logs, written by the host from the events.
START_MARKER = b">>>>> Start Test Output\n"
END_MARKER = b">>>>> End Test Output\n"
HEADER = (
    b">>>>> evalrepro supervisor: phases and test output framed on the supervisor's own "
    b"channel; the region is recorded by byte range in supervisor.json\n"
)


_EVENT = TypeAdapter(Event)


class StreamReader:
    """Reads the supervisor's stream as it arrives into ``test_output.txt``'s bytes.

    Everything it keeps is bounded: the test output by the output limit (plus one frame),
    the harness log by MAX_LOG_BYTES, the events by MAX_EVENTS."""

    def __init__(self, output_limit: int) -> None:
        self._out = bytearray(HEADER)
        self._buffer = bytearray()
        self._events = 0
        self._log_bytes = 0
        self._region_hash = hashlib.sha256()
        self._region_length = 0
        self._output_bound = output_limit + MAX_PAYLOAD
        self._last_byte = b"\n"
        self._region_offset = 0
        self._finished = False
        self.report = SupervisorReport()

    @property
    def output(self) -> bytes:
        """``test_output.txt`` as the host keeps it (whole once :meth:`finish` ran)."""
        return bytes(self._out)

    @property
    def problem(self) -> str | None:
        return self.report.stream_problem

    def feed(self, data: bytes) -> None:
        if self.problem is not None:
            return
        if self.report.complete:
            if data:
                self._fail("bytes after the supervisor's last event")
            return
        self._buffer += data
        while len(self._buffer) >= FRAME.size and self.problem is None:
            kind, length = FRAME.unpack_from(self._buffer)
            if length > MAX_PAYLOAD:
                self._fail(f"a frame of {length} bytes (at most {MAX_PAYLOAD})")
                return
            if len(self._buffer) < FRAME.size + length:
                return
            payload = bytes(self._buffer[FRAME.size : FRAME.size + length])
            del self._buffer[: FRAME.size + length]
            self._frame(kind, payload)
            if self.report.complete:
                if self._buffer:
                    self._fail("bytes after the supervisor's last event")
                return

    def _frame(self, kind: bytes, payload: bytes) -> None:
        if kind == KIND_OUTPUT:
            if self.report.tests_started is None or self.report.tests is not None:
                self._fail("test output outside the test phase")
                return
            if self._region_length + len(payload) > self._output_bound:
                self._fail("more test output than the output limit")
                return
            self._region_length += len(payload)
            self._region_hash.update(payload)
            self._write(payload)
        elif kind == KIND_LOG:
            if self.report.tests_started is not None:
                self._fail("harness log inside the test phase")
                return
            self._log_bytes += len(payload)
            if self._log_bytes > MAX_LOG_BYTES:
                self.report = self.report.model_copy(update={"log_truncated": True})
                return
            self._write(_neutralize(payload))
        elif kind == KIND_EVENT:
            self._events += 1
            if self._events > MAX_EVENTS:
                self._fail(f"more than {MAX_EVENTS} events")
                return
            try:
                facts = json.loads(payload)
                if not _is_text(facts):
                    self._fail("an event with a string that is not Unicode text (a lone surrogate)")
                    return
                event = _EVENT.validate_python(facts)
            except RecursionError:
                self._fail("an event that is not the protocol's (nested too deeply)")
                return
            except (ValueError, ValidationError) as error:
                detail = validation_message(error) if isinstance(error, ValidationError) else error
                self._fail(f"an event that is not the protocol's ({detail})")
                return
            self._event(event)
        else:
            self._fail(f"a frame of unknown kind {kind!r}")

    def _event(self, event: BaseModel) -> None:
        name = event.event  # type: ignore[attr-defined]
        field = {"tests_started": "tests_started", "tests_finished": "tests"}.get(name, name)
        if name == "done":
            self.report = self.report.model_copy(update={"complete": True})
            return
        if getattr(self.report, field) is not None:
            self._fail(f"a second '{name}' event")
            return
        self.report = self.report.model_copy(update={field: event})
        if isinstance(event, StartEvent) and event.protocol != PROTOCOL:
            self._fail(f"supervisor protocol {event.protocol}, expected {PROTOCOL}")
        elif isinstance(event, PatchEvent):
            self._write(
                b">>>>> Patch Apply Failed\n"
                if event.status == "rejected"
                else f">>>>> Applied Patch ({event.method})\n".encode()
            )
        elif isinstance(event, ResetEvent) and not event.ok:
            self._write(b">>>>> Reset Failed\n")
        elif isinstance(event, TestsStartedEvent):
            self._write(START_MARKER)
            self._region_offset = len(self._out)
        elif isinstance(event, TestsFinishedEvent):
            self._close_region()
            self._write(f">>>>> Test Exit Code: {event.exit_code}\n".encode())
            if event.stopped is not None and event.stopped.limit == "timeout":
                self._write(b">>>>> Tests Timed Out\n")
            elif event.stopped is not None:
                self._write(f">>>>> Tests Stopped ({event.stopped.limit} limit)\n".encode())

    def _close_region(self) -> None:
        self.report = self.report.model_copy(
            update={
                "region": Region(
                    offset=self._region_offset,
                    length=self._region_length,
                    sha256=f"sha256:{self._region_hash.hexdigest()}",
                )
            }
        )
        if self._last_byte != b"\n":
            self._write(b"\n")
        self._write(END_MARKER)

    def _write(self, data: bytes) -> None:
        if data:
            self._out += data
            self._last_byte = data[-1:]

    def _fail(self, problem: str) -> None:
        self.report = self.report.model_copy(
            update={"stream_problem": f"the supervisor's stream is malformed: {problem}"}
        )

    def finish(self, runtime: RuntimeFacts) -> SupervisorReport:
        """The report, with the runtime's facts; :attr:`output` is whole from now on."""
        # An unfinished frame is a stream that was cut (a deadline, a killed sandbox), not
        # a malformed one: what the cut means is judged from what did arrive.
        if self._buffer and self.problem is None and not self.report.complete:
            self.report = self.report.model_copy(update={"cut_bytes": len(self._buffer)})
        if self.report.tests_started is not None and self.report.region is None:
            self._close_region()  # the sandbox died inside the tests: keep what came
        self._buffer.clear()
        self.report = self.report.model_copy(update={"runtime": runtime})
        return self.report


def _is_text(value: object) -> bool:
    """Every string in a JSON value is Unicode text (JSON can carry lone surrogates, which
    no writer of UTF-8 accepts)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _neutralize(payload: bytes) -> bytes:
    """Harness log lines cannot pose as SWE-bench's marker lines in test_output.txt."""
    lines = payload.split(b"\n")
    out = [b"| " + line if _poses_as_marker(line) else line for line in lines]
    text = b"\n".join(out)
    return text if text.endswith(b"\n") else text + b"\n"


def _poses_as_marker(line: bytes) -> bool:
    text = line.decode("utf-8", "replace").lstrip()
    return text.startswith(">>>>>") or text.startswith("+ : '>>>>>")


def region_text(log: bytes, region: Region) -> str | None:
    """The test output inside ``test_output.txt``'s bytes by its recorded range; None if
    those bytes are not the ones recorded (a changed or truncated log)."""
    return _checked(log[region.offset : region.offset + region.length], region)


def _checked(data: bytes, region: Region) -> str | None:
    if len(data) != region.length or f"sha256:{hashlib.sha256(data).hexdigest()}" != (
        region.sha256
    ):
        return None
    return data.decode("utf-8", errors="replace")


def read_region(log_path: Path, region: Region) -> str | None:
    """:func:`region_text` of a ``test_output.txt`` on disk; None if it cannot be read."""
    try:
        with log_path.open("rb") as handle:
            handle.seek(region.offset)
            data = handle.read(region.length)
    except OSError:
        return None
    return _checked(data, region)
