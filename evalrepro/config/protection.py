"""What a model patch may not change (test infrastructure), and what happens if it does:
the dataset's declared policy, ``dataset.protection`` in its config.

A model only: :func:`evalrepro.plan.testspec.resolve_protection` resolves it against an
instance's test files into the TestSpec's rules (docs/threat-model.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrepro.config.ecosystems import ECOSYSTEMS, PYTHON_PATTERNS

#: The default of ``patterns``: Python's test infrastructure, the patterns of every dataset
#: before ecosystems existed (``ECOSYSTEMS["python"]``'s, the same tuple).
DEFAULT_PATTERNS: tuple[str, ...] = PYTHON_PATTERNS


class TestProtection(BaseModel):
    """The dataset's declared policy (``dataset.protection`` in its config)."""

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Test infrastructure the patch changed: restored to the base commit before the tests run, only
    #: recorded, or the trial is invalid.
    policy: Literal["restore", "record", "invalid"] = "restore"
    #: Code that reaches into the test framework (static scan, exit guard): the trial is invalid, or
    #: it is only recorded.
    suspect: Literal["invalid", "record"] = "invalid"
    #: Test infrastructure files, by name (or by whole path when the pattern has a "/"), anywhere in
    #: the repo.
    patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_PATTERNS))
    #: Whose test infrastructure is protected too: ``auto``, the ecosystems of each
    #: instance's parser (``go test``: ``go``; pytest: ``python``), or a list of names
    #: (``evalrepro/config/ecosystems.py``: go, rust, maven, gradle, javascript, cmake,
    #: ruby, php, python). Their patterns are added to ``patterns`` for each instance;
    #: ``[]``: ``patterns`` alone.
    ecosystems: Literal["auto"] | list[str] = "auto"
    #: ``auto``: for each file of an instance's test patch, its nearest ancestor folder
    #: named like a test folder (``tests``, ``test``, ``testing``, ``t``, ``spec``,
    #: ``__tests__``). Or an explicit list of folders, relative to the repo root.
    test_dirs: Literal["auto"] | list[str] = "auto"
    #: Canary tests (tests whose outcome the harness knows) run beside the instance's:
    #: a runner that reports them wrongly was tampered with, and the trial is invalid.
    #: Off only for a dataset whose runner cannot collect them (they are drawn only where
    #: they cannot change an honest verdict).
    canaries: bool = True
    #: The test framework's own source, for a dataset whose repository is the framework
    #: (pytest's: ``["src/_pytest/*", "src/pytest/*"]``): files matching these patterns may
    #: define pytest hooks and use its internals. No folder name is exempt otherwise.
    framework_sources: list[str] = []
    #: The repository's own ``sitecustomize`` and ``usercustomize`` modules run when the test
    #: interpreter starts. Off by default: a patch that adds one would run code before the
    #: runner does. On only for a dataset whose tests need the project's own.
    site_hooks: bool = False
    #: How many FAIL_TO_PASS tests (drawn per trial) are also run alone, each in a fresh
    #: process the supervisor starts after the run and judges by its exit status, beside
    #: one must-fail canary run alone the same way. 0: off (it costs a runner start each).
    fresh_runs: int = Field(default=0, ge=0, le=100)
    #: How many FAIL_TO_PASS tests (drawn per trial) are also run by a second runner, a
    #: plain driver without the test framework, each in a fresh process after the run,
    #: beside one must-fail canary (``evalrepro/run/undertest.py``): a test that passes
    #: under its runner and fails without it is code that behaves otherwise under test.
    #: 0: off. Only tests that allow a plain run are run (the driver decides).
    second_runner: int = Field(default=0, ge=0, le=100)
    #: The tests read the repository's git data (``git describe`` for a version, a test of
    #: the project's git tooling). Off by default: from the repository's ``.git`` (``git
    #: diff``, ``git show HEAD:<file>``) code under test learns which tests the test patch
    #: added, so the supervisor locks it (and the harness's history) away before the tests.
    #: On, both stay readable, and each trial records it (``tests_started.git``).
    tests_read_git: bool = False

    @field_validator("ecosystems")
    @classmethod
    def _known_ecosystems(cls, value: Literal["auto"] | list[str]) -> Literal["auto"] | list[str]:
        if value != "auto":
            unknown = [name for name in value if name not in ECOSYSTEMS]
            if unknown:
                raise ValueError(
                    f"unknown ecosystem {unknown[0]!r}; known: {', '.join(sorted(ECOSYSTEMS))}"
                )
        return value
