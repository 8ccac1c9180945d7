"""Report formats are one table of renderers (``evalrepro.report.formats``): each command
offers exactly the formats that render its subject, and a format added to the table is
offered, and rendered, with nothing else edited."""

from __future__ import annotations

import argparse
import io

from rich.console import Console

from evalrepro.cli import build_parser, main
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment
from evalrepro.report import formats
from evalrepro.report.formats import FORMATS, ReportFormat, formats_for

#: Each command that shows a report, and its subject.
COMMANDS = {"report": "run", "compare": "comparison", "leaderboard": "leaderboard"}


def subcommand(name: str) -> argparse.ArgumentParser:
    top = build_parser()
    (choices,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return choices.choices[name]


def format_flags(parser: argparse.ArgumentParser, names: set[str]) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.removeprefix("--") in names
    }


def test_each_command_offers_exactly_the_formats_that_render_its_subject():
    # Any flag named as a format of the table (or as one a command once wired by hand).
    names = set(FORMATS) | {"json", "markdown", "latex", "html", "csv"}
    for command, subject in COMMANDS.items():
        wanted = {f"--{f.name}" for f in formats_for(subject) if f.output != "console"}
        assert format_flags(subcommand(command), names) == wanted, command
    assert {f.name for f in formats_for("run")} == {"console", "json", "markdown", "latex", "html"}
    # A bundle holds the run report in the table's bundled formats.
    assert {f.bundle_file for f in formats.bundled()} == {"report.json", "report.md", "report.html"}


def csv_rates(report) -> str:
    """A format that is not evalrepro's: the run's planned trials, as CSV."""
    return f"run,trials\n{report.run},{len(report.trials)}\n"


def test_a_format_added_to_the_table_is_offered_and_rendered(tmp_path, monkeypatch, capsys):
    run_experiment(
        compose(["+experiment=demo", "environment=fake"]),
        Console(file=io.StringIO()),
        run_dir=tmp_path / "run",
        cache_dir=tmp_path / "cache",
    )
    monkeypatch.setitem(
        FORMATS,
        "csv",
        ReportFormat("csv", "text", "a CSV line", {"run": f"{__name__}:csv_rates"}),
    )
    assert format_flags(subcommand("report"), {"csv"}) == {"--csv"}
    assert format_flags(subcommand("compare"), {"csv"}) == set()  # no comparison renderer
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--csv"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("run,trials\n") and printed.endswith(",12\n")
    # And the table's own formats print what their renderer gives.
    assert main(["report", str(tmp_path / "run"), "--json"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("{") and printed.endswith("}\n")
