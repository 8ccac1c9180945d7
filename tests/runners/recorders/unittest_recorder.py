"""``python -m unittest`` that also records every outcome the runner reports, as JSON.

Copied into a temp workdir by ``tests/runners/unittest.py`` and run from the folder
holding the tests: ``EVALREPRO_TRUTH=truth.json python unittest_recorder.py [-v] names``.
It is ``python -m unittest``: the same ``unittest.main`` and ``TextTestRunner``, whose
result class only gains recording, so the log is the runner's real output. Django's
runner uses the same result class (``django_recorder.py``).

Ids are ``test.id()``; a failing subtest is ``subtest.id()``
(``mod.Class.test_x (i=1)``) and makes its test FAILED (ERROR if its subtests only
errored), since unittest gives that test no outcome of its own; passing subtests are
not recorded (the runner's text output does not show them either).
"""

from __future__ import annotations

import json
import os
import sys
import unittest
from typing import Any

ExcInfo = Any  # (type, value, traceback), as unittest passes it


class RecordingResult(unittest.TextTestResult):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, str] = {}

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self.outcomes[test.id()] = "PASSED"

    def addFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:
        super().addFailure(test, err)
        self.outcomes[test.id()] = "FAILED"

    def addError(self, test: unittest.TestCase, err: ExcInfo) -> None:
        super().addError(test, err)  # test may be a setUpClass / import-error stand-in
        self.outcomes[test.id()] = "ERROR"

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self.outcomes[test.id()] = "SKIPPED"

    def addExpectedFailure(self, test: unittest.TestCase, err: ExcInfo) -> None:
        super().addExpectedFailure(test, err)
        self.outcomes[test.id()] = "XFAIL"

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self.outcomes[test.id()] = "XPASS"

    def addSubTest(
        self, test: unittest.TestCase, subtest: unittest.TestCase, err: ExcInfo | None
    ) -> None:
        super().addSubTest(test, subtest, err)
        if err is None:
            return
        failed = issubclass(err[0], test.failureException)
        self.outcomes[subtest.id()] = "FAILED" if failed else "ERROR"
        if failed or self.outcomes.get(test.id()) != "FAILED":
            self.outcomes[test.id()] = "FAILED" if failed else "ERROR"

    def stopTestRun(self) -> None:
        super().stopTestRun()
        with open(os.environ["EVALREPRO_TRUTH"], "w", encoding="utf-8") as out:
            json.dump(self.outcomes, out, indent=1, sort_keys=True)


class RecordingRunner(unittest.TextTestRunner):
    resultclass = RecordingResult


if __name__ == "__main__":
    sys.argv[0] = "python -m unittest"  # what unittest's own __main__ does
    unittest.main(module=None, testRunner=RecordingRunner)
