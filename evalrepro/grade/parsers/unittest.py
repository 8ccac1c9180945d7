"""Native parser for unittest's verbose output: ``python -m unittest -v``.

The same text comes from every runner built on ``unittest.TextTestRunner`` at
verbosity 2 (Django's, see ``django_full``). The log is read as one run of:

* progress lines ``test_x (pkg.mod.Class.test_x) ... ok`` (Python 3.11+) or
  ``test_x (pkg.mod.Class) ... ok`` (older), with the first docstring line on a line of
  its own before `` ... `` when the test has a docstring; verdicts ``ok``, ``FAIL``,
  ``ERROR``, ``skipped 'why'``, ``expected failure``, ``unexpected success``;
* failing subtests, indented (3.11+; older versions show them only in the error blocks):
  ``  test_x (pkg.mod.Class.test_x) (i=1) ... FAIL``;
* class and module fixture outcomes: ``setUpClass (pkg.mod.Class) ... ERROR``;
* error blocks, a line of 70 ``=`` then ``FAIL: <description>``, ``ERROR: ...`` or
  (3.11+) ``UNEXPECTED SUCCESS: ...``;
* totals: a line of 70 ``-``, ``Ran N tests in 0.01s``, then ``OK`` / ``FAILED (failures=1,
  errors=2, skipped=1, expected failures=1, unexpected successes=1)``.

Ids are ``TestCase.id()`` (``pkg.mod.Class.test_x``); a subtest's id is ``subTest.id()``,
its parent's id plus its description (``pkg.mod.Class.test_x (i=1)``); a fixture keeps
the runner's description (``setUpClass (pkg.mod.Class)``); a module that failed to import
is ``unittest.loader._FailedTest.<module>``. Docstring lines never become ids. A test
whose subtests failed gets no verdict of its own from unittest: it is FAILED (ERROR when
its subtests only errored). Passing subtests are not printed and get no entry.

A test's verdict is the last verdict word written for it before the next test starts: a
test that prints output between `` ... `` and its verdict may print verdict-like words,
and the runner writes the real verdict after them. A verdict glued to output that did not
end its line (``some outputok``) counts only until a verdict on a line of its own.
Unflushed stdout can also land before a description on its line (Django's migration
output: ``  Applying auth.0012_x...test_a (app.tests.C.test_a) ... ok``); the
description is still found when its parenthesis repeats the name (3.11+) or, in the older
form, when the method name starts with ``test``.
Python 3.11 writes ``expected failure`` / ``unexpected success`` without marking the line
done, so a fixture error right after one is a bare ``ERROR`` line without its name; its
id is taken from its error block (a fixture skipped there has no block: it is counted
for the cross-check but gets no entry).

The error blocks are the runner's own report: their status wins over the progress lines.
The totals are checked against what was read, and every disagreement goes into
``problems``: a test that printed a forged ``test_y (m.C.test_y) ... ok`` line adds a
test the runner did not count. Test lines with no totals after them are a problem too
(the run was cut short, or exited early to hide the count). Nothing after the totals is
read (an ``atexit`` hook may print forged lines there), except that a second totals line
is a problem: one of the two is forged, and if the first was, the real outcomes are
among the lines not read. ``suite_ran``: the runner reported ``Ran N tests`` with
N >= 1, or a test line carries a verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_VERDICTS = {
    "ok": Status.PASSED,
    "FAIL": Status.FAILED,
    "ERROR": Status.ERROR,
    "expected failure": Status.XFAIL,
    "unexpected success": Status.XPASS,
}
_SKIPPED = re.compile(r"skipped (?:'.*'|\".*\")")
_GLUED_VERDICT = re.compile(r"(ok|FAIL|ERROR|expected failure|unexpected success)$")
_GLUED_SKIP = re.compile(r"skipped (?:'.*'|\".*\")$")

# "name (where)" plus, for a subtest, its parameters / message.
_DESCRIPTION = re.compile(r"\s*(?P<name>[^\s()]+) \((?P<where>[^\s()]+)\)(?: (?P<sub>.+))?")
# Output a test left unflushed on stdout can reach the log just before a description,
# on its line: "  Applying auth.0012_x...test_a (app.tests.C.test_a) ... ok". Told apart
# from that output by the 3.11+ parenthesis repeating the name, or, before 3.11 and when
# the whole text is no description, by unittest's default "test" method prefix. The name
# must start a word, and runs of word characters are not backtracked into, so that a
# long printed line costs linear time.
_DESCRIPTION_3_11 = re.compile(
    r"(?<!\w)(?P<name>\w++) \((?P<where>[^\s()]+\.(?P=name))\)(?: (?P<sub>.+))?$"
)
_DESCRIPTION_BEFORE_3_11 = re.compile(
    r"(?<!\w)(?P<name>test\w*+) \((?P<where>[^\s()]+)\)(?: (?P<sub>.+))?$"
)
# Class and module fixtures: unittest reports them as "<method> (<class or module>)".
_FIXTURES = frozenset({"setUpClass", "tearDownClass", "setUpModule", "tearDownModule"})

_ERRORS_RULE = "=" * 70
_TOTALS_RULE = "-" * 70
_BLOCK = re.compile(r"(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<description>.*)")
_BLOCK_STATUS = {
    "FAIL": Status.FAILED,
    "ERROR": Status.ERROR,
    "UNEXPECTED SUCCESS": Status.XPASS,
}
_RAN = re.compile(r"Ran (?P<count>\d+) tests? in \S+")
_RESULT = re.compile(r"(?P<word>OK|FAILED|NO TESTS RAN)(?: \((?P<counts>.*)\))?")
# The result line's keys, and the status each one counts.
_TOTAL_KEYS = {
    "failures": Status.FAILED,
    "errors": Status.ERROR,
    "skipped": Status.SKIPPED,
    "expected failures": Status.XFAIL,
    "unexpected successes": Status.XPASS,
}


def verdict(text: str) -> Status | None:
    """The status a verdict written on its own (``ok``, ``skipped 'why'``...) stands for."""
    text = text.rstrip()
    if text in _VERDICTS:
        return _VERDICTS[text]
    if _SKIPPED.fullmatch(text):
        return Status.SKIPPED
    return None


def _glued_verdict(text: str) -> Status | None:
    """A verdict at the end of output that did not end its line (``partialok``)."""
    text = text.rstrip()
    if _GLUED_SKIP.search(text):
        return Status.SKIPPED
    found = _GLUED_VERDICT.search(text)
    return _VERDICTS[found.group(1)] if found else None


class Kind(Enum):
    TEST = "test"
    SUBTEST = "subtest"
    FIXTURE = "fixture"


@dataclass(frozen=True)
class TestRef:
    """What a description names: its id, kind and (for a subtest) its parent's id."""

    id: str
    kind: Kind
    parent: str | None = None


