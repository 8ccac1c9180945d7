"""Real servers on 127.0.0.1 for the team database's and the object store's tests.

``postgres_server``: Debian's PostgreSQL (``initdb`` in a temporary folder, started on a
free port of 127.0.0.1 with password authentication over TCP, stopped afterwards). The
server refuses to run as root: when the tests do, it runs as the ``postgres`` system user
(or ``nobody``) in a folder that user owns; as any other user (CI's ``evalrepro``), as
that user.

``s3_server``: moto's S3 server (``moto[server]`` from PyPI), in its own process on a
free port, with authentication switched on (``INITIAL_NO_AUTH_ACTION_COUNT``): only the
access key made here is accepted, so wrong credentials are refused as a real S3 refuses
them. docs/team-database.md says why this one.

Both skip with the reason when what they need is not installed, and fail instead when
the environment variable ``CI`` is set (CI must run them).

Use them from a test module with ``from tests.servers import postgres_server, s3_server``
(fixtures are found by name in the module's namespace).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "S3Server", "postgres_server", "s3_server"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _missing(reason: str) -> None:
    """Skip, or fail when CI (which must run every server test) is running."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI requires it)")
    pytest.skip(reason)


def _wait_for_port(port: int, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start on 127.0.0.1:{port}: see {log}")
        time.sleep(0.1)


# --- PostgreSQL ----------------------------------------------------------------------------


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's binaries folder (Debian's layout), or one on PATH."""
    versions = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    versions = [v for v in versions if v.parent.name.isdigit()]
    if versions:
        return max(versions, key=lambda v: int(v.parent.name))
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


@dataclass
class PostgresServer:
    """A running PostgreSQL on 127.0.0.1. ``url`` is the test user's own database; each
    test that needs an empty one asks ``new_database()``. The test user owns its
    databases and is no superuser; ``admin_url`` is the superuser's."""

    port: int
    user: str
    password: str
    database: str
    admin_user: str
    admin_password: str
    folder: Path
    host: str = "127.0.0.1"
    _count: int = field(default=0, repr=False)

    def __repr__(self) -> str:  # never the passwords, should a test print the fixture
        return f"PostgresServer({self.host}:{self.port}, user={self.user})"

    def url_for(self, database: str) -> str:
        return (
            f"postgresql+psycopg://{self.user}:{self.password}@{self.host}:{self.port}/{database}"
        )

    @property
    def url(self) -> str:
        return self.url_for(self.database)

    @property
    def admin_url(self) -> str:
        return (
            f"postgresql+psycopg://{self.admin_user}:{self.admin_password}@{self.host}:"
            f"{self.port}/postgres"
        )

    def connect(self, database: str | None = None, *, admin: bool = False):
        """A psycopg connection (autocommit) to ``database``."""
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.admin_user if admin else self.user,
            password=self.admin_password if admin else self.password,
            dbname=database or ("postgres" if admin else self.database),
            autocommit=True,
            connect_timeout=10,
        )

    def new_database(self) -> str:
        """The URL of a new, empty database owned by the test user."""
        self._count += 1
        name = f"test_{os.getpid()}_{self._count}_{uuid.uuid4().hex[:8]}"
        with self.connect(admin=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}" OWNER "{self.user}"')
        return self.url_for(name)


