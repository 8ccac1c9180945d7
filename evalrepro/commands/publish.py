"""``evalrepro publish``: runs that ``verify`` passes into the team database (their
records) and the object store (their files). Exit 1 when a run was refused."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from evalrepro.commands._arguments import database_arguments
from evalrepro.commands._common import EXIT_CHECK_FAILED, EXIT_OK, make_console


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    publish = subparsers.add_parser(
        "publish",
        help="runs that verify passes into the team database and object store (exit 1: "
        "a run was refused)",
        description="Each run is checked as `verify RUN` checks it (a run with any problem "
        "but unfinished trials is refused), its files go to the object store, then its "
        "records (run, trials, attempts, test statuses, metrics) to the database in one "
        "transaction. Publishing a run again changes nothing; a resumed run gains its new "
        "trials. An interrupted publish completes when run again.",
    )
    publish.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    database_arguments(
        publish,
        store="the object store for the runs' files: a folder, file:///PATH or "
        "s3://BUCKET/PREFIX (default: $EVALREPRO_STORE, else the folder DB.objects beside an "
        "SQLite database)",
    )
    return publish


def main(args: argparse.Namespace) -> int:
    from evalrepro.database import require_team_extra

    require_team_extra()
    from evalrepro.database.engine import open_database
    from evalrepro.database.publish import RunRefused, publish_run
    from evalrepro.database.url import database_argument, parse_database_url, store_argument
    from evalrepro.store.objects import ObjectStore

    url = parse_database_url(database_argument(args.db))
    store = ObjectStore.open(store_argument(url, args.store))
    engine, url = open_database(url)
    console, errors = make_console(), make_console(stderr=True)
    refused = 0
    try:
        for run in args.runs:
            try:
                done = publish_run(run, engine, url, store)
            except RunRefused as refusal:
                errors.print(f"evalrepro: {escape(str(refusal))}", highlight=False)
                refused += 1
                continue
            unfinished = (
                ""
                if done.finished == done.planned
                else f", unfinished: {done.finished} of {done.planned} trials"
            )
            what = (
                "already published, unchanged"
                if done.unchanged
                else f"{done.added} new trial{'' if done.added == 1 else 's'}"
            )
            leftovers = (
                f"; {done.leftovers_removed} temporary objects of killed uploads removed"
                if done.leftovers_removed
                else ""
            )
            console.print(
                f"published {done.run_id} {escape(str(run))}: {what}{unfinished}{leftovers}",
                highlight=False,
            )
    finally:
        engine.dispose()
    console.print(f"database: {escape(url.redacted)}; store: {escape(store.url)}", highlight=False)
    return EXIT_CHECK_FAILED if refused else EXIT_OK
