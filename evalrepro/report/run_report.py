"""Report: a run's results, aggregated from the trial results alone.

``results.json`` is an aggregate: it can always be rebuilt from the trials'
``result.json`` files, which are the source of truth. Counts are reported side by side
and every rate is over the planned trials, never over valid trials alone.

This module builds the records (``RunResults``, ``RunReport``) and prints nothing;
``evalrepro.report.run_printer`` prints them.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from evalrepro import __version__
from evalrepro.digest import sha256_bytes
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.records.labels import stop_of
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.report import (
    FlaggedTrial,
    Provenance,
    RunReport,
    RunResults,
    SwebenchFields,
    TrialLine,
    TrialRow,
)
from evalrepro.records.score import Outcome
from evalrepro.records.timing import RunTiming
from evalrepro.records.trial import TrialResult, outcome_counts, trial_label
from evalrepro.report.metrics import compute_metrics, evidence_of, sample_outcomes

# ``evalrepro.pipeline`` imports these two printers from here (it is not this change's
# to edit); every other caller imports them from ``run_printer``.
from evalrepro.report.stats import (
    instances_with_samples,
    pass_at_k_mean,
    pass_hat_k_mean,
    pass_k_values,
)
from evalrepro.report.timing import run_timing, trial_timing
from evalrepro.run.sessions import read_sessions


def aggregate(
    experiment: str,
    target_id: str,
    results: list[TrialResult],
    *,
    planned: int | None = None,
    lockfile: Lockfile | None = None,
) -> RunResults:
    """results.json; with the run's ``lockfile`` (what was planned), a multi-sample run's
    pass@k and pass^k estimates too, over the instances the report's are over."""
    outcomes = outcome_counts(results)
    planned = len(results) if planned is None else planned
    return RunResults(
        **pass_k_estimates(lockfile, results),
        experiment=experiment,
        target_id=target_id,
        planned=planned,
        missing=planned - len(results),
        resolved=outcomes[Outcome.RESOLVED],
        unresolved=outcomes[Outcome.UNRESOLVED],
        invalid=outcomes[Outcome.INVALID],
        resolved_rate=outcomes[Outcome.RESOLVED] / planned if planned else 0.0,
        invalid_rate=outcomes[Outcome.INVALID] / planned if planned else 0.0,
        retried_trials=sum(len(result.attempts) > 1 for result in results),
        reasons=dict(sorted(Counter(result.score.reason for result in results).items())),
        trials=[
            TrialLine(
                trial_id=result.trial.trial_id,
                instance_id=result.instance_id,
                sample_index=result.sample_index,
                outcome=result.score.outcome,
                reason=result.score.reason,
                detail=result.score.detail,
                attempts=len(result.attempts),
            )
            for result in results
        ],
    )


def pass_k_estimates(
    lockfile: Lockfile | None, results: list[TrialResult]
) -> dict[str, dict[str, float]]:
    """pass@k and pass^k of a multi-sample run, estimates only, as ``compute_metrics``
    makes them (each k with an instance of k planned samples; pass^k for k > 1)."""
    if lockfile is None or lockfile.target.samples < 2:
        return {}
    per_instance = sample_outcomes(lockfile, {r.trial.trial_id: r for r in results})
    ks = [
        k for k in pass_k_values(lockfile.target.samples) if instances_with_samples(per_instance, k)
    ]
    return {
        "pass_at_k": {f"pass@{k}": pass_at_k_mean(per_instance, k) for k in ks},
        "pass_hat_k": {f"pass^{k}": pass_hat_k_mean(per_instance, k) for k in ks if k > 1},
    }


# --- the full report: metrics, gate, SWE-bench's run-report fields ---------------------


def build_run_report(
    run_dir: Path,
    lockfile: Lockfile,
    results: dict[str, TrialResult],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    evidence_problems: list[str] | None = None,
    generated_at: datetime | None = None,
    evidence: dict[str, bool] | None = None,
) -> RunReport:
    """``generated_at``: the report's time (now, unless a bundle fixes it so that the
    same run gives the same report). ``evidence``: per trial id, whether every artifact
    still has its digest, when the caller knows already (the run that just recorded or
    checked them); else every artifact is hashed here, once."""
    evidence = evidence if evidence is not None else evidence_of(run_dir, results)
    metrics = compute_metrics(
        lockfile,
        results,
        run_dir,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        evidence=evidence,
    )
    verdicts = lockfile.gate.evaluate(metrics.values())
    rows = trial_rows(run_dir, lockfile, results, evidence=evidence)
    finished = [results[t.trial_id] for t in lockfile.trials if t.trial_id in results]
    timing = run_timing(run_dir, finished, [row.timing for row in rows if row.timing])
    return RunReport(
        run=str(run_dir),
        provenance=provenance(
            run_dir,
            lockfile,
            timing,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
            generated_at=generated_at,
        ),
        metrics=metrics,
        gate_name=lockfile.gate.name,
        gate=verdicts,
        gate_passed=all(v.passed for v in verdicts),
        swebench=_swebench_fields(lockfile, results),
        flagged=flagged_trials(lockfile, results),
        trials=rows,
        timing=timing,
        evidence_problems=evidence_problems or [],
    )


