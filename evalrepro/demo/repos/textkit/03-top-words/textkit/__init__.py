"""Small text utilities: slugs, wrapping and word statistics."""

from textkit.counts import top_words, word_counts, words
from textkit.slug import slugify
from textkit.wrap import fill, wrap

__all__ = ["fill", "slugify", "top_words", "word_counts", "words", "wrap"]
