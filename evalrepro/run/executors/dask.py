"""The Dask executor: attempts run by Dask workers, recorded here (kinds ``dask``,
``slurm``, ``kubernetes``: only how the cluster starts differs).

It is the leased executor's loop (``evalrepro.run.executors.leased``: leases, a lost
worker as one attempt, images on every node, backpressure, Ctrl-C) and Dask's client
calls (:class:`DaskCluster`):

- **Leases** are the scheduler's view of which worker processes which attempt
  (``client.processing()``), every ``heartbeat`` seconds.
- **A lost worker** is a ``KilledWorker``: the scheduler is told never to run an attempt
  again after its worker died (``allowed-failures: 0``), so the attempt's future fails.
- **Slots.** A worker takes attempts only once its node holds the run's images: then it
  is given one ``evalrepro-attempt`` resource per thread, which each attempt needs.
- **Leases of several attempts** (the base's), up to 64 once attempts are seen to be
  short, each one Dask task whose argument is the specs pickled once: the scheduler,
  which runs in this process for a LocalCluster, passes bytes on instead of unpickling
  and pickling every spec.
- **A LocalCluster** started here (beside the plan, by the base's ``ClusterStart``; it
  stops while the report is written) forks its workers from one server that imported
  their modules once, and runs without Dask's profiler and work stealing and with its
  self-monitoring less often (:data:`LOCAL_CLUSTER_SETTINGS`): CPU the plan, made
  meanwhile, and the submitter keep.
- **Ctrl-C** also stops the cluster this process started.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from evalrepro.config.executor import (
    DaskExecutorConfig,
    KubernetesExecutorConfig,
    LeasedExecutorConfig,
    SlurmExecutorConfig,
)
from evalrepro.errors import UserError
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.trial import Lease
from evalrepro.run.executors.leased import (
    Cluster,
    ClusterStart,
    LeasedExecutor,
    WorkerLost,
    lease_here,
    lease_payload,
    open_runtime_here,
    prepare_node,
    remove_sandboxes,
)
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec

#: The scheduler's setting a run needs (a scheduler started elsewhere needs it too): an
#: attempt whose worker died is not run again behind the submitter's back; it is recorded
#: as lost, and the job decides.
SCHEDULER_SETTINGS = {"distributed.scheduler.allowed-failures": 0}
#: What a missing extra says.
_EXTRA = "executor kind {kind} needs the dask extra: pip install 'evalrepro[dask]' ({error})"


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as error:
        raise UserError(_EXTRA.format(kind="dask", error=error)) from None
    return distributed


# --- on the worker ---------------------------------------------------------------------


def run_lease(environment: Any, payload: bytes) -> list[tuple[AttemptOutput, Lease]]:
    """A lease's attempts, on a Dask worker (named by its address)."""
    return lease_here(environment, payload, _distributed().get_worker().address)


#: The resource a worker holds one of per thread once its node has the run's images: an
#: attempt needs one, so attempts go only to prepared workers.
SLOT = "evalrepro-attempt"


async def grant_slots(dask_worker: Any) -> int:
    """Give this (prepared) worker one attempt slot per thread."""
    slots = dask_worker.state.nthreads
    await dask_worker.set_resources(**{SLOT: slots})
    return slots


# --- the cluster, per kind -------------------------------------------------------------


@contextlib.contextmanager
def _local_or_address(config: DaskExecutorConfig) -> Iterator[Any]:
    distributed = _distributed()
    if config.address is not None:
        yield config.address
        return
    import dask

    with dask.config.set(LOCAL_CLUSTER_SETTINGS):
        _preload_fork_server()
        cluster = distributed.LocalCluster(
            n_workers=config.workers,
            threads_per_worker=config.threads_per_worker,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            worker_dashboard_address=None,
        )
    try:
        yield cluster
    finally:
        cluster.close()


