"""Recording: the host's half of an attempt, and the only writer of a run's trials.

An executor hands the recorder each attempt's spec and output (values: they may come
from another machine). The recorder observes from them in memory, scores, and writes the
attempt's artifacts, its Attempt record and, once the trial has no attempt left to make,
its TrialResult, each file atomically, each artifact hashed once, from the bytes it
writes. ``verify`` observes a recorded attempt again through the same :func:`observe`,
from the files alone (``evalrepro.run.evidence``).

Layout of a trial folder: ``attempt-N/`` (the artifacts and ``result.json``, the Attempt)
for each attempt, then ``result.json`` (the TrialResult), written last: it is the source
of truth, and a trial without it is not finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalrepro import atomic
from evalrepro.config.sample import Sample
from evalrepro.grade.foreign import observe_foreign
from evalrepro.grade.observation import Observation, observe_attempt
from evalrepro.grade.parsers import LogParser
from evalrepro.grade.score import score
from evalrepro.records.artifact import Artifact
from evalrepro.records.trial import Attempt, TrialResult
from evalrepro.run.attempt import MEDIA_TYPES, AttemptOutput, AttemptSpec
from evalrepro.run.patchcheck import PatchCheck
from evalrepro.run.protection import ResolvedProtection
from evalrepro.run.supervision import TrialProgram, region_text


@dataclass(frozen=True)
class Evidence:
    """What an attempt's observation is made from: the patch (None: the target had none,
    a foreign log's), its checks, the program the supervisor ran, and the output."""

    patch: bytes | None
    check: PatchCheck | None
    program: TrialProgram | None
    output: AttemptOutput


def observe(evidence: Evidence, sample: Sample, parser: LogParser) -> Observation:
    """An attempt's Observation, from its evidence alone: the one reading of an attempt,
    for the executor (in memory) and for ``verify`` (from the files)."""
    output = evidence.output
    log = output.artifacts.get("test_output.txt", b"")
    if output.foreign is not None:
        return observe_foreign(log, evidence.patch, output.foreign, sample, parser)
    assert evidence.program is not None and evidence.check is not None
    protection = ResolvedProtection.model_validate(evidence.program.protection)
    report = output.report
    region = None
    if report is not None and report.region is not None:
        region = region_text(log, report.region)
    return observe_attempt(sample, parser, protection, evidence.check, report=report, region=region)


class Recorder:
    """Writes the trials of the run directory ``run_dir``."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def trial_dir(self, label: str) -> Path:
        return self.run_dir / "trials" / label

    def record_attempt(
        self,
        spec: AttemptSpec,
        output: AttemptOutput,
        *,
        check: PatchCheck,
        sample: Sample,
        parser: LogParser,
        started_at: datetime,
    ) -> Attempt:
        """Observe, score and write one attempt; its Attempt record."""
        folder = self.trial_dir(spec.label) / f"attempt-{spec.number}"
        patch = spec.patch if spec.patch_known else None
        files: dict[str, bytes] = {}
        if patch is not None:
            files["patch.diff"] = patch
        if spec.program is not None:
            files["test.patch"] = spec.test_patch
            files["program.json"] = _json(spec.program)
        files.update(output.artifacts)
        if output.report is not None:
            files["supervisor.json"] = _json(output.report)
        if output.foreign is not None:
            files["foreign.json"] = _json(output.foreign)
        artifacts = []
        for name in MEDIA_TYPES:
            if name in files:
                atomic.write_bytes(folder / name, files[name])
                artifacts.append(
                    Artifact.of_bytes(
                        (folder / name).relative_to(self.run_dir).as_posix(),
                        files[name],
                        MEDIA_TYPES[name],
                    )
                )
        observation = observe(Evidence(patch, check, spec.program, output), sample, parser)
        attempt = Attempt(
            trial_id=spec.trial_id,
            number=spec.number,
            reason=spec.reason,
            started_at=started_at,
            finished_at=datetime.now(UTC),
            artifacts=artifacts,
            observation=observation,
            score=score(observation),
        )
        atomic.write_bytes(folder / "result.json", _json(attempt))
        return attempt

    def record_trial(self, label: str, result: TrialResult) -> None:
        """The trial's result, written last: from now on the trial is complete."""
        atomic.write_bytes(self.trial_dir(label) / "result.json", _json(result))


def _json(record: object) -> bytes:
    return record.model_dump_json(indent=2).encode() + b"\n"  # type: ignore[attr-defined]
