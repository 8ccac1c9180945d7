"""The object store of a team's runs, for real: a folder (``file://``) and moto's S3
server on 127.0.0.1 (``tests/servers.py``), with the demo's run on the fake backend.

* A run folder is stored and materialized byte for byte; stored again, nothing is
  uploaded; an upload interrupted midway, run again, uploads only the rest and ends
  complete (its manifest is stored only then).
* An object altered or truncated in the store is found out on read and on fetch, and a
  materialized folder never appears half made; a manifest's paths cannot leave the folder.
* A wrong URL, a missing bucket, an endpoint that does not answer, wrong or missing
  credentials: one StoreError line, no secret in it; ``url`` and ``repr`` hold none.
* The PostgreSQL fixture the database's tests use answers over TCP with its password.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.digest import canonical_json
from evalrepro.pipeline import run_experiment
from evalrepro.records.store import StoredRun
from evalrepro.store import ObjectStore, StoreError
from evalrepro.store.runs import materialize_run, read_manifest, run_files, store_run
from tests.servers import S3Server, postgres_server, s3_server

__all__ = ["postgres_server", "s3_server"]  # fixtures, used by name


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """The demo experiment run on the fake backend, with what a run folder also holds but
    is not stored: the viewer's folder, the run lock, an atomic write's leftover."""
    root = tmp_path_factory.mktemp("demo")
    run_experiment(
        compose(["+experiment=demo", "environment=fake"]),
        Console(file=io.StringIO()),
        run_dir=root / "run",
        cache_dir=root / "cache",
    )
    run = root / "run"
    (run / "view").mkdir()
    (run / "view" / "index.html").write_text("<html></html>")
    (run / ".evalrepro.lock").touch()
    (run / "trials" / ".result.json.x1y2.tmp").write_text("half")
    return run


@dataclass
class Backend:
    """A store under test, and a way around it to the stored bytes (as a person or a
    fault would change them)."""

    store: ObjectStore
    write_raw: Callable[[str, bytes], None]
    keys: Callable[[], set[str]]


def local_backend(folder: Path) -> Backend:
    store = ObjectStore.open(f"file://{folder}")

    def write_raw(key: str, data: bytes) -> None:
        Path(key).write_bytes(data)

    def keys() -> set[str]:
        return {str(p) for p in folder.rglob("*") if p.is_file()}

    return Backend(store, write_raw, keys)


def s3_environment(monkeypatch, server: S3Server) -> None:
    """Only the server's credentials, through the environment; no file or instance
    metadata botocore could fall back to."""
    for name in list(os.environ):
        if name.startswith("AWS_") or name == "EVALREPRO_S3_ENDPOINT_URL":
            monkeypatch.delenv(name)
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def s3_backend(monkeypatch, server: S3Server) -> Backend:
    s3_environment(monkeypatch, server)
    bucket = server.new_bucket()
    store = ObjectStore.open(f"s3://{bucket}/team")
    client = server.client()

    def write_raw(key: str, data: bytes) -> None:
        client.put_object(Bucket=bucket, Key=key.split("/", 1)[1], Body=data)

    def keys() -> set[str]:
        listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
        return {f"{bucket}/{entry['Key']}" for entry in listed}

    return Backend(store, write_raw, keys)


@pytest.fixture(params=["file", "s3"])
def backend(request, tmp_path, monkeypatch) -> Backend:
    if request.param == "file":
        return local_backend(tmp_path / "store")
    return s3_backend(monkeypatch, request.getfixturevalue("s3_server"))


def stored_files(run: Path) -> dict[str, bytes]:
    """What a stored run is: every file but the viewer's, the lock and temporary ones."""
    return {relative: path.read_bytes() for relative, path in run_files(run)}


def one_line_without(error: BaseException, *secrets: str) -> str:
    text = str(error)
    assert "\n" not in text and text
    for secret in secrets:
        assert secret not in text
    return text


# --- storing and materializing a run ------------------------------------------------------


