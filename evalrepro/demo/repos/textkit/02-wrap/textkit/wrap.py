"""Greedy line wrapping."""

from __future__ import annotations


def wrap(text: str, width: int = 70) -> list[str]:
    """Split ``text`` into lines of at most ``width`` characters, filled greedily.

    Whitespace between words collapses to one space; a word longer than ``width``
    gets a line of its own.
    """
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    lines: list[str] = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) >= width:
            lines.append(current)
            current = word
        else:
            current += " " + word
    if current:
        lines.append(current)
    return lines


def fill(text: str, width: int = 70) -> str:
    """:func:`wrap` joined with newlines."""
    return "\n".join(wrap(text, width))