#: The LocalCluster this process starts, beyond what a run needs: what its workers and
#: its scheduler (which runs in this process) would spend CPU on for nothing, on a
#: machine whose cores run the plan and the sandboxes meanwhile.
LOCAL_CLUSTER_SETTINGS = {
    # Worker processes forked from one server that imported Dask and the worker's side of
    # evalrepro once (WORKER_MODULES), not each a new interpreter importing them again
    # (spawn, Dask's default).
    "distributed.worker.multiprocessing-method": "forkserver",
    # Dask's profiler samples each worker's threads every 10 ms: nothing reads it here.
    "distributed.worker.profile.enabled": False,
    # Attempts need a slot each and are sent one lease per slot: nothing to steal, and the
    # scheduler would look every second.
    "distributed.scheduler.work-stealing": False,
    # Dask's self-monitoring, in the scheduler, each nanny and each worker: an event loop
    # health check every 20 ms (its warning is for loops blocked 3 s), a psutil sample of
    # the process (and the host's disks) every 500 ms, the nanny's memory check every
    # 100 ms. Less often here: the attempts' memory is the sandbox's, bounded by its own
    # limits; a worker's own memory still has Dask's bounds, checked each second.
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.disk": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",
    # Results are fetched and released at once: no replicas for the memory manager to
    # balance every 2 s.
    "distributed.scheduler.active-memory-manager.start": False,
}


def _preload_fork_server() -> None:
    """Have the fork server import :data:`WORKER_MODULES` before it forks a worker.

    Not through ``distributed.utils.get_mp_context()``: the first time, it imports numpy,
    pandas and lz4 in this process (about a second of the submitter's CPU, and pandas'
    memory for the run's length) only to list the ones that exist for its own preload,
    which this list replaces. Its flag that the preload is set is set here instead."""
    import multiprocessing

    import distributed.utils

    multiprocessing.get_context("forkserver").set_forkserver_preload(WORKER_MODULES)
    distributed.utils._forkserver_preload_set = True


#: What a LocalCluster's worker process imports before it is forked (what an attempt on
#: a worker uses: its runtime, the agent phase).
WORKER_MODULES = [
    "dask",
    "distributed",
    "evalrepro.run.executors.dask",
    "evalrepro.run.agent_phase",
    "evalrepro.runtimes",
    "evalrepro.runtimes.podman",
    "evalrepro.runtimes.fake",
]


@contextlib.contextmanager
def _slurm(config: SlurmExecutorConfig) -> Iterator[Any]:
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as error:
        raise UserError(_EXTRA.format(kind="slurm", error=error)) from None
    import sys

    options: dict[str, Any] = {
        "queue": config.queue,
        "account": config.account,
        "cores": config.cores,
        "processes": 1,
        "memory": config.memory,
        "walltime": config.walltime,
        "job_extra_directives": config.job_extra_directives,
        "python": config.python or sys.executable,
        "local_directory": config.local_directory,
        "log_directory": config.log_directory,
        # One attempt per core: the worker's threads are the cores.
        "worker_extra_args": [f"--nthreads={config.cores}"],
    }
    if config.scheduler_host is not None:
        options["scheduler_options"] = {"host": config.scheduler_host}
    cluster = SLURMCluster(**{k: v for k, v in options.items() if v is not None})
    try:
        if config.adaptive is not None:
            cluster.adapt(minimum=config.adaptive.minimum, maximum=config.adaptive.maximum)
        else:
            cluster.scale(config.workers)
        yield cluster
    finally:
        cluster.close()


def kubernetes_spec(config: KubernetesExecutorConfig) -> dict:
    """The DaskCluster resource dask-kubernetes' operator creates for this config."""
    try:
        from dask_kubernetes.operator import make_cluster_spec
    except ImportError as error:
        raise UserError(_EXTRA.format(kind="kubernetes", error=error)) from None
    resources = {"requests": {"cpu": config.cpu, "memory": config.memory}}
    resources["limits"] = dict(resources["requests"])
    return make_cluster_spec(
        name=config.name, image=config.image, n_workers=config.workers, resources=resources
    )


@contextlib.contextmanager
def _kubernetes(config: KubernetesExecutorConfig) -> Iterator[Any]:
    from dask_kubernetes.operator import KubeCluster

    cluster = KubeCluster(custom_cluster_spec=kubernetes_spec(config), namespace=config.namespace)
    try:
        if config.adaptive is not None:
            cluster.adapt(minimum=config.adaptive.minimum, maximum=config.adaptive.maximum)
        yield cluster
    finally:
        cluster.close()


CLUSTERS: dict[str, Callable[[Any], contextlib.AbstractContextManager[Any]]] = {
    "dask": _local_or_address,
    "slurm": _slurm,
    "kubernetes": _kubernetes,
}


# --- on the submitter ------------------------------------------------------------------


