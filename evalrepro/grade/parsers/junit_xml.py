"""Native JUnit XML parser: the reports a runner writes, printed into the log.

Expects the log to hold the runner's JUnit XML reports, each printed whole after the
tests ran (e.g. ``mvn test; cat target/surefire-reports/TEST-*.xml``): documents whose
root is ``<testsuite>`` or ``<testsuites>``, each optionally preceded by its ``<?xml
?>`` declaration, with anything else (the runner's console output) around them. Maven
Surefire and Gradle write one ``<testsuite>`` per test class; ctest ``--output-junit``,
PHPUnit ``--log-junit`` and jest-junit write the same shape.

Ids: ``<classname>#<name>`` of each ``<testcase>`` (``com.example.CalcTest#adds``,
``com.example.CalcTest$Inner#deep``), the name as the report has it (a JUnit 5 test's
method name with ``()``, or its display name, depending on the runner's reporter). An
id that occurs again (one class reported twice) gets `` [#2]``, `` [#3]``... appended,
in log order.

Statuses: a ``<failure>`` child -> FAILED, ``<error>`` -> ERROR, ``<skipped>`` ->
SKIPPED, GoogleTest's ``status="notrun"`` (a ``DISABLED_`` test) -> SKIPPED, none of
these -> PASSED (Surefire's ``<flakyFailure>`` marks a test that failed and then passed
a rerun: PASSED).

Cross-checks, each a problem: a document that does not parse; each ``<testsuite>``'s
``tests`` / ``failures`` / ``errors`` / ``skipped`` counts equal its test cases; and,
when the log shows Maven Surefire's closing summary (``Tests run: N, Failures: F,
Errors: E, Skipped: S`` under ``Results:``, one per module), the reports add up to it,
so a report printed by the code under test (on stdout, which Surefire relays) shows as
extra tests; likewise PHPUnit's closing ``Tests: N, Assertions: ...`` / ``OK (N
tests, ...)`` line, and GoogleTest's ``[==========] N tests from M test suites ran.``
(which leaves out disabled tests). Not detected: a forged report together with a
forged summary line that matches it. ``suite_ran``: some test case.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

SEPARATOR = "#"

_START = re.compile(r"(?:<\?xml[^>]*\?>\s*)?<(?P<root>testsuites|testsuite)\b")
_SUREFIRE_TOTAL = re.compile(
    r"^\[(?:INFO|ERROR|WARNING)\] Tests run: (\d+), Failures: (\d+), Errors: (\d+),"
    r" Skipped: (\d+)$",
    re.M,
)
# GoogleTest's closing line: "[==========] 7 tests from 3 test suites ran. (0 ms total)".
_GTEST_RAN = re.compile(r"^\[==========\] (\d+) tests? from \d+ test suites? ran\.", re.M)
# PHPUnit's closing line: "OK (2 tests, 2 assertions)" or "Tests: 12, Assertions: 8, ...".
_PHPUNIT_TOTAL = re.compile(
    r"^(?:OK \((\d+) tests?, \d+ assertions?\)|Tests: (\d+), Assertions: )", re.M
)
_KINDS = (("failure", Status.FAILED), ("error", Status.ERROR), ("skipped", Status.SKIPPED))


def _documents(text: str) -> Iterator[tuple[int, ET.Element | str]]:
    """(line number, parsed root or the reason it does not parse) of every report in
    ``text``, in order. A report ends at the first closing tag of its root after which
    it parses: a test's output inside ``<system-out><![CDATA[...]]>`` can hold a
    closing tag of its own (and a whole report, which is then part of this one)."""
    position = 0
    while match := _START.search(text, position):
        root = match["root"]
        line = text.count("\n", 0, match.start()) + 1
        head_end = text.find(">", match.end())
        candidates: list[int] = []
        if head_end != -1 and text[head_end - 1] == "/":
            candidates.append(head_end + 1)
        close = text.find(f"</{root}>", max(head_end, match.end()))
        while close != -1:
            candidates.append(close + len(root) + 3)
            close = text.find(f"</{root}>", close + 1)
        error = "no closing tag"
        for end in candidates:
            try:
                parsed = ET.fromstring(text[match.start() : end])
            except ET.ParseError as failure:
                error = str(failure)
                continue
            yield line, parsed
            position = end
            break
        else:
            yield line, error
            position = match.end()


def _suites(root: ET.Element) -> Iterator[ET.Element]:
    if root.tag == "testsuite":
        yield root
    for suite in root.iter("testsuite"):
        if suite is not root:
            yield suite


def _status(case: ET.Element) -> Status:
    for tag, status in _KINDS:
        if case.find(tag) is not None:
            return status
    if case.get("status") == "notrun":  # GoogleTest's DISABLED_ tests, counted apart
        return Status.SKIPPED
    return Status.PASSED


def _counts(cases: list[tuple[ET.Element, Status]]) -> dict[str, int]:
    return {
        "tests": len(cases),
        "failures": sum(1 for _, s in cases if s is Status.FAILED),
        "errors": sum(1 for _, s in cases if s is Status.ERROR),
        # <skipped> children only: GoogleTest counts its disabled tests as "disabled"
        "skipped": sum(1 for case, _ in cases if case.find("skipped") is not None),
    }


def _count(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@register
class JUnitXmlParser(LogParser):
    name: ClassVar[str] = "junit_xml"
    #: The runners that write JUnit XML: Maven and Gradle, PHPUnit and ctest. Protecting
    #: all four costs an honest run nothing (none writes the others' files).
    ecosystems: ClassVar[tuple[str, ...]] = ("maven", "gradle", "php", "cmake")
    family: ClassVar[Family] = Family.NATIVE
    canary_language: ClassVar[str | None] = "junit"
    description: ClassVar[str] = (
        "JUnit XML reports printed into the log (Maven Surefire, Gradle, ctest, PHPUnit...)"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        problems: list[str] = []
        seen: Counter[str] = Counter()
        totals = Counter[str]()
        for line, root in _documents(text):
            if isinstance(root, str):
                problems.append(f"line {line}: a JUnit XML report does not parse ({root})")
                continue
            for suite in _suites(root):
                # A suite's counts cover its nested suites too (PHPUnit, ctest nest them).
                cases = [(case, _status(case)) for case in suite.iter("testcase")]
                parsed = _counts(cases)
                for key, value in parsed.items():
                    claimed = _count(suite.get(key))
                    if claimed is not None and claimed != value:
                        problems.append(
                            f"line {line}: suite {suite.get('name')!r} says {key} {claimed},"
                            f" its test cases show {value}"
                        )
                own = [(case, _status(case)) for case in suite.findall("testcase")]
                totals.update(_counts(own))
                totals["notrun"] += sum(1 for case, _ in own if case.get("status") == "notrun")
                for case, status in own:
                    test_id = f"{case.get('classname', '')}{SEPARATOR}{case.get('name', '')}"
                    seen[test_id] += 1
                    if seen[test_id] > 1:
                        test_id = f"{test_id} [#{seen[test_id]}]"
                    statuses[test_id] = status
        summaries = _SUREFIRE_TOTAL.findall(text)
        if summaries:
            claimed = [sum(int(s[i]) for s in summaries) for i in range(4)]
            shown = [totals[k] for k in ("tests", "failures", "errors", "skipped")]
            if claimed != shown:
                problems.append(
                    "Surefire's summary says tests/failures/errors/skipped"
                    f" {'/'.join(map(str, claimed))}, the reports show {'/'.join(map(str, shown))}"
                )
        phpunit = [int(a or b) for a, b in _PHPUNIT_TOTAL.findall(text)]
        if phpunit and sum(phpunit) != totals["tests"]:
            problems.append(
                f"PHPUnit's summary says {sum(phpunit)} tests, the reports show {totals['tests']}"
            )
        ran = [int(n) for n in _GTEST_RAN.findall(text)]
        if ran and sum(ran) != totals["tests"] - totals["notrun"]:
            problems.append(
                f"GoogleTest says {sum(ran)} tests ran,"
                f" the reports show {totals['tests'] - totals['notrun']}"
            )
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses), problems=tuple(problems))
