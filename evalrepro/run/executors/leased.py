"""Leased executors: attempts run by the workers of a cluster, recorded here. A base.

Every executor that sends attempts to workers elsewhere (Dask's ``dask``, ``slurm`` and
``kubernetes`` kinds; a Ray or a Modal executor) shares one loop, :class:`LeasedSession`,
and differs only in its cluster's client calls, :class:`Cluster`. A new kind is a
:class:`LeasedExecutor` whose :meth:`~LeasedExecutor.connect` yields its ``Cluster``
(and a config model of :class:`~evalrepro.config.executor.LeasedExecutorConfig`'s
fields, declared in the ``evalrepro.executors`` entry-point group).

Workers run attempts (an :class:`~evalrepro.runtimes.attempt.AttemptSpec` in, an
:class:`~evalrepro.runtimes.attempt.AttemptOutput` of bounded bytes back), each with a
runtime it opens itself from the run's environment config (:func:`worker_runtime`);
this process asks every job for its next spec, submits it, and records each output as
it returns: it is the only writer of the run directory, which no worker sees.

- **Leases.** Every ``heartbeat`` seconds the loop asks the cluster which worker runs
  which attempt (:meth:`Cluster.running`); each attempt's record keeps its worker, when it
  was first seen there, and when it was last seen at work. A worker's own account, sent
  back with the output, is taken over the loop's view.
- **A lost worker is one attempt.** The cluster must never run an attempt again after its
  worker died: it raises :class:`WorkerLost` for it, the loop records an attempt with
  the infrastructure error ``worker_lost: ...`` and the job retries within
  ``max_attempts``, as after any infrastructure error; the lost attempt's container is
  removed by name on every worker. No trial is run twice to completion or dropped. A
  run left without workers for ``worker_wait`` seconds stops (a resume goes on).
- **Images on every node.** A worker takes attempts only once its node holds every image
  the run needs (:meth:`Cluster.prepare`, ``executor.images``); a node that cannot is
  left out, and the run says why.
- **Backpressure.** At most ``in_flight`` attempts are out at once (default: one per
  slot the prepared workers were granted); outputs are recorded and dropped as they come.
- **Ctrl-C** cancels what is out and removes the run's containers on every worker; the
  attempts that did not return are not recorded, so a resume runs them.
"""

from __future__ import annotations

import contextlib
import socket
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from evalrepro.errors import UserError
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.records.trial import Lease, TrialResult
from evalrepro.run import agent_phase
from evalrepro.run.execute import TrialJob, now
from evalrepro.run.executors import node_images
from evalrepro.run.executors.base import Events, Executor
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.base import Runtime

# --- on a worker -----------------------------------------------------------------------

#: The runtime a worker process opened, by the environment config it was opened from.
_RUNTIMES: dict[str, Runtime] = {}


def worker_runtime(environment: Any) -> Runtime:
    """This worker process's runtime for ``environment``: opened (and checked) once."""
    from evalrepro.cache import default_cache_dir
    from evalrepro.runtimes import open_runtime

    key = environment.model_dump_json()
    if key not in _RUNTIMES:
        runtime = open_runtime(environment, default_cache_dir())
        runtime.check()
        _RUNTIMES[key] = runtime
    return _RUNTIMES[key]


def open_runtime_here(environment: Any) -> None:
    """Open (and check) this worker's runtime ahead of the run's first attempt."""
    worker_runtime(environment)


def attempt_here(environment: Any, spec: AttemptSpec, worker: str) -> tuple[AttemptOutput, Lease]:
    """One attempt, on worker ``worker``: the runtime's output, a value (it writes
    nothing), and the worker's own account of where and when it ran it."""
    started = now()
    output = agent_phase.attempt(worker_runtime(environment), spec)
    lease = Lease(
        worker=worker, host=socket.gethostname(), started_at=started, last_heartbeat=now()
    )
    return output, lease


def prepare_node(environment: Any, images: list[LockedImage], how: dict) -> tuple[str, list]:
    """Make the node's store hold every image under its tag with its locked digest
    (``evalrepro.run.executors.node_images``); the node's host name and the problems
    (none: the node may take attempts)."""
    return socket.gethostname(), node_images.prepare(worker_runtime(environment), images, **how)


def remove_sandboxes(environment: Any, prefix: str) -> list[str]:
    """Remove this node's sandboxes named ``prefix...`` (the run's, or one attempt's)."""
    return worker_runtime(environment).remove_leftovers(prefix)


# --- what a kind provides --------------------------------------------------------------


class WorkerLost(Exception):
    """The worker of an attempt died or disappeared while it ran it; the cluster will not
    run the attempt again (the loop records it, and the job decides)."""

    def __init__(self, worker: str | None, detail: str) -> None:
        super().__init__(detail)
        #: The worker the cluster last saw running it (None: not known).
        self.worker = worker
        self.detail = detail


