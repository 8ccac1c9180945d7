"""What every command shares: the exit codes and the console it prints to."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

from evalrepro.text import visible

#: Exit codes: a passed run or check, a failed check (verify, compare), a user error,
#: a failed gate. A crash (a bug) exits 1 with a traceback, like any Python program.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_GATE_FAILED = 3
#: reproduce: the plan made here is not the bundle's (an image differs); nothing ran.
EXIT_NOT_REPRODUCIBLE = 4


class SafeConsole(Console):
    """A console whose text is shown through :func:`evalrepro.text.visible` as it is
    written: every id, name, log line and detail printed (from a dataset, a lockfile, a
    bundle, a sandbox) reaches the terminal without a raw control byte, whatever the
    printing code did. Only rich's own control segments (cursor moves of a live display)
    and the styles it renders stay codes."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style)
            for segment in buffer
        )


def make_console(*, stderr: bool = False) -> Console:
    """The console every command prints to. Outside a terminal (a log, a pipe) rich would
    squeeze tables into 80 columns and cut instance ids and paths: never cut them there."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 400
    return SafeConsole(stderr=stderr, width=width)
