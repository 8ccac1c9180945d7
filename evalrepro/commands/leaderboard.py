"""``evalrepro leaderboard``: the published runs ranked by resolve rate with intervals,
one table per comparability class; how each other class differs is named."""

from __future__ import annotations

import argparse

from rich.markup import escape

from evalrepro import atomic
from evalrepro.commands._arguments import database_arguments
from evalrepro.commands._common import EXIT_OK, make_console
from evalrepro.report.formats import FORMATS, format_arguments, pages, printed_format


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    board = subparsers.add_parser(
        "leaderboard",
        help="published runs ranked by resolve rate (with intervals), among comparable runs",
    )
    database_arguments(board, store=None)
    board.add_argument("--dataset", metavar="NAME", help="only runs of this dataset")
    format_arguments(
        board,
        "leaderboard",
        helps={
            "json": "print one JSON object",
            "markdown": "Markdown tables",
            "latex": "one LaTeX table (booktabs) for a paper",
        },
    )
    return board


def main(args: argparse.Namespace) -> int:
    from evalrepro.database import require_team_extra

    require_team_extra()
    from evalrepro.database.engine import open_database
    from evalrepro.database.queries import leaderboard
    from evalrepro.database.url import database_argument

    engine, url = open_database(database_argument(args.db), create=False)
    try:
        board = leaderboard(engine, url, dataset=args.dataset)
    finally:
        engine.dispose()
    written = pages(args, "leaderboard")
    for name, path in written.items():
        atomic.write_text(path, FORMATS[name].render("leaderboard", board))
    printed = printed_format(args, "leaderboard")
    if printed.output == "console":
        console = make_console()
        printed.renderer("leaderboard")(console, board)
        for name, path in written.items():
            console.print(f"{name} leaderboard: {escape(str(path))}", highlight=False)
    else:
        print(printed.render("leaderboard", board), end="")
    return EXIT_OK
