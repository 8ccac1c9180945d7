"""``evalrepro compare``: compare runs (or bundles), each against the first: the
difference with its interval, McNemar, the MDE (exit 1: not comparable)."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path

from evalrepro import atomic
from evalrepro.commands._arguments import database_arguments, statistics_arguments
from evalrepro.commands._common import EXIT_CHECK_FAILED, EXIT_OK, make_console
from evalrepro.errors import UserError
from evalrepro.report.formats import FORMATS, format_arguments, pages, printed_format


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    compare = subparsers.add_parser(
        "compare",
        help="compare runs: the difference with its interval, McNemar, MDE (each vs the first)",
    )
    compare.add_argument(
        "runs",
        type=Path,
        nargs="*",
        metavar="RUN_DIR",
        help="run directories or bundles; with --db, published runs' ids (as `runs` lists)",
    )
    power_arguments(compare)
    compare.add_argument(
        "--force", action="store_true", help="compare anyway when not comparable (marked so)"
    )
    compare.add_argument("--method", choices=["BCa", "percentile", "basic"], default="BCa")
    format_arguments(compare, "comparison", helps={"html": "also write a page with a forest plot"})
    statistics_arguments(compare)
    from evalrepro.commands.report import STORE_HELP

    database_arguments(compare, store=STORE_HELP)
    return compare


def _pair(text: str | None, flag: str) -> tuple[float, float] | None:
    """Two comma-separated numbers (parsed here, not by argparse: one line when wrong)."""
    if text is None:
        return None
    try:
        first, second = (float(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"{flag} {text!r}: give two numbers, e.g. 0.4,0.5") from None
    return first, second


def power_arguments(parser: argparse.ArgumentParser) -> None:
    """``--power``: what n instances can detect and the n a difference needs
    (docs/statistics.md, "Planning a run that can decide")."""
    group = parser.add_argument_group("power (plan a run that can decide)")
    group.add_argument(
        "--power",
        action="store_true",
        help="the power of the verdict: from two runs (a pilot), or from --power-rates",
    )
    group.add_argument(
        "--power-rates",
        metavar="PA,PB",
        help="stated resolve rates of A and B (no runs); with --power-agreement",
    )
    group.add_argument(
        "--power-agreement",
        type=float,
        metavar="S",
        help="stated share of instances both runs agree on (resolved by both or neither)",
    )
    group.add_argument(
        "--power-discordant",
        metavar="P10,P01",
        help="stated shares of instances resolved by A only and by B only (no runs)",
    )
    group.add_argument("--power-n", type=int, metavar="N", help="instances of the stated design")
    group.add_argument(
        "--power-difference",
        type=float,
        metavar="D",
        help="the difference B - A to plan for (default: the observed or stated one)",
    )
    group.add_argument("--power-target", type=float, default=0.8, metavar="P")


def _power(args: argparse.Namespace) -> int | None:
    """The power analysis when asked for (None: it was not)."""
    rates = _pair(args.power_rates, "--power-rates")
    discordant = _pair(args.power_discordant, "--power-discordant")
    stated = rates is not None or discordant is not None
    asked = (
        args.power
        or stated
        or args.power_agreement is not None
        or args.power_n is not None
        or args.power_difference is not None
    )
    if not asked:
        return None
    from evalrepro.report.power import analyse, cells, from_runs, print_power_analysis

    if args.latex or args.html is not None or args.db is not None:
        raise UserError("--power prints a console table or --json: not --latex, --html or --db")
    if stated:
        if args.runs:
            raise UserError("--power-rates/--power-discordant state a design: give no runs")
        if (rates is None) == (discordant is None):
            raise UserError(
                "give either --power-rates (with --power-agreement) or --power-discordant"
            )
        if rates is not None:
            if args.power_agreement is None:
                raise UserError("--power-rates needs --power-agreement (the share both agree on)")
            p_a, p_b = rates
            p10, p01 = cells(p_a, p_b, args.power_agreement)
        else:
            if args.power_agreement is not None:
                raise UserError("--power-agreement goes with --power-rates, not --power-discordant")
            p10, p01 = discordant
            if min(p10, p01) < 0 or p10 + p01 > 1:
                raise UserError(f"--power-discordant {p10},{p01}: need shares >= 0 summing to <= 1")
            # The rates are not stated: only the discordant shares enter the power.
            p_a = p_b = None
        if not 0 < args.confidence < 1:
            raise UserError(f"--confidence {args.confidence}: must be between 0 and 1")
        analysis = analyse(
            p_a=p_a,
            p_b=p_b,
            p10=p10,
            p01=p01,
            alpha=1 - args.confidence,
            target=args.power_target,
            n=args.power_n,
            difference=args.power_difference,
        )
    else:
        if not args.power:
            raise UserError("--power-* options need --power (with two runs) or --power-rates")
        if args.power_agreement is not None or args.power_n is not None:
            raise UserError("--power-agreement and --power-n state a design: not with runs")
        if len(args.runs) != 2:
            raise UserError(f"compare --power needs two runs (a pilot pair), got {len(args.runs)}")
        from evalrepro.publish.bundle import run_directory

        with ExitStack() as stack:
            paths = [stack.enter_context(run_directory(path)) for path in args.runs]
            analysis = from_runs(
                paths[0],
                paths[1],
                confidence=args.confidence,
                target=args.power_target,
                difference=args.power_difference,
                force=args.force,
            )
    if args.json:
        print(analysis.model_dump_json(indent=2))
    else:
        print_power_analysis(make_console(), analysis)
    return EXIT_OK


def main(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import run_directory

    power = _power(args)
    if power is not None:
        return power
    if not args.runs:
        raise UserError("compare needs at least two run directories")

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
    )

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
    written = pages(args, "comparison")
    if written:
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
        for name, path in written.items():
            files = page_files(path)
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
                    path,
                )
                for number, (given, r, run_report) in enumerate(
                    zip(args.runs, runs, reports, strict=True), start=1
                )
            ]
            page = FORMATS[name].render(
                "comparison", report, reports, title="evalrepro comparison", viewers=viewers
            )
            atomic.write_text(path, page)
    printed = printed_format(args, "comparison")
    if printed.output == "console":
        printed.renderer("comparison")(make_console(), report)
    else:
        print(printed.render("comparison", report), end="")
    return EXIT_OK
