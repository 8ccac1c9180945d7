"""A run's results (``results.json``) and its report (``evalrepro report --json``): what the
presentations read. Built by ``evalrepro.report.run_report``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.config.gate import RuleVerdict
from evalrepro.records.base import Record, unchanged
from evalrepro.records.metrics import RunMetrics
from evalrepro.records.score import Outcome
from evalrepro.records.timing import RunTiming, TrialTiming


class TrialLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    trial_id: str
    instance_id: str
    sample_index: int
    outcome: Outcome
    reason: str
    #: The score's detail: for an invalid trial, what made it so.
    detail: str = ""
    attempts: int


class RunResults(Record):
    record: Literal["RunResults"] = "RunResults"
    #: 3: ``pass_at_k`` and ``pass_hat_k`` (a results.json of schema 2 reads with none).
    schema_version: int = 3
    migrations = {2: unchanged}
    experiment: str
    target_id: str
    planned: int
    #: Planned trials without a result (an interrupted run); counted in no outcome.
    missing: int = 0
    resolved: int
    unresolved: int
    invalid: int
    resolved_rate: float
    invalid_rate: float
    retried_trials: int
    reasons: dict[str, int]
    #: A multi-sample run's pass@k and pass^k estimates, as its report's metrics hold them
    #: (the intervals are the report's): what ``verify`` recomputes from the trial results.
    #: None: a one-sample run, or a results.json of schema 2 (not recorded).
    pass_at_k: dict[str, float] | None = None
    pass_hat_k: dict[str, float] | None = None
    trials: list[TrialLine]


class SwebenchFields(BaseModel):
    """The keys of swebench 5.0.2's run report (``make_run_report``), so that tooling made
    for SWE-bench reads ours: computed as ``RUN/swebench/`` lays the run out
    (``swebench_layout.Verdicts``), one definition for both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    total_instances: int
    submitted_instances: int
    completed_instances: int
    resolved_instances: int
    unresolved_instances: int
    infra_failure_instances: int
    ambiguous_failure_instances: int
    empty_patch_instances: int
    error_instances: int
    completed_ids: list[str]
    incomplete_ids: list[str]
    empty_patch_ids: list[str]
    submitted_ids: list[str]
    resolved_ids: list[str]
    unresolved_ids: list[str]
    infra_failure_ids: list[str]
    ambiguous_failure_ids: list[str]
    failure_reasons: dict[str, str]
    error_ids: list[str]
    schema_version: int


class FlaggedTrial(BaseModel):
    """A trial whose patch did something a reviewer should look at, whatever its score:
    code that reaches into the test framework, test infrastructure it changed, a runner
    that left without its normal shutdown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    sample_index: int
    outcome: Outcome
    reason: str
    #: Each finding in words (static scan and exit guard): where, what its line does, the
    #: line as a Markdown code span, why it matters (``SuspectFinding.sentence``). Reports
    #: of schema 4 and before say "rule in path:line".
    suspects: list[str]
    #: "path (restored|recorded)" per test infrastructure file the patch changed.
    protected: list[str]
    runner_exit: str | None
    #: The limit that stopped the tests ("timeout", "memory", ...): their runner was
    #: killed, which is why its exit was abnormal (None: not stopped).
    stopped: str | None = None


class Provenance(BaseModel):
    """Where a report's numbers come from: printed on every page and table of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The evalrepro that made this report, and the harness that ran the trials.
    evalrepro_version: str
    harness_version: str
    #: The commit of the development checkout that ran the trials (``run.json``).
    harness_commit: str | None
    #: sha256 over the bytes of the run's lockfile (``lockfile.lock.json``).
    lockfile_digest: str
    experiment: str
    target_id: str
    dataset: str
    instances: int
    planned_trials: int
    gate: str
    gate_rules: list[str]
    #: How the trials ran, from each session's record: e.g. "podman rootless (4.3.1)".
    runtime: list[str]
    sessions: int
    #: The first session's start and the last trial's end (None: not known yet).
    started_at: datetime | None
    finished_at: datetime | None
    generated_at: datetime
    #: The statistics' settings: interval level, bootstrap resamples and seed.
    confidence: float
    n_resamples: int
    seed: int


class TrialRow(BaseModel):
    """One planned trial in the per-instance table: its outcome, why, and what it took."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trial_id: str
    #: Its folder, relative to the run directory (``trials/<label>``).
    folder: str
    instance_id: str
    sample_index: int
    repo: str
    #: resolved / unresolved / invalid, or "missing" (no result yet).
    outcome: str
    reason: str
    detail: str
    attempts: int
    timing: TrialTiming | None
    #: False when an artifact of the trial changed since it was recorded.
    evidence_complete: bool


class RunReport(Record):
    record: Literal["RunReport"] = "RunReport"
    #: 3: the timing's phases have ``agent``. 4: a flagged trial says what stopped its
    #: tests; the timing, the recorded build time of the images used.
    schema_version: int = 4
    migrations = {2: unchanged, 3: unchanged}
    run: str
    provenance: Provenance
    metrics: RunMetrics
    gate_name: str
    gate: list[RuleVerdict]
    gate_passed: bool
    swebench: SwebenchFields
    flagged: list[FlaggedTrial] = []
    #: Every planned trial, in the lockfile's order.
    trials: list[TrialRow] = []
    timing: RunTiming
    #: What is wrong with the evidence (changed artifacts, unreadable results), one line
    #: each; ``verify`` refuses such a run, the report shows it.
    evidence_problems: list[str] = []
