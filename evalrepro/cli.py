"""The ``evalrepro`` command line.

Each subcommand is a module of :mod:`evalrepro.commands` whose ``add_parser`` declares it
and whose ``main`` takes the parsed arguments and returns an exit code; ``main`` here
turns a :class:`UserError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Callable

from evalrepro import __version__
from evalrepro.commands import (
    bundle,
    compare,
    config,
    grade,
    leaderboard,
    lock,
    parsers,
    publish,
    regrade,
    report,
    reproduce,
    run,
    runs,
    unpublish,
    validate,
    verify,
    view,
)
from evalrepro.commands._common import (
    EXIT_CHECK_FAILED,
    EXIT_GATE_FAILED,
    EXIT_NOT_REPRODUCIBLE,
    EXIT_OK,
    EXIT_USER_ERROR,
    make_console,
)
from evalrepro.errors import UserError
from evalrepro.text import visible

__all__ = [
    "COMMANDS",
    "EXIT_CHECK_FAILED",
    "EXIT_GATE_FAILED",
    "EXIT_NOT_REPRODUCIBLE",
    "EXIT_OK",
    "EXIT_USER_ERROR",
    "build_parser",
    "main",
    "make_console",
]

#: The subcommands, in the order ``evalrepro --help`` lists them.
COMMANDS = (
    grade,
    config,
    run,
    lock,
    report,
    compare,
    view,
    verify,
    bundle,
    reproduce,
    regrade,
    validate,
    parsers,
    publish,
    unpublish,
    runs,
    leaderboard,
)


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="evalrepro",
        description="Reproducible SWE-bench-style evaluation of code patches.",
    )
    top.add_argument("--version", action="version", version=f"evalrepro {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(handler=command.main)
    return top


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; a command's Hydra overrides may stand anywhere among its options
    (``run +experiment=x --config-dir d dataset.instance_ids=[a]``): argparse takes only
    the first run of them, so the rest are gathered here."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and hasattr(args, "overrides") and not any(r.startswith("-") for r in rest):
        args.overrides = [*args.overrides, *rest]
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        if getattr(args, "multirun", False):
            raise UserError(
                "--multirun: evalrepro runs one experiment per command; sweep with a shell "
                "loop over +experiment=... (each run gets its own run directory)"
            )
        return handler(args)
    except UserError as error:
        # The message quotes inputs (ids, paths, a lockfile's strings): shown, never raw.
        print(f"evalrepro: error: {visible(str(error))}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as error:
        # The machine's, not the code's: a full disk, a read-only or forbidden place.
        # Every record is written atomically, so what was finished stays readable.
        if error.errno not in _ENVIRONMENT_ERRNOS:
            raise
        where = f": {error.filename}" if error.filename else ""
        hint = (
            " (what was recorded before is kept: free space, then run again to resume)"
            if error.errno in (errno.ENOSPC, errno.EDQUOT)
            else ""
        )
        print(f"evalrepro: error: {visible(f'{error.strerror}{where}{hint}')}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130


_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


if __name__ == "__main__":
    sys.exit(main())
