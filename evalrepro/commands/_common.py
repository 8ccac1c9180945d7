"""What every command shares: the exit codes and the console it prints to."""

from __future__ import annotations

from evalrepro.console import make_console

__all__ = ["make_console"]

#: Exit codes: a passed run or check, a failed check (verify, compare), a user error,
#: a failed gate. A crash (a bug) exits 1 with a traceback, like any Python program.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_GATE_FAILED = 3
#: reproduce: the plan made here is not the bundle's (an image differs); nothing ran.
EXIT_NOT_REPRODUCIBLE = 4
