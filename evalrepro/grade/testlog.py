"""Cut the test output out of a bare eval log, and read what the harness wrote around it.

An eval script (ours, or SWE-bench 5.0.2's, which runs under ``set -uxo pipefail``)
prints::

    ... install, reset, apply test patch ...
    + : '>>>>> Start Test Output'           <- the trace of ``: '<marker>'`` (4.x/5.x);
    <the test command's output>                older scripts ``echo`` the bare marker line
    + SWEBENCH_TEST_EXIT_CODE=1
    + : '>>>>> End Test Output'
    + echo '>>>>> Test Exit Code: 1'
    >>>>> Test Exit Code: 1                 <- the test command's own exit status

Two sets of rules read such a log (``LogRules``):

``"swebench"`` (the default for logs from elsewhere): exactly what swebench 5.0.2's
``get_logs_eval`` does, so that a SWE-bench run re-graded here gets SWE-bench's verdicts.
The file is read with universal newlines (``\\r`` and ``\\r\\n`` become ``\\n``, as
Python's ``open()`` does there); a harness line (``>>>>> Tests Timed Out`` ...) anywhere
in the log, even inside the test output, means nothing is graded; the region is the
text after the first start-marker *substring* up to the next end-marker substring (so a
trace line counts, and the ``'`` of a trace is part of the region); the exit code is
the first ``>>>>> Test Exit Code: N`` anywhere. What the parser makes of the region
(and swebench's fallback to the whole log when it yields nothing, and its evidence
that the suite ran, :func:`suite_ran_shown`) is ``observation.observe``'s part.

``"strict"``: the region is written by the code under test, so everything about it is
distrusted. Markers count only as whole lines: the bare marker, or the ``set -x`` trace
of ``: '<marker>'`` (the only form in which a 4.x/5.x script prints it), never the
``+ echo '<marker>'`` trace line of older scripts, which is followed by the bare line.
A log with more than one start or end marker is *suspect* (a patch printed fake
markers to smuggle lines out of, or into, the region); harness lines and the exit code
count only outside the region, where the code under test did not write them; the whole
log is never parsed when the region is empty: text outside the markers is exactly where
a forgery would live.

Under both rules, the line SWE-bench's harness appends to a log it killed (``Timeout
error: N seconds exceeded.``) is read as a timeout when it ends the log: swebench
grades such a log, but its own run made the instance an error, never a result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
EXIT_CODE_PREFIX = ">>>>> Test Exit Code:"
_EXIT_CODE = re.compile(r"^>>>>> Test Exit Code:\s*(-?\d+)$")
# swebench 5.0.2's TEST_EXIT_CODE_RE, unanchored: it is searched for in the whole log.
_SWEBENCH_EXIT_CODE = re.compile(r">>>>> Test Exit Code:\s*(-?\d+)")
# evalrepro's eval script names the tool that applied the model patch.
_APPLIED_PATCH = re.compile(r"^>>>>> Applied Patch \((\w+)\)$")
# What swebench's run_instance appends to test_output.txt when it killed the tests.
_HARNESS_TIMEOUT = re.compile(r"^Timeout error: \d+ seconds exceeded\.$")

#: swebench 5.0.2's ``SUITE_RAN`` (harness/grading.py), verbatim: the evidence that the
#: test runner executed which its grading accepts for an empty status map.
_SUITE_RAN = re.compile(
    r"Executed [1-9]\d* of \d+"
    r"|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)"
    r"|[1-9]\d* passing"
    r"|Tests:\s+[1-9]\d*"
    r"|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total"
    r"|^# tests [1-9]\d*"
    r"|[1-9]\d* specs?, \d+ failures?"
    r"|': ok$",
    re.M,
)

LogRules = Literal["swebench", "strict"]


class HarnessEvent(StrEnum):
    """Lines SWE-bench's harness writes into test_output.txt (swebench's "bad codes")."""

    PATCH_APPLY_FAILED = ">>>>> Patch Apply Failed"
    RESET_FAILED = ">>>>> Reset Failed"
    TESTS_ERRORED = ">>>>> Tests Errored"
    TESTS_TIMED_OUT = ">>>>> Tests Timed Out"


class RegionStatus(StrEnum):
    OK = "ok"
    NO_MARKERS = "no_markers"  # start or end marker missing: the tests never finished
    SUSPECT = "suspect"  # duplicated or misordered markers (strict rules only)


@dataclass(frozen=True)
class TestLog:
    region: str
    region_status: RegionStatus
    exit_code: int | None
    events: tuple[HarnessEvent, ...]
    detail: str = ""
    #: How the model patch was applied, when the log says (before the region).
    patch_method: str | None = None
    #: The rules that read the log.
    rules: LogRules = "strict"
    #: The whole log as the rules read it (swebench: newlines translated), for
    #: swebench's fallback and its evidence that the suite ran.
    text: str = ""
    #: SWE-bench's harness killed the tests (its timeout line ends the log).
    harness_timeout: bool = False

    @property
    def usable(self) -> bool:
        return self.region_status is RegionStatus.OK


def read_test_log(text: str, rules: LogRules = "strict") -> TestLog:
    """The region, exit code and harness lines of a bare eval log, read by ``rules``.

    The default is the strict reading (what every caller but ``observe`` wants of a log
    it did not write); ``observation.observe`` defaults to swebench's.
    """
    if rules == "swebench":
        return _read_as_swebench(text)
    if rules == "strict":
        return _read_strictly(text)
    raise ValueError(f"unknown log rules {rules!r}: 'swebench' or 'strict'")


def plain_log(text: str) -> bool:
    """No marker, no exit code, no harness line, nothing an eval script prints (every
    such line starts with ``>>>>>``): a runner's own output, not a harness's log cut
    short. Such a log may be read whole as the test output, if its reader says so."""
    return ">>>>>" not in text


def suite_ran_shown(text: str) -> bool:
    """swebench 5.0.2's evidence that the suite ran (``SUITE_RAN``), searched in ``text``."""
    return _SUITE_RAN.search(text) is not None


