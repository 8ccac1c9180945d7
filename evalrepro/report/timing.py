"""Where a run's time (and, when a target reports it, its tokens and money) went.

Each number comes from the record that measured it, never from a guess:

* image builds: ``images/builds.json``, every layer a session of this run built and how
  long its build took (``ImageRecord.build_seconds``); a layer serves many trials, so
  its time is the run's, not a trial's; and every layer it used that was built before
  it, with the time its build took as that build recorded it in the cache
  (``builds/<key>.build.json``, written by ``lock`` and ``run`` alike): a run that
  reused every image says what they took to build, apart from its own time;
* per attempt: its own ``Attempt.phases``, measured when it was recorded: its wall time
  on the host (patch checks, the container, reading the stream, grading), the
  container's life as the host measured it (``RuntimeFacts.seconds``), the supervisor's
  own clocks for applying the patch, resetting the test files and running the tests, and
  an agent target's agent phase (the agent's sandbox, from its start to the harness's
  copy of the tree); an attempt recorded before attempts carried them (schema 2) has
  them read back from its intact ``supervisor.json`` and ``agent.json``;
* tokens and cost: the ``usage`` of each prediction, as the target reported it.

A trial's time is the sum over its attempts: a retry costs time too. A regraded log has
no container and no supervisor: only its wall time is known.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from evalrepro.build.buildlog import read_builds
from evalrepro.errors import UserError
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.base import read_record
from evalrepro.records.supervision import SupervisorReport
from evalrepro.records.timing import PhaseSeconds, RunTiming, TrialTiming
from evalrepro.records.trial import Attempt, TrialResult
from evalrepro.run.sessions import read_sessions

#: Largest supervisor.json read for its clocks.
_MAX_REPORT_BYTES = 16 << 20


def _supervisor_report(
    run_dir: Path, attempt_artifacts: list, intact: bool | None = None
) -> SupervisorReport | None:
    """The attempt's supervisor.json, if its recorded artifact is intact (a changed one
    tells nothing trustworthy about time either); ``intact``: True when the caller knows
    every artifact of the trial is."""
    for artifact in attempt_artifacts:
        if not artifact.path.endswith("/supervisor.json"):
            continue
        # Known intact: not hashed again (the run that recorded it, or its survey, did).
        if intact or artifact.matches(run_dir):
            try:
                return read_record(
                    run_dir / artifact.path, SupervisorReport, limit=_MAX_REPORT_BYTES
                )
            except UserError:
                return None
    return None


def _agent_seconds(run_dir: Path, attempt_artifacts: list, intact: bool | None) -> float:
    """The attempt's agent phase, from its intact ``agent.json`` (0: none)."""
    for artifact in attempt_artifacts:
        if artifact.path.endswith("/agent.json") and (intact or artifact.matches(run_dir)):
            try:
                return read_record(run_dir / artifact.path, AgentOutcome).seconds
            except UserError:
                return 0.0
    return 0.0


def _recorded_before(run_dir: Path, attempt: Attempt, intact: bool | None) -> PhaseSeconds:
    """An attempt recorded before attempts carried their phases: its clocks are read back
    from its intact ``supervisor.json`` and ``agent.json``."""
    wall = max(0.0, (attempt.finished_at - attempt.started_at).total_seconds())
    phases = {"wall": wall}
    report = _supervisor_report(run_dir, attempt.artifacts, intact)
    if report is not None:
        phases["container"] = report.runtime.seconds
        phases["patch"] = report.patch.seconds if report.patch else 0.0
        phases["reset"] = report.reset.seconds if report.reset else 0.0
        phases["tests"] = report.tests.seconds if report.tests else 0.0
    phases["agent"] = _agent_seconds(run_dir, attempt.artifacts, intact)
    return PhaseSeconds(**phases)


def trial_timing(run_dir: Path, result: TrialResult, *, intact: bool | None = None) -> TrialTiming:
    """Where a trial's time went; ``intact``: whether its artifacts still have their
    digests, when the caller knows (None: each supervisor.json is checked here)."""
    total = PhaseSeconds()
    for attempt in result.attempts:
        total = total + (attempt.phases or _recorded_before(run_dir, attempt, intact))
    usage = result.usage
    return TrialTiming(
        attempts=len(result.attempts),
        seconds=total,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        cost_usd=usage.cost_usd if usage else None,
    )


def _sum(values: list[float | int | None]) -> float | int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def run_timing(run_dir: Path, results: list[TrialResult], timings: list[TrialTiming]) -> RunTiming:
    recorded = read_builds(run_dir)
    builds = recorded.builds
    known = [image.seconds for image in recorded.reused if image.seconds is not None]
    by_layer: dict[str, float] = {}
    for build in builds:
        by_layer[build.layer] = round(by_layer.get(build.layer, 0.0) + build.seconds, 3)
    total = PhaseSeconds()
    for timing in timings:
        total = total + timing.seconds
    return RunTiming(
        trials=len(results),
        attempts=sum(t.attempts for t in timings),
        retried_trials=sum(t.attempts > 1 for t in timings),
        seconds=PhaseSeconds(**{k: round(v, 3) for k, v in total.model_dump().items()}),
        layers_built=len(builds),
        build_seconds=by_layer,
        layers_reused=len(recorded.reused),
        reused_build_seconds=round(sum(known), 3) if known else None,
        reused_unrecorded=len(recorded.reused) - len(known),
        started_at=_first_session(run_dir),
        finished_at=max((r.attempts[-1].finished_at for r in results if r.attempts), default=None),
        input_tokens=_sum([t.input_tokens for t in timings]),  # type: ignore[arg-type]
        output_tokens=_sum([t.output_tokens for t in timings]),  # type: ignore[arg-type]
        cost_usd=_sum([t.cost_usd for t in timings]),
    )


def _first_session(run_dir: Path) -> datetime | None:
    """When the run's first session started (``run.json``), or None if unknown."""
    sessions = read_sessions(run_dir)
    return sessions[0].started_at if sessions else None
