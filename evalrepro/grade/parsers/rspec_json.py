"""Native RSpec parser: RSpec's own JSON report (``rspec --format json 2>&1``).

The report is one JSON object, ``{"version": ..., "examples": [...], "summary":
{...}}``, printed after whatever the specs printed (possibly on the same line, when a
spec's output does not end in a newline).

Ids: ``<file>::<full description>`` (``./spec/calc_spec.rb::Calc nested adds``), so one
description in several files is several tests; a repeat within a file gets `` [#2]``...
appended, in report order.

Statuses: ``passed`` -> PASSED, ``failed`` -> FAILED (a ``pending`` example whose body
passed is failed by RSpec itself), ``pending`` -> SKIPPED (``skip``, ``xit``, and a
``pending`` example that failed as expected: the report does not tell them apart).
Errors outside of examples (a spec file that does not load) are an ERROR under the id
``rspec::errors outside of examples``.

Cross-checks, each a problem: exactly one report; its summary's ``example_count``,
``failure_count`` and ``pending_count`` match its examples. ``suite_ran``: an example.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

SEPARATOR = "::"
OUTSIDE = "rspec::errors outside of examples"
_STATUS = {"passed": Status.PASSED, "failed": Status.FAILED, "pending": Status.SKIPPED}
_COUNTS = {"example_count": None, "failure_count": "failed", "pending_count": "pending"}
_START = '{"version":'


def _reports(text: str) -> list[tuple[int, dict[str, Any]]]:
    decoder = json.JSONDecoder()
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        at = line.find(_START)
        if at == -1:
            continue
        try:
            report, _ = decoder.raw_decode(line, at)
        except ValueError:
            continue
        if isinstance(report, dict) and isinstance(report.get("examples"), list):
            found.append((number, report))
    return found


@register
class RspecJsonParser(LogParser):
    name: ClassVar[str] = "rspec_json"
    ecosystems: ClassVar[tuple[str, ...]] = ("ruby",)
    family: ClassVar[Family] = Family.NATIVE
    canary_language: ClassVar[str | None] = "ruby"
    runner: ClassVar[str | None] = "rspec"
    description: ClassVar[str] = "rspec --format json: ids <file>::<full description>"

    def parse(self, text: str) -> ParsedLog:
        reports = _reports(text)
        problems: list[str] = []
        if len(reports) > 1:
            lines = ", ".join(str(number) for number, _ in reports)
            problems.append(f"{len(reports)} RSpec JSON reports (lines {lines}); rspec writes one")
        statuses: dict[str, Status] = {}
        ran = False
        for _, report in reports:
            seen: Counter[str] = Counter()
            counted: Counter[str] = Counter()
            for example in report["examples"]:
                raw = str(example.get("status"))
                counted[raw] += 1
                test_id = f"{example.get('file_path')}{SEPARATOR}{example.get('full_description')}"
                seen[test_id] += 1
                if seen[test_id] > 1:
                    test_id = f"{test_id} [#{seen[test_id]}]"
                statuses[test_id] = _STATUS.get(raw, Status.ERROR)
            summary = report.get("summary") or {}
            for key, status in _COUNTS.items():
                claimed = summary.get(key)
                shown = sum(counted.values()) if status is None else counted[status]
                if isinstance(claimed, int) and claimed != shown:
                    problems.append(
                        f"RSpec's summary says {key} {claimed}, its examples show {shown}"
                    )
            if summary.get("errors_outside_of_examples_count"):
                statuses[OUTSIDE] = Status.ERROR
            ran = ran or sum(counted.values()) > 0
        return ParsedLog(statuses=statuses, suite_ran=ran, problems=tuple(problems))
