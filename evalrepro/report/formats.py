"""Report formats: one table of renderers, shared by ``report``, ``compare``,
``leaderboard`` and bundles.

A format is one entry of :data:`FORMATS`, keyed by its name, with a renderer for each
subject it can show (a run's report, a comparison, a leaderboard), named
``module:function`` and imported only when used. How a format comes out:

- ``console``: the default, a rich table on the terminal (``function(console, subject)``);
- ``text``: printed to stdout instead, with the flag ``--NAME`` (``function(subject) ->
  str``); the text formats of a command exclude each other;
- ``page``: a file written beside any of them, with ``--NAME FILE``
  (``function(subject, **context) -> str``: the command gives the page's title and links).

A command offers exactly the formats that render its subject (:func:`format_arguments`);
a bundle holds the run report in every format with a ``bundle_file``. Adding a format is
adding its entry here. Renderers show what a report record holds; they compute nothing.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

Subject = Literal["run", "comparison", "leaderboard"]
Output = Literal["console", "text", "page"]


@dataclass(frozen=True)
class ReportFormat:
    name: str
    output: Output
    #: The flag's help, unless a command says it its own way.
    help: str
    #: subject -> the renderer, ``module:function``.
    renderers: Mapping[Subject, str]
    #: The run report's file in a bundle's ``reports/`` (None: not bundled).
    bundle_file: str | None = None
    #: Arguments every call of the renderer takes (its ``context``).
    context: Mapping[str, Any] = field(default_factory=dict)

    def renderer(self, subject: Subject) -> Callable[..., Any]:
        module, _, function = self.renderers[subject].partition(":")
        return getattr(importlib.import_module(module), function)

    def render(self, subject: Subject, value: Any, *more: Any, **context: Any) -> str:
        """``value`` as this format's text (a text or page format); ``more`` and
        ``context``: what a page shows beside it (the runs of a comparison, links)."""
        return self.renderer(subject)(value, *more, **{**self.context, **context})


def json_text(value: BaseModel) -> str:
    """A report record as its JSON: what ``--json`` prints and a bundle holds."""
    return value.model_dump_json(indent=2) + "\n"


FORMATS: dict[str, ReportFormat] = {
    f.name: f
    for f in (
        ReportFormat(
            "console",
            "console",
            "tables on the terminal (the default)",
            {
                "run": "evalrepro.report.run_printer:print_run_report",
                "comparison": "evalrepro.report.compare:print_comparison_report",
                "leaderboard": "evalrepro.report.leaderboard:print_leaderboard",
            },
        ),
        ReportFormat(
            "json",
            "text",
            "one JSON object",
            {
                "run": "evalrepro.report.formats:json_text",
                "comparison": "evalrepro.report.formats:json_text",
                "leaderboard": "evalrepro.report.formats:json_text",
            },
            bundle_file="report.json",
        ),
        ReportFormat(
            "markdown",
            "text",
            "Markdown tables (for a paper appendix)",
            {
                "run": "evalrepro.report.run_printer:markdown_run_report",
                "leaderboard": "evalrepro.report.leaderboard:markdown_leaderboard",
            },
            bundle_file="report.md",
        ),
        ReportFormat(
            "latex",
            "text",
            "a booktabs table to \\input{} in a paper",
            {
                "run": "evalrepro.report.latex:render_run_latex",
                "comparison": "evalrepro.report.latex:render_comparison_latex",
                "leaderboard": "evalrepro.report.latex:render_leaderboard_latex",
            },
        ),
        ReportFormat(
            "html",
            "page",
            "also write a self-contained HTML page",
            {
                "run": "evalrepro.report.html:render_run_html",
                "comparison": "evalrepro.report.html:render_comparison_html",
                "leaderboard": "evalrepro.report.leaderboard:render_leaderboard_html",
            },
            bundle_file="report.html",
        ),
    )
}


def formats_for(subject: Subject, output: Output | None = None) -> list[ReportFormat]:
    """The formats that render ``subject`` (of one ``output``), in the table's order."""
    return [
        f
        for f in FORMATS.values()
        if subject in f.renderers and (output is None or f.output == output)
    ]


def format_arguments(
    parser: argparse.ArgumentParser, subject: Subject, helps: Mapping[str, str] | None = None
) -> None:
    """The flags of the formats that render ``subject``: the text formats exclusive of
    each other, each page format beside them; ``helps``: a command's own help texts."""
    helps = helps or {}
    printed = parser.add_mutually_exclusive_group()
    for text in formats_for(subject, "text"):
        printed.add_argument(
            f"--{text.name}", action="store_true", help=helps.get(text.name, text.help)
        )
    for page in formats_for(subject, "page"):
        parser.add_argument(
            f"--{page.name}", type=Path, metavar="FILE", help=helps.get(page.name, page.help)
        )


def printed_format(args: argparse.Namespace, subject: Subject) -> ReportFormat:
    """The format to print: the text format asked for, else the console."""
    for text in formats_for(subject, "text"):
        if getattr(args, text.name, False):
            return text
    return FORMATS["console"]


def pages(args: argparse.Namespace, subject: Subject) -> dict[str, Path]:
    """The page formats asked for: name -> the file to write."""
    asked = {page.name: getattr(args, page.name, None) for page in formats_for(subject, "page")}
    return {name: path for name, path in asked.items() if path is not None}


def bundled() -> list[ReportFormat]:
    """The formats a bundle holds the run report in."""
    return [f for f in FORMATS.values() if f.bundle_file is not None and "run" in f.renderers]
