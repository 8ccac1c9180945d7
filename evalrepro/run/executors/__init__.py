"""Executors: who schedules a run's attempts (``executor.kind``).

Each kind is a plugin of the ``evalrepro.executors`` group: its config model
(``evalrepro.config.executor``) names the executor class, imported only when a run
opens it. See :mod:`evalrepro.run.executors.base` for what an executor does.

The bases are public, for a kind of another package: :class:`Executor` (``run`` the
jobs, ``drive`` one in this thread) and, for attempts sent to a cluster's workers,
:class:`~evalrepro.run.executors.leased.LeasedExecutor` with its
:class:`~evalrepro.run.executors.leased.Cluster` (Dask's kinds are that base plus Dask's
client calls).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalrepro import plugins
from evalrepro.config.environment import SandboxEnvironment
from evalrepro.plan.trial import PlannedTrial
from evalrepro.records.trial import TrialResult
from evalrepro.run.execute import AttemptSettings, TrialJob, container_prefix
from evalrepro.run.executors.base import Events, Executor
from evalrepro.run.recorder import Recorder
from evalrepro.runtimes.attempt import RecordedAgent
from evalrepro.runtimes.base import Runtime
from evalrepro.targets.agent import AgentTarget


def open_executor(
    config: object, runtime: Runtime, dataset: object = None, started: Any = None
) -> Executor:
    executor_class: type[Executor] = plugins.implementation(config)
    return executor_class(config, runtime, dataset, started)


def start_executor(config: object, environment: object) -> contextlib.AbstractContextManager[Any]:
    """Begin what the executor kind starts before its attempts (a local cluster and its
    workers' runtimes), while the plan is made; pass what it yields to :func:`run_trials`
    as ``started``."""
    executor_class: type[Executor] = plugins.implementation(config)
    return executor_class.starting(config, environment)


class _Quiet:
    def attempt_started(self, planned: PlannedTrial, number: int) -> None:
        pass

    def trial_finished(self, planned: PlannedTrial, result: TrialResult) -> None:
        pass

    def workers_changed(self, summary: str) -> None:
        pass


def run_trials(
    trials: list[PlannedTrial],
    *,
    runtime: Runtime,
    run_dir: Path,
    environment: object,
    executor: object,
    events: Events | None = None,
    dataset: object = None,
    started: Any = None,
    target: object = None,
    recorded_agents: Mapping[str, RecordedAgent] | None = None,
) -> list[TrialResult]:
    """Execute ``trials`` into the run directory ``run_dir``: the environment's settings
    (``limits``, ``timeout``; none for one that runs no sandbox of ours), the executor
    config's kind and retries; ``dataset``: the dataset config the trials come from (a
    node that builds its own images reads its repo sources). The finished trials'
    results, in the plan's order. ``started``: what :func:`start_executor` yielded;
    ``target``: the target config (an agent target's agent makes each patch);
    ``recorded_agents``: agent phases recorded earlier, by trial id (``reproduce``)."""
    sandboxed = isinstance(environment, SandboxEnvironment)
    settings = AttemptSettings(
        limits=environment.limits if sandboxed else None,  # type: ignore[attr-defined]
        timeout=environment.timeout if sandboxed else 1,  # type: ignore[attr-defined]
        allow_user_namespaces=sandboxed and environment.allow_user_namespaces,  # type: ignore[attr-defined]
        sandbox_prefix=container_prefix(run_dir),
        max_attempts=executor.max_attempts,  # type: ignore[attr-defined]
        agent=target if isinstance(target, AgentTarget) else None,
        recorded_agents=recorded_agents,
        rerun_failed=environment.rerun_failed if sandboxed else 0,  # type: ignore[attr-defined]
        flaky_counts_as=environment.flaky_counts_as if sandboxed else "failed",  # type: ignore[attr-defined]
        rerun_scope="listed" if getattr(target, "needs_test_lists", True) else "failing",
    )
    recorder = Recorder(run_dir)
    jobs = [TrialJob(planned, settings, recorder) for planned in trials]
    results = open_executor(executor, runtime, dataset, started).run(jobs, events or _Quiet())
    order = {p.trial.trial_id: i for i, p in enumerate(trials)}
    return sorted(results, key=lambda r: order[r.trial.trial_id])
