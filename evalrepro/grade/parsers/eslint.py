"""SWE-bench's eslint parser (``parse_log_eslint``), reproduced quirk for quirk.

Expects mocha's ``--reporter min`` output (eslint's test command), which prints no
line per passing test, only the ``N passing`` / ``N failing`` counts and then one
numbered block per failure::

      1) suite
           nested suite
             test title:
         AssertionError [ERR_ASSERTION]: ...

The parser records failures only (FAIL_ONLY: a test passes unless it is FAILED, and
only when the suite ran). A failure's key is the text from ``N)`` up to the whitespace
before the first later line that contains ``Error``, with whitespace runs collapsed.
Quirks kept because SWE-bench's lists were written with them:

* the key is the suite path and title joined by single spaces, with mocha's trailing
  ``:`` kept (``suite nested suite test title:``);
* a suite or title line containing ``Error`` ends the key early (a test titled
  ``throws TypeError`` inside ``suite`` is keyed ``suite``; a top-level suite named
  ``Errors`` gives the empty key);
* a failure whose message line has no ``Error`` (``Oops: bad`` from a custom error
  class, a string thrown by a hook) runs on through its stack trace into the next
  failure's block, swallowing that failure into one long key; the last such failure
  of a log is not recorded at all;
* the whole text is searched, so ``  N)`` anywhere (console output) starts a failure.

``suite_ran`` follows swebench's grading, which rejects an empty map unless the log
shows the suite ran (``SUITE_RAN`` in ``grading.py``): for mocha that is an ``N
passing`` count with N >= 1. A recorded failure is evidence too (a run in which every
test failed prints ``0 passing``), as a non-empty map is never rejected there.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_FAILURE = re.compile(r"(\s{2}\d+\))([\s\S]*?)\s+(?:(.*)Error)")
_WHITESPACE = re.compile(r"\s+")
# swebench's SUITE_RAN alternative for mocha; unanchored, as there.
_PASSING = re.compile(r"[1-9]\d* passing")


@register
class EslintCompatParser(LogParser):
    name: ClassVar[str] = "eslint"
    ecosystems: ClassVar[tuple[str, ...]] = ("javascript",)
    family: ClassVar[Family] = Family.SWEBENCH
    runner: ClassVar[str | None] = "mocha"
    fail_only: ClassVar[bool] = True
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_eslint",)
    description: ClassVar[str] = (
        "SWE-bench's eslint parser: failures only, from mocha --reporter min"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses = {
            _WHITESPACE.sub(" ", match.group(2)).strip(): Status.FAILED
            for match in _FAILURE.finditer(text)
        }
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses) or bool(_PASSING.search(text)))
