"""A team's runs in one place: published runs' records in a SQL database (SQLite by
default, PostgreSQL for teams), their files in an object store (``evalrepro.store``).
See docs/team-database.md."""

from __future__ import annotations

import importlib.util

from evalrepro.errors import UserError

#: What the team database needs beyond evalrepro's own dependencies (the ``team`` extra).
REQUIRED = ("sqlalchemy", "alembic", "fsspec")


def require_team_extra() -> None:
    """One line, not a traceback, when the ``team`` extra is not installed."""
    missing = [name for name in REQUIRED if _absent(name)]
    if missing:
        raise UserError(
            f"the team database needs {', '.join(missing)}: pip install 'evalrepro[team]'"
        )


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True
