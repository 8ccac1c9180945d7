"""The Dask executor, on the real engine: a ``LocalCluster`` of worker processes.

The runs use the fake environment (each worker process opens its own fake runtime), so
that only the scheduling differs from a local run: the same trial ids, verdicts and
lockfile identity; every attempt keeps its lease (worker, host, times); a worker killed
mid-attempt costs that attempt (``worker_lost``) and nothing else: every trial
completes, none twice. The podman runs are in ``test_podman_dask.py``.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster
from rich.console import Console

from evalrepro.config.executor import KubernetesExecutorConfig, SlurmExecutorConfig
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.publish.verify import check_run
from evalrepro.records.trial import read_trial_result
from evalrepro.run.executors.dask import SCHEDULER_SETTINGS, kubernetes_spec

FAKE = ["+experiment=demo", "environment=fake"]


def run(tmp_path: Path, name: str, *overrides: str):
    config = compose([*FAKE, *overrides])
    return run_experiment(
        config,
        Console(file=io.StringIO(), width=120),
        run_dir=tmp_path / name,
        cache_dir=tmp_path / "cache",
    )


def results(run_dir: Path):
    return [read_trial_result(p) for p in sorted((run_dir / "trials").glob("*/result.json"))]


def test_a_dask_run_is_the_local_runs_trial_for_trial(tmp_path):
    local = run(tmp_path, "local", "executor=local")
    remote = run(tmp_path, "dask", "executor=dask", "executor.workers=2")
    assert [t.trial_id for t in remote.results.trials] == [t.trial_id for t in local.results.trials]
    assert [(t.outcome, t.reason) for t in remote.results.trials] == [
        (t.outcome, t.reason) for t in local.results.trials
    ]
    assert differences(read_lockfile(tmp_path / "local"), read_lockfile(tmp_path / "dask")) == []
    assert check_run(tmp_path / "dask").ok


def test_every_attempt_run_by_a_worker_keeps_its_lease(tmp_path):
    run(tmp_path, "dask", "executor=dask", "executor.workers=2")
    leases = [a.lease for r in results(tmp_path / "dask") for a in r.attempts]
    assert all(lease is not None for lease in leases)
    assert {lease.worker.rsplit(":", 1)[0] for lease in leases} == {"tcp://127.0.0.1"}
    assert len({lease.worker for lease in leases}) == 2  # both workers took attempts
    assert all(lease.started_at <= lease.last_heartbeat and not lease.lost for lease in leases)
    # The local executor runs attempts in this process: no lease.
    run(tmp_path, "local", "executor=local")
    assert {a.lease for r in results(tmp_path / "local") for a in r.attempts} == {None}


def test_a_worker_killed_mid_attempt_costs_that_attempt_and_nothing_else(tmp_path):
    with dask.config.set(SCHEDULER_SETTINGS):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        )
    client = Client(cluster)
    try:
        pids = client.run(os.getpid)
        address, victim = sorted(pids.items())[0]
        outcome: dict = {}

        def go() -> None:
            outcome["run"] = run(
                tmp_path,
                "run",
                "executor=dask",
                f"executor.address={cluster.scheduler_address}",
                "executor.heartbeat=0.2",
                "environment.seconds=1.5",
            )

        runner = threading.Thread(target=go)
        runner.start()
        # Killed while it runs an attempt (the scheduler's word), however long the run
        # takes to start on a busy machine.
        deadline = time.monotonic() + 120
        while not client.processing().get(address) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        os.kill(victim, signal.SIGKILL)
        runner.join(timeout=300)
        assert not runner.is_alive()
    finally:
        client.close()
        cluster.close()
    trials = results(tmp_path / "run")
    assert len(trials) == 12 == outcome["run"].results.planned
    assert len({t.trial.trial_id for t in trials}) == 12
    lost = [
        a
        for t in trials
        for a in t.attempts
        if (a.observation.infrastructure_error or "").startswith("worker_lost")
    ]
    assert len(lost) == 1, "the killed worker's attempt is recorded, and only it"
    (attempt,) = lost
    assert attempt.observation.infrastructure_error.startswith(f"worker_lost: {address} died")
    assert attempt.score.reason == "infrastructure_error"
    # Its lease, from the scheduler's view while it ran: that worker, then lost.
    assert attempt.lease is not None and attempt.lease.lost and attempt.lease.worker == address
    # Each lost attempt was retried: every trial ends resolved, with at most 2 attempts.
    assert {(str(t.score.outcome), len(t.attempts) <= 2) for t in trials} == {("resolved", True)}
    assert check_run(tmp_path / "run").ok


def test_short_attempts_go_to_the_workers_in_leases_of_several(tmp_path):
    """Dask's cost per task (the submission, the scheduler's work, the result's fetch) is
    paid once per lease: the demo's zero-second fake attempts, once the first two are
    seen, go out several to a task, and the run is the same."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class Finished(SchedulerPlugin):
        def __init__(self) -> None:
            self.keys: list[str] = []

        def transition(self, key, start, finish, *args, **kwargs) -> None:
            if start == "processing" and finish == "memory":
                self.keys.append(str(key))

    with dask.config.set(SCHEDULER_SETTINGS):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        )
    finished = Finished()
    cluster.scheduler.add_plugin(finished)
    try:
        outcome = run(
            tmp_path, "run", "executor=dask", f"executor.address={cluster.scheduler_address}"
        )
    finally:
        cluster.close()
    trials = results(tmp_path / "run")
    attempts = [a for t in trials for a in t.attempts]
    assert len(trials) == 12 == outcome.results.planned == len(attempts)
    tasks = [key for key in finished.keys if key.startswith("attempt-")]
    assert 2 < len(tasks) < len(attempts)
    assert all(a.lease is not None and not a.lease.lost for a in attempts)
    assert {(str(t.score.outcome), t.score.reason) for t in trials} == {
        ("resolved", "tests_passed")
    }
    assert check_run(tmp_path / "run").ok


