"""``evalrepro run``: build the environments, run every trial in a container, grade,
report (exit 3: the gate failed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalrepro.commands._arguments import cache_argument, config_arguments, run_dir_argument
from evalrepro.commands._common import EXIT_GATE_FAILED, EXIT_OK, make_console
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    run = subparsers.add_parser(
        "run", help="build the environments, run every trial in a container, grade, report"
    )
    config_arguments(run)
    run_dir_argument(run, "where to write the run (default: runs/<experiment>-<time>)")
    cache_argument(run)
    run.add_argument(
        "--lockfile",
        type=Path,
        metavar="FILE",
        help="run a lockfile's experiment as it is; refuse if the plan no longer matches it",
    )
    return run


def main(args: argparse.Namespace) -> int:
    from evalrepro.cache import default_cache_dir
    from evalrepro.pipeline import run_experiment
    from evalrepro.plan.lockfile import read_lockfile

    locked = None
    if args.lockfile is not None:
        if args.overrides or args.config_dir:
            raise UserError("--lockfile runs the locked config as it is: drop the overrides")
        locked = read_lockfile(args.lockfile)
        config = locked.experiment_config()
    else:
        config = compose(args.overrides, args.config_dir)
    outcome = run_experiment(
        config,
        make_console(),
        run_dir=args.run_dir,
        cache_dir=args.cache_dir or default_cache_dir(),
        locked=locked,
    )
    return EXIT_OK if outcome.report.gate_passed else EXIT_GATE_FAILED