def test_a_run_is_stored_and_materialized_byte_for_byte(backend, demo_run, tmp_path):
    seen: list[tuple[str, bool]] = []
    manifest, digest = store_run(demo_run, backend.store, lambda p, u: seen.append((p, u)))
    files = stored_files(demo_run)
    assert "lockfile.lock.json" in files and "run.json" in files
    assert not any(p.startswith("view/") or p.endswith((".lock", ".tmp")) for p in files)
    assert [f.path for f in manifest.files] == sorted(files) == [p for p, _ in seen]
    assert all(f.sha256 == sha256(files[f.path]) for f in manifest.files)
    # Each content once: as many objects as distinct digests, and the manifest.
    distinct = {f.sha256 for f in manifest.files}
    assert len(distinct) < len(files)  # the demo has files alike (patches, empty logs)
    assert sum(uploaded for _, uploaded in seen) == len(distinct)
    objects = backend.keys()
    assert objects == {backend.store.key(d) for d in distinct | {digest}}
    assert all(f"/sha256/{d[7:9]}/{d[7:]}" in backend.store.key(d) for d in distinct)
    assert digest == sha256(canonical_json(manifest.model_dump(mode="json")))
    assert read_manifest(backend.store, digest) == manifest

    out = materialize_run(backend.store, digest, tmp_path / "copy")
    assert out == tmp_path / "copy"
    assert stored_files(out) == files
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(files)
    with pytest.raises(StoreError, match="not an empty folder"):
        materialize_run(backend.store, digest, out)


def test_a_run_stored_twice_uploads_nothing_the_second_time(backend, demo_run):
    first, digest = store_run(demo_run, backend.store)
    objects = backend.keys()
    seen: list[bool] = []
    again, digest_again = store_run(demo_run, backend.store, lambda p, u: seen.append(u))
    assert (again, digest_again) == (first, digest)
    assert seen and not any(seen)
    assert backend.keys() == objects


def test_an_interrupted_upload_resumes_and_uploads_only_the_rest(backend, demo_run, tmp_path):
    store = backend.store
    real_put = store.put_file
    uploaded_first: list[str] = []

    def failing_put(path: Path, digest: str, size: int) -> bool:
        if len(uploaded_first) == 10:
            raise StoreError("connection lost (simulated)")
        done = real_put(path, digest, size)
        if done:
            uploaded_first.append(digest)
        return done

    store.put_file = failing_put  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="connection lost"):
        store_run(demo_run, store)
    del store.put_file
    interrupted = backend.keys()
    assert len(interrupted) == 10

    uploaded_again: list[str] = []
    manifest, digest = store_run(
        demo_run, store, lambda p, u: uploaded_again.append(p) if u else None
    )
    distinct = {f.sha256 for f in manifest.files}
    by_path = {f.path: f.sha256 for f in manifest.files}
    again = {by_path[p] for p in uploaded_again}
    # The first ten were not uploaded again; the rest were, once each.
    assert again.isdisjoint(uploaded_first) and again | set(uploaded_first) == distinct
    assert len(uploaded_again) == len(distinct) - 10
    # The manifest (what says "complete") appeared only with the second, whole, upload.
    assert store.key(digest) not in interrupted and store.has(digest)
    assert stored_files(materialize_run(store, digest, tmp_path / "copy")) == stored_files(demo_run)


# --- what the store holds is checked ----------------------------------------------------


def test_a_corrupt_or_truncated_object_is_found_on_read_and_on_fetch(backend, tmp_path):
    store = backend.store
    source = tmp_path / "log.txt"
    data = b"PASSED test_one\nFAILED test_two\n" * 100
    source.write_bytes(data)
    digest = sha256(data)
    assert store.put_file(source, digest, len(data)) is True
    assert store.read_bytes(digest, len(data)) == data
    with pytest.raises(StoreError, match="more than the 10 read"):
        store.read_bytes(digest, 10)

    for altered in (data.replace(b"FAILED", b"PASSED"), data[:100]):
        backend.write_raw(store.key(digest), altered)
        assert store.has(digest)  # there, but not what its name says
        with pytest.raises(StoreError, match="corrupt") as read_error:
            store.read_bytes(digest, len(data))
        one_line_without(read_error.value)
        dest = tmp_path / "fetched" / "log.txt"
        with pytest.raises(StoreError, match="corrupt"):
            store.fetch(digest, dest)
        with pytest.raises(StoreError, match="corrupt"):
            store.fetch(digest, dest, size=len(data))
        assert not dest.exists() and not list(dest.parent.glob("*"))


