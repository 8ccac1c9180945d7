"""``evalrepro parsers``: list the registered log parsers."""

from __future__ import annotations

import argparse

from evalrepro.commands._common import make_console
from evalrepro.console import Table
from evalrepro.grade.parsers import get_parser, parser_names


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    return subparsers.add_parser("parsers", help="list the registered log parsers")


def main(args: argparse.Namespace) -> int:
    table = Table("name", "family", "fail only", "aliases", "runner")
    for name in parser_names():
        parser = get_parser(name)
        table.add_row(
            name,
            str(parser.family),
            "yes" if parser.fail_only else "",
            ", ".join(parser.aliases[:3]) + (" ..." if len(parser.aliases) > 3 else ""),
            parser.description,
        )
    make_console().print(table)
    return 0
