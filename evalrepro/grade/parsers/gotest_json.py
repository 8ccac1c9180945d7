"""Native ``go test -json`` parser: every test of every package, keyed with its package.

Expects the output of ``go test -json ./... 2>&1``: one JSON event per line (test2json's
``{"Action": ..., "Package": ..., "Test": ...}``), mixed with the go command's own
plain lines (compiler errors and ``FAIL pkg [build failed]`` go to stderr).

Ids: ``<import path>::<test name>``, e.g. ``example.com/m/pkg::TestX/sub_name`` (Go has
already turned spaces into underscores), so one test name in several packages is several
tests. Subtests and their parents are all tests, as Go reports them.

Statuses: ``pass`` -> PASSED, ``fail`` -> FAILED, ``skip`` -> SKIPPED. A test that
started (``run``) and has no outcome event:

* when its own output holds its result line after text that did not end in a newline
  (``x--- PASS: TestY (0.00s)``, which Go before 1.20 does not turn into an event), that
  result;
* otherwise ERROR: the binary died under it (a panic elsewhere, ``-timeout``).

A package that failed with no failing test of its own (a failing ``TestMain``, an
``init`` panic), or did not build (``FAIL pkg [build failed]`` / ``[setup failed]``,
or go 1.24's ``build-fail``), is an ERROR under its import path: its tests never ran.

Cross-checks, each a problem (the map cannot be trusted): an outcome for a test that
never started in that package (Go before 1.20 turns any ``--- PASS: name`` line a test
prints into an event, so a forged line shows up this way); two outcomes for one test;
test events after their package ended; a package with tests but no final pass/fail
(the stream was cut). A forged line preceded by a forged ``=== RUN`` line passes these
checks on Go before 1.20; Go 1.20+ frames its own lines and cannot be fooled so.
``suite_ran``: some test has an outcome, or some package passed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

SEPARATOR = "::"

_OUTCOMES = {"pass": Status.PASSED, "fail": Status.FAILED, "skip": Status.SKIPPED}
_LINE_OUTCOMES = {"PASS": Status.PASSED, "FAIL": Status.FAILED, "SKIP": Status.SKIPPED}
_NOT_BUILT = re.compile(r"FAIL\t(?P<package>\S+) \[(?:build|setup) failed\]")


@dataclass
class _Package:
    started: set[str] = field(default_factory=set)
    outcomes: dict[str, Status] = field(default_factory=dict)
    output: dict[str, list[str]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # tests in the order they started
    end: str | None = None  # the package's own pass / fail / skip


def _event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("Action"), str) else None


def _recovered(name: str, output: list[str]) -> Status | None:
    """The result line Go printed after unterminated output, which it did not parse."""
    pattern = re.compile(r".--- (PASS|FAIL|SKIP): " + re.escape(name) + r" \([^)]*\)\n?$")
    for chunk in reversed(output):
        if match := pattern.search(chunk):
            return _LINE_OUTCOMES[match.group(1)]
    return None


class _Reader:
    def __init__(self) -> None:
        self.packages: dict[str, _Package] = {}
        self.not_built: list[str] = []
        self.problems: list[str] = []

    def read(self, text: str) -> None:
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.rstrip("\r")
            event = _event(line)
            if event is None:
                if match := _NOT_BUILT.fullmatch(line):
                    self.not_built.append(match["package"])
                continue
            self._event(number, event)
        for name, package in self.packages.items():
            if package.end is None and package.started:
                self.problems.append(f"package {name} has no final pass/fail event")

    def _event(self, number: int, event: dict[str, Any]) -> None:
        action = event["Action"]
        name = event.get("Package") or event.get("ImportPath")
        if not isinstance(name, str):
            return
        if action == "build-fail":  # go 1.24: build errors as events, "p [p.test]"
            self.not_built.append(name.split(" ", 1)[0])
            return
        package = self.packages.setdefault(name, _Package())
        test = event.get("Test")
        if not isinstance(test, str):
            if action in _OUTCOMES:
                package.end = action
            return
        if package.end is not None:
            self.problems.append(f"line {number}: test {test!r} after package {name} ended")
        if action == "run":
            package.started.add(test)
            package.order.append(test)
        elif action == "output":
            package.output.setdefault(test, []).append(str(event.get("Output", "")))
        elif action in _OUTCOMES:
            if test not in package.started:
                self.problems.append(
                    f"line {number}: {action} for {test!r} in {name}, which never started"
                )
                package.order.append(test)
            if test in package.outcomes:
                self.problems.append(f"line {number}: a second outcome for {test!r} in {name}")
            package.outcomes[test] = _OUTCOMES[action]


@register
class GoTestJsonParser(LogParser):
    name: ClassVar[str] = "gotest_json"
    ecosystems: ClassVar[tuple[str, ...]] = ("go",)
    family: ClassVar[Family] = Family.NATIVE
    canary_language: ClassVar[str | None] = "go"
    runner: ClassVar[str | None] = "go"
    description: ClassVar[str] = (
        "go test -json: every test keyed <package>::<name>, package failures as errors"
    )

    def parse(self, text: str) -> ParsedLog:
        reader = _Reader()
        reader.read(text)
        statuses: dict[str, Status] = {}
        suite_ran = False
        for name, package in reader.packages.items():
            own_failure = False
            for test in dict.fromkeys(package.order):
                status = package.outcomes.get(test)
                if status is None:
                    status = _recovered(test, package.output.get(test, [])) or Status.ERROR
                statuses[f"{name}{SEPARATOR}{test}"] = status
                own_failure = own_failure or status in (Status.FAILED, Status.ERROR)
            suite_ran = suite_ran or bool(package.outcomes) or package.end == "pass"
            if package.end == "fail" and not own_failure:
                statuses[name] = Status.ERROR
        for name in reader.not_built:
            statuses[name] = Status.ERROR
        return ParsedLog(statuses=statuses, suite_ran=suite_ran, problems=tuple(reader.problems))

    def command_advice(self, test_cmd: str) -> str | None:
        if "go test" in test_cmd and "-json" not in test_cmd:
            return "this parser reads go test -json output"
        return None
