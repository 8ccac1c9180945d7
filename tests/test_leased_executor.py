"""The leased executor's base, reused by a kind that is not Dask: its cluster is a real
``concurrent.futures`` pool per worker (a worker is a process), its client calls a dozen
lines. On the base alone it gets a lease for every attempt, survives a worker process
that dies mid-trial (that attempt is recorded as lost and retried elsewhere) and
finishes every trial once."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from evalrepro.config.executor import LeasedExecutorConfig
from evalrepro.config.experiment import compose
from evalrepro.plan.plan import build_plan
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.trial import Lease, read_trial_result
from evalrepro.run.backend import Backend
from evalrepro.run.executors import run_trials
from evalrepro.run.executors.leased import (
    Cluster,
    LeasedExecutor,
    WorkerLost,
    attempt_here,
    lease_here,
    lease_payload,
    prepare_node,
    remove_sandboxes,
)
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec


def attempt_dying_once(
    environment: Any, spec: AttemptSpec, worker: str, marker: str
) -> tuple[AttemptOutput, Lease]:
    """The attempt, on a worker; the first one worker ``pool-0`` takes, its process is
    killed while the attempt runs (as a node that goes down)."""
    if worker == "pool-0" and not os.path.exists(marker):
        Path(marker).touch()
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
    return attempt_here(environment, spec, worker)


class PoolCluster(Cluster):
    """Workers ``pool-N``: a one-process pool each. A pool whose process died is broken:
    its worker is gone."""

    noun: ClassVar[str] = "pool"

    def __init__(self, environment: Any, workers: int, marker: str) -> None:
        self.environment = environment
        self.marker = marker
        self.pools = {
            f"pool-{n}": futures.ProcessPoolExecutor(max_workers=1) for n in range(workers)
        }
        self.where: dict[futures.Future, str] = {}

    def workers(self) -> set[str]:
        return set(self.pools)

    def prepare(
        self, workers: list[str], images: list[LockedImage], how: dict[str, Any]
    ) -> dict[str, tuple[str, list[str]] | BaseException]:
        answers: dict[str, tuple[str, list[str]] | BaseException] = {}
        for worker in workers:
            try:
                answers[worker] = (
                    self.pools[worker].submit(prepare_node, self.environment, images, how).result()
                )
            except Exception as error:
                answers[worker] = error
        return answers

    def grant(self, workers: list[str]) -> dict[str, int]:
        return dict.fromkeys(workers, 1)

    def submit(self, spec: AttemptSpec) -> futures.Future:
        busy = Counter(self.where.values())
        worker = min(self.pools, key=lambda w: (busy[w], w))
        future = self.pools[worker].submit(
            attempt_dying_once, self.environment, spec, worker, self.marker
        )
        self.where[future] = worker
        return future

    def wait(self, handles: list[Any], timeout: float) -> set[Any]:
        done, _ = futures.wait(handles, timeout=timeout, return_when=futures.FIRST_COMPLETED)
        return set(done)

    def result(self, handle: Any) -> tuple[AttemptOutput, Lease | None]:
        worker = self.where.pop(handle)
        try:
            return handle.result()
        except BrokenProcessPool as error:
            self.pools.pop(worker).shutdown(wait=False)
            raise WorkerLost(worker, f"its process died: {error}") from error

    def running(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for future, worker in self.where.items():
            if future.running():
                found.setdefault(worker, []).append(self.key(future))
        return found

    def key(self, handle: Any) -> str:
        return str(id(handle))

    def remove_sandboxes(self, prefix: str) -> None:
        for pool in self.pools.values():
            with contextlib.suppress(Exception):
                pool.submit(remove_sandboxes, self.environment, prefix).result()

    def close(self) -> None:
        for pool in self.pools.values():
            pool.shutdown(wait=True, cancel_futures=True)


class PoolExecutor(LeasedExecutor):
    kind: ClassVar[str] = "pool"

    @contextlib.contextmanager
    def connect(self) -> Iterator[Cluster]:
        cluster = PoolCluster(self.environment, self.settings.workers, self.settings.marker)
        try:
            yield cluster
        finally:
            cluster.close()


class PoolExecutorConfig(LeasedExecutorConfig):
    kind: Literal["pool"] = "pool"
    workers: int = 2
    marker: str
    implementation: ClassVar[str] = "tests.test_leased_executor:PoolExecutor"


def test_an_executor_on_the_base_leases_survives_a_dead_worker_and_runs_each_trial_once(
    tmp_path,
):
    config = compose(["+experiment=demo", "environment=fake", "environment.seconds=1"])
    backend = Backend.open(config.environment, tmp_path / "cache")
    plan = build_plan(config, backend.builder, tmp_path / "cache")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    results = run_trials(
        plan.trials,
        runtime=backend.runtime,
        run_dir=run_dir,
        environment=config.environment,
        executor=PoolExecutorConfig(marker=str(tmp_path / "killed"), heartbeat=0.2),
        dataset=config.dataset,
    )
    assert (tmp_path / "killed").exists(), "a worker process died mid-trial"
    planned = [p.trial.trial_id for p in plan.trials]
    assert [r.trial.trial_id for r in results] == planned
    on_disk = [read_trial_result(p) for p in sorted((run_dir / "trials").glob("*/result.json"))]
    assert sorted(r.trial.trial_id for r in on_disk) == sorted(planned)

    attempts = [a for r in on_disk for a in r.attempts]
    assert all(a.lease is not None for a in attempts), "every attempt has its lease"
    assert {a.lease.worker for a in attempts} == {"pool-0", "pool-1"}
    errors = [(a, a.observation.infrastructure_error or "") for a in attempts]
    lost = [a for a, error in errors if error.startswith("worker_lost")]
    assert len(lost) == 1, "the dead worker's attempt is recorded, and only it"
    (attempt,) = lost
    assert attempt.observation.infrastructure_error.startswith("worker_lost: pool-0 died")
    assert attempt.lease.lost and attempt.lease.worker == "pool-0"
    # Retried on the worker left: every trial ends resolved, the lost one in 2 attempts.
    assert {str(r.score.outcome) for r in on_disk} == {"resolved"}
    assert sorted(len(r.attempts) for r in on_disk) == [1] * 11 + [2]
    later = [a for a in attempts if a.started_at > attempt.started_at]
    assert later and {a.lease.worker for a in later if a is not attempt} == {"pool-1"}


def lease_dying_once(
    environment: Any, payload: bytes, worker: str, marker: str
) -> list[tuple[AttemptOutput, Lease]]:
    """A lease, on a worker; the first lease of three or more attempts has its worker's
    process killed as its first attempt starts (as a node that goes down)."""
    specs = pickle.loads(payload)
    if len(specs) >= 3 and not os.path.exists(marker):
        Path(marker).write_text(f"{worker} {specs[0].trial_id} {len(specs)}")
        os.kill(os.getpid(), signal.SIGKILL)
    return lease_here(environment, payload, worker)


class LeasePoolCluster(PoolCluster):
    """The pool cluster, sending attempts in leases of up to 8 (one pickled value each)."""

    max_lease: ClassVar[int] = 8

    def __init__(self, environment: Any, workers: int, marker: str) -> None:
        super().__init__(environment, workers, marker)
        self.sent: list[int] = []

    def submit(self, spec: AttemptSpec) -> futures.Future:
        return self.submit_lease([spec])

    def submit_lease(self, specs: list[AttemptSpec]) -> futures.Future:
        self.sent.append(len(specs))
        busy = Counter(self.where.values())
        worker = min(self.pools, key=lambda w: (busy[w], w))
        future = self.pools[worker].submit(
            lease_dying_once, self.environment, lease_payload(specs), worker, self.marker
        )
        self.where[future] = worker
        return future

    def result(self, handle: Any) -> tuple[AttemptOutput, Lease | None]:
        (output,) = self.lease_result(handle)
        return output

    def lease_result(self, handle: Any) -> list[tuple[AttemptOutput, Lease | None]]:
        worker = self.where.pop(handle)
        try:
            return handle.result()
        except BrokenProcessPool as error:
            self.pools.pop(worker).shutdown(wait=False)
            raise WorkerLost(worker, f"its process died: {error}") from error


class LeasePoolExecutor(LeasedExecutor):
    kind: ClassVar[str] = "lease-pool"
    clusters: ClassVar[list[LeasePoolCluster]] = []

    @contextlib.contextmanager
    def connect(self) -> Iterator[Cluster]:
        cluster = LeasePoolCluster(self.environment, self.settings.workers, self.settings.marker)
        self.clusters.append(cluster)
        try:
            yield cluster
        finally:
            cluster.close()


class LeasePoolExecutorConfig(PoolExecutorConfig):
    kind: Literal["lease-pool"] = "lease-pool"  # type: ignore[assignment]
    implementation: ClassVar[str] = "tests.test_leased_executor:LeasePoolExecutor"


def test_short_attempts_go_out_in_leases_and_a_lost_lease_costs_one_attempt(tmp_path):
    """Attempts much shorter than a heartbeat go out several to a submission (a cluster's
    cost per task is paid once per lease); a worker lost with a lease costs its first
    attempt, recorded lost, and the lease's other attempts go out again: each trial once."""
    config = compose(["+experiment=demo", "environment=fake"])
    backend = Backend.open(config.environment, tmp_path / "cache")
    plan = build_plan(config, backend.builder, tmp_path / "cache")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    marker = tmp_path / "killed"
    results = run_trials(
        plan.trials,
        runtime=backend.runtime,
        run_dir=run_dir,
        environment=config.environment,
        executor=LeasePoolExecutorConfig(marker=str(marker), heartbeat=2.0),
        dataset=config.dataset,
    )
    (cluster,) = LeasePoolExecutor.clusters
    planned = [p.trial.trial_id for p in plan.trials]
    assert [r.trial.trial_id for r in results] == planned
    on_disk = [read_trial_result(p) for p in sorted((run_dir / "trials").glob("*/result.json"))]
    assert sorted(r.trial.trial_id for r in on_disk) == sorted(planned)
    # The first attempts go one at a time (their length unknown), then in leases; the
    # lost lease's unstarted attempts went out twice.
    killed_worker, killed_trial, size = marker.read_text().split()
    assert cluster.sent[:2] == [1, 1] and max(cluster.sent) >= 3
    assert len(cluster.sent) < len(planned)
    assert sum(cluster.sent) == len(planned) + 1 + (int(size) - 1)

    attempts = [a for r in on_disk for a in r.attempts]
    assert all(a.lease is not None for a in attempts), "every attempt has its lease"
    errors = [(a, a.observation.infrastructure_error or "") for a in attempts]
    lost = [a for a, error in errors if error.startswith("worker_lost")]
    assert len(lost) == 1, "the lost lease is one lost attempt"
    (attempt,) = lost
    assert attempt.lease.lost and attempt.lease.worker == killed_worker
    assert attempt.trial_id == killed_trial
    assert {str(r.score.outcome) for r in on_disk} == {"resolved"}
    assert sorted(len(r.attempts) for r in on_disk) == [1] * (len(planned) - 1) + [2]


