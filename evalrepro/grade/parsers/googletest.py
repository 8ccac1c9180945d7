"""SWE-bench's GoogleTest parser (``parse_log_googletest``), reproduced quirk for quirk.

Expects a GoogleTest binary's console output: ``[       OK ] Suite.Test (0 ms)`` and
``[  FAILED  ] Suite.Test (0 ms)`` per test. Every line is stripped and matched on
``^.*\\[\\s*(OK|FAILED)\\s*\\]\\s(.*)\\s\\(.*\\)$``; the key is what lies between the mark and
the last parenthesis. Quirks kept because SWE-bench's lists were written with them:

* a failing parameterized or typed test is keyed with its parameter, ``Values/Param.
  IsOne/1, where GetParam() = 2``, a passing one without (``Values/Param.IsOne/0``): the
  key of one test changes with its outcome;
* skipped (``GTEST_SKIP``, ``[  SKIPPED ]``) and disabled (``DISABLED_``) tests have no
  entry;
* the mark may be anywhere in the line, and any such line counts: a test printing
  ``[       OK ] Invented.Test (0 ms)`` invents a passing test.

``suite_ran``: a parsed entry.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_RESULT = re.compile(r"^.*\[\s*(OK|FAILED)\s*\]\s(.*)\s\(.*\)$")
_STATUS = {"OK": Status.PASSED, "FAILED": Status.FAILED}


@register
class GoogleTestCompatParser(LogParser):
    name: ClassVar[str] = "googletest"
    ecosystems: ClassVar[tuple[str, ...]] = ("cmake",)
    family: ClassVar[Family] = Family.SWEBENCH
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_googletest",)
    description: ClassVar[str] = (
        "SWE-bench's GoogleTest parser: [ OK ] / [ FAILED ] lines, skips dropped"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match:
                statuses[match.group(2)] = _STATUS[match.group(1)]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
