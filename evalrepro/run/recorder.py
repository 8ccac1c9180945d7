"""Recording: the host's half of an attempt, and the only writer of a run's trials.

An attempt's spec is written down when it starts (what it runs from: the patch, the
test patch, the program), and its output when it comes back (values: it may come from
another machine). The recorder observes from them in memory, scores, and writes the
attempt's artifacts, its Attempt record and, once the trial has no attempt left to make,
its TrialResult, each file atomically, each artifact hashed once, from the bytes it
writes. An attempt's files are synced together (``atomic.write_all``): its inputs when
it starts, its artifacts and then its Attempt record when it ends. ``verify`` observes a
recorded attempt again through the same :func:`observe`, from the files alone
(``evalrepro.run.evidence``).

Layout of a trial folder: ``attempt-N/`` (the artifacts and ``result.json``, the Attempt)
for each attempt, then ``result.json`` (the TrialResult), written last: it is the source
of truth, and a trial without it is not finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from evalrepro import atomic
from evalrepro.grade.foreign import observe_foreign
from evalrepro.grade.observation import observe_attempt
from evalrepro.grade.parsers import LogParser
from evalrepro.grade.score import score
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.artifact import Artifact
from evalrepro.records.observation import Observation
from evalrepro.records.supervision import SupervisorReport, TrialProgram
from evalrepro.records.testspec import ResolvedProtection
from evalrepro.records.timing import PhaseSeconds
from evalrepro.records.trial import Attempt, Lease, TrialResult
from evalrepro.rules.evalscript import without_model_patch
from evalrepro.rules.patchcheck import PatchCheck, check_patch
from evalrepro.runtimes.attempt import MEDIA_TYPES, AttemptOutput, AttemptSpec
from evalrepro.runtimes.supervision import region_text
from evalrepro.sample import Sample
from evalrepro.sandbox.protocol import as_text
from evalrepro.text import inside


@dataclass(frozen=True)
class Evidence:
    """What an attempt's observation is made from: the patch (None: the target had none,
    a foreign log's), its checks, the program the supervisor ran, and the output."""

    patch: bytes | None
    check: PatchCheck | None
    program: TrialProgram | None
    output: AttemptOutput
    #: The agent phase's end, for an agent target's attempt that ran one.
    agent: AgentOutcome | None = None


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
    return observe_attempt(
        sample,
        parser,
        protection,
        evidence.check,
        report=report,
        region=region,
        canaries=evidence.program.canaries,
        fresh=evidence.program.fresh,
        fresh_note=evidence.program.fresh_note,
        rerun=evidence.program.rerun,
        rerun_note=evidence.program.rerun_note,
        agent=evidence.agent,
    )


