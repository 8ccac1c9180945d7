"""SymPy's own test runner, verbose, recording every outcome it reports as JSON.

Copied into a temp workdir by ``tests/runners/sympy.py`` and run there:
``EVALREPRO_TRUTH=truth.json python sympy_recorder.py sympy/corpus/tests/test_x.py``.
It calls ``sympy.testing.runtests.test(..., verbose=True)``, what SymPy's
``bin/test --verbose`` calls, with two changes that leave the output format alone:

* the runner looks for test files under the SymPy root, which it derives from its own
  location; it is pointed at the current directory, so test files written under
  ``./sympy/`` are found and shown with the relative paths of a SymPy checkout;
* its reporter is subclassed to record each outcome under ``<file>::<test>``.

``sys.executable`` is shown as ``python`` so the log holds no machine path.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from sympy.testing import runtests


class RecordingReporter(runtests.PyTestReporter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, str] = {}

    def _record(self, status: str) -> None:
        self.outcomes[f"{self._active_file}::{self._active_f.__name__}"] = status

    def test_pass(self, char: str = ".") -> None:
        super().test_pass(char)
        self._record("PASSED")

    def test_fail(self, exc_info: Any) -> None:
        super().test_fail(exc_info)
        self._record("FAILED")

    def test_exception(self, exc_info: Any) -> None:
        super().test_exception(exc_info)
        self._record("ERROR")

    def test_skip(self, v: Any = None) -> None:
        super().test_skip(v)
        self._record("SKIPPED")

    def test_xfail(self) -> None:
        super().test_xfail()
        self._record("XFAIL")

    def test_xpass(self, v: Any) -> None:
        super().test_xpass(v)
        self._record("XPASS")

    def finish(self) -> bool:
        ok = super().finish()
        with open(os.environ["EVALREPRO_TRUTH"], "w", encoding="utf-8") as out:
            json.dump(self.outcomes, out, indent=1, sort_keys=True)
        return ok


if __name__ == "__main__":
    runtests.get_sympy_dir = lambda: "."
    runtests.PyTestReporter = RecordingReporter
    sys.executable = "python"
    # PYTHONHASHSEED is set by the caller, so test() runs in this process (no re-exec).
    ok = runtests.test(*sys.argv[1:], verbose=True, seed=20240101)
    sys.exit(0 if ok else 1)
