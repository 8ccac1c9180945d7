"""``evalrepro leaderboard``: the published runs ranked by resolve rate with intervals,
one table per comparability class; how each other class differs is named."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from evalrepro import atomic
from evalrepro.commands._arguments import database_arguments, html_argument, json_argument
from evalrepro.commands._common import EXIT_OK, make_console


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    board = subparsers.add_parser(
        "leaderboard",
        help="published runs ranked by resolve rate (with intervals), among comparable runs",
    )
    database_arguments(board, store=None)
    board.add_argument("--dataset", metavar="NAME", help="only runs of this dataset")
    printed = board.add_mutually_exclusive_group()
    json_argument(printed, "print one JSON object")
    printed.add_argument("--markdown", action="store_true", help="Markdown tables")
    printed.add_argument(
        "--latex", action="store_true", help="one LaTeX table (booktabs) for a paper"
    )
    html_argument(board, "also write a self-contained HTML page")
    return board


def main(args: argparse.Namespace) -> int:
    from evalrepro.database import require_team_extra

    require_team_extra()
    from evalrepro.database.engine import open_database
    from evalrepro.database.queries import leaderboard
    from evalrepro.database.url import database_argument
    from evalrepro.report.leaderboard import (
        markdown_leaderboard,
        print_leaderboard,
        render_leaderboard_html,
    )

    engine, url = open_database(database_argument(args.db), create=False)
    try:
        board = leaderboard(engine, url, dataset=args.dataset)
    finally:
        engine.dispose()
    html: Path | None = args.html
    if html is not None:
        atomic.write_text(html, render_leaderboard_html(board))
    if args.json:
        print(board.model_dump_json(indent=2))
    elif args.markdown:
        print(markdown_leaderboard(board), end="")
    elif args.latex:
        from evalrepro.report.latex import render_leaderboard_latex

        print(render_leaderboard_latex(board), end="")
    else:
        console = make_console()
        print_leaderboard(console, board)
        if html is not None:
            console.print(f"html leaderboard: {escape(str(html))}", highlight=False)
    return EXIT_OK
