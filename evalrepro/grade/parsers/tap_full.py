"""Native TAP parser: every test of a TAP 13/14 stream, nested subtests included.

Expects the output of

* node's test runner, ``node --test --test-reporter=tap``: ``TAP version 13``, each
  subtest level indented four more spaces and announced by ``# Subtest: name``, a YAML
  diagnostic block after each result, a ``1..N`` plan after each level's results, and
  the run's totals at the end (``# tests N``, ``# suites N``, ``# pass N``, ``# fail
  N``, ``# cancelled N``, ``# skipped N``, ``# todo N``); node relays whatever the
  tests print as ``# ...`` comments;
* a Perl test script using Test::More (``perl t/x.t``): plan first or last, ``#``
  diagnostics (stderr merged in), ``subtest`` blocks indented four spaces.

Ids: the names of a test's ancestors and its own, unescaped (``\\#`` -> ``#``, ``\\\\``
-> ``\\``), joined by ``" > "``; a name that itself contains ``" > "`` is ambiguous. A
result line without a description (Test::More's ``ok(1)``, ``skip``) is named
``#N``, N being its number in its level. When a full id occurs again (two files with
the same test names, a repeated assertion message), the later occurrences, counted in
output order, get `` [#2]``, `` [#3]``... appended.

Statuses: ``# SKIP`` -> SKIPPED; ``# TODO`` -> XFAIL when ``not ok``, XPASS when ``ok``;
``ok`` -> PASSED; ``not ok`` -> FAILED, or ERROR when node says the test's body did
not decide it (``failureType`` ``hookFailed`` / ``cancelledByParent``). node's suites
(``describe``; YAML ``type: 'suite'``) are not tests: they have no entry unless they
failed on their own (a failing ``before``/``after`` hook, an exception in the
``describe`` body), which is an ERROR under the suite's id.

Cross-checks, each mismatch a problem (the map cannot be trusted, e.g. a test printed
``ok 5 - fake``): numbers in each level run 1, 2, 3...; each level has exactly one plan
and it matches its result count; node's totals match the result lines; no ``Bail
out!``; YAML blocks end; subtests end with their parent's result line.
``suite_ran``: node's ``# tests N`` with N >= 1, else a plan of N >= 1 with results.

Not handled: TAP 14's brace-delimited buffered subtests; names with tabs or newlines,
which node escapes irreversibly (``\\t`` becomes ``\\\\t``); Test::More does not
escape backslashes, so a Perl name containing ``\\\\`` loses one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

SEPARATOR = " > "
INDENT = 4

_RESULT = re.compile(r"(?P<not>not )?ok(?=\s|$)(?:\s+(?P<number>\d+)(?=\s|$))?\s*(?P<rest>.*)")
_PLAN = re.compile(r"1\.\.(?P<count>\d+)(?:\s*#.*)?")
_DIRECTIVE = re.compile(r"\s*(?P<kind>skip|todo)\S*", re.IGNORECASE)
_VERSION = re.compile(r"TAP version \d+")
_YAML_KEY = re.compile(r"(?P<key>\w+): (?P<value>.*)")
_NODE_TOTAL = re.compile(r"# (?P<key>tests|suites|pass|fail|cancelled|skipped|todo) (?P<n>\d+)")

# node's failureType values for a test whose body did not decide the outcome.
_ERROR_FAILURES = frozenset({"hookFailed", "cancelledByParent"})


@dataclass
class _Result:
    name: str
    number: int
    ok: bool
    directive: str | None  # "skip" | "todo"
    line: int
    suite: bool = False
    failure_type: str | None = None
    children: list[_Result] = field(default_factory=list)

    def status(self) -> Status | None:
        """This result's status, or None when it is not a test (a suite that passed or
        failed only through its children)."""
        if self.suite and (self.ok or self.failure_type == "subtestsFailed"):
            return None
        if self.directive == "skip":
            return Status.SKIPPED
        if self.directive == "todo":
            return Status.XPASS if self.ok else Status.XFAIL
        if self.ok:
            return Status.PASSED
        if self.suite or self.failure_type in _ERROR_FAILURES:
            return Status.ERROR
        return Status.FAILED


@dataclass
class _Level:
    """The results of one nesting level under one parent, as they arrive."""

    results: list[_Result] = field(default_factory=list)
    plan: int | None = None
    subtest: str | None = None  # name from the last "# Subtest:" line at this level


def _split_description(rest: str) -> tuple[str, str | None]:
    """Unescape a result's description and cut it at the first unescaped ``#``."""
    if rest.startswith("- "):
        rest = rest[2:]
    elif rest == "-":
        rest = ""
    chars: list[str] = []
    i = 0
    while i < len(rest):
        char = rest[i]
        if char == "\\" and rest[i + 1 : i + 2] in ("\\", "#"):
            chars.append(rest[i + 1])
            i += 2
        elif char == "#":
            return "".join(chars).rstrip(" "), rest[i + 1 :]
        else:
            chars.append(char)
            i += 1
    return "".join(chars), None


