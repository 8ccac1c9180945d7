"""Name -> parser registry. Parsers register themselves with :func:`register`."""

from __future__ import annotations

from typing import TypeVar

from evalrepro.errors import UserError
from evalrepro.grade.parsers.base import LogParser

_PARSERS: dict[str, type[LogParser]] = {}
_ALIASES: dict[str, str] = {}

P = TypeVar("P", bound=type[LogParser])


def register(cls: P) -> P:
    """Class decorator: make ``cls`` available under its ``name`` and ``aliases``."""
    for key in (cls.name, *cls.aliases):
        if key in _PARSERS or key in _ALIASES:
            raise RuntimeError(f"log parser name {key!r} registered twice")
    _PARSERS[cls.name] = cls
    for alias in cls.aliases:
        _ALIASES[alias] = cls.name
    return cls


def get_parser(name: str) -> LogParser:
    """The parser registered as ``name`` (or an alias of it)."""
    canonical = _ALIASES.get(name, name)
    try:
        return _PARSERS[canonical]()
    except KeyError:
        known = ", ".join(sorted(_PARSERS))
        raise UserError(f"unknown log parser {name!r}; known parsers: {known}") from None


def parser_names() -> list[str]:
    return sorted(_PARSERS)
