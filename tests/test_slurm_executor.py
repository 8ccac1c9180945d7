"""The Slurm executor on a real one-node Slurm cluster (Debian's slurm-wlm and munge).

``scripts/test`` starts the cluster as root (``scripts/slurm-local start``) before the
rootless tests and stops it afterwards; without one these tests skip, except in CI. The
demo runs through dask-jobqueue's ``SLURMCluster``: its workers are Slurm jobs of the
user who runs the tests, the trials are the local run's trial for trial, and the jobs
are gone when the run ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from evalrepro.publish.verify import check_run, compare
from evalrepro.records.trial import read_trial_result
from tests.podman_support import demo_config, needs_podman, run_demo


def slurm_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return done.returncode == 0 and any(
        state in done.stdout for state in ("idle", "mixed", "allocated")
    )


pytestmark = [
    *needs_podman,
    pytest.mark.skipif(
        not slurm_up() and not os.environ.get("CI"),
        reason="no Slurm cluster answers (as root: scripts/slurm-local start; SLURM_CONF)",
    ),
]


def my_jobs() -> list[str]:
    user = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    )
    listed = subprocess.run(
        ["squeue", "-h", "-u", user, "-o", "%i %j"], capture_output=True, text=True
    )
    return listed.stdout.split("\n")[:-1]


def test_the_demo_through_slurm_is_the_local_run(tmp_path):
    assert slurm_up(), "scripts/test starts a one-node Slurm cluster before the tests"
    run_demo(demo_config("demo", "executor=local"), tmp_path / "local")
    run_demo(
        demo_config(
            "demo",
            "executor=slurm",
            "executor.queue=debug",
            "executor.workers=2",
            "executor.memory=2GiB",
            "executor.walltime=00:20:00",
            f"executor.log_directory={tmp_path / 'jobs'}",
        ),
        tmp_path / "slurm",
    )
    local, slurm = ({} for _ in range(2))
    for name, found in (("local", local), ("slurm", slurm)):
        for path in (tmp_path / name / "trials").glob("*/result.json"):
            result = read_trial_result(path)
            found[result.trial.trial_id] = (str(result.score.outcome), result.attempts[-1])
    assert {k: v[0] for k, v in slurm.items()} == {k: v[0] for k, v in local.items()}
    assert {v[0] for v in slurm.values()} == {"resolved"}
    assert compare(tmp_path / "local", tmp_path / "slurm", same_target=True).differences == []
    assert check_run(tmp_path / "slurm").ok
    # Two worker jobs took the attempts; their logs are the jobs' own.
    assert len({attempt.lease.worker for _, attempt in slurm.values()}) == 2
    assert (
        len(list(Path(tmp_path / "jobs").glob("*.out")))
        + len(list(Path(tmp_path / "jobs").glob("*.err")))
        >= 2
    )
    # The run closed its cluster: no job of ours is left in the queue.
    deadline = time.monotonic() + 30
    while my_jobs() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert my_jobs() == []
