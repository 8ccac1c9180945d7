"""The run session owns the run directory: the one module that conducts it, from the lock
to the written result (``evalrepro/run/session.py``).

The runs are the demo with the fake backend of ``tests/fake_backend.py`` (the real
pipeline, no container); the same paths with real podman: ``tests/test_rundir.py``.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from rich.console import Console

import evalrepro
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from evalrepro.pipeline import run_experiment
from evalrepro.report.results import rebuild_results
from evalrepro.run.rundir import RunDirectory
from evalrepro.run.session import RunSession
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario

PACKAGE_DIR = Path(evalrepro.__file__).parent
#: What changes a run directory: the lock, the start or resume, the clean-up of a killed
#: session, the build records, the results and their SWE-bench layout.
CONDUCTING = {
    "exclusive",
    "remove_incomplete",
    "write_results",
    "write_swebench_layout",
    "record_builds",
    "log_session",
}
#: Where they may be called: the session, and the modules that define them.
CONDUCTORS = {"run/session.py", "run/rundir.py", "build/buildlog.py", "run/sessions.py"}


def test_nothing_but_the_session_conducts_the_run_directory():
    """No module of evalrepro (the pipeline, the commands, reproduce, resume, bundles)
    calls what changes a run directory except the run session."""
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        where = path.relative_to(PACKAGE_DIR).as_posix()
        if where in CONDUCTORS or where.startswith("demo/repos/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = node.func
                name = called.attr if isinstance(called, ast.Attribute) else None
                if isinstance(called, ast.Name):
                    name = called.id
                if name in CONDUCTING:
                    found.append(f"evalrepro/{where}:{node.lineno} calls {name}")
    assert not found, "conducting the run directory outside the session:\n" + "\n".join(found)


@pytest.fixture(scope="module")
def config():
    return compose(["+experiment=demo"])


@pytest.fixture(scope="module")
def scenario(config):
    return gold_scenario({s.instance_id: s for s in load_samples(Path(config.dataset.instances))})


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def test_a_session_holds_the_directory_and_leaves_none_behind_if_nothing_was_written(tmp_path):
    path = tmp_path / "run"
    with RunSession.hold(path) as session:
        assert session.path == path.resolve() and session.previous is None
        # One holder at a time, even in one process (the lock is per open file).
        with pytest.raises(UserError, match="is in use by evalrepro pid"), RunSession.hold(path):
            pass
    assert not path.exists()


def test_finishing_a_session_again_writes_the_files_the_run_wrote(config, scenario, tmp_path):
    """``report --rebuild``'s way: a session that adopts a finished run's results and
    finishes writes results.json and the SWE-bench layout byte for byte as the run did."""
    run_dir = tmp_path / "run"
    outcome = run_experiment(
        config,
        quiet(),
        run_dir=run_dir,
        cache_dir=tmp_path / "cache",
        backend=fake_backend(scenario),
    )
    assert outcome.results.resolved == 12
    written = {
        p.relative_to(run_dir): p.read_bytes()
        for p in [run_dir / "results.json", *(run_dir / "swebench").rglob("*")]
        if p.is_file()
    }
    assert len(written) > 12
    (run_dir / "results.json").unlink()
    directory, lockfile = RunDirectory.open(run_dir)
    with RunSession.hold(run_dir) as session:
        assert session.previous == lockfile
        done = session.adopt(lockfile)
        assert set(done) == {t.trial_id for t in lockfile.trials}
        assert session.todo([]) == []
        session.finish(rebuild_results(directory, lockfile, done))
    again = {
        p.relative_to(run_dir): p.read_bytes()
        for p in [run_dir / "results.json", *(run_dir / "swebench").rglob("*")]
        if p.is_file()
    }
    assert again == written