class Cluster(ABC):
    """A cluster's client calls, as the loop needs them: a kind implements these and
    nothing else. Workers are named by strings the cluster chooses; an attempt out is a
    handle the cluster chooses (a future)."""

    #: How the cluster is named in messages ("Dask").
    noun: ClassVar[str] = "cluster"

    @abstractmethod
    def workers(self) -> set[str]:
        """The workers the cluster has now (prepared or not)."""

    @abstractmethod
    def prepare(
        self, workers: list[str], images: list[LockedImage], how: dict[str, Any]
    ) -> dict[str, tuple[str, list[str]] | BaseException]:
        """Run :func:`prepare_node` on each of ``workers``: its answer, or its error."""

    @abstractmethod
    def grant(self, workers: list[str]) -> dict[str, int]:
        """Let the prepared ``workers`` take attempts: the attempts each takes at once."""

    @abstractmethod
    def submit(self, spec: AttemptSpec) -> Any:
        """Send ``spec`` to a prepared worker (one with a free slot, as the cluster
        schedules); the handle of the attempt out. The worker runs :func:`attempt_here`."""

    @abstractmethod
    def wait(self, handles: list[Any], timeout: float) -> set[Any]:
        """Those of ``handles`` that are done: at least one, or none after ``timeout``."""

    @abstractmethod
    def result(self, handle: Any) -> tuple[AttemptOutput, Lease | None]:
        """A done attempt's output and its worker's lease; :class:`WorkerLost` when its
        worker was lost, any other exception when the worker failed otherwise."""

    @abstractmethod
    def running(self) -> dict[str, list[str]]:
        """Worker -> the keys (:meth:`key`) of the attempts it runs now."""

    @abstractmethod
    def key(self, handle: Any) -> str:
        """The attempt's key in :meth:`running`."""

    @abstractmethod
    def remove_sandboxes(self, prefix: str) -> None:
        """Run :func:`remove_sandboxes` with ``prefix`` on every worker, ignoring errors."""

    def release(self, handle: Any) -> None:  # noqa: B027 (optional: most need nothing)
        """Forget a done attempt (its output was recorded)."""

    def cancel(self, handle: Any) -> None:  # noqa: B027 (optional: not every cluster can)
        """Stop an attempt out, if the cluster can (Ctrl-C)."""


class LeasedExecutor(Executor):
    """An executor whose attempts run on a cluster's workers, by :class:`LeasedSession`.

    Its config has ``heartbeat``, ``worker_wait``, ``in_flight`` and ``images``
    (:class:`~evalrepro.config.executor.LeasedExecutorConfig`)."""

    def __init__(
        self, config: Any, runtime: Runtime, dataset: object = None, started: Any = None
    ) -> None:
        super().__init__(config, runtime, dataset, started)
        self.settings = config
        self.environment = runtime.config  # type: ignore[attr-defined]

    @abstractmethod
    def connect(self) -> contextlib.AbstractContextManager[Cluster]:
        """The cluster's client for one run, closed when the run ends."""

    def run(self, jobs: list[TrialJob], events: Events) -> list[TrialResult]:
        if not jobs:
            return []
        with self.connect() as cluster:
            return LeasedSession(self, cluster, jobs, events).run()


# --- the loop --------------------------------------------------------------------------