# --- a cluster started beside the plan ---------------------------------------------------

#: What the started pools saw: (event, detail).
STARTED: list[tuple[str, object]] = []
PLAN_BEGAN = threading.Event()
REPORT_BEGAN = threading.Event()


@contextlib.contextmanager
def started_pools(config: Any, environment: Any) -> Iterator[PoolCluster]:
    """The pools, started (and stopped) by the base's ClusterStart: each says in which
    thread it ran and whether the plan (the report) was under way meanwhile."""
    STARTED.append(("start", threading.current_thread().name))
    STARTED.append(("the plan began while the cluster started", PLAN_BEGAN.wait(timeout=30)))
    cluster = PoolCluster(environment, config.workers, config.marker)
    try:
        yield cluster
    finally:
        STARTED.append(("stop", threading.current_thread().name))
        STARTED.append(("the report began while the cluster stopped", REPORT_BEGAN.wait(30)))
        cluster.close()
        STARTED.append(("stopped", True))


class StartedPoolExecutor(PoolExecutor):
    kind: ClassVar[str] = "started-pool"

    @classmethod
    def start_cluster(cls, config: Any, environment: Any) -> Any:
        return lambda: started_pools(config, environment)

    @contextlib.contextmanager
    def connect(self) -> Iterator[Cluster]:
        STARTED.append(("joined", "the run's first submission"))
        yield self.started.join()


