"""The first schema: runs, trials, attempts, test statuses, metrics.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("lockfile_digest", sa.String(80), nullable=False),
        sa.Column("first_session", _WHEN, nullable=False),
        sa.Column("experiment", sa.Text, nullable=False),
        sa.Column("target_id", sa.Text, nullable=False),
        sa.Column("target_kind", sa.Text, nullable=False),
        sa.Column("dataset", sa.Text, nullable=False),
        sa.Column("dataset_digest", sa.String(80), nullable=False),
        sa.Column("harness_version", sa.Text, nullable=False),
        sa.Column("harness_digest", sa.String(80), nullable=False),
        sa.Column("config_digest", sa.String(80), nullable=False),
        sa.Column("target_digest", sa.String(80), nullable=False),
        sa.Column("environment_digest", sa.String(80), nullable=False),
        sa.Column("comparability", sa.String(80), nullable=False),
        sa.Column("evalrepro_version", sa.Text, nullable=False),
        sa.Column("sessions", sa.Integer, nullable=False),
        sa.Column("started_at", _WHEN),
        sa.Column("finished_at", _WHEN),
        sa.Column("planned", sa.Integer, nullable=False),
        sa.Column("finished", sa.Integer, nullable=False),
        sa.Column("resolved", sa.Integer, nullable=False),
        sa.Column("unresolved", sa.Integer, nullable=False),
        sa.Column("invalid", sa.Integer, nullable=False),
        sa.Column("missing", sa.Integer, nullable=False),
        sa.Column("gate_name", sa.Text, nullable=False),
        sa.Column("gate_passed", sa.Boolean, nullable=False),
        sa.Column("provenance_json", sa.Text, nullable=False),
        sa.Column("metrics_json", sa.Text, nullable=False),
        sa.Column("lockfile_json", sa.Text, nullable=False),
        sa.Column("store_url", sa.Text, nullable=False),
        sa.Column("manifest_digest", sa.String(80)),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("published_at", _WHEN, nullable=False),
    )
    op.create_index("ix_runs_comparability", "runs", ["comparability"])
    op.create_table(
        "trials",
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("trial_id", sa.String(80), primary_key=True),
        sa.Column("instance_id", sa.Text, nullable=False),
        sa.Column("sample_index", sa.Integer, nullable=False),
        sa.Column("target_id", sa.Text, nullable=False),
        sa.Column("repository_commit", sa.Text, nullable=False),
        sa.Column("image_digest", sa.Text, nullable=False),
        sa.Column("test_spec_digest", sa.String(80), nullable=False),
        sa.Column("target_digest", sa.String(80)),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("resolution", sa.String(32)),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("started_at", _WHEN),
        sa.Column("finished_at", _WHEN),
        sa.Column("seconds", sa.Float),
        sa.Column("input_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
        sa.Column("cost_usd", sa.Float),
    )
    op.create_index("ix_trials_instance_id", "trials", ["instance_id"])
    op.create_table(
        "attempts",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("trial_id", sa.String(80), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("started_at", _WHEN, nullable=False),
        sa.Column("finished_at", _WHEN, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("score_reason", sa.Text, nullable=False),
        sa.Column("execution_status", sa.String(32), nullable=False),
        sa.Column("parser_status", sa.String(32), nullable=False),
    )
    op.create_table(
        "test_statuses",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("trial_id", sa.String(80), primary_key=True),
        sa.Column("test", sa.Text, primary_key=True),
        sa.Column("status", sa.String(32), nullable=False),
    )
    op.create_table(
        "metrics",
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("estimate", sa.Float, nullable=False),
        sa.Column("low", sa.Float, nullable=False),
        sa.Column("high", sa.Float, nullable=False),
        sa.Column("method", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for table in ("metrics", "test_statuses", "attempts", "trials", "runs"):
        op.drop_table(table)
