"""SWE-bench's ``parse_log_django`` (swebench 5.0.2), reproduced quirk for quirk.

Expects Django's test runner at ``--verbosity 2``; SWE-bench runs
``./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 <labels>``, which
prints ``test_x (module.Class) ... ok`` (Python 3.11+: ``test_x (module.Class.test_x)``).

The FAIL_TO_PASS / PASS_TO_PASS lists of SWE-bench's Django instances were produced by
this parser, so its quirks are part of the test ids and are reproduced on purpose:

* The id is whatever precedes `` ... `` on the status line. At verbosity 2 a test with
  a docstring prints ``test_x (m.C)`` on one line and the docstring's first line before
  `` ... ok``, so such a test is keyed by its docstring line (two tests with the same
  first docstring line share one key). Lines are stripped, so subtest lines keep their
  parameters: ``test_x (m.C) (i=1)``.
* ``FAIL:`` / ``ERROR:`` block headers key the failure by the second word of the line
  only: ``test_x``, ``setUpClass``, or a docstring-less subtest's bare method name.
* A line *starting* with ``ok`` marks the last line that contained `` ... `` as PASSED
  (the runner prints ``ok`` on its own line when the test wrote output after `` ... ``).
  It also fires on output such as ``okay`` and on a line already resolved. Lines are
  stripped first, so a line that ends in `` ... `` (``test_x (m.C) ... `` then output
  on the next lines, or a test with subtests) does not count as containing it.
* Pass suffixes are `` ... ok``, `` ... OK`` and `` ...  OK``. The last two come from
  migration output (``  Applying x... OK``) that sat in stdout's buffer until a test
  flushed it, so its `` OK`` lands after that test's `` ... ``: the test is PASSED
  whatever its real verdict (the corpus has such a failed test).
* `` ... skipped`` anywhere in a line is a skip; ``expected failure`` and
  ``unexpected success`` lines are never keyed.
* Any line containing ``--version is equivalent to version`` (the docstring of
  admin_scripts' ``test_version_alternative``) adds that key as PASSED, even when the
  line is the docstring under a ``FAIL:`` header.
* django__django-7188: a line starting with
  ``Applying sites.0002_alter_domain_unique...test_no_migrations`` is cut after its
  first ``...`` before the id is taken, and the later checks see the cut line.
* Checks run per line in swebench's order and later lines overwrite earlier keys; then
  three whole-log regexes (below) mark tests PASSED whose `` ... `` and ``ok`` are
  separated by known chatter, overwriting anything. The third regex omits the period
  Django prints after ``(0 silenced)``, so it never matches real Django output.

One deliberate departure: swebench raises ``IndexError`` on a line starting with
``FAIL:`` or ``ERROR:`` that has no second word (``FAIL:``, ``ERROR:x``); here such a
line is not keyed.
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_VERSION_TEST = "--version is equivalent to version"
_PASS_SUFFIXES = (" ... ok", " ... OK", " ...  OK")
_DJANGO_7188 = "Applying sites.0002_alter_domain_unique...test_no_migrations"
_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)

# swebench's patterns, verbatim: runner chatter between " ... " and "ok" (see docstring).
_CHATTER_THEN_OK = (
    r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
)


def django_status_map(log: str) -> dict[str, Status]:
    """swebench's ``parse_log_django`` map of ``log``."""
    statuses: dict[str, Status] = {}
    prev_test: str | None = None
    # split("\n"), not splitlines(): other line breaks (\x0c, \u2028...) stay inside lines.
    for raw in log.split("\n"):
        line = raw.strip()
        if _VERSION_TEST in line:
            statuses[_VERSION_TEST] = Status.PASSED
        if " ... " in line:
            prev_test = line.split(" ... ")[0]
        for suffix in _PASS_SUFFIXES:
            if line.endswith(suffix):
                if line.startswith(_DJANGO_7188):
                    line = line.split("...", 1)[-1].strip()
                statuses[line.rsplit(suffix, 1)[0]] = Status.PASSED
                break
        if " ... skipped" in line:
            statuses[line.split(" ... skipped")[0]] = Status.SKIPPED
        if line.endswith(" ... FAIL"):
            statuses[line.split(" ... FAIL")[0]] = Status.FAILED
        if line.startswith("FAIL:") and len(line.split()) > 1:
            statuses[line.split()[1].strip()] = Status.FAILED
        if line.endswith(" ... ERROR"):
            statuses[line.split(" ... ERROR")[0]] = Status.ERROR
        if line.startswith("ERROR:") and len(line.split()) > 1:
            statuses[line.split()[1].strip()] = Status.ERROR
        if line.startswith("ok") and prev_test is not None:
            statuses[prev_test] = Status.PASSED
    for pattern in _CHATTER_THEN_OK:
        for match in re.finditer(pattern, log, re.MULTILINE):
            statuses[match.group(1)] = Status.PASSED
    return statuses


@register
class DjangoParser(LogParser):
    name: ClassVar[str] = "django"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "django"
    canary_styles: ClassVar[tuple[str, ...]] = ("method",)
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_django",)
    description: ClassVar[str] = (
        "Django runner at --verbosity 2, keyed exactly as swebench 5.0.2 parse_log_django"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses = django_status_map(text)
        ran = any(int(count) > 0 for count in _RAN.findall(text))
        return ParsedLog(statuses=statuses, suite_ran=ran or bool(statuses))
