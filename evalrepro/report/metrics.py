"""Metrics of a run: counts side by side, every rate over the planned trials, with its
interval (Wilson for a single proportion; a bootstrap over instances for pass@k and the
per-sample rate, where no closed form fits).

Computed from the lockfile (what was planned) and the trial results (what happened);
an unfinished trial counts as missing, in no outcome, and still in the denominator.
pass@k is over the instances with at least k planned samples, and the record says how
many those are (``pass_at_k_metrics``); pass^k (all k samples resolve) beside it, over the
same instances, with the same bootstrap.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from evalrepro.records.lockfile import Lockfile
from evalrepro.records.metrics import RepoBreakdown, RunMetrics
from evalrepro.records.score import Outcome
from evalrepro.records.stats import Interval
from evalrepro.records.trial import TrialResult, outcome_counts
from evalrepro.report.stats import (
    instances_with_samples,
    pass_at_k_interval,
    pass_hat_k_interval,
    pass_k_values,
    wilson_interval,
)


def evidence_of(run_dir: Path, results: dict[str, TrialResult]) -> dict[str, bool]:
    """Per trial id: every artifact of every attempt still has its recorded digest."""
    return {
        trial_id: all(a.matches(run_dir) for attempt in r.attempts for a in attempt.artifacts)
        for trial_id, r in results.items()
    }


def _rate(count: int, planned: int, confidence: float) -> Interval:
    low, high = wilson_interval(count, planned, confidence)
    estimate = count / planned if planned else 0.0
    return Interval(estimate=estimate, low=low, high=high, method="wilson", confidence=confidence)


def compute_metrics(
    lockfile: Lockfile,
    results: dict[str, TrialResult],
    run_dir: Path,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    evidence: dict[str, bool] | None = None,
) -> RunMetrics:
    planned = len(lockfile.trials)
    outcomes = outcome_counts(results.values())
    repos = {instance.instance_id: instance.repo for instance in lockfile.dataset.instances}

    per_repo: dict[str, Counter[str]] = defaultdict(Counter)
    for trial in lockfile.trials:
        bucket = per_repo[repos[trial.key.instance_id]]
        bucket["planned"] += 1
        result = results.get(trial.trial_id)
        bucket[result.score.outcome if result else "missing"] += 1

    evidence = evidence if evidence is not None else evidence_of(run_dir, results)
    complete_evidence = sum(evidence.get(trial_id, False) for trial_id in results)
    retry_reasons = Counter(
        attempt.reason
        for result in results.values()
        for attempt in result.attempts
        if attempt.number > 1
    )
    metrics = {
        "experiment": lockfile.experiment,
        "target_id": lockfile.target.target_id,
        "planned": planned,
        "resolved": outcomes[Outcome.RESOLVED],
        "unresolved": outcomes[Outcome.UNRESOLVED],
        "invalid": outcomes[Outcome.INVALID],
        "missing": planned - len(results),
        "resolved_rate": _rate(outcomes[Outcome.RESOLVED], planned, confidence),
        "unresolved_rate": _rate(outcomes[Outcome.UNRESOLVED], planned, confidence),
        "invalid_rate": _rate(outcomes[Outcome.INVALID], planned, confidence),
        "evidence_completeness": complete_evidence / planned if planned else 0.0,
        "attempts": sum(len(result.attempts) for result in results.values()),
        "retried_trials": sum(len(result.attempts) > 1 for result in results.values()),
        "retry_reasons": dict(sorted(retry_reasons.items())),
        "reasons": dict(sorted(Counter(r.score.reason for r in results.values()).items())),
        # The grading's outcome of each reason, so that no renderer consults its table.
        "reason_outcomes": dict(
            sorted({r.score.reason: r.score.outcome for r in results.values()}.items())
        ),
        "per_repo": {
            repo: RepoBreakdown(
                **{
                    k: counts[k]
                    for k in ("planned", "resolved", "unresolved", "invalid", "missing")
                },
                rate=_rate(counts["resolved"], counts["planned"], confidence),
            )
            for repo, counts in sorted(per_repo.items())
        },
        "samples": lockfile.target.samples,
        "instances": len({trial.key.instance_id for trial in lockfile.trials}),
        **flaky_metrics(results.values(), planned, confidence),
    }
    if lockfile.target.samples > 1:
        metrics |= pass_at_k_metrics(
            sample_outcomes(lockfile, results),
            lockfile.target.samples,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )
    return RunMetrics(**metrics)


def flaky_metrics(
    results: Iterable[TrialResult], planned: int, confidence: float
) -> dict[str, object]:
    """Trials whose final attempt found a flaky test, over planned trials; the rate only
    when some trial re-ran its failing tests (else flakiness was not measured). An invalid
    trial's tests are not trusted (a runner tampered with passes every re-run): its re-runs
    are not counted either."""
    final = [
        (result.score.outcome, result.attempts[-1].observation)
        for result in results
        if result.attempts
    ]
    flaky = [
        len(o.flaky_tests) for outcome, o in final if outcome != Outcome.INVALID and o.flaky_tests
    ]
    measured = any(o.rerun_times for _, o in final)
    return {
        "flaky": len(flaky),
        "flaky_tests": sum(flaky),
        "flaky_rate": _rate(len(flaky), planned, confidence) if measured else None,
    }


def pass_at_k_metrics(
    per_instance: list[np.ndarray],
    samples: int,
    *,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, object]:
    """pass@k for every k ``samples`` calls for, each over the instances with at least k
    planned samples, and how many those are (``RunMetrics.pass_at_k_instances``); pass^k
    for each such k > 1, over the same instances (``RunMetrics.pass_hat_k``).

    A target with ``missing: skip`` plans only the samples it gave: an instance with
    fewer than k has no pass@k (the unbiased estimator needs k draws without
    replacement), so it is left out of that k's mean and the record says over how many
    instances the mean is; a k no instance has is recorded as not available (0), never
    estimated from another set. Unfinished trials stay in as unresolved samples, as in
    every rate over planned trials.
    """
    options = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    over = {f"pass@{k}": instances_with_samples(per_instance, k) for k in pass_k_values(samples)}
    pass_at_k = {
        name: pass_at_k_interval(per_instance, int(name.removeprefix("pass@")), **options)
        for name, count in over.items()
        if count
    }
    # pass^1 is pass@1: pass^k for k > 1 only, over the instances its pass@k is over.
    pass_hat_k = {
        f"pass^{k}": pass_hat_k_interval(per_instance, k, **options)
        for k in (int(name.removeprefix("pass@")) for name in pass_at_k)
        if k > 1
    }
    return {
        "pass_at_k": pass_at_k,
        "pass_hat_k": pass_hat_k,
        "pass_at_k_instances": over,
        "sample_rate": pass_at_k.get("pass@1"),
    }


def sample_outcomes(lockfile: Lockfile, results: dict[str, TrialResult]) -> list[np.ndarray]:
    """Per instance (lockfile order), the resolved 0/1 of each sample; missing = 0."""
    by_instance: dict[str, list[bool]] = defaultdict(list)
    for trial in lockfile.trials:
        result = results.get(trial.trial_id)
        by_instance[trial.key.instance_id].append(
            result is not None and result.score.outcome is Outcome.RESOLVED
        )
    return [np.array(outcomes, dtype=bool) for outcomes in by_instance.values()]
