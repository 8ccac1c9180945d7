"""Log parsers, one module per framework, registered by name.

Importing this package imports every parser module in it, so each registers itself;
look parsers up with :func:`get_parser`.
"""

import importlib
import pkgutil

from evalrepro.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.parsers.registry import get_parser, parser_names, register

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in {"base", "registry"}:
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Family",
    "LogParser",
    "ParsedLog",
    "Status",
    "get_parser",
    "parser_names",
    "register",
]
