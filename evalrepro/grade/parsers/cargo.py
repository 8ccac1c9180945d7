"""SWE-bench's ``cargo test`` parser (``parse_log_cargo``), reproduced quirk for quirk.

Expects libtest's default (pretty) output, ``test name ... ok|FAILED|ignored``, one
line per test, from every test binary ``cargo test`` runs. Every line is stripped and
matched on its own; the key is libtest's test name (``tests::adds``). Quirks kept because
SWE-bench's lists were written with them:

* ignored tests have no entry (``... ignored`` and ``... ignored, reason`` are dropped,
  not SKIPPED);
* a name must be one word, so ``#[should_panic]`` tests (libtest prints ``test
  tests::x - should panic ... ok``) and doc tests (``test src/lib.rs - add (line 3)
  ... ok``) have no entry, whatever their outcome;
* keys carry no test binary, so one name in several binaries (``shared`` in
  ``tests/a.rs`` and ``tests/b.rs``) is one entry and the binary run last wins;
* any line shaped like a result counts: a failing test's captured output, which libtest
  prints after the results, can hold ``test invented ... ok``.

``suite_ran``: a parsed result line (swebench's grading has no alternative for Rust).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_RESULT = re.compile(r"^test\s+(\S+)\s+\.\.\.\s+(\w+)$")
_STATUS = {"ok": Status.PASSED, "FAILED": Status.FAILED}


@register
class CargoCompatParser(LogParser):
    name: ClassVar[str] = "cargo"
    ecosystems: ClassVar[tuple[str, ...]] = ("rust",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "rust"
    runner: ClassVar[str | None] = "cargo"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_cargo",)
    description: ClassVar[str] = (
        "SWE-bench's cargo test parser: one-word names, ignored and should_panic tests dropped"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        # split("\n") rather than splitlines(): swebench's lines only end at "\n".
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match and match.group(2) in _STATUS:
                statuses[match.group(1)] = _STATUS[match.group(2)]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