def test_an_object_truncated_in_the_store_is_uploaded_again(backend, demo_run, tmp_path):
    manifest, digest = store_run(demo_run, backend.store)
    victim = max(manifest.files, key=lambda f: f.size)
    backend.write_raw(backend.store.key(victim.sha256), b"")
    seen: list[str] = []
    assert store_run(demo_run, backend.store, lambda p, u: seen.append(p) if u else None) == (
        manifest,
        digest,
    )
    assert seen == [f.path for f in manifest.files if f.sha256 == victim.sha256][:1]
    copy = materialize_run(backend.store, digest, tmp_path / "copy")
    assert stored_files(copy) == stored_files(demo_run)


def test_a_corrupt_file_of_a_run_leaves_no_materialized_folder(backend, demo_run, tmp_path):
    manifest, digest = store_run(demo_run, backend.store)
    victim = next(f for f in manifest.files if f.path.endswith("result.json"))
    backend.write_raw(backend.store.key(victim.sha256), b"{}")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(StoreError, match=f"{victim.path}: .*corrupt"):
        materialize_run(backend.store, digest, out / "copy")
    assert list(out.iterdir()) == []
    # The manifest itself is checked too.
    backend.write_raw(backend.store.key(digest), b'{"record": "StoredRun", "files": []}')
    with pytest.raises(StoreError, match="corrupt"):
        materialize_run(backend.store, digest, out / "copy")


def test_an_upload_whose_digest_does_not_match_leaves_no_object(backend, tmp_path):
    source = tmp_path / "patch.diff"
    source.write_bytes(b"--- a\n+++ b\n")
    claimed = sha256(b"something else")
    with pytest.raises(StoreError, match="not kept"):
        backend.store.put_file(source, claimed, source.stat().st_size)
    assert not backend.store.has(claimed)
    assert backend.keys() == set()  # nor a temporary one


def test_a_manifest_cannot_write_outside_the_folder(backend, tmp_path):
    content = tmp_path / "content"
    content.write_bytes(b"escaped")
    backend.store.put_file(content, sha256(b"escaped"), 7)
    for path in ("../escape.txt", "/tmp/escape.txt", "a/../../escape.txt"):
        raw = {
            "record": "StoredRun",
            "schema_version": 1,
            "files": [{"path": path, "sha256": sha256(b"escaped"), "size": 7}],
        }
        manifest = tmp_path / "manifest.json"
        manifest.write_bytes(canonical_json(raw))
        digest = sha256(manifest.read_bytes())
        backend.store.put_file(manifest, digest, manifest.stat().st_size)
        with pytest.raises(StoreError, match="not a valid StoredRun"):
            materialize_run(backend.store, digest, tmp_path / "out" / "run")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out").exists()


