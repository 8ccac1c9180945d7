"""``evalrepro validate``: an experiment's dataset run before and after its gold patches,
each side as many times as ``validation.flaky``'s bound needs (or ``validation.repeats``),
fewer for an instance whose runs already settle what it gives, and the derived test lists
written out.

Each side is an ordinary run of the ``validation`` target (``evalrepro.targets.validation``)
through the one path every run takes (plan, lock, execute with the configured executor,
record): its own run directory under the output's folder (``before/``, ``after/``), its
own lockfile, resumed when run again. The two sides' observations and scores (the status
map of each repeat, whether its tests ran, its log could be read, and its score trusts
it) are then judged by
``evalrepro.validation.transitions``; the report (``ValidationReport``) and the validated
dataset are written beside each other (``evalrepro.validation.dataset``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from evalrepro import __version__
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.config.gate import Gate
from evalrepro.digest import sha256_bytes
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.records.observation import ExecutionStatus, Observation, ParserStatus
from evalrepro.records.score import Outcome, Score
from evalrepro.records.trial import TrialResult, read_trial_result
from evalrepro.records.validation import (
    FlakyBound,
    InstanceValidation,
    RunFacts,
    ValidationReport,
)
from evalrepro.targets.validation import ValidationTarget
from evalrepro.validation.transitions import settled, validate_instance

SIDES = ("before", "after")


def side_config(config: ExperimentConfig, side: str) -> ExperimentConfig:
    """One side's experiment: every planned run of every instance, in its lockfile."""
    return config.model_copy(
        update={
            "name": f"{config.name}-validate-{side}",
            "target": ValidationTarget(side=side, samples=config.validation.planned_runs()),
            # A side has no bar to pass: what it says is judged below.
            "gate": Gate(name="validation"),
        }
    )


@dataclass
class Sides:
    """What the two sides' runs left: each side's trial results, and per instance why it
    got fewer runs than planned (absent: every planned run was made)."""

    results: dict[str, list[TrialResult]]
    stopped: dict[str, str] = field(default_factory=dict)


def run_sides(
    config: ExperimentConfig, console: Console, *, folder: Path, cache_dir: Path
) -> Sides:
    """Each side's trial results (run, or resumed, in ``folder / side``), in rounds: the
    runs made double each round (1, 2, 4, ... up to the planned number), and an instance
    whose runs so far settle what it gives (``transitions.settled``) runs no more. Each
    side's lockfile plans every run, so the same command resumes, round by round."""
    planned = config.validation.planned_runs()
    instance_ids = [sample.instance_id for sample in config.dataset.load()]
    sides = Sides(results={side: [] for side in SIDES})
    done = 0
    while done < planned:
        upto = min(planned, max(1, 2 * done))
        going = [i for i in instance_ids if i not in sides.stopped]
        if not going:
            break
        wanted = [(i, index) for i in going for index in range(done, upto)]
        for side in SIDES:
            console.print(
                f"[bold]{side} the gold patch[/]: run(s) {done + 1} to {upto} of {planned} "
                f"of {len(going)} instance(s)"
            )
            run_experiment(
                side_config(config, side),
                console,
                run_dir=folder / side,
                cache_dir=cache_dir,
                only=wanted,
            )
        sides.results = {side: _read(folder / side) for side in SIDES}
        done = upto
        if done >= planned:
            break
        runs = _facts_by_instance(sides.results)
        for instance_id in going:
            why = settled(runs["before"][instance_id], runs["after"][instance_id])
            if why:
                sides.stopped[instance_id] = f"after {done} run(s) of each side: {why}"
    return sides


def _read(folder: Path) -> list[TrialResult]:
    return [read_trial_result(path) for path in sorted(folder.glob("trials/*/result.json"))]


def _facts_by_instance(
    results: dict[str, list[TrialResult]],
) -> dict[str, dict[str, list[RunFacts]]]:
    runs: dict[str, dict[str, list[RunFacts]]] = {side: defaultdict(list) for side in SIDES}
    for side, found in results.items():
        for result in sorted(found, key=lambda r: r.trial.key.sample_index):
            runs[side][result.instance_id].append(facts(result))
    return runs


#: Exit statuses of ``bash -c`` that say the test command itself did not start.
_NOT_STARTED = {
    126: "the shell found the command but could not execute it",
    127: "the shell found no such command",
}


