"""``run.json``: the sessions that worked on a run directory (each ``run`` or resume).

Provenance for people (who ran it, where, with which backend), never an input to a
verdict: an unreadable ``run.json`` loses the session list, nothing else. It also keeps
the lockfile's sha256 as the first session wrote it: a resume and ``verify`` refuse a
lockfile rewritten since (an author who rewrites run.json too is caught by the plan check).
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from evalrepro import atomic
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.plan.harness import source
from evalrepro.records.base import read_record
from evalrepro.records.sessions import RunSessions, Session

SESSIONS_NAME = "run.json"


def read_sessions(run_dir: Path) -> list[Session]:
    """The run's sessions, oldest first; none if ``run.json`` is missing or unreadable."""
    record = _read(run_dir)
    return record.sessions if record is not None else []


def _read(run_dir: Path) -> RunSessions | None:
    path = run_dir / SESSIONS_NAME
    if not path.exists():
        return None
    try:
        return read_record(path, RunSessions)
    except UserError:
        return None


def _lockfile_digest(run_dir: Path) -> str | None:
    from evalrepro.plan.lockfile import LOCKFILE_NAME

    try:
        return sha256_bytes((run_dir / LOCKFILE_NAME).read_bytes())
    except OSError:
        return None


def lockfile_drift(run_dir: Path) -> str | None:
    """Why the run's lockfile is not the one its first session wrote (its sha256 differs
    from ``run.json``'s), or None (the same, or a run.json that recorded none)."""
    record = _read(run_dir)
    if record is None or record.lockfile_sha256 is None:
        return None
    digest = _lockfile_digest(run_dir)
    if digest == record.lockfile_sha256:
        return None
    shown = (digest or "unreadable").removeprefix("sha256:")[:12]
    return (
        f"lockfile.lock.json: sha256 {shown}, {SESSIONS_NAME} recorded "
        f"{record.lockfile_sha256.removeprefix('sha256:')[:12]} at the run's first session "
        "(rewritten since?)"
    )


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
    previous = _read(run_dir)
    # The first session wrote the lockfile: its digest is kept from then on.
    if not resumed:
        digest = _lockfile_digest(run_dir)
    else:
        digest = previous.lockfile_sha256 if previous is not None else None
    record = RunSessions(
        sessions=[*(previous.sessions if previous else []), session], lockfile_sha256=digest
    )
    atomic.write_text(run_dir / SESSIONS_NAME, record.model_dump_json(indent=2) + "\n")
