"""The Dask executor: attempts run by Dask workers, recorded here (kinds ``dask``,
``slurm``, ``kubernetes``: only how the cluster starts differs).

Workers run attempts (an :class:`~evalrepro.run.attempt.AttemptSpec` in, an
:class:`~evalrepro.run.attempt.AttemptOutput` of bounded bytes back), each with a runtime
it opens itself from the run's environment config; this process asks every job for its
next spec, submits it, and records each output as it returns: it is the only writer of
the run directory, which no worker sees. No filesystem is shared.

- **Leases.** Every ``heartbeat`` seconds the submitter asks the scheduler which worker is
  processing which attempt; each attempt's record keeps its worker, when it was first seen
  there, and when it was last seen at work (the scheduler hears from its workers).
- **A lost worker is one attempt.** The scheduler is told never to run an attempt again
  after its worker died (``allowed-failures: 0``): the attempt's future fails, the
  submitter records an attempt with the infrastructure error ``worker_lost: ...`` and the
  job retries within ``max_attempts``, as after any infrastructure error. A container the
  lost worker started is removed by name on every worker. No trial is run twice to
  completion or dropped, and the plan's trials are the denominator.
- **Images on every node.** A worker takes attempts only after its node holds every
  image the run needs, under its tag with the lockfile's digest (``images.source``: the
  node's own store, built there from the lockfile's pins, loaded from the archives of
  ``images.archive``, or pulled by digest from ``images.registry``); a node that cannot
  is left out, and the run says why.
- **Backpressure.** At most ``in_flight`` attempts are out at once; outputs are recorded
  and dropped as they come.
- **Ctrl-C** cancels what is queued, removes the run's containers on every worker, and
  stops the cluster this process started; the attempts that did not return are not
  recorded, so a resume runs them.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from evalrepro.config.executor import (
    DaskExecutorConfig,
    KubernetesExecutorConfig,
    SlurmExecutorConfig,
    _DaskExecutorBase,
)
from evalrepro.errors import UserError
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.records.trial import Lease, TrialResult
from evalrepro.run.attempt import AttemptOutput, AttemptSpec
from evalrepro.run.execute import TrialJob, now
from evalrepro.run.executors import node_images
from evalrepro.run.executors.base import Events, Executor
from evalrepro.run.runtimes.base import Runtime

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

#: The runtime a worker process opened, by the environment config it was opened from.
_RUNTIMES: dict[str, Runtime] = {}


def _runtime(environment: Any) -> Runtime:
    from evalrepro.cache import default_cache_dir
    from evalrepro.run.runtimes import open_runtime

    key = environment.model_dump_json()
    if key not in _RUNTIMES:
        runtime = open_runtime(environment, default_cache_dir())
        runtime.check()
        _RUNTIMES[key] = runtime
    return _RUNTIMES[key]


def open_runtime_here(environment: Any) -> None:
    """Open (and check) this worker's runtime ahead of the run's first attempt."""
    _runtime(environment)


def run_attempt(environment: Any, spec: AttemptSpec) -> tuple[AttemptOutput, Lease]:
    """One attempt, on a worker: the runtime's output, a value (it writes nothing), and
    the worker's own account of where and when it ran it."""
    started = now()
    output = _runtime(environment).attempt(spec)
    worker = _distributed().get_worker().address
    lease = Lease(
        worker=worker, host=socket.gethostname(), started_at=started, last_heartbeat=now()
    )
    return output, lease


def prepare_node(environment: Any, images: list[LockedImage], how: dict) -> tuple[str, list]:
    """Make the node's store hold every image under its tag with its locked digest
    (``evalrepro.run.executors.node_images``); the node's host name and the problems
    (none: the node may take attempts)."""
    return socket.gethostname(), node_images.prepare(_runtime(environment), images, **how)


#: The resource a worker holds one of per thread once its node has the run's images: an
#: attempt needs one, so attempts go only to prepared workers.
SLOT = "evalrepro-attempt"


async def grant_slots(dask_worker: Any) -> int:
    """Give this (prepared) worker one attempt slot per thread."""
    slots = dask_worker.state.nthreads
    await dask_worker.set_resources(**{SLOT: slots})
    return slots


def remove_sandboxes(environment: Any, prefix: str) -> list[str]:
    """Remove this node's sandboxes named ``prefix...`` (the run's, or one attempt's)."""
    return _runtime(environment).remove_leftovers(prefix)


