"""What pytest's terminal report says, read structurally (for the native pytest parsers).

pytest ends every session with the same three parts, in this order, after all test
output (captured sections included):

1. ``==== short test summary info ====`` (printed with ``-rA``): one line per report,
   ``STATUS nodeid`` with `` - message`` for failures, errors, xfails, xpasses and
   unfolded skips, ``SKIPPED [N] file:line: reason`` for folded skips (the default);
   pytest 9's subtests add ``SUBFAILED[msg] (k=v) nodeid - message`` and the like;
2. optionally ``!!!! Interrupted: ... !!!!``;
3. the totals line, ``==== 3 failed, 5 passed, 1 xfailed in 0.12s ====`` (without the
   ``=`` frame under ``-q``; ``-qq`` prints none).

The reader trusts the *last* totals line and the *last* summary header before it:
anything a test prints (``-s`` output, captured stdout, logs, a pytester session's
whole report) comes earlier, so forged ``PASSED x`` lines never reach the region read.
Lines of that region that do not start with a status word are continuation lines of
multi-line messages (``-vv``, or ``CI`` set in the environment) and are skipped; if one
does start with a status word, the counts no longer match the totals line, which is
how :func:`totals_problems` catches it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from evalrepro.grade.parsers.base import Status

_WORDS = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DURATION = r" in \d+(?:\.\d+)?s(?: \([0-9:.]+\))?"
_COUNT = r"\d+ [a-z]+(?: [a-z]+)?"
# "==== 1 failed, 2 passed in 0.12s ====", or unframed under -q.
_TOTALS = re.compile(
    rf"^(?:=+ (?P<framed>.+?){_DURATION} =+"
    rf"|(?P<bare>no tests ran|{_COUNT}(?:, {_COUNT})*){_DURATION})$"
)
_SUMMARY_HEADER = re.compile(r"^=+ short test summary info =+$")
_ENTRY = re.compile(rf"^(?P<sub>SUB)?(?P<status>{_WORDS})(?P<rest>.*)$")
_FOLDED_SKIP = re.compile(r"^\[(?P<count>\d+)\] ")
# In a subtest line the count follows the subtest's description: "SUBSKIPPED[m] [2] f:9: r".
_SUBTEST_FOLDED_SKIP = re.compile(r" \[(?P<count>\d+)\] ")
_XFAIL_PHASE = re.compile(r"^at (?:setup|call|teardown) of ")
# -v progress line: "test_x.py::test_a SKIPPED (reason)   [ 50%]" (no percentage with -s).
_VERBOSE = re.compile(rf"^(?P<id>\S.*?) (?P<status>{_WORDS})(?: \(.*\))?(?: *\[ *\d+%\])? *$")
# pytest-xdist -v progress line: "[gw0] [ 50%] PASSED test_x.py::test_a ".
_XDIST = re.compile(rf"^\[gw\d+\] \[ *\d+%\] (?P<status>{_WORDS}) (?P<id>.+?) ?$")
# A subtest's progress line (pytest 9), "test_x.py::test_a SUBSKIPPED[msg] (i=0) (reason)"
# or "[gw0] [ 50%] SUBSKIPPED[msg] (i=0) test_x.py::test_a": counted, its id unused.
_SUBTEST_PROGRESS = re.compile(rf"^(?:\[gw\d+\] \[ *\d+%\]|\S.*?) SUB(?P<status>{_WORDS})")
_TOTALS_WORDS = {
    "passed": Status.PASSED,
    "failed": Status.FAILED,
    "error": Status.ERROR,
    "errors": Status.ERROR,
    "skipped": Status.SKIPPED,
    "xfailed": Status.XFAIL,
    "xpassed": Status.XPASS,
}
#: Outcomes that mean a test ran (a collection error alone runs nothing).
EXECUTED = (Status.PASSED, Status.FAILED, Status.SKIPPED, Status.XFAIL, Status.XPASS)


@dataclass(frozen=True)
class SummaryEntry:
    """One test's line in the short test summary: its status word and the text after it."""

    status: Status
    rest: str


@dataclass(frozen=True)
class Progress:
    """A ``-v`` progress line (plain or xdist): one report of a test or of a subtest."""

    status: Status
    #: The test's node id; empty for a subtest's line.
    nodeid: str
    subtest: bool


@dataclass(frozen=True)
class PytestReport:
    #: Per-outcome counts of the final totals line; None when there is no totals line.
    totals: Counter[Status] | None
    has_summary: bool
    entries: tuple[SummaryEntry, ...]
    #: Sum of the [N] of folded ``SKIPPED [N] file:line: reason`` lines (subtests too:
    #: pytest folds test and subtest skips together).
    folded_skips: int
    #: Summary lines of subtests (not tests: they only count towards the totals).
    subtests: Counter[Status]
    #: Progress lines before the summary.
    progress: tuple[Progress, ...]

    def summary_counts(self) -> Counter[Status]:
        counts = Counter(entry.status for entry in self.entries) + self.subtests
        counts[Status.SKIPPED] += self.folded_skips
        return counts


