"""Base class of every record evalrepro writes to disk.

Each record carries ``record`` (its model's name, so a reader knows which model parses
it) and ``schema_version``; unknown fields are rejected so a typo never passes silently.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = 1
