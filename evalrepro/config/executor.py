"""Executor: who schedules a run's attempts, where, and with which retries.

One pydantic config per kind (``executor.kind``, a plugin of the ``evalrepro.executors``
group); the model names its implementation, imported only when a run opens it. The
executors of evalrepro are not part of a trial's identity: the same lockfile run by two
of them gives the same trial ids and verdicts (an executor from another package is: its
code carries every attempt's output, ``evalrepro.plan.plugin_code``).

The bases are public, for a package's own kind: :class:`BaseExecutorConfig` (retries), and
:class:`LeasedExecutorConfig` for an executor on the leased loop of
``evalrepro.run.executors.leased`` (a Ray or a Modal one, as Dask's kinds are).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class BaseExecutorConfig(BaseModel):
    """What every executor's config has: its retries, and its implementation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Attempts per trial when the infrastructure fails; the plan's trial count is fixed.
    max_attempts: int = Field(default=2, ge=1, le=10)

    #: The implementation, ``module:class``, imported when a run opens the executor.
    implementation: ClassVar[str]

    @property
    def concurrency(self) -> int:
        """Attempts that may run at once (also independent image layers built at once)."""
        return 1


class LocalExecutorConfig(BaseExecutorConfig):
    """A pool of threads in this process, each driving one sandbox at a time."""

    kind: Literal["local"] = "local"
    #: Trials run at once (and independent image layers built at once).
    max_workers: int = Field(default=2, ge=1)

    implementation: ClassVar[str] = "evalrepro.run.executors.local:LocalExecutor"

    @property
    def concurrency(self) -> int:
        return self.max_workers


class SerialExecutorConfig(BaseExecutorConfig):
    """One attempt at a time, in the calling thread."""

    kind: Literal["serial"] = "serial"

    implementation: ClassVar[str] = "evalrepro.run.executors.serial:SerialExecutor"


class DaskImages(BaseModel):
    """Where a worker's node gets the run's images before it takes a trial: every image
    must be in its store under its tag with the lockfile's digest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: ``store``: the node's own store must hold them already (one machine, or nodes
    #: that built them from the lockfile); ``build``: built on each node from the
    #: lockfile's pins by the environment's builder (the nodes must reach the dataset's
    #: repo sources as the config names them; a digest that differs refuses the node,
    #: naming the layer and input); ``archive``: loaded from the archives in
    #: ``archive``, a folder every node can read, which the submitter writes when it is
    #: empty (``images.oci.tar`` / ``images.docker.tar``, as ``bundle --with-images``).
    #: ``registry``: pushed once by the submitter to ``registry``, pulled by digest on
    #: each node.
    source: Literal["store", "build", "archive", "registry"] = "store"
    #: The folder of the archives (``source: archive``), the same path on every node.
    archive: str | None = None
    #: ``host:port/prefix`` of the registry (``source: registry``).
    registry: str | None = None
    #: Verify the registry's TLS certificate (off only for a registry on plain HTTP).
    tls_verify: bool = True

    @model_validator(mode="after")
    def _source_named(self) -> DaskImages:
        if self.source == "archive" and not self.archive:
            raise ValueError("images.source archive needs images.archive: a folder the nodes read")
        if self.source == "registry" and not self.registry:
            raise ValueError("images.source registry needs images.registry: host:port/prefix")
        return self


class AdaptiveBounds(BaseModel):
    """Workers started and stopped with the work, between these bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Workers kept when there is no work.
    minimum: int = Field(default=0, ge=0)
    #: Workers started at most.
    maximum: int = Field(ge=1)


