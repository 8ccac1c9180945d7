"""``run.json``: the sessions that worked on a run directory (each ``run`` or resume).

Provenance for people (who ran it, where, with which backend), never an input to a
verdict: an unreadable ``run.json`` loses the session list, nothing else.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from evalrepro import atomic
from evalrepro.errors import UserError
from evalrepro.plan.harness import source
from evalrepro.records.base import read_record
from evalrepro.records.sessions import RunSessions, Session

SESSIONS_NAME = "run.json"


def read_sessions(run_dir: Path) -> list[Session]:
    """The run's sessions, oldest first; none if ``run.json`` is missing or unreadable."""
    path = run_dir / SESSIONS_NAME
    if not path.exists():
        return []
    try:
        return read_record(path, RunSessions).sessions
    except UserError:
        return []


def log_session(run_dir: Path, *, resumed: bool, backend: dict[str, str]) -> None:
    session = Session(
        started_at=datetime.now(UTC),
        resumed=resumed,
        argv=sys.argv,
        host=platform.node(),
        user=os.environ.get("USER", str(os.getuid())),
        backend=backend,
        evalrepro=source(),
    )
    record = RunSessions(sessions=[*read_sessions(run_dir), session])
    atomic.write_text(run_dir / SESSIONS_NAME, record.model_dump_json(indent=2) + "\n")