class DaskExecutor(LeasedExecutor):
    kind: ClassVar[str] = "dask"

    @classmethod
    def start_cluster(
        cls, config: Any, environment: Any
    ) -> Callable[[], contextlib.AbstractContextManager[Any]] | None:
        # A LocalCluster's start (worker processes forked, podman opened on each) overlaps
        # the plan's making; Slurm jobs and pods are asked for only once there is work.
        if isinstance(config, DaskExecutorConfig) and config.address is None:
            return functools.partial(_started, config, environment)
        return None

    @contextlib.contextmanager
    def connect(self) -> Iterator[Cluster]:
        if isinstance(self.started, ClusterStart):
            # The client the start opened; it closes with the cluster, while the report
            # is written.
            yield DaskCluster(self.started.join(), self.environment)
            return
        with (
            _cluster(self.settings) as cluster,
            _distributed().Client(cluster, timeout=self.settings.worker_wait) as client,
        ):
            yield DaskCluster(client, self.environment)


class DaskCluster(Cluster):
    """The leased loop's calls, made through a Dask client."""

    noun: ClassVar[str] = "Dask"
    #: Dask's cost per task (the client's submission, the scheduler's transitions and
    #: messages, the result's fetch: milliseconds of this process's CPU with a
    #: LocalCluster, whose scheduler runs here) is paid once per lease.
    max_lease: ClassVar[int] = 64

    def __init__(self, client: Any, environment: Any) -> None:
        self.client = client
        self.environment = environment

    def workers(self) -> set[str]:
        return set(self.client.scheduler_info().get("workers", {}))

    def prepare(
        self, workers: list[str], images: list[LockedImage], how: dict[str, Any]
    ) -> dict[str, tuple[str, list[str]] | BaseException]:
        return self.client.run(
            prepare_node, self.environment, images, how, workers=workers, on_error="return"
        )

    def grant(self, workers: list[str]) -> dict[str, int]:
        return self.client.run(grant_slots, workers=workers)

    def submit(self, spec: AttemptSpec) -> Any:
        return self.submit_lease([spec])

    def submit_lease(self, specs: list[AttemptSpec]) -> Any:
        return self.client.submit(
            run_lease,
            self.environment,
            lease_payload(specs),
            key=f"attempt-{specs[0].sandbox_name}",
            pure=False,
            resources={SLOT: 1},
        )

    def wait(self, handles: list[Any], timeout: float) -> set[Any]:
        try:
            done, _ = _distributed().wait(handles, timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set()  # none came back within a heartbeat
        return set(done)

    def result(self, handle: Any) -> tuple[AttemptOutput, Lease | None]:
        (output,) = self.lease_result(handle)
        return output

    def lease_result(self, handle: Any) -> list[tuple[AttemptOutput, Lease | None]]:
        try:
            return handle.result()
        except _distributed().KilledWorker as error:
            last = getattr(getattr(error, "last_worker", None), "address", None)
            raise WorkerLost(last, str(error)) from error

    def running(self) -> dict[str, list[str]]:
        return {worker: list(keys) for worker, keys in self.client.processing().items()}

    def key(self, handle: Any) -> str:
        return handle.key

    def release(self, handle: Any) -> None:
        handle.release()

    def cancel(self, handle: Any) -> None:
        handle.cancel()

    def remove_sandboxes(self, prefix: str) -> None:
        self.client.run(remove_sandboxes, self.environment, prefix, on_error="ignore")


@contextlib.contextmanager
def _cluster(settings: LeasedExecutorConfig) -> Iterator[Any]:
    """The config's cluster (or scheduler address), under the scheduler settings a run
    needs, for as long as the context lasts."""
    _distributed()
    import dask

    with dask.config.set(SCHEDULER_SETTINGS), CLUSTERS[settings.kind](settings) as cluster:
        yield cluster


@contextlib.contextmanager
def _started(settings: LeasedExecutorConfig, environment: Any) -> Iterator[Any]:
    """The config's LocalCluster and a client of it, its workers' runtimes open (a worker
    that cannot open one says so when the run asks it to prepare)."""
    with _cluster(settings) as cluster:
        # Not the client's own context: that marks it current in this thread's context,
        # and the start and the stop run in threads of their own.
        client = _distributed().Client(cluster, timeout=settings.worker_wait)
        try:
            with contextlib.suppress(Exception):
                client.wait_for_workers(settings.workers, timeout=settings.worker_wait)
                client.run(open_runtime_here, environment, on_error="ignore")
            yield client
        finally:
            client.close()
