"""SWE-bench's RSpec parser (``parse_log_rspec_transformed_json``), reproduced.

Expects RSpec's JSON report turned into one line per example by jq, as SWE-bench's
Ruby instances run it: ``rspec --format json | jq -r '.examples[] |
"\\(.full_description) - \\(.status)"'``, i.e. ``Calc adds - passed``. Each stripped line
is matched from its start on ``(.+) - (passed|failed)``. Quirks kept because SWE-bench's
lists were written with them:

* the key is RSpec's full description (``describe`` and ``it`` texts joined by spaces),
  without the file: one description in several spec files is one entry, the later
  winning;
* pending and skipped examples (``- pending``) have no entry;
* the report goes through a pipe: a spec that prints anything to stdout breaks jq's
  parsing of the report, and the log then holds no example at all;
* any line with `` - passed`` / `` - failed`` after some text counts, wherever it
  comes from.

``suite_ran``: a parsed entry.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_RESULT = re.compile(r"(.+) - (passed|failed)")
_STATUS = {"passed": Status.PASSED, "failed": Status.FAILED}


@register
class RspecCompatParser(LogParser):
    name: ClassVar[str] = "rspec_transformed_json"
    ecosystems: ClassVar[tuple[str, ...]] = ("ruby",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "ruby"
    runner: ClassVar[str | None] = "rspec"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_rspec_transformed_json",)
    description: ClassVar[str] = (
        "SWE-bench's RSpec parser: jq-transformed '<full description> - <status>' lines"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match:
                statuses[match.group(1)] = _STATUS[match.group(2)]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
