"""The team database (``publish``, ``runs``, ``leaderboard``, ``report``/``compare --db``)
on the demo's runs in the fake environment, with SQLite and with a real PostgreSQL
(``tests/servers.py``): what goes in, what comes back, and that nothing is lost or
counted twice whatever stops a publish."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import func, select, text

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.database import schema
from evalrepro.database.comparability import comparability_class
from evalrepro.database.engine import head_revision, open_database
from evalrepro.database.url import parse_database_url
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.report.compare import compare_runs
from tests import servers

# Fixtures, found by their names here.
postgres_server = servers.postgres_server
s3_server = servers.s3_server

ROOT = Path(__file__).resolve().parent.parent
PUBLISH = [sys.executable, "-m", "evalrepro", "publish"]
TABLES = (schema.runs, schema.trials, schema.attempts, schema.test_statuses, schema.metrics)


def _run(config: list[str], run_dir: Path, cache: Path, only=None) -> Path:
    run_experiment(
        compose([*config, "environment=fake"]),
        Console(file=io.StringIO()),
        run_dir=run_dir,
        cache_dir=cache,
        only=only,
    )
    return run_dir


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory) -> dict[str, Path]:
    """The demo's gold run, model_a and model_b, and model_b with a longer timeout
    (another comparability class)."""
    root = tmp_path_factory.mktemp("runs")
    cache = root / "cache"
    made = {
        name: _run([f"+experiment={name}"], root / name, cache)
        for name in ("demo", "model_a", "model_b")
    }
    made["model_b_slow"] = _run(
        ["+experiment=model_b", "environment.timeout=999"], root / "model_b_slow", cache
    )
    return made


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    """An empty database's URL: an SQLite file, or a new database on the real PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "team.db")
    server = request.getfixturevalue("postgres_server")
    return server.new_database()


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALREPRO_CACHE", str(tmp_path / "cache"))


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def publish(capsys, db: str, store: Path, *runs: Path) -> tuple[int, str, str]:
    return cli(capsys, "publish", *runs, "--db", db, "--store", store)


def counts(db: str) -> dict[str, int]:
    engine, _url = open_database(db)
    with engine.connect() as connection:
        found = {
            table.name: connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in TABLES
        }
    engine.dispose()
    return found


def rows(db: str, table) -> list[dict]:
    engine, _url = open_database(db)
    with engine.connect() as connection:
        found = [dict(row) for row in connection.execute(select(table)).mappings()]
    engine.dispose()
    return found


# --- the URL and the schema -------------------------------------------------------------


def test_urls_name_the_database_without_its_password(monkeypatch, tmp_path):
    assert parse_database_url(str(tmp_path / "a.db")).url.render_as_string() == (
        f"sqlite:///{tmp_path / 'a.db'}"
    )
    url = parse_database_url("postgresql://team:s3cret@db.example:5432/evals")
    assert url.url.drivername == "postgresql+psycopg"
    assert url.redacted == "postgresql+psycopg://team:***@db.example:5432/evals"
    assert url.scrub("failed for s3cret") == "failed for ***"
    monkeypatch.setenv("EVALREPRO_DB_PASSWORD", "fromenv")
    from_env = parse_database_url("postgresql://team@db.example/evals")
    assert from_env.url.password == "fromenv" and "fromenv" not in from_env.redacted


def test_an_empty_database_is_migrated_to_head_and_matches_the_tables(db):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine, _url = open_database(db)
    with engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        assert version == head_revision()
        assert compare_metadata(MigrationContext.configure(connection), schema.metadata) == []
    engine.dispose()
    open_database(db)[0].dispose()  # opened again: already at head, nothing to do


# --- publish, list, rank, read back ---------------------------------------------------


