"""SWE-bench's ``parse_log_pytest_v2`` (astropy, scikit-learn, sphinx), quirk for quirk.

Expects ``pytest -rA`` output, possibly coloured. Each line (split on "\\n") is first
cleaned: every ``[<digits>m`` is deleted (the remains of ANSI colour codes), then every
control character 1-31 (ESC, tab, CR...) is deleted. Then:

* a line starting with a status word (FAILED PASSED SKIPPED ERROR XFAIL) records the
  rest of the line, whitespace runs joined by one space, as the id: ids keep their
  spaces. For FAILED lines everything from the first " - " on is dropped first;
* else a line *ending* with a status word records all but its last token as the id,
  the last token as the status (pytest < 3.3 progress lines ``test_x.py::test_a PASSED``);
* later lines overwrite earlier ones; XPASS lines and folded ``SKIPPED [N] ...`` skip
  summaries are dropped.

Quirks kept because those repos' FAIL_TO_PASS / PASS_TO_PASS lists were written with
them (measured on the logs of tests/corpus/pytest/):

* only FAILED lines lose their message: ``XFAIL x - reason`` is key ``x - reason``,
  ``XFAIL at setup of x - [NOTRUN] reason`` keeps its "at setup of", and ``ERROR x -
  RuntimeError: boom`` is key ``x - RuntimeError: boom``; pytest trims those messages
  to the terminal width (``...``), so ERROR keys depend on ``COLUMNS``;
* a FAILED id holding " - " is cut there (``test_x[a - b]`` is ``test_x[a``);
* the colour-code deletion also hits ids: ``test_x[10m]`` is ``test_x]``;
* a raw tab or CR is deleted, not turned into a space (pytest itself prints a tab in an
  id as the two characters ``\\t``, which stay);
* captured log records count, message included: ``ERROR    payments:test_x.py:8
  charge declined`` is key ``payments:test_x.py:8 charge declined``;
* any line *ending* with a status word counts: ``-s`` output without a newline runs
  into pytest's ``PASSED`` (``partial output without newlinePASSED``), giving key
  ``partial output without`` with the status token ``newlinePASSED``, kept verbatim
  (neither passed nor failed when graded, as in swebench).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.pytest import SWEBENCH_STATUSES, is_folded_skip
from evalrepro.grade.parsers.registry import register

_WORDS = tuple(str(status) for status in SWEBENCH_STATUSES)
_COLOUR_REMAINS = re.compile(r"\[(\d+)m")
_DELETE_CONTROL = str.maketrans("", "", "".join(chr(code) for code in range(1, 32)))


@register
class SwebenchPytestV2Parser(LogParser):
    name: ClassVar[str] = "pytest_v2"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    # swebench binds these per-repo names to this very function.
    aliases: ClassVar[tuple[str, ...]] = (
        "parse_log_pytest_v2",
        "astropy",
        "parse_log_astropy",
        "scikit",
        "parse_log_scikit",
        "sphinx",
        "parse_log_sphinx",
    )
    description: ClassVar[str] = (
        "SWE-bench's pytest parser for astropy/scikit-learn/sphinx (pytest -rA): whole "
        "rest of the line as id, colour codes stripped"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        for raw in text.split("\n"):
            line = _COLOUR_REMAINS.sub("", raw).translate(_DELETE_CONTROL)
            if line.startswith(_WORDS):
                if line.startswith(Status.FAILED):
                    line = line.split(" - ", 1)[0]
                tokens = line.split()
                if len(tokens) >= 2 and not is_folded_skip(tokens[0], tokens[1]):
                    statuses[" ".join(tokens[1:])] = tokens[0]
            elif line.endswith(_WORDS):
                tokens = line.split()
                if len(tokens) >= 2:
                    statuses[" ".join(tokens[:-1])] = tokens[-1]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
