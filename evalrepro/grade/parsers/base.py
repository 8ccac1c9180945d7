"""What a log parser is: log text in, ``{test id: Status}`` out.

Two families exist (see ../shared/docs/semantics.md, "Parsing"):

* ``swebench``: reproduces the status maps of the official ``swebench`` package key for
  key, quirks included, because SWE-bench's FAIL_TO_PASS / PASS_TO_PASS lists were
  produced by those parsers.
* ``native``: gets every test right (full ids, XPASS, skips, subtests), checked against
  the ground truth the runner itself writes (JUnit XML, unittest's result object).

A parser sees only the text between the test-output markers (``evalrepro.grade.testlog``
cuts it out); it never decides resolution, it only reports what the log says.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

# The family is the dataset's (its config names it); each parser declares its own.
from evalrepro.sample import Family as Family


class Status(StrEnum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    ERROR = "ERROR"
    XFAIL = "XFAIL"
    XPASS = "XPASS"


@dataclass(frozen=True)
class ParsedLog:
    """The facts a parser read from a log region.

    ``suite_ran`` is positive evidence that the runner executed at least one test (a
    count line such as ``Ran 3 tests`` or ``collected 5 items``); it is what makes an
    empty map of a FAIL_ONLY runner mean "nothing failed" rather than "nothing ran".
    ``problems`` lists reasons the map cannot be trusted (e.g. the runner's own totals
    disagree with the lines parsed); any problem makes the log unscorable.
    """

    #: Native parsers give a :class:`Status`. A compatible parser may also carry a token
    #: exactly as swebench records it (``ERROR:`` from pytest's usage error line), which
    #: grading, like swebench's, counts neither passed nor failed.
    statuses: dict[str, Status | str]
    suite_ran: bool
    problems: tuple[str, ...] = field(default=())


class LogParser(ABC):
    """A named, registered parser for one test framework's output.

    Subclasses set the class attributes and implement :meth:`parse`.
    """

    name: ClassVar[str]
    family: ClassVar[Family]
    #: Only failures are printed: a test passes unless explicitly FAILED, and only with
    #: evidence that the suite ran (semantics.md, "Grading").
    fail_only: ClassVar[bool] = False
    #: Other names the parser answers to (e.g. swebench's ``parse_log_pytest``).
    aliases: ClassVar[tuple[str, ...]] = ()
    #: One line for ``evalrepro parsers`` and the docs: the runner and invocation.
    description: ClassVar[str] = ""
    #: The language of the canaries placed for this runner (a key of
    #: ``evalrepro.grade.canary._LANGUAGES``: "python", "go", "rust", "java", "php",
    #: "ruby", "javascript", "junit"); None: no canaries.
    canary_language: ClassVar[str | None] = None
    #: The canary tests (``evalrepro.grade.canary``) this runner collects from a Python
    #: test file: "function" (module-level ``test_*``), "method" (``unittest.TestCase``);
    #: none for a runner that collects neither.
    canary_styles: ClassVar[tuple[str, ...]] = ()
    canary_language: ClassVar[str | None] = "python"
    #: How this runner selects one test and what its exit status says, for fresh runs
    #: (a key of ``evalrepro.grade.fresh.RUNNERS``); None for a runner without that.
    runner: ClassVar[str | None] = None
    #: The language ecosystems whose projects this runner tests (names of
    #: ``evalrepro.config.ecosystems.ECOSYSTEMS``): under ``protection.ecosystems: auto``
    #: their test infrastructure is protected in the instances it reads. None: the
    #: dataset's ``patterns`` alone, unless the dataset names its ecosystems.
    ecosystems: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def parse(self, text: str) -> ParsedLog:
        """Parse the test-output region of a log."""

    def command_advice(self, test_cmd: str) -> str | None:
        """What ``test_cmd`` visibly lacks for this parser to read its output, or None.

        Advice, not a refusal: a config file of the project (``addopts``) may add it."""
        return None
