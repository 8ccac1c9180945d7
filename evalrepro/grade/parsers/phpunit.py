"""SWE-bench's PHPUnit parser (``parse_log_phpunit``), reproduced quirk for quirk.

Expects ``phpunit --testdox`` output: per test class a header line, ``Calc
(Tests\\Calc)``, then one line per test with a mark and the humanized method name,
``✔ Adds numbers``, ``✘ Fails``, ``↩ Skipped``. Lines are matched unstripped; the key
is ``<header> > <humanized name>``. Quirks kept because SWE-bench's lists were written
with them:

* names are testdox's humanized ones: ``testAddsNumbers`` and ``test_adds_numbers`` are
  both ``Adds numbers``, one key (the later line wins);
* a class outside any namespace gets a header without ``(...)``, which is not read as
  one: its tests are keyed under the previous header, or ``None`` before any;
* failures and errors are both ``✘`` (FAILED); incomplete (``∅``) and risky (``☢``)
  tests have no entry;
* PHPUnit repeats the non-successful tests in a summary at the end, under the same
  headers: the same keys again;
* any line starting with a mark counts, wherever it comes from (a test's ``echo``).

``suite_ran``: a parsed entry (PHPUnit's ``Tests: N`` line is swebench's evidence too:
``Tests:\\s+[1-9]``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_SUITE = re.compile(r"^(\w.+) \(.+\)$")
_TEST = re.compile(r"^\s*([✔✘↩])\s*(.*)$")
_STATUS = {"✔": Status.PASSED, "✘": Status.FAILED, "↩": Status.SKIPPED}
_TOTALS = re.compile(r"Tests:\s+[1-9]\d*")


@register
class PhpUnitCompatParser(LogParser):
    name: ClassVar[str] = "phpunit"
    ecosystems: ClassVar[tuple[str, ...]] = ("php",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "php"
    runner: ClassVar[str | None] = "phpunit"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_phpunit",)
    description: ClassVar[str] = (
        "SWE-bench's phpunit --testdox parser: <class header> > <humanized test name>"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        suite: str | None = None
        for line in text.split("\n"):
            if header := _SUITE.match(line):
                suite = header.group(1)
                continue
            if test := _TEST.match(line):
                mark, test_name = test.groups()
                statuses[f"{suite} > {test_name}"] = _STATUS[mark]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses) or bool(_TOTALS.search(text)))

    def command_advice(self, test_cmd: str) -> str | None:
        if "phpunit" in test_cmd and "--testdox" not in test_cmd:
            return "this parser reads phpunit --testdox output"
        return None