# --- the cluster, per kind -------------------------------------------------------------


@contextlib.contextmanager
def _local_or_address(config: DaskExecutorConfig) -> Iterator[Any]:
    distributed = _distributed()
    if config.address is not None:
        yield config.address
        return
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


class DaskExecutor(Executor):
    kind: ClassVar[str] = "dask"

    def __init__(
        self,
        config: _DaskExecutorBase,
        runtime: Runtime,
        dataset: object = None,
        started: Any = None,
    ) -> None:
        super().__init__(config, runtime, dataset, started)
        self.settings = config
        self.environment = runtime.config  # type: ignore[attr-defined]

    @classmethod
    def starting(cls, config: Any, environment: Any) -> contextlib.AbstractContextManager[Any]:
        # A LocalCluster's start (worker processes importing evalrepro, opening podman)
        # overlaps the plan's making; Slurm jobs and pods are asked for only once there
        # is work.
        if isinstance(config, DaskExecutorConfig) and config.address is None:
            return _Starting(config, environment)
        return contextlib.nullcontext()

    def run(self, jobs: list[TrialJob], events: Events) -> list[TrialResult]:
        if not jobs:
            return []
        with contextlib.ExitStack() as stack:
            if isinstance(self.started, _Starting):
                cluster = self.started.cluster()
            else:
                cluster = stack.enter_context(_cluster(self.settings))
            client = _distributed().Client(cluster, timeout=self.settings.worker_wait)
            try:
                return _Session(self, client, jobs, events).run()
            finally:
                client.close()


@contextlib.contextmanager
def _cluster(settings: _DaskExecutorBase) -> Iterator[Any]:
    """The config's cluster (or scheduler address), under the scheduler settings a run
    needs, for as long as the context lasts."""
    _distributed()
    import dask

    with dask.config.set(SCHEDULER_SETTINGS), CLUSTERS[settings.kind](settings) as cluster:
        yield cluster