class StartedPoolExecutorConfig(PoolExecutorConfig):
    kind: Literal["started-pool"] = "started-pool"  # type: ignore[assignment]
    implementation: ClassVar[str] = "tests.test_leased_executor:StartedPoolExecutor"


# The config's executor union was made before this kind was declared: its dump says so.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_a_kinds_cluster_starts_beside_the_plan_and_stops_while_the_report_is_written(
    tmp_path, monkeypatch
):
    import io

    from rich.console import Console

    from evalrepro import pipeline, plugins
    from evalrepro.report import run_report

    def plan(*args: Any, **kwargs: Any) -> Any:
        PLAN_BEGAN.set()
        return real_plan(*args, **kwargs)

    def report(*args: Any, **kwargs: Any) -> Any:
        STARTED.append(("report", threading.current_thread().name))
        REPORT_BEGAN.set()
        return real_report(*args, **kwargs)

    real_plan, real_report = pipeline.build_plan, run_report.build_run_report
    # The kind, declared as another package's entry point would declare it.
    declared = plugins.declared

    def with_started_pool(group: Any) -> dict[str, str]:
        found = declared(group)
        if group == "executors":
            found = {**found, "started-pool": f"{__name__}:StartedPoolExecutorConfig"}
        return found

    monkeypatch.setattr(plugins, "declared", with_started_pool)
    monkeypatch.setattr(pipeline, "build_plan", plan)
    monkeypatch.setattr(run_report, "build_run_report", report)
    (tmp_path / "no-kill").touch()  # no worker dies here
    config = compose(["+experiment=demo", "environment=fake"])
    config = config.model_copy(
        update={"executor": StartedPoolExecutorConfig(marker=str(tmp_path / "no-kill"))}
    )
    outcome = pipeline.run_experiment(
        config, Console(file=io.StringIO()), run_dir=tmp_path / "run", cache_dir=tmp_path / "c"
    )
    assert {str(t.outcome) for t in outcome.results.trials} == {"resolved"}
    assert len(outcome.results.trials) == 12
    assert STARTED == [
        ("start", "evalrepro-cluster"),
        ("the plan began while the cluster started", True),
        ("joined", "the run's first submission"),
        ("stop", "evalrepro-cluster-stop"),
        ("report", "MainThread"),
        ("the report began while the cluster stopped", True),
        ("stopped", True),
    ]
