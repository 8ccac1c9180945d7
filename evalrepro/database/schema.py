"""The database's tables (SQLAlchemy 2 Core). Alembic's migrations in ``migrations/``
create them; a test checks that the migrated database and these tables agree.

A run is identified by its lockfile's digest and its first session's start
(:func:`evalrepro.database.publish.run_id`): two runs of one lockfile are two runs, a
resumed run is the same run with more trials. Every other table's key starts with the
run's id, so that a second publish of the same rows inserts nothing."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("lockfile_digest", String(80), nullable=False),
    Column("first_session", DateTime(timezone=True), nullable=False),
    Column("experiment", Text, nullable=False),
    Column("target_id", Text, nullable=False),
    Column("target_kind", Text, nullable=False),
    Column("dataset", Text, nullable=False),
    Column("dataset_digest", String(80), nullable=False),
    Column("harness_version", Text, nullable=False),
    Column("harness_digest", String(80), nullable=False),
    # The lockfile's identity digests: the config, the target (its patches), the
    # environment.
    Column("config_digest", String(80), nullable=False),
    Column("target_digest", String(80), nullable=False),
    Column("environment_digest", String(80), nullable=False),
    # A digest over what `verify A B` compares apart from the target: equal for runs
    # that are comparable (evalrepro.database.comparability).
    Column("comparability", String(80), nullable=False, index=True),
    Column("evalrepro_version", Text, nullable=False),
    Column("sessions", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("planned", Integer, nullable=False),
    Column("finished", Integer, nullable=False),
    Column("resolved", Integer, nullable=False),
    Column("unresolved", Integer, nullable=False),
    Column("invalid", Integer, nullable=False),
    Column("missing", Integer, nullable=False),
    Column("gate_name", Text, nullable=False),
    Column("gate_passed", Boolean, nullable=False),
    # The run's own RunMetrics (report --json's) and lockfile, as recorded.
    # Where and by what the run was made (report --json's provenance, but its time).
    Column("provenance_json", Text, nullable=False),
    Column("metrics_json", Text, nullable=False),
    Column("lockfile_json", Text, nullable=False),
    # Where its files are (credentials never: the store's redacted URL) and the manifest
    # that lists them: what `report --db` materializes.
    Column("store_url", Text, nullable=False),
    Column("manifest_digest", String(80)),
    # True only once every file is in the store and every row below is in.
    Column("complete", Boolean, nullable=False),
    Column("published_at", DateTime(timezone=True), nullable=False),
    # Set by `evalrepro unpublish`: the run stays (its history), off the leaderboard.
    Column("retracted_at", DateTime(timezone=True)),
    Column("retraction_reason", Text),
)

trials = Table(
    "trials",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.run_id"), primary_key=True),
    Column("trial_id", String(80), primary_key=True),
    Column("instance_id", Text, nullable=False, index=True),
    Column("sample_index", Integer, nullable=False),
    Column("target_id", Text, nullable=False),
    Column("repository_commit", Text, nullable=False),
    Column("image_digest", Text, nullable=False),
    Column("test_spec_digest", String(80), nullable=False),
    Column("target_digest", String(80)),
    Column("outcome", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("detail", Text, nullable=False),
    Column("resolution", String(32)),
    Column("attempts", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("seconds", Float),
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("cost_usd", Float),
)

attempts = Table(
    "attempts",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("trial_id", String(80), primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("reason", Text, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("score_reason", Text, nullable=False),
    Column("execution_status", String(32), nullable=False),
    Column("parser_status", String(32), nullable=False),
)

#: The final attempt's status of each test a trial's log reported.
test_statuses = Table(
    "test_statuses",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("trial_id", String(80), primary_key=True),
    Column("test", Text, primary_key=True),
    Column("status", String(32), nullable=False),
)

#: Each rate of the run's RunMetrics with its interval (resolved_rate, pass@k, ...).
metrics = Table(
    "metrics",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.run_id"), primary_key=True),
    Column("name", String(64), primary_key=True),
    Column("estimate", Float, nullable=False),
    Column("low", Float, nullable=False),
    Column("high", Float, nullable=False),
    Column("method", Text, nullable=False),
    Column("confidence", Float, nullable=False),
)
