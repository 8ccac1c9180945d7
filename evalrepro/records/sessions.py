"""A run's sessions (``run.json``): each time evalrepro worked on the run directory, and
from which checkout. Written by ``evalrepro.run.sessions``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged


class HarnessSource(BaseModel):
    """Where the running evalrepro came from: provenance for a session, never identity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    #: The git commit of a development checkout (None for an installed release).
    commit: str | None = None
    #: True when evalrepro runs from a source checkout (pip install -e).
    editable: bool = False


class Session(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    started_at: datetime
    resumed: bool
    argv: list[str]
    host: str
    user: str
    #: The runtime and builder the session used (``Backend.describe()``).
    backend: dict[str, str]
    #: The evalrepro that ran it: version, and a development checkout's commit.
    evalrepro: HarnessSource | None = None


class RunSessions(Record):
    record: Literal["RunSessions"] = "RunSessions"
    #: 2: the lockfile's sha256 as the first session wrote it.
    schema_version: int = 2
    migrations = {1: unchanged}
    sessions: list[Session] = []
    #: sha256 of ``lockfile.lock.json``'s bytes when the first session wrote it (None in a
    #: run.json of schema 1): a lockfile rewritten later no longer matches it.
    lockfile_sha256: str | None = None
    max_bytes = 16 << 20
    # run.json was plain JSON before it was a record.
    unnamed_ok = True
