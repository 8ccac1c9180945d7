"""Execute: the host's side of each trial, whatever executor schedules its attempts.

A :class:`TrialJob` makes a trial's attempt specs (values, sent to a runtime here or on
another machine), records each output through the :class:`~evalrepro.run.recorder.Recorder`
and decides from the recorded attempt whether another follows: an infrastructure error
(no image, podman failing, a container killed by the host) is retried as a new attempt
of the same trial, up to ``max_attempts``; a rejected patch, a failing test or a timeout
is a result and is never retried; an image that failed to build will not heal within
the run. The number of trials never changes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalrepro.config.environment import Limits
from evalrepro.digest import sha256_bytes
from evalrepro.grade.canary import draw_canaries
from evalrepro.grade.fresh import draw_fresh_runs
from evalrepro.grade.parsers import LogParser
from evalrepro.grade.rerun import plan_reruns
from evalrepro.plan.trial import PlannedTrial
from evalrepro.records.artifact import Artifact
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshRun
from evalrepro.records.rerun import FlakyCounts, RerunScope
from evalrepro.records.supervision import TrialProgram
from evalrepro.records.testspec import TestSpec
from evalrepro.records.trial import Attempt, Lease, TrialResult
from evalrepro.rules.patchcheck import PatchCheck, check_patch
from evalrepro.run.recorder import Recorder
from evalrepro.run.undertest import draw_second_runs
from evalrepro.runtimes.attempt import (
    AgentTask,
    AttemptOutput,
    AttemptSpec,
    ImageRef,
    RecordedAgent,
)
from evalrepro.sample import Sample
from evalrepro.targets.agent import AgentTarget


@dataclass(frozen=True)
class AttemptSettings:
    """What every attempt of a run shares: the environment's limits, and the run's
    sandbox-name prefix. ``limits`` None: no sandbox of ours runs (recorded logs: what
    the patch is, is judged as the harness that ran it judges it)."""

    limits: Limits | None
    timeout: int
    allow_user_namespaces: bool
    sandbox_prefix: str
    max_attempts: int
    #: The agent that makes each trial's patch (None: the patches are the plan's).
    agent: AgentTarget | None = None
    #: Agent phases an earlier run recorded, by trial id: replayed, the agent not run.
    recorded_agents: Mapping[str, RecordedAgent] | None = None
    #: Re-runs of each failing test (``evalrepro.grade.rerun``), and how a flaky one counts.
    rerun_failed: int = 0
    flaky_counts_as: FlakyCounts = "failed"
    #: "failing" for a target whose instances need no lists (validation): every test the
    #: log calls failing is re-run, not only the listed ones.
    rerun_scope: RerunScope = "listed"


def container_prefix(run_dir: Path) -> str:
    """The start of every sandbox name of a run directory's attempts.

    A later session finds (and removes) the containers a killed one left running, and
    no other run's.
    """
    return f"evalrepro-{sha256_bytes(str(run_dir).encode())[7:15]}-"


class TrialJob:
    """One trial's attempts, on the host. An executor asks for :meth:`next_spec` until
    it is None, hands each output to :meth:`record`, then takes :meth:`finish`."""

    def __init__(self, planned: PlannedTrial, settings: AttemptSettings, recorder: Recorder):
        self.planned = planned
        self.settings = settings
        self.recorder = recorder
        self.attempts: list[Attempt] = []
        self._reason: str | None = "planned"
        self._limits: dict[str, str] = {}
        self._inputs: list[Artifact] = []
        #: The patch an agent made in an attempt whose evaluation then failed on the
        #: infrastructure: the next attempt evaluates it again, the agent is not re-run.
        self._agent_patch: bytes | None = None
        self._agent_check: PatchCheck | None = None
        self._agent_attempt = 0
        self._usage = planned.prediction.usage
        #: What the supervisor is asked to do, drawn when the first attempt is made (the
        #: canaries, fresh runs and re-runs): in the thread that drives the trial, beside
        #: the other trials' containers, not for every trial before the first one starts.
        self._program: TrialProgram | None = None

    def _draw_program(self) -> TrialProgram | None:
        planned, settings = self.planned, self.settings
        if settings.limits is None:
            return None
        canaries = draw_canaries(
            planned.spec, planned.parser, planned.sample, outside=planned.outside
        )
        return TrialProgram.of(
            planned.spec.eval_script,
            settings.limits,
            settings.timeout,
            allow_user_namespaces=settings.allow_user_namespaces,
            canaries=canaries,
            outside_files=[f.path for f in planned.spec.outside_files],
            fresh=lone_runs(planned.spec, planned.parser, planned.sample, canaries),
            rerun=plan_reruns(
                planned.spec,
                planned.parser,
                planned.sample,
                canaries,
                times=settings.rerun_failed,
                scope=settings.rerun_scope,
                counts_as=settings.flaky_counts_as,
            ),
        )

    @property
    def label(self) -> str:
        return self.planned.label

    def next_spec(self) -> AttemptSpec | None:
        """The next attempt to run, or None: the trial is done."""
        if self._reason is None:
            return None
        planned, settings = self.planned, self.settings
        number = len(self.attempts) + 1
        if number == 1:
            # Drawn once: every attempt of the trial runs the same program.
            self._program = self._draw_program()
        image = planned.image_ref
        agent = None
        patch, patch_known = planned.patch, planned.patch_known
        patch_problem = planned.check.problem if patch_known and settings.limits else None
        if settings.agent is not None:
            if self._agent_patch is None:
                problem = planned.sample.problem_statement
                recorded = (settings.recorded_agents or {}).get(planned.trial.trial_id)
                agent = AgentTask(
                    target=settings.agent, problem_statement=problem, recorded=recorded
                )
                patch, patch_known, patch_problem = b"", False, None
            else:
                patch, patch_known = self._agent_patch, True
                patch_problem = self._agent_check.problem if self._agent_check else None
        spec = AttemptSpec(
            trial_id=planned.trial.trial_id,
            label=planned.label,
            number=number,
            reason=self._reason,
            instance_id=planned.sample.instance_id,
            image=ImageRef(tag=image.tag, digest=image.image_digest) if image else None,
            unavailable=planned.unavailable,
            test_spec=planned.spec,
            program=self._program,
            patch=patch,
            patch_known=patch_known,
            test_patch=planned.test_patch,
            patch_problem=patch_problem,
            timeout=settings.timeout,
            output_limit=settings.limits.in_bytes("output") if settings.limits else 1,
            # Unique even when two runs execute the same trial at once.
            sandbox_name=f"{settings.sandbox_prefix}{planned.label[-12:]}-a{number}-"
            f"{secrets.token_hex(3)}",
            agent=agent,
        )
        # On the host, before it runs anywhere: a folder shows what was running.
        self._inputs = self.recorder.begin_attempt(spec)
        return spec

    def record(
        self,
        spec: AttemptSpec,
        output: AttemptOutput,
        started_at: datetime,
        lease: Lease | None = None,
    ) -> Attempt:
        """Record one attempt's output (``lease``: where it ran, when an executor sent it
        to another process); whether another attempt follows is decided here."""
        attempt = self.recorder.record_attempt(
            spec,
            output,
            inputs=self._inputs,
            check=self._agent_check or self.planned.check,
            sample=self.planned.sample,
            parser=self.planned.parser,
            started_at=started_at,
            lease=lease,
        )
        self.attempts.append(attempt)
        self._limits = output.limits
        if output.agent is not None:
            self._usage = output.agent.usage
            if output.agent.status == "submitted" and output.agent_patch is not None:
                # The agent's work stands: a retry evaluates this patch again.
                self._agent_patch = output.agent_patch
                protection = self.planned.spec.eval_script.protection
                self._agent_check = check_patch(output.agent_patch, protection)
                self._agent_attempt = spec.number
        infrastructure = attempt.observation.infrastructure_error
        if (
            infrastructure is None
            or spec.image is None
            or spec.number >= self.settings.max_attempts
        ):
            self._reason = None
        else:
            self._reason = f"retry after infrastructure error: {infrastructure}"
            if self._agent_patch is not None:
                self._reason += (
                    f"; the patch the agent made in attempt {self._agent_attempt} is "
                    "evaluated again"
                )
        return attempt

    def finish(self) -> TrialResult:
        """The trial's result, written: the trial is complete."""
        planned = self.planned
        result = TrialResult(
            trial=planned.trial,
            instance_id=planned.sample.instance_id,
            target_id=planned.trial.key.target_id,
            sample_index=planned.prediction.sample_index,
            score=self.attempts[-1].score,
            attempts=self.attempts,
            limits=self._limits,
            usage=self._usage,
        )
        self.recorder.record_trial(planned.label, result)
        return result


def lone_runs(
    spec: TestSpec, parser: LogParser, sample: Sample, canaries: list[Canary]
) -> tuple[list[FreshRun], str]:
    """The runs alone after the tests: the fresh runs, then the second runner's; why
    either has none when the dataset asked for some."""
    fresh, fresh_note = draw_fresh_runs(spec, parser, sample, canaries)
    second, second_note = draw_second_runs(spec, parser, sample, canaries)
    return [*fresh, *second], "; ".join(note for note in (fresh_note, second_note) if note)


def now() -> datetime:
    return datetime.now(UTC)
