"""Publishing a run: checked as ``verify RUN`` checks it, its files into the object
store, then its records into the database in one transaction.

The order keeps the database's view true whatever stops a publish: the run's row is
registered first, not complete; every file goes to the store (which resumes); only then,
in one transaction, go its trials, attempts, test statuses and metrics, and the run is
marked complete. Every row has a unique key, and what is there already is not inserted
again: publishing a run twice changes nothing, and a run resumed and published again
adds only its new trials."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, select, update
from sqlalchemy.dialects import postgresql, sqlite

from evalrepro.database import schema
from evalrepro.database.comparability import comparability_class
from evalrepro.database.engine import failures
from evalrepro.database.url import DatabaseUrl
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.records.base import read_record
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.metrics import RunMetrics
from evalrepro.records.report import RunReport
from evalrepro.records.sessions import RunSessions
from evalrepro.records.stats import Interval
from evalrepro.records.trial import TrialResult

#: Problems ``verify RUN`` reports that a publish accepts: trials that have not finished
#: (yet). Such a run goes in as unfinished; resumed and published again, it gains the
#: rest. Any other problem refuses the run.
UNFINISHED = frozenset({"missing"})


class RunRefused(UserError):
    """A run that ``verify`` does not pass: it is not published."""


@dataclass(frozen=True)
class Published:
    run_id: str
    run: Path
    #: Trials this publish added (0: the run was there already, as it is now).
    added: int
    finished: int
    planned: int
    #: Nothing changed: the run was published before exactly so.
    unchanged: bool
    #: Temporary objects of killed uploads this publish removed from the store.
    leftovers_removed: int = 0


@dataclass(frozen=True)
class Retraction:
    run_id: str
    retracted_at: datetime
    reason: str | None
    #: It was retracted before (then, with its reason): nothing changed.
    earlier: bool


def run_id(lockfile_digest: str, first_session: datetime) -> str:
    """A run's id in the database: its lockfile and its first session (a resumed run
    keeps both; another run of the same lockfile has another first session)."""
    return sha256_json([lockfile_digest, first_session.isoformat()]).removeprefix("sha256:")[:16]


def publish_run(
    path: Path,
    engine: Engine,
    url: DatabaseUrl,
    store: Any,
    *,
    progress: Callable[..., None] | None = None,
) -> Published:
    """Publish the run directory ``path`` into the database and ``store`` (an
    :class:`evalrepro.store.objects.ObjectStore`)."""
    from evalrepro.publish.verify import check_run
    from evalrepro.report.run_report import build_run_report
    from evalrepro.run.rundir import RunDirectory
    from evalrepro.store.runs import store_run

    check = check_run(path)
    refusing = [p for p in check.problems if p.kind not in UNFINISHED]
    if refusing:
        more = f" (and {len(refusing) - 1} more)" if len(refusing) > 1 else ""
        raise RunRefused(
            f"{path}: not published: verify finds {refusing[0].kind}: "
            f"{refusing[0].detail}{more} (see evalrepro verify {path})"
        )
    directory, lockfile = RunDirectory.open(path)
    sessions = read_record(directory.path / "run.json", RunSessions).sessions
    if not sessions:
        raise RunRefused(f"{path}: not published: run.json records no session")
    lockfile_digest = sha256_bytes((directory.path / LOCKFILE_NAME).read_bytes())
    identity = run_id(lockfile_digest, sessions[0].started_at)
    results = directory.survey(lockfile).results
    # The run's report as `report --json` makes it (its defaults): the leaderboard shows
    # these very intervals.
    report = build_run_report(directory.path, lockfile, results)
    row = _run_row(identity, lockfile, lockfile_digest, sessions, report, store.url, results)

    with failures(url, "cannot publish to"), engine.begin() as connection:
        existing = connection.execute(
            select(schema.runs.c.complete, schema.runs.c.finished).where(
                schema.runs.c.run_id == identity
            )
        ).first()
        if existing is None:
            _insert_new(connection, schema.runs, [{**row, "complete": False}])
    # What killed uploads left in the store goes first (never a live upload's).
    removed = store.remove_leftovers()
    # The files first (resumable), then the records that point at them.
    _stored, manifest_digest = store_run(directory.path, store, progress=progress)
    with failures(url, "cannot publish to"), engine.begin() as connection:
        current = connection.execute(
            select(schema.runs.c.complete, schema.runs.c.manifest_digest).where(
                schema.runs.c.run_id == identity
            )
        ).one()
        if current.complete and current.manifest_digest == manifest_digest:
            return Published(identity, path, 0, len(results), len(lockfile.trials), True, removed)
        added = _insert_trials(connection, identity, lockfile, results)
        _insert_metrics(connection, identity, report.metrics)
        connection.execute(
            update(schema.runs)
            .where(schema.runs.c.run_id == identity)
            .values(**row, manifest_digest=manifest_digest, complete=True)
        )
    return Published(identity, path, added, len(results), len(lockfile.trials), False, removed)


def unpublish_run(
    engine: Engine, url: DatabaseUrl, reference: str, reason: str | None = None
) -> Retraction:
    """Retract the run ``reference`` names (its id as ``runs`` lists it, its first
    characters, or its run folder): its rows stay, marked retracted, and it leaves the
    leaderboard. A run that is not in the database is one UserError line."""
    identity = _run_id_of(reference)
    runs = schema.runs.c
    with failures(url, "cannot retract in"), engine.begin() as connection:
        found = connection.execute(
            select(runs.run_id, runs.retracted_at, runs.retraction_reason)
            .where(runs.run_id.startswith(identity, autoescape=True))
            .limit(2)
        ).all()
        if not found:
            raise UserError(f"{reference}: no such run in {url.redacted} (see evalrepro runs)")
        if len(found) > 1:
            raise UserError(f"{reference}: more than one run's id begins so in {url.redacted}")
        ((run, retracted_at, earlier_reason),) = found
        if retracted_at is not None:
            return Retraction(run, retracted_at, earlier_reason, earlier=True)
        now = datetime.now(UTC)
        connection.execute(
            update(schema.runs)
            .where(runs.run_id == run)
            .values(retracted_at=now, retraction_reason=reason)
        )
    return Retraction(run, now, reason, earlier=False)


def _run_id_of(reference: str) -> str:
    """A run id (or its first characters), from itself or from a run folder."""
    folder = Path(reference)
    if not (folder / LOCKFILE_NAME).is_file():
        return reference
    sessions = read_record(folder / "run.json", RunSessions).sessions
    if not sessions:
        raise UserError(f"{reference}: run.json records no session: it was never published")
    return run_id(sha256_bytes((folder / LOCKFILE_NAME).read_bytes()), sessions[0].started_at)


def _run_row(
    identity: str,
    lockfile: Lockfile,
    lockfile_digest: str,
    sessions: list,
    report: RunReport,
    store_url: str,
    results: dict[str, TrialResult],
) -> dict[str, Any]:
    metrics = report.metrics
    return {
        "run_id": identity,
        "lockfile_digest": lockfile_digest,
        "first_session": sessions[0].started_at,
        "experiment": lockfile.experiment,
        "target_id": lockfile.target.target_id,
        "target_kind": lockfile.target.kind,
        "dataset": lockfile.dataset.name,
        "dataset_digest": lockfile.dataset.digest,
        "harness_version": lockfile.harness.version,
        "harness_digest": lockfile.harness.code_digest,
        "config_digest": lockfile.config_digest,
        "target_digest": lockfile.target.digest,
        "environment_digest": lockfile.environment.digest,
        "comparability": comparability_class(lockfile),
        "evalrepro_version": report.provenance.evalrepro_version,
        "sessions": len(sessions),
        "started_at": report.provenance.started_at,
        "finished_at": report.provenance.finished_at,
        "planned": metrics.planned,
        "finished": len(results),
        "resolved": metrics.resolved,
        "unresolved": metrics.unresolved,
        "invalid": metrics.invalid,
        "missing": metrics.missing,
        "gate_name": report.gate_name,
        "gate_passed": report.gate_passed,
        # Without its time: the same run published again is the same row.
        "provenance_json": report.provenance.model_dump_json(exclude={"generated_at"}),
        "metrics_json": metrics.model_dump_json(),
        "lockfile_json": lockfile.dumps(),
        "store_url": store_url,
        "published_at": datetime.now(UTC),
    }


def _insert_trials(
    connection: Connection, identity: str, lockfile: Lockfile, results: dict[str, TrialResult]
) -> int:
    there = set(
        connection.scalars(
            select(schema.trials.c.trial_id).where(schema.trials.c.run_id == identity)
        )
    )
    trials, attempts, tests = [], [], []
    for planned in lockfile.trials:
        result = results.get(planned.trial_id)
        if result is None or planned.trial_id in there:
            continue
        first, last = result.attempts[0], result.attempts[-1]
        key = result.trial.key
        usage = result.usage
        trials.append(
            {
                "run_id": identity,
                "trial_id": planned.trial_id,
                "instance_id": result.instance_id,
                "sample_index": result.sample_index,
                "target_id": result.target_id,
                "repository_commit": key.repository_commit,
                "image_digest": key.image_digest,
                "test_spec_digest": key.test_spec_digest,
                "target_digest": key.target_digest,
                "outcome": str(result.score.outcome),
                "reason": result.score.reason,
                "detail": result.score.detail,
                "resolution": str(result.score.resolution) if result.score.resolution else None,
                "attempts": len(result.attempts),
                "started_at": first.started_at,
                "finished_at": last.finished_at,
                "seconds": (last.finished_at - first.started_at).total_seconds(),
                "input_tokens": usage.input_tokens if usage else None,
                "output_tokens": usage.output_tokens if usage else None,
                "cost_usd": usage.cost_usd if usage else None,
            }
        )
        for attempt in result.attempts:
            attempts.append(
                {
                    "run_id": identity,
                    "trial_id": planned.trial_id,
                    "number": attempt.number,
                    "reason": attempt.reason,
                    "started_at": attempt.started_at,
                    "finished_at": attempt.finished_at,
                    "outcome": str(attempt.score.outcome),
                    "score_reason": attempt.score.reason,
                    "execution_status": str(attempt.observation.execution_status),
                    "parser_status": str(attempt.observation.parser_status),
                }
            )
        tests += [
            {"run_id": identity, "trial_id": planned.trial_id, "test": test, "status": status}
            for test, status in last.observation.status_map.items()
        ]
    _insert_new(connection, schema.trials, trials)
    _insert_new(connection, schema.attempts, attempts)
    _insert_new(connection, schema.test_statuses, tests)
    return len(trials)


def metric_intervals(metrics: RunMetrics) -> dict[str, Interval]:
    """Every rate of a run's metrics with its interval, by the name reports give it."""
    found = {
        "resolved_rate": metrics.resolved_rate,
        "unresolved_rate": metrics.unresolved_rate,
        "invalid_rate": metrics.invalid_rate,
        **metrics.pass_at_k,
        **(metrics.pass_hat_k or {}),
    }
    if metrics.sample_rate is not None:
        found["sample_rate"] = metrics.sample_rate
    if metrics.flaky_rate is not None:
        found["flaky_rate"] = metrics.flaky_rate
    return found


def _insert_metrics(connection: Connection, identity: str, metrics: RunMetrics) -> None:
    # A resumed run's rates change: its metric rows are the newest publish's.
    connection.execute(schema.metrics.delete().where(schema.metrics.c.run_id == identity))
    _insert_new(
        connection,
        schema.metrics,
        [
            {
                "run_id": identity,
                "name": name,
                "estimate": interval.estimate,
                "low": interval.low,
                "high": interval.high,
                "method": interval.method,
                "confidence": interval.confidence,
            }
            for name, interval in metric_intervals(metrics).items()
        ],
    )


def _insert_new(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows``, leaving out any whose key is there already (another publisher of
    the same run got there first)."""
    if not rows:
        return
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    for start in range(0, len(rows), 1000):
        statement = dialect.insert(table).on_conflict_do_nothing()
        connection.execute(statement, rows[start : start + 1000])