class _TapReader:
    """Reads TAP line by line into a tree of results, noting every inconsistency."""

    def __init__(self) -> None:
        self.roots: list[_Result] = []
        self.problems: list[str] = []
        self.totals: dict[str, int] = {}
        self.top_plans: list[int] = []
        self.levels: list[_Level] = [_Level()]
        self.yaml: tuple[_Result, int, int] | None = None  # result, indent, start line
        self.last_result: tuple[_Result, int] | None = None

    def read(self, text: str) -> None:
        for number, raw in enumerate(text.split("\n"), 1):
            self._line(number, raw.rstrip("\r"))
        if self.yaml is not None:
            self.problems.append(f"line {self.yaml[2]}: YAML block never ends")
        self._end_stream(len(text.split("\n")))

    def _line(self, number: int, line: str) -> None:
        content = line.lstrip(" ")
        indent = len(line) - len(content)
        if self.yaml is not None:
            result, yaml_indent, start = self.yaml
            if not content or indent > yaml_indent:
                return
            if indent == yaml_indent:
                if content == "...":
                    self.yaml = None
                elif key := _YAML_KEY.fullmatch(content):
                    value = key["value"].strip("'\"")
                    if key["key"] == "type":
                        result.suite = value == "suite"
                    elif key["key"] == "failureType":
                        result.failure_type = value
                return
            self.problems.append(f"line {start}: YAML block never ends")
            self.yaml = None
        last, self.last_result = self.last_result, None
        if last is not None and content == "---" and indent == last[1] + 2:
            self.yaml = (last[0], indent, number)
            return
        if indent % INDENT:
            return
        depth = indent // INDENT
        if content.startswith("Bail out!"):
            self.problems.append(f"line {number}: {content}")
        elif match := _RESULT.fullmatch(content):
            self._result(number, depth, indent, match)
        elif match := _PLAN.fullmatch(content):
            level = self._level(depth)
            if level.plan is not None:
                self.problems.append(f"line {number}: a second plan at the same level")
            level.plan = int(match["count"])
            if depth == 0:
                self.top_plans.append(level.plan)
        elif depth == 0 and _VERSION.fullmatch(content):
            if self.levels[0].results or self.levels[0].plan is not None:
                self._end_stream(number)
        elif content.startswith("# Subtest: "):
            self._level(depth).subtest = content.removeprefix("# Subtest: ")
        elif depth == 0 and (total := _NODE_TOTAL.fullmatch(content)):
            self.totals[total["key"]] = int(total["n"])

    def _level(self, depth: int) -> _Level:
        while len(self.levels) <= depth:
            self.levels.append(_Level())
        return self.levels[depth]

    def _result(self, line: int, depth: int, indent: int, match: re.Match[str]) -> None:
        level = self._level(depth)
        expected = len(level.results) + 1
        if match["number"] is not None and int(match["number"]) != expected:
            self.problems.append(
                f"line {line}: test number {match['number']} out of sequence (expected {expected})"
            )
        name, directive_text = _split_description(match["rest"])
        directive = None
        if directive_text is not None and (kind := _DIRECTIVE.match(directive_text)):
            directive = kind["kind"].lower()
        result = _Result(
            name=name or f"#{expected}",
            number=expected,
            ok=match["not"] is None,
            directive=directive,
            line=line,
        )
        result.children = self._close_below(depth, line)
        level.results.append(result)
        level.subtest = None
        self.last_result = (result, indent)

    def _close_below(self, depth: int, line: int) -> list[_Result]:
        """Close the levels deeper than ``depth``; return the results of ``depth + 1``."""
        children: list[_Result] = []
        while len(self.levels) > depth + 1:
            closing = self.levels.pop()
            self._check_level(closing, f"line {line}")
            if len(self.levels) == depth + 1:
                children = closing.results
            elif closing.results:
                parent = self.levels[-1].subtest or "?"
                self.problems.append(
                    f"line {line}: subtest {parent!r} ended without its result line"
                )
        return children

    def _check_level(self, level: _Level, where: str) -> None:
        count = len(level.results)
        if level.plan is None:
            if count:
                self.problems.append(f"{where}: {count} results without a plan")
        elif level.plan != count:
            self.problems.append(f"{where}: plan 1..{level.plan} but {count} results")

    def _end_stream(self, line: int) -> None:
        for orphan in self._close_below(0, line):
            self.problems.append(f"line {orphan.line}: subtest result without a parent")
        self._check_level(self.levels[0], "end of TAP stream")
        self.roots.extend(self.levels[0].results)
        self.levels = [_Level()]