def read_report(text: str) -> PytestReport:
    lines = [_ANSI.sub("", line.removesuffix("\r")) for line in text.split("\n")]
    totals_at = _last_index(lines, _TOTALS, len(lines))
    end = len(lines) if totals_at is None else totals_at
    header_at = _last_index(lines, _SUMMARY_HEADER, end)
    entries: list[SummaryEntry] = []
    subtests: Counter[Status] = Counter()
    folded = 0
    for line in lines[header_at + 1 : end] if header_at is not None else ():
        match = _ENTRY.match(line)
        if not match or not (match["sub"] or match["rest"].startswith(" ")):
            continue  # a message's continuation line, or "!!! Interrupted ... !!!"
        status, rest = Status(match["status"]), match["rest"]
        if match["sub"]:
            skip = _SUBTEST_FOLDED_SKIP.search(rest) if "::" not in rest else None
        else:
            rest = rest[1:]
            skip = _FOLDED_SKIP.match(rest)
        if status is Status.SKIPPED and skip:
            folded += int(skip["count"])
        elif match["sub"]:
            subtests[status] += 1
        else:
            entries.append(SummaryEntry(status, rest))
    progress = []
    for line in lines[: end if header_at is None else header_at]:
        if match := _VERBOSE.match(line) or _XDIST.match(line):
            progress.append(Progress(Status(match["status"]), match["id"], subtest=False))
        elif match := _SUBTEST_PROGRESS.match(line):
            progress.append(Progress(Status(match["status"]), "", subtest=True))
    return PytestReport(
        totals=None if totals_at is None else _count_totals(lines[totals_at]),
        has_summary=header_at is not None,
        entries=tuple(entries),
        folded_skips=folded,
        subtests=subtests,
        progress=tuple(progress),
    )


def entry_nodeid(entry: SummaryEntry, known: Collection[str] = ()) -> str:
    """The node id a summary line names, its `` - message`` (if any) cut off.

    PASSED lines never carry a message. Otherwise the id ends at one of the " - " in
    the line, or at its end; ids may hold " - " themselves (``test_x[a - b]``). A
    candidate named by a progress line (``known``, longest first) wins; without one,
    the shortest candidate that is a whole id: one whose parameter part, if it has
    one, is closed by its final "]".
    """
    rest = entry.rest
    if entry.status is Status.XFAIL:
        rest = _XFAIL_PHASE.sub("", rest, count=1)  # "XFAIL at setup of x - reason"
    if entry.status is Status.PASSED:
        return rest
    candidates = [rest[:cut] for cut in _separators(rest)] + [rest]
    for candidate in reversed(candidates):
        if candidate in known:
            return candidate
    return next((c for c in candidates if _whole_id(c)), rest)


def totals_problems(report: PytestReport) -> list[str]:
    """Where the totals line and the summary lines disagree, one sentence each."""
    if report.totals is None:
        return ["no pytest totals line ('=== N passed in Xs ==='): the run did not finish"]
    problems = []
    if not report.has_summary and sum(report.totals.values()):
        problems.append("no 'short test summary info' section: pytest was not run with -rA")
    listed = report.summary_counts()
    for status in Status:
        if report.totals[status] != listed[status]:
            problems.append(
                f"pytest's totals line counts {report.totals[status]} {status} but its "
                f"short test summary lists {listed[status]}"
            )
    return problems


def suite_ran(report: PytestReport, nodeids: Iterable[str]) -> bool:
    """Whether a test ran: the totals line counts one (passed, failed, skipped, xfailed,
    xpassed), or a test is listed (``::`` in its id; a collection error names a file).
    """
    counted = report.totals is not None and sum(report.totals[s] for s in EXECUTED) > 0
    return counted or any("::" in nodeid for nodeid in nodeids)


def _count_totals(line: str) -> Counter[Status]:
    match = _TOTALS.match(line)
    assert match is not None
    counts: Counter[Status] = Counter()
    for part in (match["framed"] or match["bare"]).split(", "):
        number, _, word = part.partition(" ")
        # "no tests ran", "1 warning", "2 deselected", "3 subtests passed": not outcomes.
        if number.isdigit() and word in _TOTALS_WORDS:
            counts[_TOTALS_WORDS[word]] += int(number)
    return counts


def _last_index(lines: list[str], pattern: re.Pattern[str], end: int) -> int | None:
    return next((i for i in range(end - 1, -1, -1) if pattern.match(lines[i])), None)


def _separators(rest: str) -> list[int]:
    cuts, at = [], rest.find(" - ")
    while at != -1:
        cuts.append(at)
        at = rest.find(" - ", at + 1)  # overlapping: "a - - b"
    return cuts


def _whole_id(candidate: str) -> bool:
    # Function and class names hold no "["; the first one after "::" opens the
    # parameter part, which pytest always closes at the very end of the id.
    _path, sep, names = candidate.partition("::")
    return not sep or "[" not in names or candidate.endswith("]")
