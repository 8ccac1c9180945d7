"""The one place consoles and tables are made: as wide as the reader's screen, and a value
too long for its column wraps over lines, never cut.

Width: ``$COLUMNS`` when set (``COLUMNS=$COLUMNS evalrepro report RUN | less``); else the
width of the terminal the console writes to; else (a pipe, a file, a CI log) wide enough
that a row stays one line for grep. A pipe's output does not follow the terminal its
command was typed in: the same command writes the same file from a terminal and from CI.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console
from rich.segment import Segment
from rich.table import Table as RichTable

from evalrepro.text import visible

#: The width with no terminal and no $COLUMNS: ids, paths and digests on one line.
NO_TERMINAL_WIDTH = 400


def console_size(stream: IO[str]) -> tuple[int, int]:
    """Columns and lines for a console writing ``stream``."""
    size = None
    try:
        if stream.isatty():
            size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        pass
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    else:
        width = size.columns if size is not None and size.columns > 0 else NO_TERMINAL_WIDTH
    return width, size.lines if size is not None and size.lines > 0 else 25


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


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """The console a command prints to (stdout, or stderr), or one that writes ``file``."""
    stream = file if file is not None else sys.stderr if stderr else sys.stdout
    width, height = console_size(stream)
    # Both given: rich would take 80 columns for TERM=dumb (an editor's shell) otherwise.
    return SafeConsole(file=file, stderr=stderr, width=width, height=height)


class Table(RichTable):
    """rich's table whose columns fold a long value over lines (rich's default cuts it
    with "…" when the table is wider than the console)."""

    def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(header, *args, **kwargs)
