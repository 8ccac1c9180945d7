"""``evalrepro unpublish``: retract a published run. Its rows stay in the database (the
team's history: ``runs`` lists it as retracted, ``report --db`` still reads it); it leaves
the leaderboard. A run that is not there is refused (exit 2)."""

from __future__ import annotations

import argparse

from rich.markup import escape

from evalrepro.commands._arguments import database_arguments
from evalrepro.commands._common import EXIT_OK, make_console


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    unpublish = subparsers.add_parser(
        "unpublish",
        help="retract a published run: kept in the database's history, off the leaderboard",
        description="The run (its id as `evalrepro runs` lists it, its first characters, or "
        "its run folder) is marked retracted, with the time and the reason given: every row "
        "stays, `runs` lists it as retracted and the leaderboard leaves it out. Retracting it "
        "again changes nothing.",
    )
    unpublish.add_argument("run", metavar="RUN", help="a run id (or its start) or a run folder")
    unpublish.add_argument("--reason", metavar="TEXT", help="why (shown with the run)")
    database_arguments(unpublish, store=None)
    return unpublish


def main(args: argparse.Namespace) -> int:
    from evalrepro.database import require_team_extra

    require_team_extra()
    from evalrepro.database.engine import open_database
    from evalrepro.database.publish import unpublish_run
    from evalrepro.database.url import database_argument

    engine, url = open_database(database_argument(args.db), create=False)
    try:
        done = unpublish_run(engine, url, args.run, args.reason)
    finally:
        engine.dispose()
    when = done.retracted_at.strftime("%Y-%m-%d %H:%M UTC")
    why = f": {done.reason}" if done.reason else ""
    state = "already retracted" if done.earlier else "retracted"
    make_console().print(escape(f"{done.run_id} {state} on {when}{why}"), highlight=False)
    return EXIT_OK