def read_description(text: str) -> TestRef | None:
    """The test a runner description (``str(test)``) names, or None if it is not one."""
    text = text.rstrip()
    found = (
        _DESCRIPTION_3_11.search(text)
        or _DESCRIPTION.fullmatch(text)
        or _DESCRIPTION_BEFORE_3_11.search(text)
    )
    if found is None:
        return None
    name, where, sub = found.group("name", "where", "sub")
    if where.endswith(f".{name}"):  # 3.11+: "(pkg.mod.Class.test_x)"
        base = where
    elif name in _FIXTURES:
        return None if sub else TestRef(f"{name} ({where})", Kind.FIXTURE)
    else:  # before 3.11: "(pkg.mod.Class)"
        base = f"{where}.{name}"
    if sub:
        return TestRef(f"{base} {sub}", Kind.SUBTEST, base)
    return TestRef(base, Kind.TEST)


@dataclass
class Entry:
    """One outcome of the log: a progress line, or an error block that named no line."""

    ref: TestRef
    status: Status | None = None
    #: The verdict was written on its own or right after " ... ", not glued to output.
    firm: bool = False
    #: The test's failing subtests were printed (its own verdict comes re-described).
    had_subtests: bool = False
    #: An error block reported this outcome.
    reported: bool = False


@dataclass
class Totals:
    ran: int
    #: Status -> count from ``OK`` / ``FAILED (...)``; None: the run ended before it.
    counts: dict[Status, int] | None = None


@dataclass
class Run:
    """What the run showed: outcomes, error blocks and the runner's own totals."""

    entries: list[Entry] = field(default_factory=list)
    #: Tests started (descriptions of tests, not of subtests or fixtures).
    starts: int = 0
    #: Verdicts written without a description (3.11 quirk, see the module docstring).
    orphans: Counter[Status] = field(default_factory=Counter)
    blocks: list[tuple[Status, TestRef]] = field(default_factory=list)
    totals: Totals | None = None
    #: Disagreements found while reading (error block vs progress line, second totals).
    problems: list[str] = field(default_factory=list)


