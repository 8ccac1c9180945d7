"""The database a command names: a plain path or ``sqlite:///...`` (SQLite, the embedded
default) or ``postgresql://...`` (PostgreSQL through psycopg).

The password comes from the URL, else from ``EVALREPRO_DB_PASSWORD`` or ``PGPASSWORD``;
every message names the database by :attr:`DatabaseUrl.redacted`, never with it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from evalrepro.errors import UserError

#: Where a password may come from when the URL holds none, in this order.
PASSWORD_VARIABLES = ("EVALREPRO_DB_PASSWORD", "PGPASSWORD")


@dataclass(frozen=True)
class DatabaseUrl:
    url: URL

    @property
    def dialect(self) -> str:
        return self.url.get_backend_name()

    @property
    def redacted(self) -> str:
        """The URL for messages and records: the password, if any, as ``***``."""
        return self.url.render_as_string(hide_password=True)

    @property
    def secrets(self) -> list[str]:
        """What must never be printed (the password), for scrubbing a driver's message."""
        return [self.url.password] if self.url.password else []

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(str(secret), "***")
        return text

    @property
    def sqlite_path(self) -> Path | None:
        return Path(self.url.database) if self.dialect == "sqlite" and self.url.database else None


def parse_database_url(text: str) -> DatabaseUrl:
    """``text`` as a database URL; a UserError (naming it redacted) when it is not one."""
    if "://" not in text:
        # A plain path: an SQLite file beside the user's runs.
        return DatabaseUrl(URL.create("sqlite", database=str(Path(text).expanduser().absolute())))
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):
        raise UserError(f"--db: not a database URL: {_redact_raw(text)}") from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise UserError("--db: an SQLite URL names a file: sqlite:///path/to/runs.db")
        return DatabaseUrl(url.set(drivername="sqlite"))
    if backend in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
        if not url.database:
            raise UserError(f"--db: {_redacted(url)}: name the database (postgresql://host/NAME)")
        if url.password is None:
            for variable in PASSWORD_VARIABLES:
                if os.environ.get(variable):
                    url = url.set(password=os.environ[variable])
                    break
        return DatabaseUrl(url)
    raise UserError(
        f"--db: {_redacted(url)}: unsupported database (a path or sqlite:///FILE, or "
        "postgresql://USER@HOST/NAME)"
    )


def _redacted(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def _redact_raw(text: str) -> str:
    """A string that is not a URL, with anything between ``:`` and ``@`` after the
    scheme hidden (it may be a password)."""
    scheme, _, rest = text.partition("://")
    if "@" in rest:
        user, _, host = rest.rpartition("@")
        rest = f"{user.split(':', 1)[0]}:***@{host}" if ":" in user else rest
    return f"{scheme}://{rest}"


#: Where the database is when no ``--db`` names it: ``$EVALREPRO_DB``, else an SQLite
#: file beside the runs (``runs/`` is where ``evalrepro run`` puts them).
DEFAULT_DATABASE = "runs/evalrepro.db"


def database_argument(given: str | None) -> str:
    return given or os.environ.get("EVALREPRO_DB") or DEFAULT_DATABASE


def store_argument(url: DatabaseUrl, given: str | None) -> str:
    """The object store a publish writes to: ``--store``, else ``$EVALREPRO_STORE``, else
    (for SQLite) the folder ``<database>.objects`` beside the database file."""
    if given or os.environ.get("EVALREPRO_STORE"):
        return given or os.environ["EVALREPRO_STORE"]
    if url.sqlite_path is not None:
        return str(url.sqlite_path.with_name(url.sqlite_path.name + ".objects"))
    raise UserError(
        f"--store: {url.redacted} keeps records, not files: name the object store the runs' "
        "files go to (--store s3://BUCKET/PREFIX or a folder, or $EVALREPRO_STORE)"
    )
