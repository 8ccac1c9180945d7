"""Alembic's migrations of the team database, run to ``head`` whenever it is opened."""