class _Starting:
    """A cluster started in a thread of its own while the plan is made."""

    def __init__(self, settings: _DaskExecutorBase, environment: Any) -> None:
        self._stack = contextlib.ExitStack()
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._start, args=(settings, environment), name="evalrepro-cluster", daemon=True
        )

    def __enter__(self) -> _Starting:
        self._thread.start()
        return self

    def _start(self, settings: _DaskExecutorBase, environment: Any) -> None:
        try:
            self._value = self._stack.enter_context(_cluster(settings))
        except BaseException as error:  # raised again where the cluster is used
            self._error = error
            return
        # Each worker opens its runtime now; one that cannot says so when the run asks.
        with contextlib.suppress(Exception):
            with _distributed().Client(self._value, timeout=settings.worker_wait) as client:
                client.wait_for_workers(settings.workers, timeout=settings.worker_wait)
                client.run(open_runtime_here, environment, on_error="ignore")

    def cluster(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def __exit__(self, *exc: object) -> None:
        self._thread.join()
        self._stack.close()


class _Session:
    """One run's attempts through one client."""

    def __init__(
        self, executor: DaskExecutor, client: Any, jobs: list[TrialJob], events: Events
    ) -> None:
        self.executor = executor
        self.settings = executor.settings
        self.environment = executor.environment
        self.client = client
        self.jobs = jobs
        self.events = events
        self.images = _images(jobs)
        self.ready: dict[str, str] = {}  # worker address -> host
        self.slots: dict[str, int] = {}  # worker address -> attempts at once
        self.refused: dict[str, str] = {}  # worker address -> why
        self.results: list[TrialResult] = []
        self.lost = 0
        self._told = ""
        self._alone_since: float | None = None

    def run(self) -> list[TrialResult]:
        distributed = _distributed()
        self._wait_for_workers()
        images = self.settings.images
        self._how: dict[str, Any] = {"source": images.source, "tls_verify": images.tls_verify}
        if images.source == "archive":
            self._export_archive()
            self._how["archive"] = images.archive
        elif images.source == "build":
            self._how["build"] = self._node_build()
        elif images.source == "registry":
            # Pushed once, from the submitter's store; pulled on each node by digest.
            self._how["references"] = node_images.push_images(
                self.executor.runtime,
                self.images,
                images.registry or "",
                tls_verify=images.tls_verify,
            )
        self._prepare_new_workers()
        self._tell_workers({})
        pending = iter(self.jobs)
        out: dict[Any, tuple[TrialJob, AttemptSpec, datetime]] = {}
        leases: dict[str, Lease] = {}
        prefix = self.jobs[0].settings.sandbox_prefix
        try:
            self._fill(pending, out)
            last_look = 0.0
            while out:
                try:
                    done, _ = distributed.wait(
                        list(out), timeout=self.settings.heartbeat, return_when="FIRST_COMPLETED"
                    )
                except TimeoutError:
                    done = set()  # none came back within a heartbeat: look at the leases
                for future in done:
                    job, spec, started = out.pop(future)
                    lease = leases.pop(future.key, None)
                    output, lease = self._output(future, spec, lease)
                    job.record(spec, output, started, lease)
                    future.release()
                    self._next(job, out)
                if time.monotonic() - last_look >= self.settings.heartbeat:
                    last_look = time.monotonic()
                    self._look(out, leases)
                    self._forget_gone_workers()
                    self._prepare_new_workers()
                    self._tell_workers(leases)
                self._fill(pending, out)
        except KeyboardInterrupt:
            for future in out:
                future.cancel()
            with contextlib.suppress(Exception):
                self.client.run(remove_sandboxes, self.environment, prefix, on_error="ignore")
            raise
        return self.results

    # --- workers and their images -------------------------------------------------------

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.settings.worker_wait
        while not self.client.scheduler_info().get("workers"):
            if time.monotonic() > deadline:
                raise UserError(
                    f"no Dask worker joined within {self.settings.worker_wait:.0f} s "
                    "(executor.worker_wait)"
                )
            time.sleep(0.2)

    def _forget_gone_workers(self) -> None:
        """Workers the scheduler no longer has; a run left with none for ``worker_wait``
        seconds stops (its attempts would wait for ever)."""
        present = set(self.client.scheduler_info().get("workers", {}))
        for worker in [w for w in self.ready if w not in present]:
            self.ready.pop(worker)
            self.slots.pop(worker, None)
        if self.ready:
            self._alone_since = None
        elif self._alone_since is None:
            self._alone_since = time.monotonic()
        elif time.monotonic() - self._alone_since > self.settings.worker_wait:
            raise UserError(
                f"every Dask worker was lost and none joined within "
                f"{self.settings.worker_wait:.0f} s (executor.worker_wait); run again to resume"
            )

    def _node_build(self) -> node_images.NodeBuild:
        from evalrepro.build.images import ImageChain

        if self.executor.dataset is None:
            raise UserError("executor.images.source build: this run has no dataset config")
        specs, chains = {}, {}
        for job in self.jobs:
            planned = job.planned
            if isinstance(planned.image, ImageChain):
                specs[planned.sample.instance_id] = planned.spec
                chains[planned.sample.instance_id] = [
                    LockedImage.of(record) for record in planned.image.layers
                ]
        return node_images.NodeBuild(
            environment=self.environment,
            dataset=self.executor.dataset,
            specs=list(specs.values()),
            chains=chains,
        )

    def _export_archive(self) -> None:
        from evalrepro.publish.image_archive import export_images

        folder = Path(self.settings.images.archive or "")
        if list(folder.glob("images.*.tar")):
            return
        folder.mkdir(parents=True, exist_ok=True)
        export_images(self.executor.runtime.image_store(), self.images, folder)

    def _prepare_new_workers(self) -> None:
        workers = set(self.client.scheduler_info().get("workers", {}))
        new = sorted(workers - set(self.ready) - set(self.refused))
        if not new:
            return
        answers = self.client.run(
            prepare_node, self.environment, self.images, self._how, workers=new, on_error="return"
        )
        for worker, answer in answers.items():
            if isinstance(answer, BaseException):
                self.refused[worker] = f"{type(answer).__name__}: {answer}"
                continue
            host, problems = answer
            if problems:
                self.refused[worker] = "; ".join(problems)
            else:
                self.ready[worker] = host
        granted = [worker for worker in new if worker in self.ready]
        if granted:
            self.slots.update(self.client.run(grant_slots, workers=granted))
        if not self.ready and not self.slots:
            reasons = "; ".join(f"{w}: {why}" for w, why in sorted(self.refused.items())[:3])
            raise UserError(f"no Dask worker can take the run's trials ({reasons})")

    # --- submitting and recording -------------------------------------------------------

    def _in_flight(self) -> int:
        if self.settings.in_flight is not None:
            return self.settings.in_flight
        # One attempt per prepared thread: none waits on a worker (a lost worker loses
        # only what it was running), and the next is submitted as one returns.
        return max(1, sum(self.slots.get(worker, 0) for worker in self.ready))

    def _fill(self, pending: Iterator[TrialJob], out: dict) -> None:
        while len(out) < self._in_flight():
            job = next(pending, None)
            if job is None:
                return
            self._next(job, out)

    def _next(self, job: TrialJob, out: dict) -> None:
        spec = job.next_spec()
        if spec is None:
            result = job.finish()
            self.results.append(result)
            self.events.trial_finished(job.planned, result)
            return
        self.events.attempt_started(job.planned, spec.number)
        future = self.client.submit(
            run_attempt,
            self.environment,
            spec,
            key=f"attempt-{spec.sandbox_name}",
            pure=False,
            resources={SLOT: 1},
        )
        out[future] = (job, spec, now())

    def _tell_workers(self, leases: dict[str, Lease]) -> None:
        running = Counter(lease.worker for lease in leases.values())
        parts = [f"{w} ({self.ready[w]}): {running[w]} running" for w in sorted(self.ready)]
        parts += [f"{w} refused: {why}" for w, why in sorted(self.refused.items())]
        if self.lost:
            parts.append(f"{self.lost} lost during attempts")
        summary = "; ".join(parts)
        if summary != self._told:
            self._told = summary
            self.events.workers_changed(summary)

    def _look(self, out: dict, leases: dict[str, Lease]) -> None:
        """Each running attempt's lease, from the scheduler's view of its workers."""
        seen = now()
        processing = self.client.processing()
        for worker, keys in processing.items():
            for key in keys:
                lease = leases.get(key)
                if lease is None or lease.worker != worker:
                    host = self.ready.get(worker, "")
                    leases[key] = Lease(
                        worker=worker, host=host, started_at=seen, last_heartbeat=seen
                    )
                else:
                    leases[key] = lease.model_copy(update={"last_heartbeat": seen})

    def _output(
        self, future: Any, spec: AttemptSpec, lease: Lease | None
    ) -> tuple[AttemptOutput, Lease | None]:
        distributed = _distributed()
        try:
            output, ran = future.result()
            return output, ran
        except distributed.KilledWorker as error:
            # Without a lease (it died before its first heartbeat arrived), the scheduler
            # still knows the worker it ran on.
            last = getattr(getattr(error, "last_worker", None), "address", None)
            if lease is None and last is not None:
                # The scheduler's word is the lease: seen at that worker when it was lost.
                seen = now()
                lease = Lease(
                    worker=last, host=self.ready.get(last, ""), started_at=seen, last_heartbeat=seen
                )
            where = lease.worker if lease is not None else "its worker"
            with contextlib.suppress(Exception):
                # Its container may live on after its worker: nothing of it is recorded.
                self.client.run(
                    remove_sandboxes, self.environment, spec.sandbox_name, on_error="ignore"
                )
            self.lost += 1
            if lease is not None:
                self.ready.pop(lease.worker, None)
                self.slots.pop(lease.worker, None)
                lease = lease.model_copy(update={"lost": True})
            detail = f"worker_lost: {where} died or disappeared during the attempt ({error})"
            return _failed(detail), lease
        except Exception as error:  # the worker's own failure: an infrastructure error
            return _failed(f"the Dask worker failed: {type(error).__name__}: {error}"), lease


def _failed(detail: str) -> AttemptOutput:
    return AttemptOutput(report=SupervisorReport(runtime=RuntimeFacts(error=detail[:2000])))


def _images(jobs: list[TrialJob]) -> list[LockedImage]:
    """Every image layer the run's trials need, once each, base first."""
    from evalrepro.build.images import ImageChain

    found: dict[str, LockedImage] = {}
    for job in jobs:
        chain = job.planned.image
        if isinstance(chain, ImageChain):
            for record in chain.layers:
                found.setdefault(
                    record.key,
                    LockedImage.of(record),
                )
    return list(found.values())
