"""URL slugs from titles."""

from __future__ import annotations

import re

_NOT_ALLOWED = re.compile(r"[^a-z0-9]")


def slugify(text: str, sep: str = "-", max_length: int | None = None) -> str:
    """Lower-case ``text`` and join its runs of ASCII letters and digits with ``sep``."""
    slug = _NOT_ALLOWED.sub(sep, text.lower()).strip(sep)
    if max_length is not None:
        slug = slug[:max_length].rstrip(sep)
    return slug
