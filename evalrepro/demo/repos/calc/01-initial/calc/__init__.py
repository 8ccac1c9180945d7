"""A small arithmetic expression evaluator."""

from calc.evaluator import evaluate
from calc.tokenizer import CalcError, Token, tokenize

__all__ = ["CalcError", "Token", "evaluate", "tokenize"]
