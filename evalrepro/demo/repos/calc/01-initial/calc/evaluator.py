"""Evaluate arithmetic expressions with a recursive-descent parser.

Grammar, lowest precedence first::

    expr  := ["-"] term (("+" | "-") term)*
    term  := atom (("*" | "/") atom)*
    atom  := number | "(" expr ")"
"""

from __future__ import annotations

from calc.tokenizer import CalcError, Token, tokenize


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expr(self) -> float:
        sign = 1.0
        if self.peek().text == "-":
            self.take()
            sign = -1.0
        value = sign * self.term()
        while self.peek().text in ("+", "-"):
            op = self.take().text
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self) -> float:
        value = self.atom()
        while self.peek().text in ("*", "/"):
            op = self.take().text
            rhs = self.atom()
            value = value * rhs if op == "*" else value / rhs
        return value

    def atom(self) -> float:
        token = self.take()
        if token.kind == "num":
            return float(token.text)
        if token.text == "(":
            value = self.expr()
            closing = self.take()
            if closing.text != ")":
                raise CalcError(f"expected ')' at {closing.pos}")
            return value
        raise CalcError(f"unexpected {token.text or 'end'!r} at {token.pos}")


def evaluate(source: str) -> float:
    """Evaluate ``source`` and return its value."""
    parser = _Parser(tokenize(source))
    value = parser.expr()
    trailing = parser.peek()
    if trailing.kind != "end":
        raise CalcError(f"unexpected {trailing.text!r} at {trailing.pos}")
    return value