class Recorder:
    """Writes the trials of the run directory ``run_dir``."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def trial_dir(self, label: str) -> Path:
        # Checked before anything is written there: inside the run directory.
        return inside(self.run_dir, Path("trials") / label, "trial folder")

    def begin_attempt(self, spec: AttemptSpec) -> list[Artifact]:
        """Write what the attempt runs from (the patch, the test patch, the program) before
        it runs, so that a trial folder shows what was running when a session died; their
        artifacts, hashed once from these bytes."""
        files: dict[str, bytes] = {}
        if spec.patch_known:
            files["patch.diff"] = spec.patch
        if spec.program is not None:
            files["test.patch"] = spec.test_patch
            files["program.json"] = _json(spec.program)
        artifacts = self._artifacts(spec, files)
        atomic.write_all([(self.run_dir / a.path, files[_name(a)]) for a in artifacts])
        return artifacts

    def record_attempt(
        self,
        spec: AttemptSpec,
        output: AttemptOutput,
        *,
        inputs: list[Artifact],
        check: PatchCheck,
        sample: Sample,
        parser: LogParser,
        started_at: datetime,
        lease: Lease | None = None,
    ) -> Attempt:
        """Observe, score and write one attempt's output; its Attempt record. ``inputs``:
        the artifacts :meth:`begin_attempt` wrote."""
        if output.report is not None and not _writable(output.report):
            output = output.model_copy(update={"report": _text_only(output.report)})
        files: dict[str, bytes] = dict(output.artifacts)
        if output.report is not None:
            files["supervisor.json"] = _json(output.report)
        if output.foreign is not None:
            files["foreign.json"] = _json(output.foreign)
        patch = spec.patch if spec.patch_known else None
        if output.agent is not None:
            # The agent made the patch in this attempt: recorded and checked here, as a
            # saved patch is when it is planned (verify reads both back the same way).
            files["agent.json"] = _json(output.agent)
            patch = output.agent_patch
            if patch is not None:
                files["patch.diff"] = patch
            if spec.program is not None:
                protection = ResolvedProtection.model_validate(spec.program.protection)
                check = check_patch(
                    patch or b"",
                    protection,
                    without_patch=without_model_patch(spec.program.patch_commands),
                )
        made = self._artifacts(spec, files)
        written = {_name(a): a for a in [*inputs, *made]}
        evidence = Evidence(patch, check, spec.program, output, agent=output.agent)
        observation = observe(evidence, sample, parser)
        finished_at = datetime.now(UTC)
        attempt = Attempt(
            trial_id=spec.trial_id,
            number=spec.number,
            reason=spec.reason,
            started_at=started_at,
            finished_at=finished_at,
            artifacts=[written[name] for name in MEDIA_TYPES if name in written],
            observation=observation,
            score=score(observation),
            lease=lease,
            phases=_phases(output, (finished_at - started_at).total_seconds()),
        )
        folder = self.trial_dir(spec.label) / f"attempt-{spec.number}"
        # The artifacts, then the record that names them (named last), synced together.
        atomic.write_all(
            [(self.run_dir / a.path, files[_name(a)]) for a in made]
            + [(folder / "result.json", _json(attempt))]
        )
        return attempt

    def _artifacts(self, spec: AttemptSpec, files: dict[str, bytes]) -> list[Artifact]:
        """The artifacts ``files`` make in the attempt's folder (hashed from these bytes)."""
        folder = self.trial_dir(spec.label) / f"attempt-{spec.number}"
        artifacts = []
        for name in MEDIA_TYPES:
            if name in files:
                relative = (folder / name).relative_to(self.run_dir).as_posix()
                artifacts.append(Artifact.of_bytes(relative, files[name], MEDIA_TYPES[name]))
        return artifacts

    def record_trial(self, label: str, result: TrialResult) -> None:
        """The trial's result, written last: from now on the trial is complete."""
        atomic.write_bytes(self.trial_dir(label) / "result.json", _json(result))


def _name(artifact: Artifact) -> str:
    return PurePosixPath(artifact.path).name


def _phases(output: AttemptOutput, wall: float) -> PhaseSeconds:
    """The attempt's time by phase: the host's wall clock, the container's life as the
    host measured it, the supervisor's clocks, the agent's phase (0 where none ran)."""
    report = output.report
    return PhaseSeconds(
        wall=max(0.0, wall),
        container=report.runtime.seconds if report else 0.0,
        patch=report.patch.seconds if report and report.patch else 0.0,
        reset=report.reset.seconds if report and report.reset else 0.0,
        tests=report.tests.seconds if report and report.tests else 0.0,
        agent=output.agent.seconds if output.agent else 0.0,
    )


def _json(record: BaseModel) -> bytes:
    try:
        text = record.model_dump_json(indent=2)
    except PydanticSerializationError:  # a string that is not Unicode text: escaped
        text = type(record).model_validate(as_text(record.model_dump())).model_dump_json(indent=2)
    return text.encode() + b"\n"


def _writable(record: BaseModel) -> bool:
    try:
        record.model_dump_json()
    except PydanticSerializationError:  # a lone surrogate: no UTF-8 writer takes it
        return False
    return True


def _text_only(report: SupervisorReport) -> SupervisorReport:
    """A report that holds a string that is not Unicode text (no runtime of evalrepro's
    makes one: the stream reader refuses it) with every such string escaped as a name
    is (``as_text``), and a stream problem: the attempt is recorded and scored invalid."""
    data = as_text(report.model_dump())
    data["stream_problem"] = data.get("stream_problem") or (
        "the supervisor's report held a string that is not Unicode text (shown escaped)"
    )
    return SupervisorReport.model_validate(data)
