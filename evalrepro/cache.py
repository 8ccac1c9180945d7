"""Where evalrepro keeps what it can make again (images' inputs, resolves, validations)."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$EVALREPRO_CACHE``, else ``$XDG_CACHE_HOME/evalrepro`` (``~/.cache/evalrepro``)."""
    if os.environ.get("EVALREPRO_CACHE"):
        return Path(os.environ["EVALREPRO_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "evalrepro"