def test_the_demo_runs_published_are_listed_and_ranked_as_report_and_compare_say(
    capsys, db, demo_runs, tmp_path
):
    store = tmp_path / "objects"
    runs = [demo_runs[name] for name in ("demo", "model_a", "model_b")]
    code, out, err = publish(capsys, db, store, *runs)
    assert (code, err) == (0, "")
    assert out.count("12 new trials") == 3
    code, out, _ = cli(capsys, "runs", "--db", db, "--json")
    listed = json.loads(out)["runs"]
    assert [(r["experiment"], r["finished"], r["complete"]) for r in listed] == [
        ("demo", 12, True),
        ("model_a", 12, True),
        ("model_b", 12, True),
    ]
    assert len({r["comparability"] for r in listed}) == 1
    code, out, _ = cli(capsys, "runs", "--db", db, "--json", "--target", "model_b")
    assert [r["target_id"] for r in json.loads(out)["runs"]] == ["model_b"]
    code, out, _ = cli(capsys, "runs", "--db", db, "--json", "--since", "2999-01-01")
    assert json.loads(out)["runs"] == []
    started = listed[0]["started_at"][:10]
    code, out, _ = cli(capsys, "runs", "--db", db, "--json", "--since", started, "--until", started)
    assert len(json.loads(out)["runs"]) == 3
    code, out, _ = cli(capsys, "runs", "--db", db, "--json", "--until", "2000-01-01T00:00+02:00")
    assert json.loads(out)["runs"] == []
    code, out, _ = cli(
        capsys, "runs", "--db", db, "--json", "--class", listed[0]["comparability"][7:19]
    )
    assert len(json.loads(out)["runs"]) == 3

    code, out, _ = cli(capsys, "leaderboard", "--db", db, "--json")
    (group,) = json.loads(out)["groups"]
    board = {row["target_id"]: row for row in group["rows"]}
    assert [row["target_id"] for row in group["rows"]][-1] == "model_b"
    for name, run in zip(("gold", "model_a", "model_b"), runs, strict=True):
        code, out, _ = cli(capsys, "report", run, "--json")
        assert board[name]["resolved_rate"] == json.loads(out)["metrics"]["resolved_rate"]
    (pair,) = compare_runs([runs[1], runs[2]], n_resamples=200).pairs
    assert board["model_a"]["resolved_rate"] == pair.resolved.rate_a.model_dump(mode="json")
    assert board["model_b"]["resolved_rate"] == pair.resolved.rate_b.model_dump(mode="json")
    # Every form says that a rank is no comparison, and what is.
    for form in ("--markdown", None):
        code, out, _ = cli(capsys, "leaderboard", "--db", db, *([form] if form else []))
        assert code == 0 and "model_b" in out and "75.0%" in out
        assert "A rank is not a comparison" in " ".join(out.split())
    page = tmp_path / "board.html"
    assert cli(capsys, "leaderboard", "--db", db, "--html", page)[0] == 0
    assert "model_b" in page.read_text() and "75.0%" in page.read_text()
    assert "A rank is not a comparison" in page.read_text()


def test_a_run_read_back_from_the_database_reports_and_compares_as_its_folder(
    capsys, demo_runs, tmp_path
):
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    publish(capsys, db, store, demo_runs["model_a"], demo_runs["model_b"])
    ids = {
        r["experiment"]: r["run_id"]
        for r in json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    }

    def same(stored: str, folder: str) -> None:
        one, two = json.loads(stored), json.loads(folder)
        for report in (one, two):
            # A report's time is when it was made; a comparison's runs are provenances.
            for provenance in [report.get("provenance", {}), *report.get("runs", [])]:
                provenance.pop("generated_at", None)
        one.pop("run", None), two.pop("run", None)
        for pair in one.get("pairs", []) + two.get("pairs", []):
            pair.pop("a_path"), pair.pop("b_path")
        assert one == two

    # Read from the store into the cache, not from the folders (compared here as copies).
    moved = tmp_path / "elsewhere"
    shutil.copytree(demo_runs["model_a"], moved / "model_a")
    shutil.copytree(demo_runs["model_b"], moved / "model_b")
    code, stored, err = cli(capsys, "report", "--db", db, ids["model_a"][:6], "--json")
    assert (code, err) == (0, "")
    assert json.loads(stored)["run"] == ids["model_a"][:6]
    same(stored, cli(capsys, "report", moved / "model_a", "--json")[1])
    argv = ["--json", "--n-resamples", "300"]
    code, stored, _ = cli(capsys, "compare", "--db", db, ids["model_a"], ids["model_b"], *argv)
    assert code == 0
    same(stored, cli(capsys, "compare", moved / "model_a", moved / "model_b", *argv)[1])
    # The console report too, line for line but its names and time.
    code, stored, _ = cli(capsys, "report", "--db", db, ids["model_b"])
    folder_code, folder, _ = cli(capsys, "report", demo_runs["model_b"])
    assert code == folder_code == 0
    # The first line says when the report was made.
    assert stored.splitlines()[1:] == folder.splitlines()[1:]


