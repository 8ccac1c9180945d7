"""Split an arithmetic expression into tokens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

OPERATORS = "+-*/^()"


class CalcError(ValueError):
    """An expression that cannot be tokenized or evaluated."""


@dataclass(frozen=True)
class Token:
    kind: str  # "num", "op" or "end"
    text: str
    pos: int


def _scan(source: str, start: int, accept: Callable[[str], bool]) -> int:
    end = start
    while end < len(source) and accept(source[end]):
        end += 1
    return end


def tokenize(source: str) -> list[Token]:
    """Return the tokens of ``source``, ending with an ``end`` token."""
    tokens: list[Token] = []
    i = 0
    while i < len(source):
        ch = source[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            end = _scan(source, i, lambda c: c.isdigit() or c == ".")
            text = source[i:end]
            if text == "." or text.count(".") > 1:
                raise CalcError(f"bad number {text!r} at {i}")
            tokens.append(Token("num", text, i))
            i = end
        elif ch in OPERATORS:
            tokens.append(Token("op", ch, i))
            i += 1
        else:
            raise CalcError(f"unexpected {ch!r} at {i}")
    tokens.append(Token("end", "", len(source)))
    return tokens
