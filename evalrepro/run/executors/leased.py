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
- **Backpressure.** At most ``in_flight`` attempts are out at once (default: one lease
  per slot the prepared workers were granted); outputs are recorded and dropped as they
  come.
- **Leases of several attempts.** A cluster that can (:attr:`Cluster.max_lease`) is sent
  attempts in leases: a worker slot runs a lease's attempts one after another and returns
  their outputs together, so the cluster's per-task cost (scheduling, messages, the
  submission's serialisation: the specs are pickled once, as one value) is paid once per
  lease. A lease holds one attempt until the loop has seen how long attempts take, then
  about half a heartbeat of them (and no more than an even share of what is left, so the
  last ones spread over every slot): attempts of a few seconds, as real trials are, still
  go one at a time. A lost lease costs its first attempt (recorded lost, as above); the
  others go out again.
- **The cluster starts beside the plan.** A kind whose cluster this process starts (a
  Dask ``LocalCluster``) names how in :meth:`LeasedExecutor.start_cluster`: a
  :class:`ClusterStart` begins it in a thread of its own as soon as the executor is known
  (the plan is made meanwhile), the loop joins it when it first submits, and it is
  stopped in a thread of its own once the last attempt is recorded, while the report is
  written.
- **Ctrl-C** cancels what is out and removes the run's containers on every worker; the
  attempts that did not return are not recorded, so a resume runs them.
