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
from typing import IO, Any

from rich.console import Console
from rich.table import Table as RichTable

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


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """The console a command prints to (stdout, or stderr), or one that writes ``file``."""
    stream = file if file is not None else sys.stderr if stderr else sys.stdout
    width, height = console_size(stream)
    # Both given: rich would take 80 columns for TERM=dumb (an editor's shell) otherwise.
    return Console(file=file, stderr=stderr, width=width, height=height)


class Table(RichTable):
    """rich's table whose columns fold a long value over lines (rich's default cuts it
    with "…" when the table is wider than the console)."""

    def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(header, *args, **kwargs)
