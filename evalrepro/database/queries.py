"""What a team asks the database: its runs, and a leaderboard of the comparable ones.

Every rate is the run's own recorded RunMetrics interval (what ``report --json`` and
``compare`` show for it), read back, never computed again."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine, select

from evalrepro.database import schema
from evalrepro.database.comparability import defining_facts
from evalrepro.database.engine import failures
from evalrepro.database.url import DatabaseUrl
from evalrepro.errors import UserError
from evalrepro.plan.lockfile import differences
from evalrepro.records.database import (
    Leaderboard,
    LeaderboardGroup,
    LeaderboardRow,
    PublishedRun,
    PublishedRuns,
)
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.metrics import RunMetrics


def list_runs(
    engine: Engine,
    url: DatabaseUrl,
    *,
    dataset: str | None = None,
    target: str | None = None,
    experiment: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    comparability: str | None = None,
) -> PublishedRuns:
    """The runs the filters let through, oldest first. ``comparability``: a class or
    its leading characters, as ``runs`` shows it."""
    runs = schema.runs.c
    query = select(schema.runs).order_by(runs.started_at, runs.run_id)
    if dataset is not None:
        query = query.where(runs.dataset == dataset)
    if target is not None:
        query = query.where(runs.target_id == target)
    if experiment is not None:
        query = query.where(runs.experiment == experiment)
    if engine.dialect.name == "sqlite":
        # SQLite keeps the (UTC) times without their zone.
        since, until = (
            moment.astimezone(UTC).replace(tzinfo=None) if moment and moment.tzinfo else moment
            for moment in (since, until)
        )
    if since is not None:
        query = query.where(runs.started_at >= since)
    if until is not None:
        query = query.where(runs.started_at <= until)
    if comparability is not None:
        prefix = comparability if comparability.startswith("sha256:") else "sha256:" + comparability
        query = query.where(runs.comparability.startswith(prefix, autoescape=True))
    with failures(url, "cannot read"), engine.connect() as connection:
        rows = connection.execute(query).mappings().all()
    return PublishedRuns(database=url.redacted, runs=[_published(row) for row in rows])


def _published(row) -> PublishedRun:
    metrics = RunMetrics.model_validate_json(row["metrics_json"])
    return PublishedRun(
        run_id=row["run_id"],
        experiment=row["experiment"],
        target_id=row["target_id"],
        dataset=row["dataset"],
        lockfile_digest=row["lockfile_digest"],
        comparability=row["comparability"],
        harness_version=row["harness_version"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        published_at=row["published_at"],
        planned=row["planned"],
        finished=row["finished"],
        resolved=row["resolved"],
        resolved_rate=metrics.resolved_rate,
        gate_name=row["gate_name"],
        gate_passed=row["gate_passed"],
        complete=row["complete"],
        store_url=row["store_url"],
        retracted_at=row["retracted_at"],
        retraction_reason=row["retraction_reason"],
    )


def find_run(engine: Engine, url: DatabaseUrl, reference: str) -> dict:
    """The run whose id is ``reference`` (or begins with it): its row."""
    runs = schema.runs.c
    query = select(schema.runs).where(runs.run_id.startswith(reference, autoescape=True))
    with failures(url, "cannot read"), engine.connect() as connection:
        rows = connection.execute(query.limit(2)).mappings().all()
    if not rows:
        raise UserError(f"{reference}: no such run in {url.redacted} (see evalrepro runs)")
    if len(rows) > 1:
        raise UserError(f"{reference}: more than one run's id begins so in {url.redacted}")
    row = dict(rows[0])
    if not row["complete"] or not row["manifest_digest"]:
        raise UserError(
            f"{row['run_id']}: its publish did not finish (publish it again to complete it)"
        )
    return row


def leaderboard(engine: Engine, url: DatabaseUrl, *, dataset: str | None = None) -> Leaderboard:
    """The complete, finished runs, grouped by comparability class (the group with most
    runs first), each group ranked by resolve rate; every other group names how it
    differs from the first."""
    runs = schema.runs.c
    query = select(schema.runs).order_by(runs.started_at, runs.run_id)
    if dataset is not None:
        query = query.where(runs.dataset == dataset)
    with failures(url, "cannot read"), engine.connect() as connection:
        rows = connection.execute(query).mappings().all()
    left_out = [
        f"{row['run_id']} ({row['experiment']}): {why}"
        for row in rows
        if (why := _left_out(row)) is not None
    ]
    included = [row for row in rows if _left_out(row) is None]
    classes: dict[str, list] = {}
    for row in included:
        classes.setdefault(row["comparability"], []).append(row)
    # Most runs first; then the class whose first run is oldest (a start may be unknown).
    ordered = sorted(
        classes.values(),
        key=lambda group: (
            -len(group),
            str(group[0]["started_at"] or ""),
            group[0]["comparability"],
        ),
    )
    groups = []
    reference: Lockfile | None = None
    lockfiles = [Lockfile.model_validate_json(m[0]["lockfile_json"]) for m in ordered]
    # Each heading names what makes its class: its value of what the classes do not share.
    defined = defining_facts(lockfiles) if len(lockfiles) > 1 else [[] for _ in lockfiles]
    for members, lockfile, defined_by in zip(ordered, lockfiles, defined, strict=True):
        found = (
            []
            if reference is None
            else [d for d in differences(reference, lockfile, same_target=False)]
        )
        reference = reference or lockfile
        groups.append(
            LeaderboardGroup(
                comparability=members[0]["comparability"],
                dataset=members[0]["dataset"],
                instances=len(lockfile.dataset.instances),
                harness_version=members[0]["harness_version"],
                rows=_ranked(members),
                differences=found,
                defined_by=defined_by,
            )
        )
    return Leaderboard(database=url.redacted, dataset=dataset, groups=groups, left_out=left_out)


def _left_out(row) -> str | None:
    """Why a run is not on the leaderboard, or None."""
    if row["retracted_at"] is not None:
        reason = row["retraction_reason"]
        return "retracted" + (f": {reason}" if reason else "")
    if not row["complete"]:
        return "its publish did not finish"
    if row["finished"] < row["planned"]:
        return f"unfinished, {row['finished']} of {row['planned']} trials"
    return None


def _ranked(members: list) -> list[LeaderboardRow]:
    entries = [(row, RunMetrics.model_validate_json(row["metrics_json"])) for row in members]
    entries.sort(key=lambda entry: (-entry[1].resolved_rate.estimate, entry[0]["run_id"]))
    ranked, rank, previous = [], 0, None
    for position, (row, metrics) in enumerate(entries, start=1):
        # Ties share a rank (1, 1, 3).
        if metrics.resolved_rate.estimate != previous:
            rank, previous = position, metrics.resolved_rate.estimate
        ranked.append(
            LeaderboardRow(
                rank=rank,
                run_id=row["run_id"],
                experiment=row["experiment"],
                target_id=row["target_id"],
                planned=row["planned"],
                resolved=row["resolved"],
                resolved_rate=metrics.resolved_rate,
                invalid_rate=metrics.invalid_rate,
                pass_at_k=metrics.pass_at_k,
                pass_hat_k=metrics.pass_hat_k or {},
                gate_passed=row["gate_passed"],
                started_at=row["started_at"],
            )
        )
    return ranked
