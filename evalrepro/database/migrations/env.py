"""Alembic's environment: run on the connection evalrepro opened (never from an ini
file or a URL of its own, so that no credential is read or logged here)."""

from __future__ import annotations

from alembic import context

from evalrepro.database.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