"""

from __future__ import annotations

import contextlib
import math
import pickle
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import Callable, Iterator
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


def lease_here(environment: Any, payload: bytes, worker: str) -> list[tuple[AttemptOutput, Lease]]:
    """A lease's attempts, one after another, on worker ``worker``: their outputs, in
    order. ``payload`` is the list of specs pickled once by the submitter (a scheduler
    passes bytes on as they are, where it would unpickle and pickle each spec again). An
    attempt whose runtime raised is that attempt's infrastructure error, not the lease's."""
    specs: list[AttemptSpec] = pickle.loads(payload)
    outputs = []
    for spec in specs:
        try:
            outputs.append(attempt_here(environment, spec, worker))
        except Exception as error:
            seen = now()
            lease = Lease(
                worker=worker, host=socket.gethostname(), started_at=seen, last_heartbeat=seen
            )
            detail = f"the worker failed: {type(error).__name__}: {error}"
            outputs.append((failed_output(detail), lease))
    return outputs


def lease_payload(specs: list[AttemptSpec]) -> bytes:
    """What :func:`lease_here` takes: the specs as one pickled value."""
    return pickle.dumps(specs, protocol=pickle.HIGHEST_PROTOCOL)


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
    #: The most attempts one lease may hold (:meth:`submit_lease`); 1: one at a time.
    max_lease: ClassVar[int] = 1

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

    def submit_lease(self, specs: list[AttemptSpec]) -> Any:
        """Send ``specs`` (at most :attr:`max_lease`) to one prepared worker slot, which
        runs them one after another (:func:`lease_here`); the handle of the lease out."""
        if len(specs) != 1:
            raise ValueError(f"this {self.noun} takes one attempt at a time")
        return self.submit(specs[0])

    def lease_result(self, handle: Any) -> list[tuple[AttemptOutput, Lease | None]]:
        """A done lease's outputs and their workers' leases, in the order sent; raises as
        :meth:`result` does."""
        return [self.result(handle)]

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

    @classmethod
    def start_cluster(
        cls, config: Any, environment: Any
    ) -> Callable[[], contextlib.AbstractContextManager[Any]] | None:
        """How this kind starts its cluster beside the plan: a context that starts it (and
        may open its workers' runtimes for ``environment``), yields what :meth:`connect`
        takes from :attr:`started` (``started.join()``), and stops it. None (the default):
        nothing starts before the run has trials; :meth:`connect` starts what it needs."""
        return None

    @classmethod
    def starting(cls, config: Any, environment: Any) -> contextlib.AbstractContextManager[Any]:
        start = cls.start_cluster(config, environment)
        return ClusterStart(start) if start is not None else contextlib.nullcontext()

    @abstractmethod
    def connect(self) -> contextlib.AbstractContextManager[Cluster]:
        """The cluster's client for one run, closed when the run ends (a cluster begun by
        :meth:`start_cluster`: ``self.started.join()``, stopped by its :class:`ClusterStart`)."""

    def run(self, jobs: list[TrialJob], events: Events) -> list[TrialResult]:
        try:
            if not jobs:
                return []
            with self.connect() as cluster:
                return LeasedSession(self, cluster, jobs, events).run()
        finally:
            if isinstance(self.started, ClusterStart):
                # Every attempt is recorded: the cluster stops while the report is written.
                self.started.stop()


class ClusterStart:
    """A kind's cluster, begun in a thread of its own as soon as the executor is known
    (``start``: :meth:`LeasedExecutor.start_cluster`'s context), joined when the loop first
    submits (:meth:`join`), and stopped in a thread of its own (:meth:`stop`) once the last
    attempt is recorded: its start overlaps the plan, its stop the report. Leaving the
    context stops it if nothing did (a plan that failed, Ctrl-C) and waits until it has."""

    def __init__(self, start: Callable[[], contextlib.AbstractContextManager[Any]]) -> None:
        self._start = start
        self._stack = contextlib.ExitStack()
        self._value: Any = None
        self._error: BaseException | None = None
        self._stop_error: BaseException | None = None
        self._starting = threading.Thread(target=self._begin, name="evalrepro-cluster", daemon=True)
        self._stopping: threading.Thread | None = None

    def __enter__(self) -> ClusterStart:
        self._starting.start()
        return self

    def _begin(self) -> None:
        try:
            self._value = self._stack.enter_context(self._start())
        except BaseException as error:  # raised again where the cluster is joined
            self._error = error

    def join(self) -> Any:
        """What the start yielded, once it has (its error, if it failed)."""
        self._starting.join()
        if self._error is not None:
            raise self._error
        return self._value

    def stop(self) -> None:
        """Begin stopping the cluster, in a thread of its own (once)."""
        if self._stopping is None:
            self._stopping = threading.Thread(
                target=self._end, name="evalrepro-cluster-stop", daemon=True
            )
            self._stopping.start()

    def _end(self) -> None:
        self._starting.join()
        try:
            self._stack.close()
        except BaseException as error:  # raised again when the context is left
            self._stop_error = error

    def __exit__(self, kind: object, *exc: object) -> None:
        self.stop()
        assert self._stopping is not None
        self._stopping.join()
        if self._stop_error is not None and kind is None:
            raise self._stop_error


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
        #: Attempts made and not yet sent (a job's next, or a lost lease's unstarted ones).
        self._ready: deque[tuple[TrialJob, AttemptSpec]] = deque()
        #: Jobs taken from the plan so far.
        self._taken = 0
        #: How long an attempt takes on a worker (a moving average; None: none seen yet).
        self._attempt_seconds: float | None = None

    def run(self) -> list[TrialResult]:
        self._wait_for_workers()
        self._how = self._delivery()
        self._prepare_new_workers()
        self._tell_workers({})
        pending = iter(self.jobs)
        out: dict[Any, tuple[list[tuple[TrialJob, AttemptSpec]], datetime]] = {}
        leases: dict[str, Lease] = {}
        prefix = self.jobs[0].settings.sandbox_prefix
        heartbeat = self.settings.heartbeat
        try:
            self._fill(pending, out)
            last_look = 0.0
            while out:
                returned = []
                for handle in self.cluster.wait(list(out), heartbeat):
                    items, submitted = out.pop(handle)
                    lease = leases.pop(self.cluster.key(handle), None)
                    returned.append((items, submitted, self._outputs(handle, items, lease)))
                    self.cluster.release(handle)
                # The freed slots take their next lease before this one is recorded: a
                # worker does not wait on the submitter's writing.
                self._fill(pending, out)
                for items, submitted, outputs in returned:
                    self._record(items, submitted, outputs)
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
        runtime = self.executor.runtime
        # A runtime that builds in another store (docker) brings the images into its own.
        runtime.missing_images(self.images)
        export_images(runtime.image_store(), self.images, folder)

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
        """Leases out at once."""
        if self.settings.in_flight is not None:
            return self.settings.in_flight
        # One lease per prepared slot: none waits on a worker (a lost worker loses only
        # what it was running), and the next is submitted as one returns.
        return max(1, sum(self.slots.get(worker, 0) for worker in self.ready))

    def _lease_size(self) -> int:
        """Attempts in the next lease: one until attempts are seen to be short (and always
        with ``in_flight`` set: it counts attempts), else about half a heartbeat of them."""
        most = self.cluster.max_lease
        if most <= 1 or self.settings.in_flight is not None or self._attempt_seconds is None:
            return 1
        by_time = int(self.settings.heartbeat / 2 / max(self._attempt_seconds, 1e-3))
        left = len(self._ready) + len(self.jobs) - self._taken
        share = math.ceil(left / max(1, self._in_flight()))
        return max(1, min(most, by_time, share))

    def _fill(self, pending: Iterator[TrialJob], out: dict) -> None:
        while len(out) < self._in_flight():
            size = self._lease_size()
            while len(self._ready) < size:
                job = next(pending, None)
                if job is None:
                    break
                self._taken += 1
                self._next(job)
            if not self._ready:
                return
            items = [self._ready.popleft() for _ in range(min(size, len(self._ready)))]
            specs = [spec for _, spec in items]
            handle = (
                self.cluster.submit_lease(specs)
                if len(specs) > 1
                else self.cluster.submit(specs[0])
            )
            out[handle] = (items, now())

    def _next(self, job: TrialJob) -> None:
        """The job's next attempt, made ready to go out; or the job finished."""
        spec = job.next_spec()
        if spec is None:
            result = job.finish()
            self.results.append(result)
            self.events.trial_finished(job.planned, result)
            return
        self.events.attempt_started(job.planned, spec.number)
        self._ready.append((job, spec))

    def _record(
        self,
        items: list[tuple[TrialJob, AttemptSpec]],
        submitted: datetime,
        outputs: list[tuple[AttemptOutput, Lease | None]],
    ) -> None:
        """Record a lease's outputs (its attempts that did not run go out again)."""
        for index, ((job, spec), (output, lease)) in enumerate(zip(items, outputs, strict=False)):
            # The first started when it was sent; the others when the worker began them.
            started = submitted if index == 0 or lease is None else lease.started_at
            job.record(spec, output, started, lease)
            if lease is not None and not lease.lost:
                seconds = (lease.last_heartbeat - lease.started_at).total_seconds()
                self._attempt_seconds = (
                    seconds
                    if self._attempt_seconds is None
                    else 0.8 * self._attempt_seconds + 0.2 * seconds
                )
            self._next(job)
        self._ready.extendleft(reversed(items[len(outputs) :]))

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

    def _outputs(
        self, handle: Any, items: list[tuple[TrialJob, AttemptSpec]], lease: Lease | None
    ) -> list[tuple[AttemptOutput, Lease | None]]:
        """A done lease's outputs; for a lost one, its first attempt's only (recorded lost:
        the others, not returned, go out again)."""
        try:
            return self.cluster.lease_result(handle)
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
            for _, spec in items:
                with contextlib.suppress(Exception):
                    # Its container may live on after its worker: nothing of it is recorded.
                    self.cluster.remove_sandboxes(spec.sandbox_name)
            self.lost += 1
            if lease is not None:
                self.ready.pop(lease.worker, None)
                self.slots.pop(lease.worker, None)
                lease = lease.model_copy(update={"lost": True})
            detail = f"worker_lost: {where} died or disappeared during the attempt ({lost.detail})"
            return [(failed_output(detail), lease)]
        except Exception as error:  # the worker's own failure: an infrastructure error
            failed = failed_output(
                f"the {self.noun} worker failed: {type(error).__name__}: {error}"
            )
            return [(failed, lease)] * len(items)


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
