"""SWE-bench's ``parse_log_pytest_options`` (requests, pydicom, pylint), quirk for quirk.

Expects ``pytest -rA`` output. Same line rule as :mod:`evalrepro.grade.parsers.pytest` (lines
starting with a status word, id cut at the first whitespace, later lines win, XPASS and
folded skips dropped), then the parameter part of an id is rewritten; quirks kept
because those repos' FAIL_TO_PASS / PASS_TO_PASS lists were written with them:

* the parameter part runs from the first ``[`` to the last ``]`` of the (already cut)
  token, and anything after that last ``]`` is dropped: ``test_x[a]b`` is ``test_x[a]``;
* a parameter that is an absolute path is shortened to its last component, so machine
  paths do not leak into ids: ``test_x[/usr/lib/libfoo.so]`` is ``test_x[/libfoo.so]``;
  parameters starting with ``//`` or holding ``*`` are kept whole;
* ids cut at a space inside the brackets have no closing ``]`` and stay as cut
  (``test_x[a b]`` is ``test_x[a``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.pytest import status_tokens
from evalrepro.grade.parsers.registry import register

# Lazy head, greedy parameter: the first "[" to the last "]" (search, not fullmatch).
_PARAMETER = re.compile(r"(.*?)\[(.*)\]")


def _shorten_parameter(name: str) -> str:
    match = _PARAMETER.search(name)
    if not match:
        return name
    head, parameter = match.groups()
    if parameter.startswith("/") and not parameter.startswith("//") and "*" not in parameter:
        parameter = "/" + parameter.split("/")[-1]
    return f"{head}[{parameter}]"


@register
class SwebenchPytestOptionsParser(LogParser):
    name: ClassVar[str] = "pytest_options"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    # swebench binds these per-repo names to this very function.
    aliases: ClassVar[tuple[str, ...]] = (
        "parse_log_pytest_options",
        "pydicom",
        "parse_log_pydicom",
        "requests",
        "parse_log_requests",
        "pylint",
        "parse_log_pylint",
    )
    description: ClassVar[str] = (
        "SWE-bench's pytest parser for requests/pydicom/pylint (pytest -rA): like pytest, "
        "path parameters shortened to their last component"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {
            _shorten_parameter(name): word for word, name in status_tokens(text)
        }
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
