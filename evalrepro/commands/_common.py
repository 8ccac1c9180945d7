"""What every command shares: the exit codes and the console it prints to."""

from __future__ import annotations

import sys

from rich.console import Console

#: Exit codes: a passed run or check, a failed check (verify, compare), a user error,
#: a failed gate. A crash (a bug) exits 1 with a traceback, like any Python program.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_GATE_FAILED = 3
#: reproduce: the plan made here is not the bundle's (an image differs); nothing ran.
EXIT_NOT_REPRODUCIBLE = 4


def make_console(*, stderr: bool = False) -> Console:
    """The console every command prints to. Outside a terminal (a log, a pipe) rich would
    squeeze tables into 80 columns and cut instance ids and paths: never cut them there."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 400
    return Console(stderr=stderr, width=width)