def facts(result: TrialResult) -> RunFacts:
    """What validation reads of one repeat: its last attempt's observation and the score
    the run got from it."""
    observation: Observation | None = result.attempts[-1].observation if result.attempts else None
    if observation is None:
        return RunFacts(status_map={}, ran=False, problem="no attempt was recorded")
    return facts_of(observation, result.score)


def facts_of(observation: Observation, score: Score) -> RunFacts:
    """One run's facts, as its score judges them: an invalid score for what ran in the run
    (not for a run that did not happen or a log that cannot be read) is not trusted."""
    if observation.infrastructure_error:
        return RunFacts(status_map={}, ran=False, problem=observation.infrastructure_error)
    if score.outcome is Outcome.INVALID and not _not_about_trust(score.reason):
        # Whatever the reason (runner_tampered, suspect_patch, fresh_disagrees, a test
        # reset that did not hold, and any reason added later): not the tests' outcome.
        detail = f": {score.detail}" if score.detail else ""
        return RunFacts(status_map={}, trusted=False, problem=f"{score.reason}{detail}")
    if observation.execution_status != ExecutionStatus.COMPLETED:
        why = observation.limit_detail or observation.execution_status.value
        reason = f"{score.reason}: " if score.outcome is Outcome.INVALID else ""
        return RunFacts(
            status_map={}, ran=False, problem=f"the tests did not finish: {reason}{why}"
        )
    if observation.parser_status == ParserStatus.NOT_PARSED:
        reason = score.detail or score.reason
        return RunFacts(status_map={}, ran=False, problem=f"the tests did not run: {reason}")
    code = observation.test_exit_code
    if observation.parser_status != ParserStatus.OK and code in _NOT_STARTED:
        return RunFacts(
            status_map={},
            ran=False,
            problem=f"the test command did not run: exit status {code}, {_NOT_STARTED[code]}",
        )
    if observation.parser_status != ParserStatus.OK:
        detail = observation.parser_detail or observation.parser_status.value
        status = f" (exit status {code})" if code is not None else ""
        return RunFacts(status_map={}, parsed=False, problem=f"log unparseable: {detail}{status}")
    return RunFacts(status_map=dict(observation.status_map), passed_alone=observation.flaky_tests)


def _not_about_trust(reason: str) -> bool:
    """An invalid score that says the tests did not run or finish (a limit, a timeout),
    or that the log cannot be read: judged from the observation, not as untrusted."""
    return reason.startswith("limit_") or reason in {
        "infrastructure_error",
        "timeout",
        "sandbox_died",
        "not_run",
        "log_unparseable",
    }


def judge(config: ExperimentConfig, sides: Sides, folder: Path) -> ValidationReport:
    samples = {sample.instance_id: sample for sample in config.dataset.load()}
    runs = _facts_by_instance(sides.results)
    settings = config.validation
    planned = settings.planned_runs()
    rate = settings.flaky.min_rate
    instances: list[InstanceValidation] = []
    for instance_id, sample in samples.items():
        before, after = runs["before"].get(instance_id, []), runs["after"].get(instance_id, [])
        bound = FlakyBound(
            min_rate=rate,
            planned=planned,
            runs_before=len(before),
            runs_after=len(after),
            miss_probability=(1 - rate) ** min(len(before), len(after)),
            stopped=sides.stopped.get(instance_id, ""),
        )
        if not before or not after:
            instances.append(
                InstanceValidation(
                    instance_id=instance_id,
                    verdict="tests_not_run",
                    detail="a side has no finished run (resume with the same command)",
                    bound=bound,
                )
            )
            continue
        declared = (sample.fail_to_pass, sample.pass_to_pass) if sample.declares_lists else None
        instances.append(
            validate_instance(instance_id, before, after, declared=declared, bound=bound)
        )
    return ValidationReport(
        dataset=config.dataset.name,
        repeats=planned,
        min_rate=rate,
        miss_probability=settings.flaky.miss_probability if settings.repeats is None else None,
        before_lockfile=_digest(folder / "before" / LOCKFILE_NAME),
        after_lockfile=_digest(folder / "after" / LOCKFILE_NAME),
        harness_version=__version__,
        instances=instances,
    )


def _digest(path: Path) -> str:
    return sha256_bytes(path.read_bytes()) if path.is_file() else ""
