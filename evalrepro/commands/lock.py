"""``evalrepro lock``: resolve the config into a lockfile (builds the images, runs no
trial)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalrepro.commands._arguments import cache_argument, config_arguments, output_argument
from evalrepro.commands._common import make_console
from evalrepro.config.experiment import compose


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    lock = subparsers.add_parser(
        "lock", help="resolve the config into a lockfile (builds the images, runs no trial)"
    )
    config_arguments(lock)
    output_argument(
        lock,
        metavar="FILE",
        help="where to write it (default: lockfiles/<experiment>.lock.json); a lockfile "
        "already there keeps its pinned inputs",
    )
    lock.add_argument(
        "--update",
        action="store_true",
        help="resolve every pinned input again (newer Debian packages, wheels)",
    )
    cache_argument(lock)
    return lock


def main(args: argparse.Namespace) -> int:
    from evalrepro.cache import default_cache_dir
    from evalrepro.pipeline import lock_experiment

    config = compose(args.overrides, args.config_dir)
    output = args.output or Path("lockfiles") / f"{config.name}.lock.json"
    lock_experiment(
        config,
        make_console(),
        output=output,
        cache_dir=args.cache_dir or default_cache_dir(),
        update=args.update,
    )
    return 0
