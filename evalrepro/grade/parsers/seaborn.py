"""SWE-bench's ``parse_log_seaborn``, reproduced quirk for quirk.

Expects ``pytest -rA`` (seaborn's SWE-bench command adds no ``-v``). Only passes and
failures are recorded, from three kinds of line, checked in this order per line:

* a line starting with ``FAILED`` records its second token as FAILED;
* else a line containing `` PASSED `` (spaces both sides) whose second token is
  ``PASSED`` records its first token as PASSED: pytest ``-v`` progress lines
  (``test_x.py::test_a PASSED  [ 50%]``); if the second token is anything else the line
  records nothing, even when it starts with ``PASSED``;
* else a line starting with ``PASSED`` records its second token as PASSED.

Quirks kept because seaborn's FAIL_TO_PASS / PASS_TO_PASS lists were written with them:
ids are cut at the first whitespace (parametrized ids collapse, the last line wins);
ERROR, SKIPPED, XFAIL and XPASS are never recorded, so a test that errors at setup is
missing (counted failed) while one that passed and then errors at teardown stays PASSED;
any output line of that shape counts (a printed ``PASSED x`` is a passing test x).
``suite_ran`` is whether the map is non-empty, as in swebench's grading.
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register


@register
class SwebenchSeabornParser(LogParser):
    name: ClassVar[str] = "seaborn"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_seaborn",)
    description: ClassVar[str] = (
        "SWE-bench's seaborn parser (pytest -rA): only PASSED and FAILED, ids cut at the "
        "first space"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        for line in text.split("\n"):
            tokens = line.split()
            if len(tokens) < 2:
                continue
            if line.startswith(Status.FAILED):
                statuses[tokens[1]] = Status.FAILED
            elif f" {Status.PASSED} " in line:
                if tokens[1] == Status.PASSED:
                    statuses[tokens[0]] = Status.PASSED
            elif line.startswith(Status.PASSED):
                statuses[tokens[1]] = Status.PASSED
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
