"""``environment=fake``: a dry run of a plan without podman, opened like any environment.

The fake runtime and builder are plugins of the production union: the config names
them, the pipeline opens them by entry point, and what follows the sandbox (grading,
the run directory, verify, reports) is the real thing. With ``tests: pass`` every listed
test passes; with ``tests: fail`` the FAIL_TO_PASS tests fail, so nothing resolves.
"""

from __future__ import annotations

import io

from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.publish.verify import check_run


def dry_run(tmp_path, *overrides):
    config = compose(["+experiment=demo", "environment=fake", *overrides])
    return run_experiment(
        config,
        Console(file=io.StringIO()),
        run_dir=tmp_path / "run",
        cache_dir=tmp_path / "cache",
    )


def test_a_dry_run_plans_runs_and_verifies_without_podman(tmp_path):
    outcome = dry_run(tmp_path)
    lockfile = read_lockfile(tmp_path / "run")
    assert lockfile.environment.kind == "fake" and lockfile.environment.builder == "fake"
    assert (outcome.results.planned, outcome.results.resolved) == (12, 12)
    assert check_run(tmp_path / "run").ok


def test_failing_tests_resolve_nothing(tmp_path):
    outcome = dry_run(tmp_path, "environment.tests=fail")
    assert outcome.results.resolved == 0
    assert check_run(tmp_path / "run").ok