# --- nothing lost, nothing counted twice -------------------------------------------------


def test_publishing_a_run_twice_changes_nothing(capsys, db, demo_runs, tmp_path):
    store = tmp_path / "objects"
    publish(capsys, db, store, demo_runs["model_a"])
    before, first = counts(db), rows(db, schema.runs)
    code, out, _ = publish(capsys, db, store, demo_runs["model_a"])
    assert code == 0 and "already published, unchanged" in out
    assert (
        counts(db)
        == before
        == {
            "runs": 1,
            "trials": 12,
            "attempts": 12,
            "test_statuses": before["test_statuses"],
            "metrics": 3,
        }
    )
    assert before["test_statuses"] > 12
    assert rows(db, schema.runs) == first


def test_a_resumed_run_published_again_adds_only_its_new_trials(capsys, db, tmp_path):
    store, cache = tmp_path / "objects", tmp_path / "build-cache"
    first = [("demo__calc-1", 0), ("demo__calc-2", 0), ("demo__ledger-1", 0)]
    run = _run(["+experiment=model_b"], tmp_path / "run", cache, only=first)
    code, out, err = publish(capsys, db, store, run)
    assert (code, err) == (0, "")
    assert "3 new trials, unfinished: 3 of 12 trials" in out
    code, out, _ = cli(capsys, "leaderboard", "--db", db, "--json")
    board = json.loads(out)
    assert board["groups"] == [] and "unfinished, 3 of 12 trials" in board["left_out"][0]
    (before,) = rows(db, schema.runs)

    _run(["+experiment=model_b"], run, cache)  # resumed: the other nine
    code, out, _ = publish(capsys, db, store, run)
    assert code == 0 and "9 new trials" in out and "unfinished" not in out
    (after,) = rows(db, schema.runs)
    assert after["run_id"] == before["run_id"] and after["sessions"] == 2
    assert counts(db)["trials"] == 12 and counts(db)["runs"] == 1
    (group,) = json.loads(cli(capsys, "leaderboard", "--db", db, "--json")[1])["groups"]
    assert group["rows"][0]["resolved"] == 9


def test_a_publish_stopped_midway_is_not_complete_and_completes_when_run_again(
    capsys, db, demo_runs, tmp_path, monkeypatch
):
    from evalrepro.store.objects import ObjectStore

    store = tmp_path / "objects"
    put = ObjectStore.put_file
    calls = []

    def failing(self, path, digest, size):
        calls.append(digest)
        if len(calls) > 20:
            raise KeyboardInterrupt  # as a publish killed midway
        return put(self, path, digest, size)

    monkeypatch.setattr(ObjectStore, "put_file", failing)
    assert publish(capsys, db, store, demo_runs["model_a"])[0] == 130
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert run["complete"] is False
    assert counts(db)["trials"] == 0
    assert json.loads(cli(capsys, "leaderboard", "--db", db, "--json")[1])["groups"] == []
    monkeypatch.setattr(ObjectStore, "put_file", put)
    code, out, _ = publish(capsys, db, store, demo_runs["model_a"])
    assert code == 0 and "12 new trials" in out
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert run["complete"] is True
    assert counts(db)["trials"] == 12 and counts(db)["runs"] == 1


def test_a_publisher_killed_midway_and_run_again_ends_complete(capsys, demo_runs, tmp_path):
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "evalrepro", "publish", str(demo_runs["model_b"])]
    argv += ["--db", db, "--store", str(store)]
    process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE)
    # Killed once its files are going up (its run's row is registered by then).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if store.is_dir() and any(p.is_file() for p in store.rglob("*")):
            break
        time.sleep(0.002)
    assert process.poll() is None, "the publish finished before it could be killed"
    process.kill()
    process.wait()
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert run["complete"] is False and counts(db)["trials"] == 0
    assert subprocess.run(argv, env=env, cwd=ROOT, capture_output=True).returncode == 0
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert run["complete"] is True and counts(db)["trials"] == 12


