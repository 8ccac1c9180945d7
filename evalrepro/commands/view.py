"""``evalrepro view``: a static site of a run's trials (patch, eval script, test log,
tests), served by no server."""

from __future__ import annotations

import argparse

from rich.markup import escape

from evalrepro.commands._arguments import output_argument, run_argument, statistics_arguments
from evalrepro.commands._common import EXIT_OK, make_console


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    view = subparsers.add_parser(
        "view",
        help="a static site of a run's trials: patch, eval script, test log, tests (no server)",
        description="Write index.html (every trial, filtered by outcome and reason) and one "
        "page per trial (trials/<label>.html) into DIR. Links are relative: the site reads "
        "the same from a copied folder. Logs and patches are shown cut to their first and "
        "last KiB, escaped, control characters made visible.",
    )
    run_argument(view)
    output_argument(view, metavar="DIR", help="where to write the site (default: RUN_DIR/view)")
    statistics_arguments(view)
    return view


def main(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import is_bundle, run_directory
    from evalrepro.report.view import view_run

    output = args.output
    if output is None and is_bundle(args.run):
        # A bundle is unpacked for this command only: its viewer goes beside it.
        name = args.run.name.removesuffix(".tar.gz").removesuffix(".tgz").removesuffix(".tar")
        output = args.run.with_name(name + "-view")
    with run_directory(args.run) as run:
        site = view_run(
            run,
            output,
            confidence=args.confidence,
            n_resamples=args.n_resamples,
            seed=args.seed,
        )
    removed = f"; {site.removed} stale pages removed" if site.removed else ""
    make_console().print(
        f"trial viewer: {escape(str(site.index))} ({site.pages} trial pages{removed})",
        highlight=False,
    )
    return EXIT_OK
