"""``evalrepro regrade``: grade the logs another harness wrote (SWE-bench's) into a run
directory that report, compare and verify accept."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from evalrepro.commands._arguments import parser_argument, run_dir_argument, strict_argument
from evalrepro.commands._common import EXIT_OK, make_console
from evalrepro.console import Table


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    regrade = subparsers.add_parser(
        "regrade",
        help="grade the logs another harness wrote into a run directory",
        description="LOGS_DIR holds <instance_id>/test_output.txt (with patch.diff and "
        "report.json where present): SWE-bench's logs/run_evaluation/<run_id>/<model>/. One "
        "graded trial per log, in a run directory that report, compare and verify accept.",
    )
    regrade.add_argument("logs", type=Path, metavar="LOGS_DIR")
    regrade.add_argument(
        "--dataset",
        type=Path,
        required=True,
        metavar="FILE",
        help="the instances (JSONL, JSON, Parquet), or a dataset config (YAML) whose specs "
        "name the parser per repo and version",
    )
    parser_argument(
        regrade,
        "the parser of every instance that names none of its own (log_parser), before the "
        "dataset config's specs and SWE-bench's parser for the repo",
    )
    run_dir_argument(regrade, "default: runs/regrade-<model>-<time>")
    regrade.add_argument("--model", help="default: the logs folder's name (SWE-bench's <model>)")
    regrade.add_argument("--run-id", help="default: the logs folder's parent's name")
    strict_argument(
        regrade,
        "evalrepro's strict reading (whole-line markers, one region, no fallback) "
        "instead of swebench's",
    )
    return regrade


def main(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from evalrepro.regrade import regrade

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    model = args.model or args.logs.resolve().name
    run_dir = args.run_dir or Path("runs") / f"regrade-{model.replace('/', '__')}-{stamp}"
    summary = regrade(
        args.logs,
        args.dataset,
        run_dir=run_dir,
        parser=args.parser,
        rules="strict" if args.strict else "swebench",
        model=args.model,
        run_id=args.run_id,
    )
    out = make_console()
    out.print(
        f"regraded {summary.graded} logs of {escape(summary.model)} "
        f"(run {escape(summary.run_id)}): {summary.resolved} resolved",
        highlight=False,
    )
    if summary.no_patch:
        out.print(
            f"{len(summary.no_patch)} logs without a patch.diff: graded from the log, "
            "the patch unknown (not an empty patch)",
            highlight=False,
        )
    if summary.compared:
        agree = summary.compared - len(summary.differences)
        out.print(f"swebench's report.json: {agree} of {summary.compared} agree", highlight=False)
    if summary.differences:
        table = Table("instance", "ours", "swebench's report.json", title="differences")
        for difference in summary.differences:
            table.add_row(
                *map(escape, (difference.instance_id, difference.ours, difference.theirs))
            )
        out.print(table)
    out.print(f"run directory: {escape(str(Path(run_dir).resolve()))}", highlight=False)
    return EXIT_OK
