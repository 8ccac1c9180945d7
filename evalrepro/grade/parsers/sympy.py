"""SWE-bench's ``parse_log_sympy`` (swebench 5.0.2), reproduced quirk for quirk.

Expects SymPy's own runner (``sympy.testing.runtests``) in verbose mode; SWE-bench runs
``bin/test -C --verbose <files>``, which prints per file::

    sympy/core/tests/test_basic.py[3]
    test_a ok
    test_b F
    test_c ok                                                             [FAIL]

and, after all files, a ``___ path.py:test_b ___`` header above each traceback (SymPy
1.13+ writes ``path.py::test_b`` for failures and ``path.py:test_b`` for exceptions).

SWE-bench's SymPy lists were produced by this parser, so its quirks are reproduced:

* Ids are bare function names (``test_a``), so same-named tests of different files
  share one key; traceback headers add a second, path-qualified FAILED key
  (``sympy/core/tests/test_basic.py:test_b``, or ``...py::test_b`` in SymPy 1.13+),
  FAILED even for exceptions.
* The last test of each file is missed: the runner writes the file verdict ``[OK]`` /
  ``[FAIL]`` right-aligned on the same 80-column line, so the line no longer ends with
  `` ok`` / `` F`` / `` E``. Only when the name is long enough that the verdict wraps to
  a new line is the last test keyed. A failing last test still gets its path-qualified
  key from the traceback header.
* A test that prints pushes its result word onto a later line that does not start with
  ``test_``, so it is missed; a printed line such as ``test_x ok`` is keyed.
* Skips (``test_x reason s``), expected failures (``f``) and unexpected passes (``X``)
  are never keyed.
* Line statuses are applied after the header regex, in line order; later lines win.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

# swebench's pattern, verbatim: a traceback header "____ path.py:name ____".
_TRACEBACK_HEADER = re.compile(r"(_*) (.*)\.py:(.*) (_*)")
# "tests finished: 4 passed, 2 failed, ... in 0.12 seconds" (may wrap): the runner's count.
_FINISHED = re.compile(r"tests finished: (.*?)in [\d.]+ seconds", re.DOTALL)
_LINE_STATUSES = ((" E", Status.ERROR), (" F", Status.FAILED), (" ok", Status.PASSED))


def sympy_status_map(log: str) -> dict[str, Status]:
    """swebench's ``parse_log_sympy`` map of ``log``."""
    statuses: dict[str, Status] = {}
    for _, path, name, _ in _TRACEBACK_HEADER.findall(log):
        statuses[f"{path}.py:{name}"] = Status.FAILED
    # split("\n"), not splitlines(): other line breaks (\x0c, \u2028...) stay inside lines.
    for raw in log.split("\n"):
        line = raw.strip()
        if not line.startswith("test_"):
            continue
        for suffix, status in _LINE_STATUSES:
            if line.endswith(suffix):
                statuses[line.split()[0]] = status
    return statuses


@register
class SympyParser(LogParser):
    name: ClassVar[str] = "sympy"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    canary_styles: ClassVar[tuple[str, ...]] = ("function",)
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_sympy",)
    description: ClassVar[str] = (
        "SymPy's bin/test --verbose, keyed exactly as swebench 5.0.2 parse_log_sympy"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses = sympy_status_map(text)
        summaries = _FINISHED.findall(text)
        ran = any(int(n) > 0 for summary in summaries for n in re.findall(r"\d+", summary))
        return ParsedLog(statuses=statuses, suite_ran=ran or bool(statuses))
