"""Word statistics."""

from __future__ import annotations

import re
from collections import Counter

_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``; apostrophes stay inside words."""
    return _WORD.findall(text.lower())


def word_counts(text: str) -> dict[str, int]:
    """How often each word occurs."""
    return dict(Counter(words(text)))
