"""``evalrepro compare``: compare runs (or bundles), each against the first: the
difference with its interval, McNemar, the MDE (exit 1: not comparable)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalrepro import atomic
from evalrepro.commands._arguments import (
    database_arguments,
    html_argument,
    json_argument,
    latex_argument,
    statistics_arguments,
)
from evalrepro.commands._common import EXIT_CHECK_FAILED, EXIT_OK, make_console
from evalrepro.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    compare = subparsers.add_parser(
        "compare",
        help="compare runs: the difference with its interval, McNemar, MDE (each vs the first)",
    )
    compare.add_argument(
        "runs",
        type=Path,
        nargs="+",
        metavar="RUN_DIR",
        help="run directories or bundles; with --db, published runs' ids (as `runs` lists)",
    )
    compare.add_argument(
        "--force", action="store_true", help="compare anyway when not comparable (marked so)"
    )
    compare.add_argument("--method", choices=["BCa", "percentile", "basic"], default="BCa")
    printed = compare.add_mutually_exclusive_group()
    json_argument(printed)
    latex_argument(printed)
    html_argument(compare, "also write a page with a forest plot")
    statistics_arguments(compare)
    from evalrepro.commands.report import STORE_HELP

    database_arguments(compare, store=STORE_HELP)
    return compare


def main(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from evalrepro.publish.bundle import run_directory

    with ExitStack() as stack:
        if args.db is not None:
            from evalrepro.cache import default_cache_dir
            from evalrepro.database.readback import published_runs

            references = [str(run) for run in args.runs]
            runs = stack.enter_context(
                published_runs(args.db, args.store, references, default_cache_dir())
            )
        elif args.store is not None:
            raise UserError("--store reads runs published to a database: give --db too")
        else:
            runs = [stack.enter_context(run_directory(path)) for path in args.runs]
        # A bundle's run is named as given (its unpacked folder is gone after this).
        names = {str(run): str(given) for run, given in zip(runs, args.runs, strict=True)}
        return _compare(args, runs, names)


def page_files(page: Path) -> Path:
    """The folder of what a comparison page links to that is not in a run directory
    (a bundle's trial viewer): ``cmp_files/`` beside ``cmp.html``, as browsers save a
    page's files."""
    return page.with_name(f"{page.stem}_files")


def _compare(args: argparse.Namespace, paths: list[Path], names: dict[str, str]) -> int:
    from evalrepro.report.compare import (
        NotComparable,
        compare_runs,
        load_run,
        print_comparison_report,
    )
    from evalrepro.report.html import render_comparison_html

    try:
        report = compare_runs(
            paths,
            force=args.force,
            n_resamples=args.n_resamples,
            confidence=args.confidence,
            seed=args.seed,
            method=args.method,
        )
    except NotComparable as refusal:
        # As verify says it: each difference by class, then which two runs (named as
        # given: a bundle's path, a published run's id) and how many differences.
        from evalrepro.publish.verify import Comparison, print_comparison

        first, second = (names.get(str(p), str(p)) for p in (refusal.first, refusal.second))
        print_comparison(
            make_console(stderr=True),
            Comparison(
                first=Path(first),
                second=Path(second),
                same_target=False,
                differences=refusal.differences,
                information=[],
            ),
        )
        make_console(stderr=True).print(
            "the runs measured different experiments (--force compares them anyway, marked "
            "not comparable)",
            highlight=False,
        )
        return EXIT_CHECK_FAILED
    report = report.model_copy(
        update={
            "pairs": [
                pair.model_copy(
                    update={
                        "a_path": names.get(pair.a_path, pair.a_path),
                        "b_path": names.get(pair.b_path, pair.b_path),
                    }
                )
                for pair in report.pairs
            ]
        }
    )
    if args.html is not None:
        from evalrepro.report.run_report import build_run_report
        from evalrepro.report.view import relative_link, write_view

        runs = [load_run(path) for path in paths]
        # The page's run rates at the level of its comparisons (Bonferroni-corrected with
        # several), so that a run's rate has one interval on the page, not two.
        reports = [
            build_run_report(
                r.path,
                r.lockfile,
                r.results,
                confidence=report.comparison_confidence,
                n_resamples=args.n_resamples,
                seed=args.seed,
            )
            for r in runs
        ]
        # Each instance's cell links to its trial in that run's viewer: (re)write them.
        # A bundle's (unpacked only for this command) goes into the page's own folder,
        # cmp_files/view-N/ beside cmp.html, the one folder the page needs beside it.
        files = page_files(args.html)
        viewers = [
            relative_link(
                write_view(
                    r.path,
                    run_report,
                    r.results,
                    output=None
                    if given.resolve() == r.path.resolve()
                    else files / f"view-{number}",
                ).root,
                args.html,
            )
            for number, (given, r, run_report) in enumerate(
                zip(args.runs, runs, reports, strict=True), start=1
            )
        ]
        page = render_comparison_html(
            report, reports, title="evalrepro comparison", viewers=viewers
        )
        atomic.write_text(args.html, page)
    if args.json:
        print(report.model_dump_json(indent=2))
    elif args.latex:
        from evalrepro.report.latex import render_comparison_latex

        print(render_comparison_latex(report), end="")
    else:
        print_comparison_report(make_console(), report)
    return EXIT_OK
