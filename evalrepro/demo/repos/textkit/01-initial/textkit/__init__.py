"""Small text utilities: slugs and word statistics."""

from textkit.counts import word_counts, words
from textkit.slug import slugify

__all__ = ["slugify", "word_counts", "words"]
