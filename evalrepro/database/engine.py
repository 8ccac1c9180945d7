"""Opening the team database: connect, then migrate it to the newest schema (Alembic's
``head``); a database that cannot be reached, or refuses the credentials, is one line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from evalrepro.database.url import DatabaseUrl, parse_database_url
from evalrepro.errors import UserError

MIGRATIONS = Path(__file__).parent / "migrations"
#: PostgreSQL advisory lock held while migrating, so that two publishers opening an
#: empty database at once do not both create its tables. (An arbitrary constant.)
_MIGRATION_LOCK = 0x65766C72


class DatabaseError(UserError):
    """The database could not be reached or used: one line, its URL redacted."""


def open_database(text: str | DatabaseUrl, *, create: bool = True) -> tuple[Engine, DatabaseUrl]:
    """An engine on the database ``text`` names, migrated to ``head``. ``create``: an
    SQLite file that is not there yet is made (a publish), else it is an error (a
    command that reads would only find it empty)."""
    url = text if isinstance(text, DatabaseUrl) else parse_database_url(text)
    if url.sqlite_path is not None and not url.sqlite_path.parent.is_dir():
        raise DatabaseError(f"--db: {url.redacted}: no folder {url.sqlite_path.parent}")
    if url.sqlite_path is not None and not create and not url.sqlite_path.is_file():
        raise DatabaseError(f"--db: {url.redacted}: no such database (evalrepro publish makes it)")
    if url.dialect == "postgresql" and importlib.util.find_spec("psycopg") is None:
        raise DatabaseError("a PostgreSQL database needs psycopg: pip install 'evalrepro[team]'")
    if url.dialect == "sqlite":
        engine = create_engine(url.url, connect_args={"timeout": 60})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url.url, connect_args={"connect_timeout": 10}, pool_pre_ping=True)
    with failures(url, "cannot open"):
        migrate(engine)
    return engine, url


def _sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    # WAL: readers do not wait for a publisher; foreign keys are off by default in SQLite.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def migrate(engine: Engine) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def head_revision() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


class failures:
    """A context in which a database error becomes one line naming the database
    (redacted) and the driver's first line of complaint, the password scrubbed."""

    def __init__(self, url: DatabaseUrl, doing: str) -> None:
        self.url, self.doing = url, doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, _traceback) -> bool:
        if error is None or not isinstance(error, SQLAlchemyError):
            return False
        cause = error.orig if isinstance(error, DBAPIError) else error
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        why = self.url.scrub(lines[0] if lines else type(cause).__name__)
        raise DatabaseError(f"{self.doing} database {self.url.redacted}: {why}") from None
