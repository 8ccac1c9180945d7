"""Cut the test output out of an eval log, and read what the harness wrote around it.

An eval script (ours or SWE-bench's) prints::

    ... install, reset, apply test patch ...
    >>>>> Start Test Output
    <the test command's output>            <- the only text a parser ever sees
    >>>>> End Test Output
    >>>>> Test Exit Code: 1                 <- the test command's own exit status

Markers count only as whole lines, so the ``+ echo '>>>>> Start Test Output'`` lines of
a ``set -x`` script are not markers. The region between them is written by the code
under test, so everything about it is distrusted:

* a log with more than one start or end marker is *suspect* (a patch printed fake
  markers to smuggle lines out of, or into, the region);
* harness lines (exit code, SWE-bench's ``>>>>> Tests Timed Out`` etc.) count only
  outside the region, where the code under test did not write them.

Unlike swebench 5.0.2, we never fall back to parsing the whole log when the region is
empty: text outside the markers is exactly where a forgery would live.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

START_MARKER = ">>>>> Start Test Output"
END_MARKER = ">>>>> End Test Output"
EXIT_CODE_PREFIX = ">>>>> Test Exit Code:"
_EXIT_CODE = re.compile(r"^>>>>> Test Exit Code:\s*(-?\d+)$")
# evalrepro's eval script names the tool that applied the model patch.
_APPLIED_PATCH = re.compile(r"^>>>>> Applied Patch \((\w+)\)$")


class HarnessEvent(StrEnum):
    """Lines SWE-bench's harness writes into test_output.txt outside the region."""

    PATCH_APPLY_FAILED = ">>>>> Patch Apply Failed"
    RESET_FAILED = ">>>>> Reset Failed"
    TESTS_ERRORED = ">>>>> Tests Errored"
    TESTS_TIMED_OUT = ">>>>> Tests Timed Out"


class RegionStatus(StrEnum):
    OK = "ok"
    NO_MARKERS = "no_markers"  # start or end marker missing: the tests never finished
    SUSPECT = "suspect"  # duplicated or misordered markers


@dataclass(frozen=True)
class TestLog:
    region: str
    region_status: RegionStatus
    exit_code: int | None
    events: tuple[HarnessEvent, ...]
    detail: str = ""
    #: How the model patch was applied, when the log says (before the region).
    patch_method: str | None = None

    @property
    def usable(self) -> bool:
        return self.region_status is RegionStatus.OK


def read_test_log(text: str) -> TestLog:
    # Lines end at "\n" only, as in swebench: splitlines() would also cut at "\r", form
    # feeds and other separators that runners print inside test output.
    lines = text.split("\n")
    stripped = [line.strip() for line in lines]
    starts = [i for i, line in enumerate(stripped) if line == START_MARKER]
    ends = [i for i, line in enumerate(stripped) if line == END_MARKER]

    if len(starts) > 1 or len(ends) > 1:
        return TestLog(
            region="",
            region_status=RegionStatus.SUSPECT,
            exit_code=None,
            events=_events(stripped),
            detail=f"{len(starts)} start and {len(ends)} end markers; expected one of each",
        )
    if not starts or not ends:
        missing = "start" if not starts else "end"
        return TestLog(
            region="",
            region_status=RegionStatus.NO_MARKERS,
            exit_code=None,
            events=_events(stripped),
            detail=f"no '{START_MARKER if missing == 'start' else END_MARKER}' line",
        )
    start, end = starts[0], ends[0]
    if end < start:
        return TestLog(
            region="",
            region_status=RegionStatus.SUSPECT,
            exit_code=None,
            events=_events(stripped),
            detail="end marker before start marker",
        )
    outside = stripped[:start] + stripped[end + 1 :]
    return TestLog(
        region="\n".join(lines[start + 1 : end]),
        region_status=RegionStatus.OK,
        exit_code=_exit_code(stripped[end + 1 :]),
        events=_events(outside),
        patch_method=_patch_method(stripped[:start]),
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


def _events(lines: list[str]) -> tuple[HarnessEvent, ...]:
    present = set(lines)
    return tuple(event for event in HarnessEvent if event.value in present)
