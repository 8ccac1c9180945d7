"""Native ``cargo test`` parser: libtest's JSON events, every test keyed with its binary.

Expects the output of ``RUSTC_BOOTSTRAP=1 cargo test --no-fail-fast -- -Z
unstable-options --format json 2>&1``: cargo's own lines (``Running tests/a.rs
(target/debug/deps/a-0123abcd)``, ``Doc-tests crate``, compiler messages) and, per test
binary, one JSON event per line (``{"type": "suite" | "test", "event": ..., "name":
...}``). libtest's JSON format is unstable: stable toolchains accept it only with
``RUSTC_BOOTSTRAP=1``.

Ids: ``<target>::<test name>``. The target is the binary cargo says it runs, named
``<binary>:<source>`` with the build hash dropped (``demo:src/lib.rs``, ``a:tests/a.rs``)
or ``<crate>:doc`` for doc tests (``demo:doc::src/lib.rs - add (line 3)``), so one test
name in several binaries is several tests; a ``#[should_panic]`` test has its plain name.

Statuses: ``ok`` -> PASSED, ``failed`` -> FAILED, ``ignored`` -> SKIPPED. A test that
started and has no outcome (the binary died: ``abort``, a signal) is an ERROR, and so is
a binary that started and never finished, under the target id.

Cross-checks, each a problem: each suite's closing counts (``passed``, ``failed``,
``ignored``) equal its test events; an outcome for a test that never started; two
outcomes for one test; test events outside a suite. A test printing JSON lines with
``--nocapture`` must forge the closing counts too to go unnoticed.
``suite_ran``: some suite started with at least one test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

SEPARATOR = "::"

_RUNNING = re.compile(r"\s*Running (?:unittests )?(?P<source>\S+) \((?P<binary>[^)]+)\)")
_DOC_TESTS = re.compile(r"\s*Doc-tests (?P<crate>\S+)")
_HASH = re.compile(r"-[0-9a-f]{16}$")
_OUTCOMES = {"ok": Status.PASSED, "failed": Status.FAILED, "ignored": Status.SKIPPED}
_COUNTED = {"passed": Status.PASSED, "failed": Status.FAILED, "ignored": Status.SKIPPED}


def _target_name(line: str) -> str | None:
    if match := _RUNNING.fullmatch(line):
        binary = _HASH.sub("", match["binary"].rsplit("/", 1)[-1])
        return f"{binary}:{match['source']}"
    if match := _DOC_TESTS.fullmatch(line):
        return f"{match['crate']}:doc"
    return None


@dataclass
class _Suite:
    target: str
    started: list[str] = field(default_factory=list)
    outcomes: dict[str, Status] = field(default_factory=dict)
    closed: bool = False


def _event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("type"), str) else None


class _Reader:
    def __init__(self) -> None:
        self.suites: list[_Suite] = []
        self.target = "?"
        self.current: _Suite | None = None
        self.problems: list[str] = []

    def read(self, text: str) -> None:
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.rstrip("\r")
            event = _event(line)
            if event is None:
                if (target := _target_name(line)) is not None:
                    self.target = target
                continue
            if event["type"] == "suite":
                self._suite(number, event)
            elif event["type"] == "test":
                self._test(number, event)

    def _suite(self, number: int, event: dict[str, Any]) -> None:
        if event.get("event") == "started":
            self.current = _Suite(self.target)
            self.suites.append(self.current)
            return
        suite, self.current = self.current, None
        if suite is None:
            self.problems.append(f"line {number}: a suite ends that never started")
            return
        suite.closed = True
        for key, status in _COUNTED.items():
            claimed = event.get(key)
            parsed = sum(1 for s in suite.outcomes.values() if s is status)
            if isinstance(claimed, int) and claimed != parsed:
                self.problems.append(
                    f"line {number}: {suite.target} says {key} {claimed},"
                    f" its test events show {parsed}"
                )

    def _test(self, number: int, event: dict[str, Any]) -> None:
        name, action = event.get("name"), event.get("event")
        if not isinstance(name, str):
            return
        suite = self.current
        if suite is None:
            self.problems.append(f"line {number}: test {name!r} outside a suite")
            return
        if action == "started":
            suite.started.append(name)
        elif action in _OUTCOMES:
            if name not in suite.started:
                self.problems.append(f"line {number}: {action} for {name!r}, never started")
                suite.started.append(name)
            if name in suite.outcomes:
                self.problems.append(f"line {number}: a second outcome for {name!r}")
            suite.outcomes[name] = _OUTCOMES[action]


@register
class CargoJsonParser(LogParser):
    name: ClassVar[str] = "cargo_json"
    ecosystems: ClassVar[tuple[str, ...]] = ("rust",)
    family: ClassVar[Family] = Family.NATIVE
    canary_language: ClassVar[str | None] = "rust"
    runner: ClassVar[str | None] = "cargo"
    description: ClassVar[str] = (
        "cargo test with libtest's --format json: ids <binary>:<source>::<name>, ignored skipped"
    )

    def parse(self, text: str) -> ParsedLog:
        reader = _Reader()
        reader.read(text)
        statuses: dict[str, Status] = {}
        for suite in reader.suites:
            for name in dict.fromkeys(suite.started):
                statuses[f"{suite.target}{SEPARATOR}{name}"] = suite.outcomes.get(
                    name, Status.ERROR
                )
            if not suite.closed:
                statuses[suite.target] = Status.ERROR
        suite_ran = any(suite.started for suite in reader.suites)
        return ParsedLog(statuses=statuses, suite_ran=suite_ran, problems=tuple(reader.problems))

    def command_advice(self, test_cmd: str) -> str | None:
        if "cargo test" in test_cmd and "--format json" not in test_cmd:
            return (
                "this parser reads libtest's JSON: cargo test -- -Z unstable-options --format json"
            )
        return None