def test_concurrent_publishers_of_different_runs_into_one_postgresql(
    capsys, postgres_server, demo_runs, tmp_path
):
    db, store = postgres_server.new_database(), tmp_path / "objects"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALREPRO_CACHE": str(tmp_path / "c")}
    publishers = [
        subprocess.Popen(
            [*PUBLISH, str(demo_runs[name]), "--db", db, "--store", str(store)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in ("demo", "model_a", "model_b")
    ]
    for process in publishers:
        _out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()
    listed = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert sorted(r["experiment"] for r in listed) == ["demo", "model_a", "model_b"]
    assert all(r["complete"] for r in listed)
    assert counts(db)["trials"] == 36


# --- refusals and credentials ----------------------------------------------------------


def test_a_run_verify_refuses_is_not_published(capsys, demo_runs, tmp_path):
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    run = tmp_path / "tampered"
    shutil.copytree(demo_runs["model_a"], run)
    results = run / "results.json"
    results.write_text(results.read_text().replace('"resolved": 12', '"resolved": 11'))
    code, out, err = publish(capsys, db, store, run, demo_runs["model_b"])
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith(f"evalrepro: {run}: not published: verify finds results:")
    assert "published" in out  # the other run went in
    assert [r["experiment"] for r in rows(db, schema.runs)] == ["model_b"]


def test_comparability_is_the_classes_verify_would_draw_and_the_board_names_the_rest(
    capsys, demo_runs, tmp_path
):
    locks = {name: read_lockfile(run / "lockfile.lock.json") for name, run in demo_runs.items()}
    for one in locks:
        for two in locks:
            same = not differences(locks[one], locks[two], same_target=False)
            assert (comparability_class(locks[one]) == comparability_class(locks[two])) == same
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    publish(capsys, db, store, *demo_runs.values())
    board = json.loads(cli(capsys, "leaderboard", "--db", db, "--json")[1])
    first, second = board["groups"]
    assert len(first["rows"]) == 3 and second["rows"][0]["experiment"] == "model_b"
    assert second["differences"] == [{"kind": "environment", "detail": "timeout: 30 vs 999"}]
    out = cli(capsys, "leaderboard", "--db", db)[1]
    assert "not comparable with the first table:" in out and "timeout" in out


def test_a_wrong_or_unreachable_database_is_one_line_without_the_password(
    capsys, postgres_server, tmp_path
):
    server = postgres_server
    wrong_password = server.url_for(server.database).replace(server.password, "not-it-9f3k")
    for url in (
        "mysql://user:pw-7x1@host/db",
        f"postgresql://u:pw-7x1@127.0.0.1:{_closed_port()}/db",
        wrong_password,
        str(tmp_path / "no" / "such" / "folder" / "team.db"),
        str(tmp_path / "not-published-yet.db"),
    ):
        code, _out, err = cli(capsys, "runs", "--db", url)
        assert code == 2, url
        assert len(err.splitlines()) == 1 and err.startswith("evalrepro: error: "), err
        assert "pw-7x1" not in err and "not-it-9f3k" not in err and server.password not in err
    assert not (tmp_path / "not-published-yet.db").exists()
    code, _out, err = cli(capsys, "publish", tmp_path, "--db", server.url)
    assert code == 2 and "--store" in err and server.password not in err


def test_no_credential_is_written_into_a_row_or_a_file(
    capsys, postgres_server, demo_runs, tmp_path
):
    server = postgres_server
    db, store = server.new_database(), tmp_path / "objects"
    code, out, err = publish(capsys, db, store, demo_runs["model_a"])
    assert code == 0 and server.password not in out + err
    for table in TABLES:
        for row in rows(db, table):
            assert server.password not in json.dumps(row, default=str)
    for path in [*store.rglob("*"), *(tmp_path / "cache").rglob("*")]:
        if path.is_file():
            assert server.password.encode() not in path.read_bytes()
    for argv in (["runs", "--json"], ["leaderboard", "--json"], ["leaderboard", "--markdown"]):
        code, out, err = cli(capsys, argv[0], "--db", db, *argv[1:])
        assert server.password not in out + err
        assert "***" in out or argv[1] == "--markdown"


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_team_setup_postgresql_and_s3_publishes_and_reads_back_without_a_secret_kept(
    capsys, postgres_server, s3_server, demo_runs, monkeypatch, tmp_path
):
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    server = postgres_server
    db = server.new_database().replace(f":{server.password}@", "@")
    monkeypatch.setenv("EVALREPRO_DB_PASSWORD", server.password)  # not in the URL
    store = f"s3://{s3_server.new_bucket()}/team/runs"
    code, out, err = cli(capsys, "publish", demo_runs["model_b"], "--db", db, "--store", store)
    assert (code, err) == (0, "") and "12 new trials" in out
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert run["complete"] and run["store_url"].startswith("s3://")
    secrets = (server.password, s3_server.secret_access_key)
    for table in TABLES:
        dumped = json.dumps(rows(db, table), default=str)
        assert not any(secret in dumped for secret in secrets)
    # Read back with the store it was published to, its credentials from the environment.
    code, out, err = cli(capsys, "report", "--db", db, run["run_id"], "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["metrics"]["resolved_rate"] == run["resolved_rate"]
    assert not any(secret in out for secret in secrets)


def test_a_run_reads_back_from_another_copy_of_its_store(capsys, demo_runs, tmp_path):
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    publish(capsys, db, store, demo_runs["model_a"])
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    store.rename(tmp_path / "copy")
    code, _out, err = cli(capsys, "report", "--db", db, run["run_id"])
    assert code == 2 and len(err.splitlines()) == 1
    code, out, err = cli(capsys, "report", "--db", db, run["run_id"], "--store", tmp_path / "copy")
    assert (code, err) == (0, "") and "12 resolved" in out


def test_without_the_team_extra_a_command_says_what_to_install(tmp_path):
    code = (
        "import sys; sys.modules['sqlalchemy'] = None; from evalrepro.cli import main; "
        f"sys.exit(main(['runs', '--db', {str(tmp_path / 'team.db')!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert done.stderr == (
        "evalrepro: error: the team database needs sqlalchemy: pip install 'evalrepro[team]'\n"
    )


def test_the_rows_are_the_runs_own_records(capsys, db, demo_runs, tmp_path):
    from evalrepro.records.trial import read_trial_result

    run = demo_runs["model_b"]
    publish(capsys, db, tmp_path / "objects", run)
    results = json.loads((run / "results.json").read_text())
    trials = {row["trial_id"]: row for row in rows(db, schema.trials)}
    assert {
        t["trial_id"]: (t["outcome"], t["reason"], t["attempts"]) for t in results["trials"]
    } == {
        trial_id: (row["outcome"], row["reason"], row["attempts"])
        for trial_id, row in trials.items()
    }
    statuses = rows(db, schema.test_statuses)
    for folder in (run / "trials").iterdir():
        result = read_trial_result(folder / "result.json")
        assert trials[result.trial.trial_id]["resolution"] == (
            str(result.score.resolution) if result.score.resolution else None
        )
        assert {
            row["test"]: row["status"]
            for row in statuses
            if row["trial_id"] == result.trial.trial_id
        } == result.attempts[-1].observation.status_map
    report = json.loads(cli(capsys, "report", run, "--json")[1])
    metrics = {row["name"]: row for row in rows(db, schema.metrics)}
    for name in ("resolved_rate", "unresolved_rate", "invalid_rate"):
        interval = report["metrics"][name]
        assert {k: metrics[name][k] for k in ("estimate", "low", "high", "method")} == {
            k: interval[k] for k in ("estimate", "low", "high", "method")
        }
    (stored,) = rows(db, schema.runs)
    assert (stored["resolved"], stored["invalid"], stored["planned"]) == (
        results["resolved"],
        results["invalid"],
        results["planned"],
    )
    assert stored["gate_passed"] == report["gate_passed"]
    assert stored["lockfile_digest"] == report["provenance"]["lockfile_digest"]


def test_compare_db_of_runs_of_different_experiments_names_the_difference_as_verify_does(
    capsys, demo_runs, tmp_path
):
    """model_b and model_b with a longer timeout: one target, two experiments. Read back
    from the database, compare refuses as verify does: each difference by class, and
    between which two runs (by the ids given)."""
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    publish(capsys, db, store, demo_runs["model_b"], demo_runs["model_b_slow"])
    ids = [r["run_id"] for r in json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]]
    assert len(ids) == 2
    code, _, err = cli(capsys, "compare", "--db", db, *ids, "--n-resamples", "200")
    assert code == 1
    assert "environment" in err and "timeout: 30 vs 999" in err
    assert f"not comparable: 1 difference between {ids[0]} and {ids[1]}" in " ".join(err.split())
    code, out, _ = cli(capsys, "verify", demo_runs["model_b"], demo_runs["model_b_slow"])
    assert code == 1 and "timeout: 30 vs 999" in out


def test_each_leaderboard_table_is_headed_by_what_makes_its_class(capsys, demo_runs, tmp_path):
    """Two comparability classes, one dataset and harness: the timeout is what tells them
    apart, and each table's heading names its own (HTML, console, Markdown, JSON)."""
    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    publish(capsys, db, store, *demo_runs.values())
    board = json.loads(cli(capsys, "leaderboard", "--db", db, "--json")[1])
    assert [g["defined_by"] for g in board["groups"]] == [
        ["environment.timeout 30"],
        ["environment.timeout 999"],
    ]
    page = tmp_path / "board.html"
    assert cli(capsys, "leaderboard", "--db", db, "--html", page)[0] == 0
    headings = re.findall(r"<h2>([^<]*)</h2>", page.read_text(encoding="utf-8"))
    shown = [h for h in headings if "instances" in h]
    assert len(shown) == 2 and len(set(shown)) == 2
    assert "environment.timeout 30" in shown[0] and "environment.timeout 999" in shown[1]
    out = cli(capsys, "leaderboard", "--db", db)[1]
    assert "environment.timeout 30" in out and "environment.timeout 999" in out
    markdown = cli(capsys, "leaderboard", "--db", db, "--markdown")[1]
    assert [line for line in markdown.splitlines() if line.startswith("## ")][1].count("999")
    # One class: nothing to tell apart, the heading as before.
    alone = str(tmp_path / "alone.db")
    publish(capsys, alone, store, demo_runs["model_a"])
    (group,) = json.loads(cli(capsys, "leaderboard", "--db", alone, "--json")[1])["groups"]
    assert group["defined_by"] == []


def test_leaderboard_latex_is_one_compiling_table_with_a_block_per_class(
    capsys, demo_runs, tmp_path
):
    from tests.test_report_latex import compile_fragments

    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    publish(capsys, db, store, *demo_runs.values())
    board = json.loads(cli(capsys, "leaderboard", "--db", db, "--json")[1])
    code, tex, err = cli(capsys, "leaderboard", "--db", db, "--latex")
    assert (code, err) == (0, "")
    assert tex.count("\\begin{table}") == 1 and tex.count("\\begin{tabular}") == 1
    table = tex.split("\\begin{tabular}")[1].split("\\end{tabular}")[0]
    # Each class's block, headed by what makes it, its runs ranked as the record ranks.
    assert "environment.timeout 30}}" in table and "environment.timeout 999}}" in table
    for group in board["groups"]:
        for row in group["rows"]:
            rate = row["resolved_rate"]
            cells = " & ".join(
                f"{round(rate[k] * 100, 1) + 0.0:.1f}" for k in ("estimate", "low", "high")
            )
            assert f"{row['rank']} & " in table and f"{row['resolved']}/{row['planned']}" in table
            assert f"{cells}]" in table
    assert "\\texttt{evalrepro compare}" in tex
    log, text, _ = compile_fragments({"board": tex}, tmp_path)
    assert "Overfull" not in log and not re.search(r"^! ", log, flags=re.M)
    assert "timeout999" in re.sub(r"\s+", "", text)


# --- a run retracted; what killed uploads leave ---------------------------------------------


def listed_runs(capsys, db: str) -> dict[str, dict]:
    """``runs --json``'s runs by experiment."""
    runs = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    return {run["experiment"]: run for run in runs}


def test_a_retracted_run_stays_in_the_history_and_leaves_the_leaderboard(
    capsys, db, demo_runs, tmp_path
):
    store = tmp_path / "objects"
    publish(capsys, db, store, demo_runs["demo"], demo_runs["model_a"])
    (demo, model_a) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert demo["retracted_at"] is None

    # By its folder, with a reason; a second time changes nothing.
    why = ("--reason", "wrong split")
    code, out, _ = cli(capsys, "unpublish", demo_runs["model_a"], *why, "--db", db)
    assert code == 0 and f"{model_a['run_id']} retracted on" in out and "wrong split" in out
    code, out, _ = cli(capsys, "unpublish", model_a["run_id"][:6], "--db", db)
    assert code == 0 and "already retracted" in out and "wrong split" in out

    # Kept, with every row, and listed as retracted.
    listed = listed_runs(capsys, db)
    assert listed["model_a"]["retraction_reason"] == "wrong split"
    assert listed["model_a"]["retracted_at"] is not None and listed["demo"]["retracted_at"] is None
    assert counts(db)["trials"] == 24
    assert "retracted" in cli(capsys, "runs", "--db", db)[1]
    # Off the leaderboard, which says why.
    board = json.loads(cli(capsys, "leaderboard", "--db", db, "--json")[1])
    assert [row["experiment"] for group in board["groups"] for row in group["rows"]] == ["demo"]
    assert board["left_out"] == [f"{model_a['run_id']} (model_a): retracted: wrong split"]
    # Published again, it stays retracted: a retraction is the team's decision.
    publish(capsys, db, store, demo_runs["model_a"])
    listed = listed_runs(capsys, db)
    assert listed["model_a"]["retraction_reason"] == "wrong split"


def test_unpublishing_a_run_that_is_not_there_is_refused_in_one_line(capsys, demo_runs, tmp_path):
    db = str(tmp_path / "team.db")
    publish(capsys, db, tmp_path / "objects", demo_runs["demo"])
    for reference in ("ffffffff", str(demo_runs["model_b"])):
        code, out, err = cli(capsys, "unpublish", reference, "--db", db)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "no such run" in err
    assert listed_runs(capsys, db)["demo"]["retracted_at"] is None


def test_an_older_database_is_migrated_with_its_runs_kept(capsys, demo_runs, tmp_path):
    from alembic import command
    from alembic.config import Config

    from evalrepro.database.engine import MIGRATIONS

    db = tmp_path / "old.db"
    publish(capsys, str(db), tmp_path / "objects", demo_runs["demo"])
    engine, _url = open_database(str(db))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0001")
    engine.dispose()
    (run,) = json.loads(cli(capsys, "runs", "--db", db, "--json")[1])["runs"]
    assert run["experiment"] == "demo" and run["retracted_at"] is None
    assert cli(capsys, "unpublish", run["run_id"], "--db", db)[0] == 0


def test_what_a_killed_upload_left_is_removed_by_the_next_publish_and_a_live_ones_is_not(
    capsys, demo_runs, tmp_path
):
    from evalrepro.store.objects import STALE_SECONDS, ObjectStore

    db, store = str(tmp_path / "team.db"), tmp_path / "objects"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [*PUBLISH, str(demo_runs["model_b"]), "--db", db, "--store", str(store)]
    process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE)
    # Killed while it uploads: its heartbeat is there.
    deadline = time.monotonic() + 120
    while process.poll() is None and not list((store / "tmp").glob("*.alive")):
        assert time.monotonic() < deadline, "the publish never started uploading"
        time.sleep(0.002)
    process.kill()
    process.wait()
    # A temporary object of the killed upload (whether or not the kill left one) and the
    # heartbeat nobody renews any more; then time passes.
    (alive,) = (store / "tmp").glob("*.alive")
    killed = store / "tmp" / alive.name.removesuffix(".alive")
    killed.mkdir(exist_ok=True)
    (killed / "partial").write_bytes(b"half an object")
    # Another publisher, live: its upload is as old, its heartbeat renewed.
    live = ObjectStore.open(str(store))
    with live.uploading():
        (store / "tmp" / live._session).mkdir(exist_ok=True)
        (store / "tmp" / live._session / "uploading").write_bytes(b"a big object, going up")
        long_ago = time.time() - STALE_SECONDS - 60
        for path in (store / "tmp").rglob("*"):
            if path.name != f"{live._session}.alive":
                os.utime(path, (long_ago, long_ago))

        code, out, _ = publish(capsys, db, store, demo_runs["model_b"])
        assert code == 0
        left = sorted(str(p.relative_to(store / "tmp")) for p in (store / "tmp").rglob("*"))
        assert left == sorted(
            [live._session, f"{live._session}/uploading", f"{live._session}.alive"]
        )
        assert "temporary objects of killed uploads removed" in out
        (store / "tmp" / live._session / "uploading").unlink()
    # Its own session leaves nothing behind.
    assert list((store / "tmp").iterdir()) == []
