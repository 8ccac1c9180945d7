"""Log parsers, one module per framework, registered by name.

Importing this package imports every parser module of the ``evalrepro.parsers`` plugin
group (evalrepro's own, and any another package declares), so each registers itself;
look parsers up with :func:`get_parser`.
"""

from evalrepro import plugins
from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import get_parser, parser_names, register

plugins.load_all("parsers")

__all__ = [
    "Family",
    "LogParser",
    "ParsedLog",
    "Status",
    "get_parser",
    "parser_names",
    "register",
]
