"""``evalrepro validate``: derive FAIL_TO_PASS / PASS_TO_PASS by running each instance's
tests before and after its gold patch, find flaky tests and broken instances, and write
the validated dataset in the format it came in."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalrepro.commands._arguments import cache_argument, config_arguments
from evalrepro.commands._common import EXIT_OK, make_console


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    validate = subparsers.add_parser(
        "validate",
        help="derive the test lists by running before and after the gold patch; find flaky tests",
        description="An experiment (+experiment=NAME), or a dataset alone (+dataset=NAME), "
        "composed as for run. Each side runs as often as the flakiness bound needs "
        "(validation.flaky.min_rate, validation.flaky.miss_probability: 9 runs by default; "
        "or validation.repeats), fewer for an instance its runs already settle, through "
        "the run path (its own lockfile, resumable, any executor); the validated dataset "
        "goes to --output, its report beside it (FILE.validation.json).",
    )
    config_arguments(validate)
    validate.add_argument(
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="the validated dataset (the same format as the dataset: .jsonl, .json, .parquet)",
    )
    validate.add_argument(
        "--runs",
        type=Path,
        metavar="DIR",
        help="the two sides' run directories (default: runs/<name>-validate): run the same "
        "command again to resume",
    )
    validate.add_argument(
        "--html", type=Path, metavar="FILE", help="also write the report as an HTML page"
    )
    cache_argument(validate)
    return validate


def main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from evalrepro.cache import default_cache_dir
    from evalrepro.config.experiment import compose
    from evalrepro.report.validation import print_validation
    from evalrepro.validation.dataset import check_output, report_path, write_validated
    from evalrepro.validation.run import judge, run_sides

    # A dataset alone (+dataset=NAME) replaces the default dataset, as an experiment does.
    overrides = [o.removeprefix("+") if o.startswith("+dataset=") else o for o in args.overrides]
    config = compose(overrides, args.config_dir)
    check_output(Path(config.dataset.instances), args.output)
    folder = args.runs or config.run.output_dir / f"{config.name}-validate"
    console = make_console()
    sides = run_sides(
        config, console, folder=folder, cache_dir=args.cache_dir or default_cache_dir()
    )
    report = judge(config, sides, folder)
    written = write_validated(Path(config.dataset.instances), report, args.output)
    print_validation(console, report)
    if args.html is not None:
        from evalrepro import atomic
        from evalrepro.report.validation import validation_html

        atomic.write_text(args.html, validation_html(report))
        console.print(f"HTML report: {args.html}", highlight=False, soft_wrap=True)
    console.print(
        f"validated dataset: {args.output} ({written} of {len(report.instances)} instances); "
        f"report: {report_path(args.output)}",
        highlight=False,
        soft_wrap=True,
    )
    return EXIT_OK
