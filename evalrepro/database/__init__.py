"""A team's runs in one place: published runs' records in a SQL database (SQLite by
default, PostgreSQL for teams), their files in an object store (``evalrepro.store``).
See docs/team-database.md."""