def _walk(
    results: list[_Result], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], _Result]]:
    """(path, result) in output order: children before their parent."""
    for result in results:
        full = (*path, result.name)
        yield from _walk(result.children, full)
        yield full, result


def _check_node_totals(reader: _TapReader, tests: list[_Result]) -> None:
    if not reader.totals:
        return
    plain = [r for r in tests if r.directive is None]
    parsed = {
        "tests": len(tests),
        "pass": sum(1 for r in plain if r.ok),
        "fail": sum(1 for r in plain if not r.ok),
        "skipped": sum(1 for r in tests if r.directive == "skip"),
        "todo": sum(1 for r in tests if r.directive == "todo"),
    }
    claimed = dict(reader.totals)
    # node counts a test that was cancelled (parent failed, timeout) apart from failures.
    claimed["fail"] = claimed.get("fail", 0) + claimed.pop("cancelled", 0)
    for key in ("tests", "pass", "fail", "skipped", "todo"):
        if key in reader.totals and claimed[key] != parsed[key]:
            reader.problems.append(
                f"node's totals say {key} {claimed[key]}, the result lines show {parsed[key]}"
            )


@register
class TapParser(LogParser):
    name: ClassVar[str] = "tap_full"
    ecosystems: ClassVar[tuple[str, ...]] = ("javascript",)
    family: ClassVar[Family] = Family.NATIVE
    canary_language: ClassVar[str | None] = "javascript"
    description: ClassVar[str] = (
        "TAP 13/14 from node --test --test-reporter=tap or Test::More, nested ids"
    )

    def parse(self, text: str) -> ParsedLog:
        reader = _TapReader()
        reader.read(text)
        walked = list(_walk(reader.roots))
        tests = [result for _, result in walked if not result.suite]
        suites = len(walked) - len(tests)
        _check_node_totals(reader, tests)
        if "suites" in reader.totals and reader.totals["suites"] != suites:
            reader.problems.append(
                f"node's totals say suites {reader.totals['suites']},"
                f" the result lines show {suites}"
            )
        statuses: dict[str, Status] = {}
        seen: Counter[str] = Counter()
        for path, result in walked:
            status = result.status()
            if status is None:
                continue
            test_id = SEPARATOR.join(path)
            seen[test_id] += 1
            if seen[test_id] > 1:
                test_id = f"{test_id} [#{seen[test_id]}]"
            statuses[test_id] = status
        if "tests" in reader.totals:
            suite_ran = reader.totals["tests"] > 0
        else:
            suite_ran = bool(reader.roots) and any(plan > 0 for plan in reader.top_plans)
        return ParsedLog(statuses=statuses, suite_ran=suite_ran, problems=tuple(reader.problems))