class LeasedExecutorConfig(BaseExecutorConfig):
    """Attempts run by a cluster's workers; the submitter records them
    (``evalrepro.run.executors.leased``)."""

    #: Where each worker's node gets the run's images.
    images: DaskImages = Field(default_factory=DaskImages)
    #: Attempts submitted and not yet returned, at most, each sent alone (default: one
    #: lease per prepared worker thread, several short attempts to a lease: see
    #: docs/scale-out.md): the submitter never holds a whole run's futures or outputs.
    in_flight: int | None = Field(default=None, ge=1)
    #: Seconds between two looks at the scheduler for the attempts' leases.
    heartbeat: float = Field(default=2.0, gt=0, le=60)
    #: How long to wait for the first worker, in seconds.
    worker_wait: float = Field(default=120.0, gt=0)


class _DaskExecutorBase(LeasedExecutorConfig):
    """Attempts run by Dask workers (``distributed``)."""

    implementation: ClassVar[str] = "evalrepro.run.executors.dask:DaskExecutor"


class DaskExecutorConfig(_DaskExecutorBase):
    """A Dask ``LocalCluster`` on this machine, or the scheduler at ``address``."""

    kind: Literal["dask"] = "dask"
    #: An existing scheduler (``tcp://host:8786``); None: a LocalCluster here.
    address: str | None = None
    #: The LocalCluster's worker processes.
    workers: int = Field(default=2, ge=1)
    #: Threads per worker process: attempts each runs at once.
    threads_per_worker: int = Field(default=1, ge=1)

    @property
    def concurrency(self) -> int:
        return self.workers * self.threads_per_worker


class SlurmExecutorConfig(_DaskExecutorBase):
    """Dask workers started as Slurm jobs (dask-jobqueue's ``SLURMCluster``)."""

    kind: Literal["slurm"] = "slurm"
    #: The partition the worker jobs go to (``--partition``); None: the default one.
    queue: str | None = None
    #: The account the jobs are charged to (``--account``).
    account: str | None = None
    #: Cores per worker job: one attempt runs per core.
    cores: int = Field(default=1, ge=1)
    #: Memory per worker job.
    memory: str = "4GiB"
    #: Walltime per worker job (``HH:MM:SS``).
    walltime: str = "01:00:00"
    #: More ``#SBATCH`` lines (``--gres=...``, ``--constraint=...``).
    job_extra_directives: list[str] = []
    #: Worker jobs started (when not adaptive).
    workers: int = Field(default=1, ge=1)
    #: Worker jobs started and stopped with the work, between bounds (instead of workers).
    adaptive: AdaptiveBounds | None = None
    #: The Python the jobs start workers with (default: this one, which must exist on
    #: the nodes at the same path).
    python: str | None = None
    #: The address the workers reach the scheduler at (default: this machine's).
    scheduler_host: str | None = None
    #: A folder on the nodes for the workers' scratch.
    local_directory: str = "/tmp"
    #: A folder on the nodes for the jobs' output (``slurm-<job>.out``); it must exist
    #: there (Slurm's own default would be the folder ``evalrepro run`` started in).
    log_directory: str = "/tmp"

    @property
    def concurrency(self) -> int:
        return (self.adaptive.maximum if self.adaptive else self.workers) * self.cores


class KubernetesExecutorConfig(_DaskExecutorBase):
    """Dask workers as pods (dask-kubernetes' ``KubeCluster``, operator API).

    Each worker pod must run podman (or reach a podman service) with the run's images;
    the tests cannot start a Kubernetes cluster here: the config is validated, the rest
    is documented (docs/scale-out.md)."""

    kind: Literal["kubernetes"] = "kubernetes"
    #: The worker pods' image: evalrepro, dask and podman installed.
    image: str
    #: The namespace of the cluster (None: the context's).
    namespace: str | None = None
    #: Worker pods started (when not adaptive).
    workers: int = Field(default=1, ge=1)
    #: Worker pods started and stopped with the work, between bounds.
    adaptive: AdaptiveBounds | None = None
    #: CPU per worker pod (requests and limits).
    cpu: str = "1"
    #: Memory per worker pod (requests and limits).
    memory: str = "4Gi"
    #: The cluster's name in Kubernetes.
    name: str = "evalrepro"

    @property
    def concurrency(self) -> int:
        return self.adaptive.maximum if self.adaptive else self.workers
