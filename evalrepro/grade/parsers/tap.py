"""SWE-bench's TAP parser (``parse_log_tap``), reproduced quirk for quirk.

Expects TAP result lines, ``ok N description`` / ``not ok N description``, from any
TAP producer (SWE-bench uses it for three.js and axios). Every line is stripped and
matched on its own; the map is keyed by whatever follows the test number. Quirks kept
because SWE-bench's FAIL_TO_PASS / PASS_TO_PASS lists were written with them:

* the key keeps TAP's optional ``- `` separator and any directive: ``ok 3 - x # SKIP
  why`` is key ``- x # SKIP why`` with status PASSED; a ``# TODO`` test that fails is
  FAILED; TAP escapes such as ``\\#`` stay in the key;
* nesting is ignored (lines are stripped), so subtests are keyed by their own name
  only, and a later line with the same key overwrites an earlier one (a parent's
  ``ok 1 - x`` and a child's ``ok 1 - x`` collide);
* for assertion-level producers (tape, Test::More) the key is the assertion message,
  so two assertions with the same message are one entry (the later one wins); a
  result line without a description (``ok 3``) is not recorded at all, and Test::More's
  skips (``ok 4 # skip why``) are keyed by their directive, ``# skip why``;
* any stdout line shaped like a result counts, wherever it comes from.

``suite_ran`` is not computed by swebench's parser but by its grading, which looks for
node's ``# tests N`` totals line (N >= 1) in the log (``SUITE_RAN`` in swebench's
``grading.py``); a parsed result line is evidence too.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_RESULT = re.compile(r"^(ok|not ok) (\d+) (.+)$")
# swebench's SUITE_RAN alternative for TAP totals (node --test).
_TESTS_TOTAL = re.compile(r"^# tests [1-9]\d*", re.M)


@register
class TapCompatParser(LogParser):
    name: ClassVar[str] = "tap"
    ecosystems: ClassVar[tuple[str, ...]] = ("javascript",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "javascript"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_tap",)
    description: ClassVar[str] = (
        "SWE-bench's TAP parser: keys are the text after the test number, nesting ignored"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        # split("\n") rather than splitlines(): swebench's lines only end at "\n".
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match:
                outcome, _number, key = match.groups()
                statuses[key] = Status.PASSED if outcome == "ok" else Status.FAILED
        return ParsedLog(
            statuses=statuses,
            suite_ran=bool(statuses) or bool(_TESTS_TOTAL.search(text)),
        )
