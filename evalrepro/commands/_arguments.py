"""The arguments several commands share, each declared once.

Where commands share a flag but say it differently (``--json``, ``--run-dir``), the
helper takes the command's help text; name, type and metavar are the same everywhere.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def config_arguments(parser: argparse.ArgumentParser) -> None:
    """The experiment: Hydra overrides and a directory of the user's own configs."""
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. +experiment=demo")
    # Hydra's sweep flag, refused with a sentence rather than argparse's usage dump.
    parser.add_argument("-m", "--multirun", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--config-dir",
        type=Path,
        metavar="DIR",
        help="a directory of your own configs, searched before the built-in",
    )


def cache_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="images' build inputs and logs (default: ~/.cache/evalrepro or $EVALREPRO_CACHE)",
    )


def statistics_arguments(parser: argparse.ArgumentParser) -> None:
    """The intervals: their confidence, the bootstrap's resamples and its seed."""
    parser.add_argument("--confidence", type=float, default=0.95, metavar="C")
    parser.add_argument("--n-resamples", type=int, default=10_000, metavar="N")
    seed_argument(parser)


def seed_argument(parser: argparse._ActionsContainer, help: str | None = None) -> None:
    parser.add_argument("--seed", type=int, default=0, metavar="S", help=help)


def run_argument(parser: argparse.ArgumentParser, *, db: bool = False) -> None:
    """The run directory (or bundle) a command reads: the positional RUN_DIR (with
    ``db``: or, with ``--db``, a published run's id)."""
    parser.add_argument(
        "run",
        type=Path,
        metavar="RUN_DIR",
        help="a run directory or bundle; with --db, a published run's id (as `runs` lists)"
        if db
        else None,
    )


def run_dir_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """Where a command that runs or grades trials writes its run directory."""
    parser.add_argument("--run-dir", type=Path, metavar="DIR", help=help)


def output_argument(
    parser: argparse.ArgumentParser, *, metavar: str, help: str, short: bool = False
) -> None:
    """Where a command writes the file or folder it makes (``-o`` too, with ``short``)."""
    flags = ("-o", "--output") if short else ("--output",)
    parser.add_argument(*flags, type=Path, metavar=metavar, help=help)


def json_argument(parser: argparse._ActionsContainer, help: str | None = None) -> None:
    parser.add_argument("--json", action="store_true", help=help)


def parser_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """A log parser by name, instead of the one the instance names."""
    parser.add_argument("--parser", metavar="NAME", help=help)


def strict_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """Read logs by evalrepro's strict rules instead of swebench 5.0.2's."""
    parser.add_argument("--strict", action="store_true", help=help)


def database_arguments(parser: argparse.ArgumentParser, *, store: str | None) -> None:
    """The team database (``--db``) and, with ``store`` its help, the object store."""
    parser.add_argument(
        "--db",
        metavar="URL",
        help="the database: a file or sqlite:///FILE, or postgresql://USER@HOST/NAME "
        "(default: $EVALREPRO_DB, else runs/evalrepro.db); a password comes from the URL, "
        "$EVALREPRO_DB_PASSWORD or $PGPASSWORD",
    )
    if store is not None:
        parser.add_argument("--store", metavar="URL", help=store)
