"""What ``evalrepro view`` wrote into its folder (``view.json``). Written by
``evalrepro.report.view``.
"""

from __future__ import annotations

from typing import Literal

from evalrepro.records.base import Record


class ViewManifest(Record):
    """What a ``view`` wrote into its folder: the trial pages (to remove stale ones)."""

    record: Literal["ViewManifest"] = "ViewManifest"
    pages: list[str]