def _as_server_user(command: list[str], user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--", *command] if user else command


def _server_user() -> str | None:
    """Who runs the server: None for this user, unless this is root (postgres refuses)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root with neither a postgres nor a nobody user")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    binaries = postgres_bin()
    if binaries is None:
        _missing("PostgreSQL is not installed (scripts/setup installs Debian's postgresql)")
    import importlib.util

    if importlib.util.find_spec("psycopg") is None:
        _missing("psycopg is not installed (pip install -e '.[test]')")
    assert binaries is not None
    user = _server_user()
    # Not under pytest's tmp_path: that is private to this user, and the server's may differ.
    folder = Path(tempfile.mkdtemp(prefix="evalrepro-postgres-"))
    data = folder / "data"
    admin_password = secrets.token_urlsafe(18)
    (folder / "pwfile").write_text(admin_password + "\n")
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        os.chown(folder / "pwfile", entry.pw_uid, entry.pw_gid)
    folder.chmod(0o700)
    log = folder / "server.log"
    server = PostgresServer(
        port=0,
        user="evalrepro_test",
        password=secrets.token_urlsafe(18),
        database="evalrepro_test",
        admin_user="evalrepro_admin",
        admin_password=admin_password,
        folder=folder,
    )
    pg_ctl = [str(binaries / "pg_ctl"), "-D", str(data)]
    started = False
    try:
        subprocess.run(
            _as_server_user(
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    server.admin_user,
                    f"--pwfile={folder / 'pwfile'}",
                    "--auth=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--no-locale",
                    "--no-sync",
                ],
                user,
            ),
            check=True,
            capture_output=True,
            cwd=folder,
        )
        (folder / "pwfile").unlink()
        for _ in range(3):  # a free port may be taken between the probe and the start
            server.port = _free_port()
            with (data / "postgresql.conf").open("a") as conf:
                # TCP on 127.0.0.1 only, no Unix socket (no /var/run/postgresql needed);
                # durability is not what these tests are about.
                conf.write(
                    f"\nlisten_addresses = '127.0.0.1'\nport = {server.port}\n"
                    "unix_socket_directories = ''\nfsync = off\n"
                    "synchronous_commit = off\nfull_page_writes = off\n"
                )
            result = subprocess.run(
                _as_server_user([*pg_ctl, "-l", str(log), "-w", "-t", "60", "start"], user),
                capture_output=True,
                cwd=folder,
            )
            if result.returncode == 0:
                started = True
                break
        if not started:
            raise RuntimeError(f"PostgreSQL did not start: see {log}")
        with server.connect(admin=True) as connection:
            connection.execute(f"CREATE ROLE \"{server.user}\" LOGIN PASSWORD '{server.password}'")
            connection.execute(f'CREATE DATABASE "{server.database}" OWNER "{server.user}"')
        yield server
    finally:
        if started:
            subprocess.run(
                _as_server_user([*pg_ctl, "-m", "immediate", "-w", "stop"], user),
                capture_output=True,
                cwd=folder,
            )
        shutil.rmtree(folder, ignore_errors=True)


# --- S3 (moto's server) --------------------------------------------------------------------


@dataclass
class S3Server:
    """moto's S3 server on 127.0.0.1, answering only ``access_key_id`` and its secret."""

    endpoint_url: str
    bucket: str
    access_key_id: str
    secret_access_key: str
    region: str = "us-east-1"

    def __repr__(self) -> str:  # never the secret
        return f"S3Server({self.endpoint_url}, bucket={self.bucket})"

    def environment(self) -> dict[str, str]:
        """What a client is given, through the environment only."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_DEFAULT_REGION": self.region,
        }

    def client(self):
        """A boto3 S3 client with the good credentials (to look at or tamper with objects
        from outside the code under test)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
        )

    def new_bucket(self) -> str:
        """A new, empty bucket's name."""
        name = f"test-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    import importlib.util

    for module in ("moto", "flask", "boto3"):
        if importlib.util.find_spec(module) is None:
            _missing(f"{module} is not installed (moto[server]: pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("moto")
    log_path = folder / "moto.log"
    port = _free_port()
    # The first three requests (the IAM user, its key, its policy) go unauthenticated;
    # every one after is checked against the key made by them.
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "INITIAL_NO_AUTH_ACTION_COUNT": "3",
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    try:
        _wait_for_port(port, process, "moto's S3 server", log_path)
        import boto3

        endpoint = f"http://127.0.0.1:{port}"
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
            region_name="us-east-1",
        )
        iam.create_user(UserName="evalrepro-test")
        key = iam.create_access_key(UserName="evalrepro-test")["AccessKey"]
        iam.put_user_policy(
            UserName="evalrepro-test",
            PolicyName="s3",
            PolicyDocument=(
                '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
                '"Action": "s3:*", "Resource": "*"}]}'
            ),
        )
        server = S3Server(
            endpoint_url=endpoint,
            bucket="evalrepro-test",
            access_key_id=key["AccessKeyId"],
            secret_access_key=key["SecretAccessKey"],
        )
        server.client().create_bucket(Bucket=server.bucket)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
