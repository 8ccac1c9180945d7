"""Execute: run every planned trial, attempt by attempt, and keep the evidence.

A trial's folder holds one folder per attempt (its artifacts and ``result.json``, the
Attempt record) and the trial's own ``result.json`` (a TrialResult), written last: it is
the source of truth, and a trial without it is not finished. An infrastructure error
(no image, podman failing, a container killed by the host) is retried as a new attempt of
the same trial, up to ``max_attempts``; a rejected patch, a failing test or a timeout is
a result and is never retried. The number of trials never changes.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from evalrepro import atomic
from evalrepro.artifact import Artifact
from evalrepro.digest import sha256_bytes
from evalrepro.environment import Limits
from evalrepro.images import BuildFailure
from evalrepro.observation import Observation, observe_attempt
from evalrepro.parsers import LogParser
from evalrepro.patchcheck import check_patch, patch_bytes
from evalrepro.plan import PlannedTrial
from evalrepro.protection import ResolvedProtection
from evalrepro.record import Record, read_record
from evalrepro.runtimes.base import AttemptRequest, AttemptRun, Runtime
from evalrepro.sample import Sample
from evalrepro.score import Score, score
from evalrepro.supervision import (
    RuntimeFacts,
    SupervisorReport,
    TrialProgram,
    read_region,
)
from evalrepro.target import Usage
from evalrepro.trial import Attempt, Trial

#: Attempt artifacts, with their media types, in the order they are written.
ARTIFACTS = {
    "patch.diff": "text/x-diff",
    "test.patch": "text/x-diff",
    "program.json": "application/json",
    "image.json": "application/json",
    "test_output.txt": "text/plain",
    "supervisor.json": "application/json",
    "runtime.log": "text/plain",
}


class TrialResult(Record):
    """The outcome of one trial: its final score and every attempt it took."""

    record: Literal["TrialResult"] = "TrialResult"
    #: 3: the trial key holds the harness code digest.
    schema_version: int = 3
    trial: Trial
    instance_id: str
    target_id: str
    sample_index: int
    score: Score
    attempts: list[Attempt]
    #: How the host enforced each resource limit in the final attempt ({} if not run).
    limits: dict[str, str]
    #: What the target reported producing the patch cost (tokens, money), if anything.
    usage: Usage | None = None


Reporter = Callable[[PlannedTrial, TrialResult], None]
#: Told when an attempt of a trial starts (its number), for live progress.
Starter = Callable[[PlannedTrial, int], None]


class Executor:
    def __init__(
        self,
        runtime: Runtime,
        run_dir: Path,
        *,
        timeout: int,
        max_attempts: int,
        max_workers: int,
        limits: Limits | None = None,
        allow_user_namespaces: bool = False,
    ) -> None:
        self.allow_user_namespaces = allow_user_namespaces
        self.runtime = runtime
        self.run_dir = run_dir
        self.timeout = timeout
        self.limits = limits or Limits()
        self.max_attempts = max_attempts
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self.container_prefix = container_prefix(run_dir)

    def run(
        self, trials: list[PlannedTrial], report: Reporter, started: Starter | None = None
    ) -> list[TrialResult]:
        results: list[TrialResult] = []

        def one(planned: PlannedTrial) -> None:
            result = self.run_trial(planned, started)
            with self._lock:
                results.append(result)
                report(planned, result)

        pool = ThreadPoolExecutor(max_workers=self.max_workers)
        try:
            # list() re-raises the first exception of any worker.
            list(pool.map(one, trials))
        finally:
            # On Ctrl-C or an error, trials not yet started stay unstarted (a resume runs
            # them); without cancel_futures, shutdown would run every one of them first.
            pool.shutdown(wait=True, cancel_futures=True)
        order = {p.trial.trial_id: i for i, p in enumerate(trials)}
        return sorted(results, key=lambda r: order[r.trial.trial_id])

    def trial_dir(self, planned: PlannedTrial) -> Path:
        return self.run_dir / "trials" / planned.label

    def run_trial(self, planned: PlannedTrial, started: Starter | None = None) -> TrialResult:
        folder = self.trial_dir(planned)
        attempts: list[Attempt] = []
        reason = "planned"
        limits: dict[str, str] = {}
        for number in range(1, self.max_attempts + 1):
            if started is not None:
                with self._lock:
                    started(planned, number)
            attempt, run = self._attempt(planned, folder / f"attempt-{number}", number, reason)
            attempts.append(attempt)
            limits = run.limits if run else {}
            infrastructure = attempt.observation.infrastructure_error
            # A build failure will not heal on its own within this run: no retry.
            if infrastructure is None or isinstance(planned.image, BuildFailure):
                break
            reason = f"retry after infrastructure error: {infrastructure}"
        result = TrialResult(
            trial=planned.trial,
            instance_id=planned.sample.instance_id,
            target_id=planned.trial.key.target_id,
            sample_index=planned.prediction.sample_index,
            score=attempts[-1].score,
            attempts=attempts,
            limits=limits,
            usage=planned.prediction.usage,
        )
        atomic.write_text(folder / "result.json", result.model_dump_json(indent=2) + "\n")
        return result

    def _attempt(
        self, planned: PlannedTrial, folder: Path, number: int, reason: str
    ) -> tuple[Attempt, AttemptRun | None]:
        folder.mkdir(parents=True, exist_ok=True)
        started = datetime.now(UTC)
        script = planned.spec.eval_script
        program = TrialProgram.of(
            script, self.limits, self.timeout, allow_user_namespaces=self.allow_user_namespaces
        )
        atomic.write_bytes(folder / "patch.diff", patch_bytes(planned.prediction.model_patch))
        atomic.write_bytes(folder / "test.patch", patch_bytes(planned.sample.test_patch))
        atomic.write_text(folder / "program.json", program.model_dump_json(indent=2) + "\n")
        atomic.write_text(folder / "image.json", planned.image.model_dump_json(indent=2) + "\n")

        run: AttemptRun | None = None
        report: SupervisorReport | None = None
        check = check_patch((folder / "patch.diff").read_bytes(), script.protection)
        if isinstance(planned.image, BuildFailure):
            report = SupervisorReport(
                runtime=RuntimeFacts(
                    error=f"image {planned.image.layer} layer: {planned.image.reason}"
                )
            )
        elif check.problem is None:
            # Empty and unsafe patches are the target's answer: scored, never run.
            run = self.runtime.run(
                AttemptRequest(
                    image_tag=planned.image.image.tag,
                    attempt_dir=folder,
                    # Unique even when two runs execute the same trial at once.
                    name=f"{self.container_prefix}{planned.label[-12:]}-a{number}-"
                    f"{secrets.token_hex(3)}",
                    timeout=self.timeout,
                    output_limit=self.limits.in_bytes("output"),
                )
            )
            report = run.report
        if report is not None:
            atomic.write_text(folder / "supervisor.json", report.model_dump_json(indent=2) + "\n")
        observation = observe_folder(folder, planned.sample, planned.parser)
        artifacts = [
            Artifact.of_file(folder / name, self.run_dir, media_type)
            for name, media_type in ARTIFACTS.items()
            if (folder / name).exists()
        ]
        attempt = Attempt(
            trial_id=planned.trial.trial_id,
            number=number,
            reason=reason,
            started_at=started,
            finished_at=datetime.now(UTC),
            artifacts=artifacts,
            observation=observation,
            score=score(observation),
        )
        atomic.write_text(folder / "result.json", attempt.model_dump_json(indent=2) + "\n")
        return attempt, run


def observe_folder(folder: Path, sample: Sample, parser: LogParser) -> Observation:
    """An attempt's Observation from its artifacts alone (the executor's and verify's).

    ``program.json`` gives the protection policy the supervisor ran with, ``patch.diff``
    the patch checks, ``supervisor.json`` the facts, and ``test_output.txt`` the test
    output at the byte range the report records.
    """
    if (folder / "foreign.json").exists():
        # A log another harness wrote (evalrepro regrade): read as that harness reads it.
        from evalrepro.regrade import observe_foreign

        return observe_foreign(folder, sample)
    program = TrialProgram.model_validate_json((folder / "program.json").read_bytes())
    protection = ResolvedProtection.model_validate(program.protection)
    check = check_patch((folder / "patch.diff").read_bytes(), protection)
    report_file = folder / "supervisor.json"
    report = (
        SupervisorReport.model_validate_json(report_file.read_bytes())
        if report_file.exists()
        else None
    )
    region = None
    if report is not None and report.region is not None:
        region = read_region(folder / "test_output.txt", report.region)
    return observe_attempt(sample, parser, protection, check, report=report, region=region)


def container_prefix(run_dir: Path) -> str:
    """The start of every container name of a run directory's attempts.

    A later session finds (and removes) the containers a killed one left running, and
    no other run's.
    """
    return f"evalrepro-{sha256_bytes(str(run_dir).encode())[7:15]}-"


def read_trial_result(path: Path) -> TrialResult:
    return read_record(path, TrialResult)