class LeasedSession:
    """One run's attempts through one cluster."""

    def __init__(
        self, executor: LeasedExecutor, cluster: Cluster, jobs: list[TrialJob], events: Events
    ) -> None:
        self.executor = executor
        self.settings = executor.settings
        self.cluster = cluster
        self.noun = cluster.noun
        self.jobs = jobs
        self.events = events
        self.images = run_images(jobs)
        self.ready: dict[str, str] = {}  # worker -> host
        self.slots: dict[str, int] = {}  # worker -> attempts at once
        self.refused: dict[str, str] = {}  # worker -> why
        self.results: list[TrialResult] = []
        self.lost = 0
        self._how: dict[str, Any] = {"source": "store"}
        self._told = ""
        self._alone_since: float | None = None

    def run(self) -> list[TrialResult]:
        self._wait_for_workers()
        self._how = self._delivery()
        self._prepare_new_workers()
        self._tell_workers({})
        pending = iter(self.jobs)
        out: dict[Any, tuple[TrialJob, AttemptSpec, datetime]] = {}
        leases: dict[str, Lease] = {}
        prefix = self.jobs[0].settings.sandbox_prefix
        heartbeat = self.settings.heartbeat
        try:
            self._fill(pending, out)
            last_look = 0.0
            while out:
                for handle in self.cluster.wait(list(out), heartbeat):
                    job, spec, started = out.pop(handle)
                    lease = leases.pop(self.cluster.key(handle), None)
                    output, lease = self._output(handle, spec, lease)
                    job.record(spec, output, started, lease)
                    self.cluster.release(handle)
                    self._next(job, out)
                if time.monotonic() - last_look >= heartbeat:
                    last_look = time.monotonic()
                    self._look(leases)
                    self._forget_gone_workers()
                    self._prepare_new_workers()
                    self._tell_workers(leases)
                self._fill(pending, out)
        except KeyboardInterrupt:
            for handle in out:
                self.cluster.cancel(handle)
            with contextlib.suppress(Exception):
                self.cluster.remove_sandboxes(prefix)
            raise
        return self.results

    # --- workers and their images -------------------------------------------------------

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.settings.worker_wait
        while not self.cluster.workers():
            if time.monotonic() > deadline:
                raise UserError(
                    f"no {self.noun} worker joined within {self.settings.worker_wait:.0f} s "
                    "(executor.worker_wait)"
                )
            time.sleep(0.2)

    def _forget_gone_workers(self) -> None:
        """Workers the cluster no longer has; a run left with none for ``worker_wait``
        seconds stops (its attempts would wait for ever)."""
        present = self.cluster.workers()
        for worker in [w for w in self.ready if w not in present]:
            self.ready.pop(worker)
            self.slots.pop(worker, None)
        if self.ready:
            self._alone_since = None
        elif self._alone_since is None:
            self._alone_since = time.monotonic()
        elif time.monotonic() - self._alone_since > self.settings.worker_wait:
            raise UserError(
                f"every {self.noun} worker was lost and none joined within "
                f"{self.settings.worker_wait:.0f} s (executor.worker_wait); run again to resume"
            )

    def _delivery(self) -> dict[str, Any]:
        """How a node comes to hold the run's images (``executor.images``), as
        :func:`prepare_node` takes it."""
        images = getattr(self.settings, "images", None)
        if images is None:
            return {"source": "store"}
        how: dict[str, Any] = {"source": images.source, "tls_verify": images.tls_verify}
        if images.source == "archive":
            self._export_archive(Path(images.archive or ""))
            how["archive"] = images.archive
        elif images.source == "build":
            how["build"] = self._node_build()
        elif images.source == "registry":
            # Pushed once, from the submitter's store; pulled on each node by digest.
            how["references"] = node_images.push_images(
                self.executor.runtime,
                self.images,
                images.registry or "",
                tls_verify=images.tls_verify,
            )
        return how

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
            environment=self.executor.environment,
            dataset=self.executor.dataset,
            specs=list(specs.values()),
            chains=chains,
        )

    def _export_archive(self, folder: Path) -> None:
        from evalrepro.build.image_archive import export_images

        if list(folder.glob("images.*.tar")):
            return
        folder.mkdir(parents=True, exist_ok=True)
        export_images(self.executor.runtime.image_store(), self.images, folder)

    def _prepare_new_workers(self) -> None:
        new = sorted(self.cluster.workers() - set(self.ready) - set(self.refused))
        if not new:
            return
        for worker, answer in self.cluster.prepare(new, self.images, self._how).items():
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
            self.slots.update(self.cluster.grant(granted))
        if not self.ready and not self.slots:
            reasons = "; ".join(f"{w}: {why}" for w, why in sorted(self.refused.items())[:3])
            raise UserError(f"no {self.noun} worker can take the run's trials ({reasons})")

    # --- submitting and recording -------------------------------------------------------

    def _in_flight(self) -> int:
        if self.settings.in_flight is not None:
            return self.settings.in_flight
        # One attempt per prepared slot: none waits on a worker (a lost worker loses
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
        out[self.cluster.submit(spec)] = (job, spec, now())

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

    def _look(self, leases: dict[str, Lease]) -> None:
        """Each running attempt's lease, from the cluster's view of its workers."""
        seen = now()
        for worker, keys in self.cluster.running().items():
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
        self, handle: Any, spec: AttemptSpec, lease: Lease | None
    ) -> tuple[AttemptOutput, Lease | None]:
        try:
            return self.cluster.result(handle)
        except WorkerLost as lost:
            # Without a lease (it died before the loop first looked), the cluster still
            # knows the worker it ran on: its word is the lease, seen there when lost.
            if lease is None and lost.worker is not None:
                seen = now()
                lease = Lease(
                    worker=lost.worker,
                    host=self.ready.get(lost.worker, ""),
                    started_at=seen,
                    last_heartbeat=seen,
                )
            where = lease.worker if lease is not None else "its worker"
            with contextlib.suppress(Exception):
                # Its container may live on after its worker: nothing of it is recorded.
                self.cluster.remove_sandboxes(spec.sandbox_name)
            self.lost += 1
            if lease is not None:
                self.ready.pop(lease.worker, None)
                self.slots.pop(lease.worker, None)
                lease = lease.model_copy(update={"lost": True})
            detail = f"worker_lost: {where} died or disappeared during the attempt ({lost.detail})"
            return failed_output(detail), lease
        except Exception as error:  # the worker's own failure: an infrastructure error
            return failed_output(
                f"the {self.noun} worker failed: {type(error).__name__}: {error}"
            ), lease


def failed_output(detail: str) -> AttemptOutput:
    """An attempt's output when no runtime gave one: the infrastructure error ``detail``."""
    return AttemptOutput(report=SupervisorReport(runtime=RuntimeFacts(error=detail[:2000])))


def run_images(jobs: list[TrialJob]) -> list[LockedImage]:
    """Every image layer the run's trials need, once each, base first."""
    from evalrepro.build.images import ImageChain

    found: dict[str, LockedImage] = {}
    for job in jobs:
        chain = job.planned.image
        if isinstance(chain, ImageChain):
            for record in chain.layers:
                found.setdefault(record.key, LockedImage.of(record))
    return list(found.values())
