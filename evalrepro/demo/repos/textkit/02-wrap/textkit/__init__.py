"""Small text utilities: slugs, wrapping and word statistics."""

from textkit.counts import word_counts, words
from textkit.slug import slugify
from textkit.wrap import fill, wrap

__all__ = ["fill", "slugify", "word_counts", "words", "wrap"]
