"""SWE-bench's ``parse_log_matplotlib``, reproduced quirk for quirk.

Expects ``pytest -rA`` output. It is :mod:`evalrepro.grade.parsers.pytest`'s rule (lines
starting with a status word, id cut at the first whitespace, later lines win, XPASS and
folded skips dropped) after one rewrite of every line: ``MouseButton.LEFT`` becomes
``1`` and ``MouseButton.RIGHT`` becomes ``3``. matplotlib's parametrized ids print the
enum's name or its value depending on the Python version; the rewrite makes them agree
with the FAIL_TO_PASS / PASS_TO_PASS lists, so ``test_x[MouseButton.LEFT]`` is key
``test_x[1]``. The rewrite applies to the whole line, ids and captured output alike.
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.pytest import status_tokens
from evalrepro.grade.parsers.registry import register

_MOUSE_BUTTONS = {"MouseButton.LEFT": "1", "MouseButton.RIGHT": "3"}


@register
class SwebenchMatplotlibParser(LogParser):
    name: ClassVar[str] = "matplotlib"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_matplotlib",)
    description: ClassVar[str] = (
        "SWE-bench's matplotlib parser (pytest -rA): the pytest parser after "
        "MouseButton.LEFT/RIGHT -> 1/3"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {
            name: word for word, name in status_tokens(text, rewrite=_MOUSE_BUTTONS)
        }
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
