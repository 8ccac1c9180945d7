"""``evalrepro lock`` and ``evalrepro run``: config -> plan -> lockfile -> execute -> report.

Run directory (default ``runs/<experiment>-<UTC time>/``)::

    lockfile.lock.json     the frozen plan (see lockfile.py); a resume must match it
    run.json               each session: when, command line, host, backend mode
    config.json            the validated, composed config
    images/                each base image's installed packages (name=version)
    trials/<label>/        one per trial: attempt-N/ (artifacts + Attempt record),
                           result.json (the TrialResult: the source of truth)
    results.json           the aggregate, rebuilt from the trial results
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from evalrepro.build.buildlog import remember_builds
from evalrepro.build.images import ImageChain
from evalrepro.config.environment import SandboxEnvironment
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.errors import UserError
from evalrepro.plan.dataset import command_advice
from evalrepro.plan.lockfile import build_lockfile, differences, read_lockfile
from evalrepro.plan.plan import Plan, build_plan
from evalrepro.records.image import BuildFailure
from evalrepro.records.lockfile import Difference, Lockfile
from evalrepro.records.report import RunReport, RunResults
from evalrepro.report.progress import TrialProgress
from evalrepro.run.backend import Backend
from evalrepro.run.executors import run_trials, start_executor
from evalrepro.run.session import RunSession
from evalrepro.runtimes.attempt import RecordedAgent


def plan_and_lock(
    config: ExperimentConfig,
    console: Console,
    cache_dir: Path,
    pinned_by: Lockfile | None = None,
    backend: Backend | None = None,
) -> tuple[Backend, Plan, Lockfile]:
    """The plan with every image built, and its lockfile. ``pinned_by``: a lockfile whose
    image records the builder rebuilds exactly (a builder that pins its inputs reuses
    its pins instead of resolving them again; a layer it cannot rebuild is a failure
    naming the input). ``backend``: one opened already (the config's, unless a test
    brings its own)."""
    backend = backend or Backend.open(
        config.environment, cache_dir, concurrency=config.executor.concurrency
    )
    locked = None
    if pinned_by is not None and pinned_by.environment.builder == backend.builder.kind:
        locked = [image.record() for image in pinned_by.environment.images]
    backend.check()
    console.print(f"[bold]{escape(config.name)}[/]: resolving the plan and its images ...")
    for advice in command_advice(config.dataset):
        console.print(f"[yellow]note[/]: {escape(advice)}", soft_wrap=True)
    plan = build_plan(config, backend.builder, cache_dir, locked)
    # What each build took, for the runs that find these layers ready (lock, then run).
    remember_builds(cache_dir, plan.images)
    _print_images(console, plan)
    return backend, plan, build_lockfile(config, plan)


def lock_experiment(
    config: ExperimentConfig,
    console: Console,
    *,
    output: Path,
    cache_dir: Path,
    update: bool = False,
    backend: Backend | None = None,
) -> Lockfile:
    """Resolve the config into a lockfile, building every image; run no trial.

    An existing lockfile at ``output`` keeps its pins (as a package manager's lockfile
    does): inputs are resolved again only where the config changed, or with ``update``.
    """
    previous = None
    if output.is_file() and not update:
        previous = read_lockfile(output, checked=False)
    _, _, lockfile = plan_and_lock(config, console, cache_dir, previous, backend)
    if lockfile.environment.build_failures:
        failed = lockfile.environment.build_failures[0]
        raise UserError(
            f"cannot lock: the {failed.layer} layer failed to build ({failed.reason})"
            + (f"; log: {failed.build_log}" if failed.build_log else "")
        )
    lockfile.write(output)
    console.print(f"locked {len(lockfile.trials)} trials into {escape(str(output))}")
    return lockfile


def run_experiment(
    config: ExperimentConfig,
    console: Console,
    *,
    run_dir: Path | None,
    cache_dir: Path,
    locked: Lockfile | None = None,
    backend: Backend | None = None,
    tolerate: Collection[str] = (),
    only: Collection[tuple[str, int]] | None = None,
    swebench_run_id: str | None = None,
    recorded_agents: Mapping[str, RecordedAgent] | None = None,
) -> RunOutcome:
    """Lock, then execute into ``run_dir``; with ``locked``, the plan must match it.

    ``tolerate``: classes of difference from ``locked`` that do not stop the run (a
    reproduction with another harness: the difference is what it measures). ``only``:
    run just these trials, by (instance id, sample index); the others stay missing.
    ``swebench_run_id``: the run id of its SWE-bench layout (default: the folder's name).
    ``recorded_agents``: an agent target's phases as an earlier run recorded them, by
    trial id: evaluated again, the agent not run (``reproduce``)."""
    # The report's statistics (numpy) load here, not for `lock`, which never reports.
    from evalrepro.report.run_printer import print_gate, print_results
    from evalrepro.report.run_report import aggregate, build_run_report

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = run_dir or config.run.output_dir / f"{config.name}-{stamp}"
    # Held before planning: a second process is refused at once, not after the builds.
    # The executor's cluster (if it starts one here) starts while the plan is made.
    with (
        RunSession.hold(path) as session,
        start_executor(config.executor, config.environment) as started,
    ):
        # A resumed run rebuilds its own pins; a lockfile to run, its pins. Read first:
        # a damaged one is refused before anything is built.
        previous = session.previous
        backend, plan, lockfile = plan_and_lock(
            config, console, cache_dir, locked or previous, backend
        )
        try:
            if locked is not None:
                _check_locked(console, locked, lockfile, tolerate)
            session.begin(lockfile, plan.images, backend, cache_dir, console)
            todo = session.todo(plan.trials, only)
            environment = config.environment
            timeout = environment.timeout if isinstance(environment, SandboxEnvironment) else None
            # Each stage its part of the config: the executor's settings, the environment's
            # limits, the dataset's sources, the target's agent.
            runner = partial(
                run_trials,
                runtime=backend.runtime,
                environment=environment,
                executor=config.executor,
                dataset=config.dataset,
                started=started,
                target=config.target,
                recorded_agents=recorded_agents,
            )
            with TrialProgress(console, len(todo), timeout) as progress:
                session.run(todo, runner, progress)
        finally:
            backend.close()
        summary = aggregate(
            config.name,
            plan.target_id,
            session.ordered(),
            planned=len(lockfile.trials),
            lockfile=lockfile,
        )
        session.finish(summary, swebench_run_id)
        by_id = session.results
        report = build_run_report(
            session.path, lockfile, by_id, evidence=dict.fromkeys(by_id, True)
        )
    print_results(console, summary)
    print_gate(console, report)
    console.print(f"run directory: {escape(str(session.path))}")
    return RunOutcome(results=summary, report=report, run_dir=session.path)


def _check_locked(
    console: Console, locked: Lockfile, lockfile: Lockfile, tolerate: Collection[str]
) -> None:
    """Refuse a plan that differs from ``locked`` but in the ``tolerate``d classes (each
    noted)."""
    found = differences(locked, lockfile, same_target=True)
    for difference in found:
        if difference.kind in tolerate:
            console.print(
                f"[yellow]note[/]: {escape(difference.kind)}: {escape(difference.detail)}",
                soft_wrap=True,
            )
    found = [d for d in found if d.kind not in tolerate]
    if found:
        raise PlanMismatch(found)


class PlanMismatch(UserError):
    """The plan made here is not the lockfile's: an image, the dataset or a setting
    differs. Nothing ran."""

    def __init__(self, found: list[Difference]) -> None:
        self.differences = found
        listed = "; ".join(f"{d.kind}: {d.detail}" for d in found)
        super().__init__(f"the plan no longer matches the lockfile, refusing to run ({listed})")


@dataclass(frozen=True)
class RunOutcome:
    results: RunResults
    report: RunReport
    run_dir: Path


def _print_images(console: Console, plan: Plan) -> None:
    layers: dict[str, tuple[str, bool]] = {}
    failures: dict[str, BuildFailure] = {}
    failed_trials = 0
    for image in plan.images:
        records = image.layers if isinstance(image, ImageChain) else image.below
        for record in records:
            layers[record.key] = (record.layer, record.built)
        if isinstance(image, BuildFailure):
            failures[image.key] = image
            failed_trials += 1
    built = sum(1 for _, was_built in layers.values() if was_built)
    console.print(
        f"images: {len(layers)} layers ready ({built} built now, {len(layers) - built} "
        "reused)"
        + (
            f"; [red]{len(failures)} failed[/] ({failed_trials} trials without an image)"
            if failures
            else ""
        )
    )
    for failure in failures.values():
        console.print(
            f"  [red]{escape(failure.layer)} layer failed[/]: {escape(failure.reason)}"
            + (f" (log: {escape(failure.build_log)})" if failure.build_log else ""),
            highlight=False,
            soft_wrap=True,
        )