def test_a_run_folder_with_a_symbolic_link_is_not_stored(demo_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(demo_run, run)
    (run / "trials" / "secret").symlink_to("/etc/passwd")
    store = ObjectStore.open(str(tmp_path / "store"))
    with pytest.raises(StoreError, match="trials/secret is a symbolic link"):
        store_run(run, store)
    with pytest.raises(StoreError, match="not a run directory"):
        store_run(tmp_path, store)


def test_the_stored_run_record_refuses_paths_that_leave_the_folder():
    good = {"path": "trials/x/result.json", "sha256": sha256(b""), "size": 0}
    StoredRun(files=[good])
    for path in ("..", "/abs", "a//b", "./a", "a\\b", ""):
        with pytest.raises(ValueError):
            StoredRun(files=[{**good, "path": path}])
    with pytest.raises(ValueError, match="both a file and a folder"):
        StoredRun(files=[{**good, "path": "a"}, {**good, "path": "a/b"}])
    with pytest.raises(ValueError, match="twice"):
        StoredRun(files=[good, good])


# --- opening: one line, never a secret ----------------------------------------------------


def test_a_local_store_url_that_is_wrong_is_one_line(tmp_path):
    store = ObjectStore.open(str(tmp_path / "store"))
    assert store.url == (tmp_path / "store").as_uri() and (tmp_path / "store").is_dir()
    assert ObjectStore.open(store.url).url == store.url
    for url, message in (
        (f"file://{tmp_path}/missing/store", "no such folder"),
        ("file://host/store", "file:///absolute/path"),
        ("ftp://user:hunter2@host/x", "unsupported scheme"),
        ("s3://Not_A_Bucket/x", "not a bucket name"),
        ("s3://key-only@bucket/x", "key without a secret"),
        ("s3://AKIA:hunter2/x@Bad_Bucket/x", "'Bad_Bucket' is not a bucket name"),
        ("s3:bucket", "s3://bucket/prefix"),
    ):
        with pytest.raises(StoreError, match=message) as error:
            ObjectStore.open(url)
        one_line_without(error.value, "hunter2")


def test_s3_credentials_in_the_url_are_used_and_never_shown(s3_server, monkeypatch):
    s3_environment(monkeypatch, s3_server)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    secret = s3_server.secret_access_key
    # As pasted (an AWS-style secret may hold "/" and "+"), and URL-quoted.
    for given in (secret, quote(secret, safe="")):
        store = ObjectStore.open(
            f"s3://{s3_server.access_key_id}:{given}@{s3_server.bucket}/from-url"
        )
        assert store.url == f"s3://{s3_server.bucket}/from-url"
        assert secret not in repr(store) and s3_server.access_key_id not in repr(store)
        assert not store.has(sha256(b"nothing"))

    wrong = ObjectStore.open
    for url in (
        f"s3://{s3_server.access_key_id}:not-{secret}@{s3_server.bucket}/x",
        f"s3://AKIAWRONGWRONGWRONG:{secret}@{s3_server.bucket}/x",
        f"s3://{s3_server.access_key_id}:a/b+c@{s3_server.bucket}/x",
        f"s3://{s3_server.access_key_id}:a[b@{s3_server.bucket}/x",  # urlsplit raises on it
    ):
        with pytest.raises(StoreError, match="access denied") as error:
            wrong(url)
        one_line_without(error.value, secret, f"not-{secret}", s3_server.access_key_id)


def test_s3_failures_are_one_line_without_a_secret(s3_server, monkeypatch):
    s3_environment(monkeypatch, s3_server)
    secret = s3_server.secret_access_key
    good = ObjectStore.open(f"s3://{s3_server.bucket}/env")
    assert good.url == f"s3://{s3_server.bucket}/env" and secret not in repr(good)

    with pytest.raises(StoreError, match="no such bucket") as error:
        ObjectStore.open("s3://no-such-bucket-here/x")
    one_line_without(error.value, secret)

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", f"{secret}-wrong")
    with pytest.raises(StoreError, match="access denied") as error:
        ObjectStore.open(f"s3://{s3_server.bucket}/x")
    one_line_without(error.value, secret)

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard: nothing answers
    with pytest.raises(StoreError, match=r"cannot connect to http://127\.0\.0\.1:9") as error:
        ObjectStore.open(f"s3://{s3_server.bucket}/x")
    one_line_without(error.value, secret)

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(StoreError, match="no credentials"):
        ObjectStore.open(f"s3://{s3_server.bucket}/x")

    # EVALREPRO_S3_ENDPOINT_URL names the endpoint too.
    s3_environment(monkeypatch, s3_server)
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.setenv("EVALREPRO_S3_ENDPOINT_URL", s3_server.endpoint_url)
    assert ObjectStore.open(f"s3://{s3_server.bucket}/env").url == good.url


# --- the PostgreSQL fixture ---------------------------------------------------------------


def test_the_postgres_fixture_answers_over_tcp_with_its_password(postgres_server):
    import psycopg

    assert postgres_server.url.startswith("postgresql+psycopg://evalrepro_test:")
    assert "@127.0.0.1:" in postgres_server.url
    with postgres_server.connect() as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
    fresh = postgres_server.new_database()
    assert fresh != postgres_server.url and fresh != postgres_server.new_database()
    name = fresh.rsplit("/", 1)[1]
    with postgres_server.connect(name) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        assert tables == (0,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(
            host="127.0.0.1",
            port=postgres_server.port,
            user=postgres_server.user,
            password="wrong",
            dbname=postgres_server.database,
        )
    assert postgres_server.password not in repr(postgres_server)