class TextRunnerLog:
    """Reads the text a ``unittest.TextTestRunner`` writes; see the module docstring.

    ``progress=False`` reads only error blocks and totals: at verbosity 1 the runner
    prints dots instead of progress lines.
    """

    def __init__(self, text: str, *, progress: bool = True) -> None:
        self.progress = progress
        self.run = Run()
        self._in_progress = True  # before the error blocks and totals
        self._finished = False  # after the OK / FAILED line
        self._current: Entry | None = None  # the entry a bare verdict line belongs to
        self._last_test: Entry | None = None
        self._pending: TestRef | None = None  # a description whose docstring line follows
        self._orphan_next = False
        lines = [line.rstrip("\r") for line in text.split("\n")]
        for index, line in enumerate(lines):
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if self._finished:
                self._after_totals(line)
            else:
                self._feed(line, following)

    def statuses(self) -> dict[str, Status]:
        """``{id: status}``, with the parents of failed subtests; error blocks win."""
        statuses: dict[str, Status] = {}
        for entry in self.run.entries:
            if entry.status is not None:
                statuses[entry.ref.id] = entry.status
        for status, ref in self.run.blocks:
            statuses[ref.id] = status
        decided = {
            entry.ref.id
            for entry in self.run.entries
            if entry.ref.kind is Kind.TEST and entry.status is not None
        }
        subtests: dict[str, set[Status]] = {}
        for entry in self.run.entries:
            parent, status = entry.ref.parent, statuses.get(entry.ref.id)
            if parent and parent not in decided and status in _FAILING:
                subtests.setdefault(parent, set()).add(status)
        for parent, seen in subtests.items():
            statuses[parent] = Status.FAILED if Status.FAILED in seen else Status.ERROR
        return statuses

    def tests_ran(self) -> bool:
        """The runner reported ``Ran N tests`` with N >= 1."""
        return self.run.totals is not None and self.run.totals.ran > 0

    def problems(self) -> tuple[str, ...]:
        """Every way the log disagrees with itself; see the module docstring."""
        run = self.run
        problems = list(run.problems)
        totals = run.totals
        if totals is None:
            if self.progress and run.starts:
                problems.append(
                    f"no 'Ran N tests' line after {run.starts} test lines: the run was cut "
                    "short (killed, crashed or exited early), so they cannot be cross-checked"
                )
            return tuple(problems)
        if self.progress and run.starts != totals.ran:
            problems.append(
                f"the runner reports {totals.ran} tests run but the log shows "
                f"{run.starts} test lines"
            )
        if totals.counts is None:
            return tuple(problems)
        seen = Counter(entry.status for entry in run.entries if entry.status is not None)
        seen.update(run.orphans)
        for key, status in _TOTAL_KEYS.items():
            if not self.progress and status not in _BLOCK_STATUS.values():
                continue  # verbosity 1 prints no line for skips and expected failures
            if not self.progress and status is Status.XPASS and seen[status] == 0:
                continue  # before 3.11 unexpected successes get no error block
            expected = totals.counts.get(status, 0)
            if seen[status] != expected:
                problems.append(
                    f"the runner reports {key}={expected} but the log shows "
                    f"{seen[status]} {status.value} outcomes"
                )
        return tuple(problems)

    # -- reading ---------------------------------------------------------------------

    def _feed(self, line: str, following: str) -> None:
        if line == _ERRORS_RULE and _BLOCK.fullmatch(following):
            self._in_progress = False
            return
        if line == _TOTALS_RULE and _RAN.fullmatch(following):
            self._in_progress = False
            return
        ran = _RAN.fullmatch(line)
        if ran is not None:
            self.run.totals = Totals(ran=int(ran.group("count")))
            return
        result = _RESULT.fullmatch(line)
        if result is not None and self.run.totals is not None:
            self.run.totals.counts = _result_counts(result.group("counts") or "")
            self._finished = True
            return
        block = _BLOCK.fullmatch(line)
        if block is not None and not self._in_progress:
            self._block(_BLOCK_STATUS[block.group("kind")], block.group("description"))
            return
        if self._in_progress and self.progress:
            self._progress_line(line)

    def _after_totals(self, line: str) -> None:
        # The runner writes nothing test-like after its totals: what follows comes from
        # the process's exit (an atexit hook, unflushed output) and is not read. Only a
        # second totals line matters: one of the two is forged, and if it was the first,
        # the real outcomes are among the lines not read.
        if _RAN.fullmatch(line):
            self.run.problems.append(f"a second totals line after the runner's: {line!r}")

    def _progress_line(self, line: str) -> None:
        if line.endswith(" ..."):  # "name (id) ... " whose trailing space was trimmed
            line += " "
        segments = line.split(" ... ")
        pending, self._pending = self._pending, None
        if pending is not None and len(segments) > 1:
            # "<docstring line> ... <verdict>"; the docstring may contain " ... " too.
            self._begin(pending)
            self._after_description(segments[1:])
            return
        if len(segments) == 1:
            ref = read_description(line)
            if ref is not None:
                self._pending = ref  # the test has a docstring: its first line follows
            else:
                self._bare(line)
            return
        ref = read_description(segments[0])
        if ref is None:
            self._bare(line)  # output that happens to contain " ... "
            return
        self._begin(ref)
        self._after_description(segments[1:])

    def _after_description(self, segments: list[str]) -> None:
        # Before 3.11 a test whose subtests failed writes no verdict, so the next test's
        # description follows on the same line: "test_a (m.C) ... test_b (m.C) ... ok".
        for segment in segments[:-1]:
            ref = read_description(segment)
            if ref is not None:
                self._begin(ref)
        last = segments[-1]
        status = verdict(last)
        if status is not None:
            self._decide(status, firm=True)
            return
        ref = read_description(last)
        if ref is not None:
            self._pending = ref
        elif last.strip():
            self._bare(last)

    def _begin(self, ref: TestRef) -> None:
        run = self.run
        last = self._last_test
        if ref.kind is Kind.TEST:
            if last is not None and last.ref.id == ref.id and last.had_subtests:
                if last.status is None:
                    # 3.11+: a test's own verdict after its subtests' lines is re-described.
                    self._current = last
                    return
            entry = Entry(ref)
            run.entries.append(entry)
            run.starts += 1
            self._current = self._last_test = entry
            self._orphan_next = False
            return
        entry = Entry(ref)
        run.entries.append(entry)
        if ref.kind is Kind.SUBTEST and last is not None and last.ref.id == ref.parent:
            last.had_subtests = True
        self._current = entry

    def _decide(self, status: Status, *, firm: bool) -> None:
        current = self._current
        if current is None or (current.firm and not firm):
            return
        current.status, current.firm = status, firm
        if current.ref.kind is not Kind.TEST:
            # Subtest and fixture lines are written in one go: whatever follows is output.
            self._current = None
        elif firm and status in (Status.XFAIL, Status.XPASS):
            self._orphan_next = True

    def _bare(self, text: str) -> None:
        status = verdict(text)
        if status is not None:
            if self._orphan_next:
                # 3.11 writes "expected failure" / "unexpected success" without marking
                # the line done: the next fixture verdict comes without its description.
                self.run.orphans[status] += 1
                self._orphan_next = False
            else:
                self._decide(status, firm=True)
            return
        glued = _glued_verdict(text)
        if glued is not None:
            self._decide(glued, firm=False)

    def _block(self, status: Status, description: str) -> None:
        ref = read_description(description) or TestRef(description.strip(), Kind.TEST)
        run = self.run
        run.blocks.append((status, ref))
        for entry in run.entries:
            if entry.ref.id == ref.id and not entry.reported:
                entry.reported = True
                if entry.status is not status:
                    shown = entry.status.value if entry.status else "no verdict"
                    run.problems.append(
                        f"{ref.id}: {shown} in the progress lines, {status.value} in the "
                        "runner's error report"
                    )
                    entry.status = status
                return
        if run.orphans[status] > 0:
            run.orphans[status] -= 1  # the orphan verdict was this one's
        run.entries.append(Entry(ref, status=status, firm=True, reported=True))


_FAILING = frozenset({Status.FAILED, Status.ERROR})


def _result_counts(text: str) -> dict[Status, int]:
    counts: dict[Status, int] = {}
    for part in text.split(", "):
        key, _, number = part.partition("=")
        if key in _TOTAL_KEYS and number.isdigit():
            counts[_TOTAL_KEYS[key]] = int(number)
    return counts


@register
class UnittestParser(LogParser):
    name: ClassVar[str] = "unittest"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "unittest"
    canary_styles: ClassVar[tuple[str, ...]] = ("method",)
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.NATIVE
    description: ClassVar[str] = "python -m unittest -v (TextTestRunner at verbosity 2)"

    def parse(self, text: str) -> ParsedLog:
        log = TextRunnerLog(text)
        statuses = log.statuses()
        return ParsedLog(
            statuses=statuses,
            suite_ran=log.tests_ran() or bool(statuses),
            problems=log.problems(),
        )
