"""A run retracted by ``evalrepro unpublish``: when, and why. Kept in the history (every
row stays), off the leaderboard.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


# Plain ALTER TABLE (SQLite has ADD and DROP COLUMN since 3.35): a batch operation would
# copy the table, which its foreign keys refuse.


def upgrade() -> None:
    op.add_column("runs", sa.Column("retracted_at", sa.DateTime(timezone=True)))
    op.add_column("runs", sa.Column("retraction_reason", sa.Text))


def downgrade() -> None:
    op.drop_column("runs", "retraction_reason")
    op.drop_column("runs", "retracted_at")
