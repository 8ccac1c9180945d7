"""SWE-bench's Maven parser (``parse_log_maven``), reproduced quirk for quirk.

Expects the output of an eval script run with ``set -x`` that runs Maven once per test
(``mvn test -Dtest=Class#method``): Maven's console shows no passing tests, so the
parser pairs each traced ``-Dtest=`` command line with the next ``BUILD SUCCESS`` /
``BUILD FAILURE`` line, in order (results that come before their command are matched
first in, first out at the end). Quirks kept because SWE-bench's lists were written with
them:

* the key is the text after ``-Dtest=`` up to the first whitespace, as the trace shows
  it: bash quotes a word with glob characters, so ``-Dtest='C#m*'`` is key ``C#m*'``;
* the status is the build's: a ``@Disabled`` test run alone is skipped and the build
  succeeds, so it is PASSED; an error (an exception, not an assertion) is FAILED; a
  selection that matches no test is PASSED when Maven is told not to fail on it
  (``-Dsurefire.failIfNoSpecifiedTests=false``) and FAILED otherwise, like a build
  that does not compile;
* a ``-Dtest=`` selecting several tests (``Class``, ``Class#a+b``) is one entry;
* any line ending in ``BUILD SUCCESS`` / ``BUILD FAILURE`` or containing ``-Dtest=``
  counts, wherever it comes from.

swebench's function prints a warning when commands remain without a result; this one
does not print. ``suite_ran``: a parsed entry.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_TEST_NAME = re.compile(r"^.*-Dtest=(\S+).*$")
_RESULT = re.compile(r"^.*BUILD (SUCCESS|FAILURE)$")
_STATUS = {"SUCCESS": Status.PASSED, "FAILURE": Status.FAILED}


@register
class MavenCompatParser(LogParser):
    name: ClassVar[str] = "maven"
    ecosystems: ClassVar[tuple[str, ...]] = ("maven", "gradle")
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "java"
    runner: ClassVar[str | None] = "maven"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_maven",)
    description: ClassVar[str] = (
        "SWE-bench's Maven parser: one mvn -Dtest=X per test, status from BUILD SUCCESS/FAILURE"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        pending: list[str] = []
        unmatched: list[str] = []
        for line in text.split("\n"):
            stripped = line.strip()
            if name := _TEST_NAME.match(stripped):
                pending.append(name.group(1))
            if result := _RESULT.match(stripped):
                if pending:
                    statuses[pending.pop(0)] = _STATUS[result.group(1)]
                else:
                    unmatched.append(result.group(1))
        while pending and unmatched:
            statuses[pending.pop(0)] = _STATUS[unmatched.pop(0)]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
