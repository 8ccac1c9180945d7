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


def top_words(text: str, n: int = 3) -> list[tuple[str, int]]:
    """The ``n`` most frequent words with their counts, most frequent first.

    Words with the same count are listed alphabetically, so the result does not
    depend on where the words appear.
    """
    return Counter(words(text)).most_common(n)