#: A submitter that starts a LocalCluster as a run does, in a process of its own (what it
#: imports is the point): what it imported, and what its cluster's servers run how often.
SUBMITTER = """
import json, sys

def callbacks(dask_worker):
    return {name: pc.callback_time for name, pc in dask_worker.periodic_callbacks.items()}

def worker(dask_worker):
    return {**callbacks(dask_worker), "podman": "evalrepro.runtimes.podman" in sys.modules}

def main():
    from evalrepro.config.experiment import compose
    from evalrepro.run.executors.dask import _started

    config = compose(["+experiment=demo", "environment=fake", "executor=dask",
                      "executor.workers=1"])
    with _started(config.executor, config.environment) as client:
        (workers,) = client.run(worker).values()
        (nanny,) = client.run(callbacks, nanny=True).values()
        scheduler = client.run_on_scheduler(callbacks)
    heavy = sorted(m for m in ("pandas", "pyarrow", "lz4") if m in sys.modules)
    print(json.dumps({"heavy": heavy, "worker": workers, "nanny": nanny,
                      "scheduler": scheduler}))

if __name__ == "__main__":
    main()
"""


def test_a_local_clusters_submitter_imports_no_pandas_and_its_servers_watch_themselves_less(
    tmp_path,
):
    """The submitter imports what it uses (distributed's own fork-server preload would
    import numpy, pandas and lz4 to see which exist); the workers fork from a server
    that imported the attempt's modules (the podman runtime, though this run's is the
    fake one); Dask's self-monitoring (the event loop's health every 20 ms, a psutil
    sample every 500 ms, the nanny's memory every 100 ms) runs less often."""
    import json
    import subprocess
    import sys

    script = tmp_path / "submitter.py"
    script.write_text(SUBMITTER)
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts["heavy"] == []
    assert facts["worker"]["podman"], "the worker's modules were imported before its fork"
    for server in ("worker", "nanny", "scheduler"):
        assert facts[server]["tick"] == 500, server
        assert facts[server]["monitor"] == 5000, server
    for server in ("worker", "nanny"):
        assert facts[server]["memory_monitor"] == 1000, server


def test_without_the_dask_extra_the_run_is_one_line(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(UserError) as error:
        run(tmp_path, "run", "executor=dask")
    assert str(error.value).startswith("executor kind dask needs the dask extra: pip install")
    assert "\n" not in str(error.value)


def test_the_local_cluster_starts_while_the_plan_is_made_and_stops_if_the_plan_fails(
    tmp_path, monkeypatch
):
    import psutil

    from evalrepro.plan import plan as plan_module

    seen = {}
    real_build_plan = plan_module.build_plan

    def failing_plan(*args, **kwargs):
        # The cluster's thread is at work while the plan is made.
        seen["threads"] = [t.name for t in threading.enumerate()]
        deadline = time.monotonic() + 60
        while len(psutil.Process().children(recursive=True)) < 3:  # 2 nannies, a worker
            assert time.monotonic() < deadline, "no worker process started"
            time.sleep(0.1)
        real_build_plan(*args, **kwargs)
        raise UserError("the plan failed")

    monkeypatch.setattr("evalrepro.pipeline.build_plan", failing_plan)
    with pytest.raises(UserError, match="the plan failed"):
        run(tmp_path, "run", "executor=dask", "executor.workers=2")
    assert "evalrepro-cluster" in seen["threads"]

    # Its worker processes are gone with the failed run (multiprocessing's resource
    # tracker and fork server, each started once per process, stay; the workers forked
    # by the fork server are its children, and bear its command line).
    def workers() -> list[str]:
        found = []
        for child in psutil.Process().children():
            line = " ".join(child.cmdline())
            if "resource_tracker" not in line and "forkserver" not in line:
                found.append(line)
            found += [" ".join(c.cmdline()) for c in child.children(recursive=True)]
        return found

    deadline = time.monotonic() + 120  # far above the workers' own shutdown
    while workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert workers() == [], "the cluster's workers outlived the failed run"


def test_the_slurm_and_kubernetes_executors_are_configs_of_their_engines():
    slurm = compose([*FAKE, "executor=slurm", "executor.queue=debug", "executor.workers=3"])
    assert isinstance(slurm.executor, SlurmExecutorConfig)
    assert slurm.executor.concurrency == 3
    adaptive = compose([*FAKE, "executor=slurm", "+executor.adaptive={minimum: 0, maximum: 8}"])
    assert adaptive.executor.concurrency == 8
    with pytest.raises(UserError, match=r"executor\.cores"):
        compose([*FAKE, "executor=slurm", "executor.cores=0"])
    kube = compose(
        [
            *FAKE,
            "executor=kubernetes",
            "executor.image=registry.example/evalrepro-worker@sha256:" + "0" * 64,
            "executor.images.archive=/shared/images",
            "executor.workers=4",
        ]
    )
    assert isinstance(kube.executor, KubernetesExecutorConfig)
    # dask-kubernetes' own spec builder: what its operator would be asked to create.
    spec = kubernetes_spec(kube.executor)
    worker = spec["spec"]["worker"]
    assert worker["replicas"] == 4
    (container,) = worker["spec"]["containers"]
    assert container["image"] == kube.executor.image
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "4Gi"}


