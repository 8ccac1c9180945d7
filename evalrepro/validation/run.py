"""``evalrepro validate``: an experiment's dataset run before and after its gold patches,
each side ``validation.repeats`` times, and the derived test lists written out.

Each side is an ordinary run of the ``validation`` target (``evalrepro.targets.validation``)
through the one path every run takes (plan, lock, execute with the configured executor,
record): its own run directory under the output's folder (``before/``, ``after/``), its
own lockfile, resumed when run again. The two sides' observations (the status map of
each repeat, and whether its tests ran and its log could be read) are then judged by
``evalrepro.validation.transitions``; the report (``ValidationReport``) and the validated
dataset are written beside each other (``evalrepro.validation.dataset``).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from rich.console import Console

from evalrepro import __version__
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.config.gate import Gate
from evalrepro.digest import sha256_bytes
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.records.observation import ExecutionStatus, Observation, ParserStatus
from evalrepro.records.trial import TrialResult, read_trial_result
from evalrepro.records.validation import InstanceValidation, RunFacts, ValidationReport
from evalrepro.targets.validation import ValidationTarget
from evalrepro.validation.transitions import validate_instance

SIDES = ("before", "after")


def run_sides(
    config: ExperimentConfig, console: Console, *, folder: Path, cache_dir: Path
) -> dict[str, list[TrialResult]]:
    """Each side's trial results (run, or resumed, in ``folder / side``)."""
    repeats = config.validation.repeats
    found = {}
    for side in SIDES:
        console.print(f"[bold]{side} the gold patch[/]: {repeats} run(s) of each instance")
        side_config = config.model_copy(
            update={
                "name": f"{config.name}-validate-{side}",
                "target": ValidationTarget(side=side, samples=repeats),
                # A side has no bar to pass: what it says is judged below.
                "gate": Gate(name="validation"),
            }
        )
        run_experiment(side_config, console, run_dir=folder / side, cache_dir=cache_dir)
        found[side] = [
            read_trial_result(path) for path in sorted((folder / side).glob("trials/*/result.json"))
        ]
    return found


def facts(result: TrialResult) -> RunFacts:
    """What validation reads of one repeat: its last attempt's observation."""
    observation: Observation | None = result.attempts[-1].observation if result.attempts else None
    if observation is None:
        return RunFacts(status_map={}, ran=False, problem="no attempt was recorded")
    if observation.infrastructure_error:
        return RunFacts(status_map={}, ran=False, problem=observation.infrastructure_error)
    if observation.execution_status != ExecutionStatus.COMPLETED:
        why = observation.limit_detail or observation.execution_status.value
        return RunFacts(status_map={}, ran=False, problem=f"the tests did not finish: {why}")
    if observation.parser_status == ParserStatus.NOT_PARSED:
        reason = result.score.detail or result.score.reason
        return RunFacts(status_map={}, ran=False, problem=f"the tests did not run: {reason}")
    if observation.parser_status != ParserStatus.OK:
        detail = observation.parser_detail or observation.parser_status.value
        return RunFacts(status_map={}, parsed=False, problem=f"log unparseable: {detail}")
    return RunFacts(status_map=dict(observation.status_map), passed_alone=observation.flaky_tests)


def judge(
    config: ExperimentConfig, sides: dict[str, list[TrialResult]], folder: Path
) -> ValidationReport:
    samples = {sample.instance_id: sample for sample in config.dataset.load()}
    runs: dict[str, dict[str, list[RunFacts]]] = {side: defaultdict(list) for side in SIDES}
    for side, results in sides.items():
        for result in sorted(results, key=lambda r: r.trial.key.sample_index):
            runs[side][result.instance_id].append(facts(result))
    instances: list[InstanceValidation] = []
    for instance_id, sample in samples.items():
        before, after = runs["before"].get(instance_id), runs["after"].get(instance_id)
        if not before or not after:
            instances.append(
                InstanceValidation(
                    instance_id=instance_id,
                    verdict="tests_not_run",
                    detail="a side has no finished run (resume with the same command)",
                )
            )
            continue
        declared = (sample.fail_to_pass, sample.pass_to_pass) if sample.declares_lists else None
        instances.append(validate_instance(instance_id, before, after, declared=declared))
    return ValidationReport(
        dataset=config.dataset.name,
        repeats=config.validation.repeats,
        before_lockfile=_digest(folder / "before" / LOCKFILE_NAME),
        after_lockfile=_digest(folder / "after" / LOCKFILE_NAME),
        harness_version=__version__,
        instances=instances,
    )


def _digest(path: Path) -> str:
    return sha256_bytes(path.read_bytes()) if path.is_file() else ""