def provenance(
    run_dir: Path,
    lockfile: Lockfile,
    timing: RunTiming,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    generated_at: datetime | None = None,
) -> Provenance:
    runtimes = []
    sessions = read_sessions(run_dir)
    for session in sessions:
        backend = session.backend
        described = " ".join(str(backend[k]) for k in ("kind", "mode") if k in backend)
        if backend.get("podman"):
            described += f" ({backend['podman']})"
        if described and described not in runtimes:
            runtimes.append(described)
    if lockfile.environment.kind == "recorded":
        runtimes = runtimes or ["recorded (logs written elsewhere)"]
    lock_path = run_dir / LOCKFILE_NAME
    return Provenance(
        evalrepro_version=__version__,
        harness_version=lockfile.harness.version,
        harness_commit=next(
            (s.evalrepro.commit for s in sessions if s.evalrepro and s.evalrepro.commit), None
        ),
        lockfile_digest=sha256_bytes(lock_path.read_bytes()) if lock_path.is_file() else "",
        experiment=lockfile.experiment,
        target_id=lockfile.target.target_id,
        dataset=lockfile.dataset.name,
        instances=len(lockfile.dataset.instances),
        planned_trials=len(lockfile.trials),
        gate=lockfile.gate.name,
        gate_rules=[str(rule) for rule in lockfile.gate.rules],
        runtime=runtimes,
        sessions=len(sessions),
        started_at=timing.started_at,
        finished_at=timing.finished_at,
        generated_at=generated_at or datetime.now(UTC),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )


def trial_rows(
    run_dir: Path,
    lockfile: Lockfile,
    results: dict[str, TrialResult],
    *,
    evidence: dict[str, bool] | None = None,
) -> list[TrialRow]:
    evidence = evidence if evidence is not None else evidence_of(run_dir, results)
    repos = {instance.instance_id: instance.repo for instance in lockfile.dataset.instances}
    rows = []
    for trial in lockfile.trials:
        key = trial.key
        result = results.get(trial.trial_id)
        label = trial_label(key.instance_id, key.sample_index, trial.trial_id)
        common = {
            "trial_id": trial.trial_id,
            "folder": f"trials/{label}",
            "instance_id": key.instance_id,
            "sample_index": key.sample_index,
            "repo": repos.get(key.instance_id, ""),
        }
        if result is None:
            rows.append(
                TrialRow(
                    **common,
                    outcome="missing",
                    reason="not_run",
                    detail="",
                    attempts=0,
                    timing=None,
                    evidence_complete=False,
                )
            )
            continue
        rows.append(
            TrialRow(
                **common,
                outcome=str(result.score.outcome),
                reason=result.score.reason,
                detail=result.score.detail,
                attempts=len(result.attempts),
                timing=trial_timing(run_dir, result, intact=evidence[trial.trial_id]),
                evidence_complete=evidence[trial.trial_id],
            )
        )
    return rows


def flagged_trials(lockfile: Lockfile, results: dict[str, TrialResult]) -> list[FlaggedTrial]:
    flagged = []
    for trial in lockfile.trials:
        result = results.get(trial.trial_id)
        if result is None:
            continue
        seen = result.attempts[-1].observation
        abnormal = seen.runner_exit == "abnormal"
        if not (seen.suspects or seen.protected or abnormal):
            continue
        flagged.append(
            FlaggedTrial(
                instance_id=result.instance_id,
                sample_index=result.sample_index,
                outcome=result.score.outcome,
                reason=result.score.reason,
                suspects=[s.sentence for s in seen.suspects],
                protected=[f"{p.path} ({p.action})" for p in seen.protected],
                runner_exit=seen.runner_exit,
                stopped=stop_of(seen),
            )
        )
    return flagged


def _swebench_fields(lockfile: Lockfile, results: dict[str, TrialResult]) -> SwebenchFields:
    from evalrepro.run.swebench_layout import Verdicts

    return SwebenchFields.model_validate(Verdicts(lockfile, results).run_report())