def test_an_archive_source_without_a_folder_is_one_line():
    with pytest.raises(UserError, match=r"images\.archive"):
        compose([*FAKE, "executor=dask", "executor.images.source=archive"])


RUN_AND_WAIT = """
import io, sys
from pathlib import Path
from rich.console import Console
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment

if __name__ == "__main__":
    config = compose(sys.argv[2:])
    run_experiment(config, Console(file=io.StringIO()), run_dir=Path(sys.argv[1]),
                   cache_dir=Path(sys.argv[1]).parent / "cache")
"""


def test_a_killed_submitter_resumes_like_any_run(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "submit.py"
    script.write_text(RUN_AND_WAIT)
    run_dir = tmp_path / "run"
    overrides = [*FAKE, "executor=dask", "environment.seconds=0.5"]
    submitter = subprocess.Popen([sys.executable, str(script), str(run_dir), *overrides])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(results(run_dir)) < 3:
        time.sleep(0.1)
    submitter.kill()  # SIGKILL: no cleanup of its own
    submitter.wait()
    done_before = len(results(run_dir))
    assert 3 <= done_before < 12
    again = run(tmp_path, "run", "executor=dask", "environment.seconds=0.5")
    assert again.results.planned == 12 == len(results(run_dir))
    assert len({r.trial.trial_id for r in results(run_dir)}) == 12
    assert check_run(run_dir).ok


# --- a node that builds its own images -------------------------------------------------


def _layer(name: str, digest: str, *, wheel: str = "8.3.4", parent: str | None = None):
    from evalrepro.build.images import inputs_digest, layer_key
    from evalrepro.records.image import PinnedInput
    from evalrepro.records.lockfile import LockedImage

    inputs = [PinnedInput(kind="wheel", name="pytest", version=wheel, digest="sha256:" + "0" * 64)]
    return LockedImage(
        builder="containerfile",
        layer=name,
        key=layer_key("containerfile", name, inputs, parent),
        inputs_digest=inputs_digest(inputs),
        inputs=inputs,
        parent_key=parent,
        tag=f"localhost/evalrepro-{name}:x",
        image_digest=digest,
    )


def test_a_node_whose_build_differs_is_refused_naming_the_layer_and_the_input():
    from evalrepro.build.images import ImageChain
    from evalrepro.records.image import BuildFailure
    from evalrepro.run.executors.node_images import build_problems

    base = _layer("base", "sha256:" + "a" * 64)
    env = _layer("env", "sha256:" + "b" * 64, parent=base.key)
    locked = {"one": [base, env], "two": [base, env], "three": [base, env], "four": [base]}
    other_bytes = _layer("env", "sha256:" + "c" * 64, parent=base.key)
    other_wheel = _layer("env", "sha256:" + "d" * 64, wheel="8.3.5", parent=base.key)
    built = {
        "one": ImageChain(layers=[base.record(), env.record()]),
        "two": ImageChain(layers=[base.record(), other_bytes.record()]),
        "three": ImageChain(layers=[base.record(), other_wheel.record()]),
        "four": BuildFailure(
            builder="containerfile", layer="base", key=base.key, reason="wheel gone: pytest"
        ),
    }
    assert build_problems(locked, built) == [
        "four: the base layer does not build here (wheel gone: pytest)",
        "three: the image built here is not the lockfile's (the lockfile's first): env "
        "layer bbbbbbbbbbbb vs dddddddddddd (wheel pytest 8.3.4 vs 8.3.5)",
        "two: the image built here is not the lockfile's (the lockfile's first): env "
        "layer bbbbbbbbbbbb vs cccccccccccc (same build inputs, other bytes: the build is "
        "not reproducible here; the containerfile builder's bytes depend on podman's "
        "version and storage driver: build with the author's podman, load its images "
        "(bundle --with-images), or build with environment.builder=nix)",
    ]


def test_a_build_source_is_a_config_of_its_own():
    config = compose(["+experiment=demo", "executor=dask", "executor.images.source=build"])
    assert config.executor.images.source == "build"