def _read_as_swebench(raw: str) -> TestLog:
    # swebench opens the log in text mode: universal newlines.
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    # Substrings anywhere, as swebench tests them: inside the test output too.
    events = tuple(event for event in HarnessEvent if event.value in text)
    match = _SWEBENCH_EXIT_CODE.search(text)
    facts = {
        "exit_code": int(match.group(1)) if match else None,
        "events": events,
        "rules": "swebench",
        "text": text,
        "harness_timeout": _harness_timeout(text.split("\n")),
        "patch_method": _patch_method(
            [line.strip() for line in text.split(START_MARKER, 1)[0].split("\n")]
        ),
    }
    missing = [marker for marker in (START_MARKER, END_MARKER) if marker not in text]
    if missing:
        return TestLog(
            region="",
            region_status=RegionStatus.NO_MARKERS,
            detail=f"no '{missing[0]}' in the log",
            **facts,
        )
    # swebench's own slice: after the first start marker, up to the next end marker (or
    # to the end of the log when the only end marker comes before it).
    region = text.split(START_MARKER)[1].split(END_MARKER)[0]
    return TestLog(region=region, region_status=RegionStatus.OK, **facts)


def _is_marker(line: str, marker: str) -> bool:
    # ``set -x`` traces ``: '<marker>'`` as ``+ : '<marker>'``; that line is the marker.
    return line == marker or line == f"+ : '{marker}'"


def _read_strictly(text: str) -> TestLog:
    # Lines end at "\n" only: splitlines() would also cut at "\r", form feeds and other
    # separators that runners print inside test output.
    lines = text.split("\n")
    stripped = [line.strip() for line in lines]
    starts = [i for i, line in enumerate(stripped) if _is_marker(line, START_MARKER)]
    ends = [i for i, line in enumerate(stripped) if _is_marker(line, END_MARKER)]
    facts = {"rules": "strict", "text": text}

    if len(starts) > 1 or len(ends) > 1:
        return TestLog(
            region="",
            region_status=RegionStatus.SUSPECT,
            exit_code=None,
            events=_events(stripped),
            detail=f"{len(starts)} start and {len(ends)} end markers; expected one of each",
            **facts,
        )
    if not starts or not ends:
        missing = "start" if not starts else "end"
        return TestLog(
            region="",
            region_status=RegionStatus.NO_MARKERS,
            exit_code=None,
            events=_events(stripped),
            detail=f"no '{START_MARKER if missing == 'start' else END_MARKER}' line",
            harness_timeout=_harness_timeout(stripped),
            **facts,
        )
    start, end = starts[0], ends[0]
    if end < start:
        return TestLog(
            region="",
            region_status=RegionStatus.SUSPECT,
            exit_code=None,
            events=_events(stripped),
            detail="end marker before start marker",
            **facts,
        )
    outside = stripped[:start] + stripped[end + 1 :]
    return TestLog(
        region="\n".join(lines[start + 1 : end]),
        region_status=RegionStatus.OK,
        exit_code=_exit_code(stripped[end + 1 :]),
        events=_events(outside),
        patch_method=_patch_method(stripped[:start]),
        harness_timeout=_harness_timeout(stripped[end + 1 :]),
        **facts,
    )


def _exit_code(after_end: list[str]) -> int | None:
    for line in after_end:
        match = _EXIT_CODE.match(line)
        if match:
            return int(match.group(1))
    return None


def _patch_method(before_start: list[str]) -> str | None:
    for line in before_start:
        match = _APPLIED_PATCH.match(line)
        if match:
            return match.group(1)
    return None


def _harness_timeout(lines: list[str]) -> bool:
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return _HARNESS_TIMEOUT.match(last) is not None


def _events(lines: list[str]) -> tuple[HarnessEvent, ...]:
    present = set(lines)
    return tuple(event for event in HarnessEvent if event.value in present)
