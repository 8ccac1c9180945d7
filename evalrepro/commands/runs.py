"""``evalrepro runs``: the runs published to the team database, filtered."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from rich.markup import escape

from evalrepro.commands._arguments import database_arguments, json_argument
from evalrepro.commands._common import EXIT_OK, make_console
from evalrepro.console import Table
from evalrepro.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    runs = subparsers.add_parser(
        "runs",
        help="the runs published to the team database (filter by dataset, target, date, "
        "comparability class)",
    )
    database_arguments(runs, store=None)
    runs.add_argument("--dataset", metavar="NAME", help="only runs of this dataset")
    runs.add_argument("--target", metavar="ID", help="only runs of this target")
    runs.add_argument("--experiment", metavar="NAME", help="only runs of this experiment")
    runs.add_argument("--since", metavar="DATE", help="only runs started on or after DATE (UTC)")
    runs.add_argument("--until", metavar="DATE", help="only runs started on or before DATE (UTC)")
    runs.add_argument(
        "--comparable-with",
        "--class",
        dest="comparability",
        metavar="CLASS",
        help="only runs of this comparability class (or its first characters, as listed)",
    )
    json_argument(runs, "print one JSON object")
    return runs


def _date(option: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(
            f"{option}: {text!r} is not a date (2026-01-31 or 2026-01-31T12:00)"
        ) from None
    # A date without a zone is UTC, as every time the database holds.
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def main(args: argparse.Namespace) -> int:
    from evalrepro.database import require_team_extra

    require_team_extra()
    from evalrepro.database.engine import open_database
    from evalrepro.database.queries import list_runs
    from evalrepro.database.url import database_argument
    from evalrepro.report.run_printer import percent

    since, until = _date("--since", args.since), _date("--until", args.until)
    if until is not None and len(args.until) == 10:
        until = until.replace(hour=23, minute=59, second=59, microsecond=999999)
    engine, url = open_database(database_argument(args.db), create=False)
    try:
        found = list_runs(
            engine,
            url,
            dataset=args.dataset,
            target=args.target,
            experiment=args.experiment,
            since=since,
            until=until,
            comparability=args.comparability,
        )
    finally:
        engine.dispose()
    if args.json:
        print(found.model_dump_json(indent=2))
        return EXIT_OK
    console = make_console()
    table = Table(title=escape(f"runs in {found.database}"), title_justify="left")
    for column in (
        "id",
        "experiment",
        "target",
        "dataset",
        "started",
        "trials",
        "resolved",
        "class",
        "state",
    ):
        table.add_column(column)
    for run in found.runs:
        state = "complete" if run.complete else "publish unfinished"
        if run.complete and run.finished < run.planned:
            state = "run unfinished"
        if run.retracted_at is not None:
            state = "retracted"
        table.add_row(
            run.run_id,
            escape(run.experiment),
            escape(run.target_id),
            escape(run.dataset),
            run.started_at.strftime("%Y-%m-%d %H:%M") if run.started_at else "",
            f"{run.finished}/{run.planned}",
            f"{run.resolved} ({percent(run.resolved_rate.estimate)})",
            run.comparability.removeprefix("sha256:")[:12],
            state,
        )
    console.print(table)
    return EXIT_OK
