"""``evalrepro report``: metrics, intervals and the gate of a run directory or bundle.

Exit 3 when the gate failed, for the report on the console; an export (``--json``,
``--markdown``, ``--latex``, ``--html``) that was written exits 0 whatever the gate says,
so that a paper's build that makes its tables from a run does not break on its verdict
(which the export shows), unless ``--enforce-gate`` asks for exit 3 there too."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from evalrepro import atomic
from evalrepro.commands._arguments import (
    database_arguments,
    run_argument,
    statistics_arguments,
)
from evalrepro.commands._common import EXIT_GATE_FAILED, EXIT_OK, make_console
from evalrepro.errors import UserError
from evalrepro.report.formats import FORMATS, format_arguments, pages, printed_format


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    report = subparsers.add_parser(
        "report",
        help="metrics, intervals and the gate of a run directory (exit 3: gate failed; "
        "an export exits 0 unless --enforce-gate)",
    )
    run_argument(report, db=True)
    report.add_argument(
        "--rebuild", action="store_true", help="rewrite results.json from the trial results"
    )
    format_arguments(
        report, "run", helps={"json": "one JSON object (with SWE-bench's run-report fields)"}
    )
    report.add_argument(
        "--enforce-gate",
        action="store_true",
        help="exit 3 when the gate failed even with --json, --markdown, --latex or --html "
        "(without it an export that was written exits 0)",
    )
    statistics_arguments(report)
    database_arguments(report, store=STORE_HELP)
    return report


#: ``--store`` of report and compare: where a run read back from ``--db`` is.
STORE_HELP = (
    "with --db: the object store of the runs' files (default: the one each run was "
    "published to; credentials from the environment)"
)


def main(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import is_bundle, run_directory

    if args.db is not None:
        from evalrepro.cache import default_cache_dir
        from evalrepro.database.readback import published_runs

        if args.rebuild:
            raise UserError("--rebuild: a run read back from --db is not rewritten")
        with published_runs(args.db, args.store, [str(args.run)], default_cache_dir()) as (run,):
            # Named as given (the run's id), like a bundle's run.
            return _report(args, run, bundle=args.run)
    if args.store is not None:
        raise UserError("--store reads a run published to a database: give --db too")
    if is_bundle(args.run):
        if args.rebuild:
            raise UserError(f"--rebuild: {args.run} is a bundle, whose records are not rewritten")
        with run_directory(args.run) as run:
            return _report(args, run, bundle=args.run)
    return _report(args, args.run, bundle=None)


def _report(args: argparse.Namespace, run: Path, *, bundle: Path | None) -> int:
    from evalrepro.report.results import rebuild_results
    from evalrepro.report.run_report import build_run_report
    from evalrepro.run.evidence import Survey
    from evalrepro.run.rundir import RunDirectory
    from evalrepro.run.session import RunSession

    directory, lockfile = RunDirectory.open(run)
    if args.rebuild:
        # Not while a run writes into the directory: its results.json would be overwritten.
        with RunSession.hold(directory.path) as session:
            done = session.adopt(lockfile)  # refuses evidence that does not hold
            session.finish(rebuild_results(directory, lockfile, done))
        survey = Survey(directory.path, results=done)
    else:
        # A report shows what is wrong with the evidence (and counts it against evidence
        # completeness); `verify` is the check that refuses.
        survey = directory.survey(lockfile)
    report = build_run_report(
        directory.path,
        lockfile,
        survey.results,
        confidence=args.confidence,
        n_resamples=args.n_resamples,
        seed=args.seed,
        evidence_problems=survey.messages(),
    )
    if bundle is not None:
        # Named as given: the bundle was unpacked into a folder gone after this command.
        report = report.model_copy(update={"run": str(bundle)})
    written = pages(args, "run")
    if written:
        from evalrepro.report.view import relative_link, write_view

        # A page links every trial to its viewer page: (re)write the viewer first
        # (a bundle's beside the page: the bundle is unpacked only for this command).
        first = next(iter(written.values()))
        view_dir = None if bundle is None else first.with_name(first.stem + "-view")
        site = write_view(directory.path, report, survey.results, output=view_dir)
        for name, path in written.items():
            page = FORMATS[name].render(
                "run",
                report,
                title=f"evalrepro: {directory.path.name}",
                viewer=relative_link(site.root, path),
            )
            atomic.write_text(path, page)
    printed = printed_format(args, "run")
    if printed.output == "console":
        console = make_console()
        printed.renderer("run")(console, report)
        for name, path in written.items():
            console.print(f"{name} report: {escape(str(path))}", highlight=False)
    else:
        print(printed.render("run", report), end="")
    exported = printed.output != "console" or bool(written)
    if report.gate_passed or (exported and not args.enforce_gate):
        return EXIT_OK
    return EXIT_GATE_FAILED
