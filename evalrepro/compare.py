"""Compare runs: a difference in resolve rate is reported with its paired bootstrap
interval over the instances both runs share, the discordant counts and exact McNemar,
each run's rate, the outcome correlation and the minimum detectable difference; never a
raw rate difference alone.

Runs are first checked for comparability (``lockfile.differences`` with the target
allowed to differ): a difference in instances, test specs, images, harness, limits or
gate makes the comparison refuse, or, with ``force``, marks it not comparable.
Multi-sample targets are compared on per-instance pass@k and per-sample rates, always
resampling instances, never samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from evalrepro.errors import UserError
from evalrepro.execute import TrialResult
from evalrepro.lockfile import Difference, Lockfile, differences, read_lockfile
from evalrepro.metrics import sample_outcomes
from evalrepro.record import Record
from evalrepro.report import percent
from evalrepro.rundir import RunDirectory
from evalrepro.stats import Comparison, compare_outcomes, instance_pass_at_k, pass_k_values


@dataclass(frozen=True)
class LoadedRun:
    path: Path
    lockfile: Lockfile
    results: dict[str, TrialResult]

    @property
    def name(self) -> str:
        return f"{self.lockfile.experiment} ({self.lockfile.target.target_id})"


def load_run(path: Path) -> LoadedRun:
    directory = RunDirectory(path)
    if not directory.lockfile_path.exists():
        raise UserError(f"{path}: not a run directory (no {directory.lockfile_path.name})")
    lockfile = read_lockfile(directory.lockfile_path)
    return LoadedRun(directory.path, lockfile, directory.completed(lockfile))


class PairComparison(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    a: str
    b: str
    a_path: str
    b_path: str
    comparable: bool
    differences: list[Difference]
    #: Instances in both runs (the paired sample); those only in one are left out.
    shared_instances: int
    missing_trials: int
    resolved: Comparison
    #: Multi-sample targets: "pass@k" and "sample_rate" comparisons over instances.
    by_k: dict[str, Comparison] = {}


class ComparisonReport(Record):
    record: Literal["ComparisonReport"] = "ComparisonReport"
    confidence: float
    n_resamples: int
    seed: int
    method: str
    pairs: list[PairComparison]
    #: Said when more than one pair is compared: intervals are per comparison.
    multiple_comparisons_note: str | None = None


class NotComparable(Exception):
    def __init__(self, found: list[Difference]) -> None:
        super().__init__("; ".join(f"{d.kind}: {d.detail}" for d in found))
        self.differences = found


def _per_instance(run: LoadedRun) -> dict[str, np.ndarray]:
    """Each instance's sample outcomes (resolved 0/1; a missing trial counts 0)."""
    ids = list(dict.fromkeys(t.key.instance_id for t in run.lockfile.trials))
    return dict(zip(ids, sample_outcomes(run.lockfile, run.results), strict=True))


def compare_pair(
    a: LoadedRun,
    b: LoadedRun,
    *,
    force: bool,
    n_resamples: int,
    confidence: float,
    seed: int,
    method: str,
) -> PairComparison:
    found = differences(a.lockfile, b.lockfile, same_target=False)
    if found and not force:
        raise NotComparable(found)
    outcomes_a, outcomes_b = _per_instance(a), _per_instance(b)
    shared = [i for i in outcomes_a if i in outcomes_b]
    if len(shared) < 1:
        raise UserError(f"{a.path} and {b.path} share no instance: nothing to compare")
    repo = {i.instance_id: i.repo for i in a.lockfile.dataset.instances}
    clusters = np.array([repo[i] for i in shared])
    options = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed, "method": method}

    def rates(outcomes: dict[str, np.ndarray], k: int | None) -> np.ndarray:
        if k is None:  # single sample: resolved or not
            return np.array([outcomes[i][0] for i in shared], dtype=float)
        return instance_pass_at_k([outcomes[i] for i in shared], k)

    samples = min(a.lockfile.target.samples, b.lockfile.target.samples)
    by_k: dict[str, Comparison] = {}
    if samples > 1:
        for k in pass_k_values(samples):
            by_k[f"pass@{k}"] = compare_outcomes(
                rates(outcomes_a, k), rates(outcomes_b, k), clusters, **options
            )
        by_k["sample_rate"] = by_k["pass@1"]
        resolved = by_k["pass@1"]
    else:
        resolved = compare_outcomes(
            rates(outcomes_a, None), rates(outcomes_b, None), clusters, **options
        )
    planned = len(a.lockfile.trials) + len(b.lockfile.trials)
    return PairComparison(
        a=a.name,
        b=b.name,
        a_path=str(a.path),
        b_path=str(b.path),
        comparable=not found,
        differences=found,
        shared_instances=len(shared),
        missing_trials=planned - len(a.results) - len(b.results),
        resolved=resolved,
        by_k=by_k,
    )


def compare_runs(
    paths: list[Path],
    *,
    force: bool = False,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "BCa",
) -> ComparisonReport:
    """Every run against the first."""
    if len(paths) < 2:
        raise UserError("compare needs at least two run directories")
    if not 0 < confidence < 1:
        raise UserError(f"--confidence {confidence}: must be between 0 and 1")
    if n_resamples < 100:
        raise UserError(f"--n-resamples {n_resamples}: use at least 100")
    runs = [load_run(path) for path in paths]
    pairs = [
        compare_pair(
            runs[0],
            other,
            force=force,
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
            method=method,
        )
        for other in runs[1:]
    ]
    note = None
    if len(pairs) > 1:
        m = len(pairs)
        note = (
            f"{m} comparisons against the first run, each at {confidence:.0%}: the chance that "
            f"at least one interval misses is larger; for a family-wise {confidence:.0%}, read "
            f"each at {1 - (1 - confidence) / m:.2%} (Bonferroni: --confidence "
            f"{1 - (1 - confidence) / m:.4f})"
        )
    return ComparisonReport(
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        method=method,
        pairs=pairs,
        multiple_comparisons_note=note,
    )


def _points(value: float) -> str:
    return f"{value * 100:+.1f} points"


def print_comparison_report(console: Console, report: ComparisonReport) -> None:
    level = f"{report.confidence * 100:g}%"
    for pair in report.pairs:
        c = pair.resolved
        title = f"{pair.a} vs {pair.b}"
        if not pair.comparable:
            title += " [NOT COMPARABLE: forced]"
        table = Table("", "value", title=title, title_justify="left")
        table.add_row("shared instances (paired)", str(pair.shared_instances))
        if pair.missing_trials:
            table.add_row("missing trials (counted unresolved)", str(pair.missing_trials))
        table.add_row(
            f"rate A ({level} Wilson)",
            f"{percent(c.rate_a.estimate)} [{percent(c.rate_a.low)}, {percent(c.rate_a.high)}]",
        )
        table.add_row(
            f"rate B ({level} Wilson)",
            f"{percent(c.rate_b.estimate)} [{percent(c.rate_b.low)}, {percent(c.rate_b.high)}]",
        )
        d = c.difference
        table.add_row(
            f"B - A ({level} paired bootstrap, {d.method})",
            f"{_points(d.estimate)} [{_points(d.low)}, {_points(d.high)}]",
        )
        if c.mcnemar is not None:
            table.add_row("discordant: A only / B only", f"{c.mcnemar.a_only} / {c.mcnemar.b_only}")
            table.add_row("exact McNemar p", f"{c.mcnemar.p_value:.3g}")
        table.add_row("outcome correlation", f"{c.correlation:.2f}")
        table.add_row(
            "minimum detectable difference (80% power)",
            f"{c.minimum_detectable_difference * 100:.1f} points",
        )
        if c.cluster is not None:
            note = f"; {c.cluster.note}" if c.cluster.note else ""
            table.add_row(
                f"by repo ({c.cluster.n_clusters} clusters, cluster bootstrap)",
                f"[{_points(c.cluster.low)}, {_points(c.cluster.high)}]{note}",
            )
        for name, other in pair.by_k.items():
            if name == "pass@1":
                continue
            od = other.difference
            table.add_row(
                f"{name}: A / B / B - A",
                f"{percent(other.rate_a.estimate)} / {percent(other.rate_b.estimate)} / "
                f"{_points(od.estimate)} [{_points(od.low)}, {_points(od.high)}]",
            )
        console.print(table, highlight=False)
        for difference in pair.differences:
            console.print(
                f"  [red]differs[/] {difference.kind}: {difference.detail}", highlight=False
            )
        console.print(f"[bold]verdict[/]: {c.verdict()}", highlight=False)
    if report.multiple_comparisons_note:
        console.print(f"[dim]note: {report.multiple_comparisons_note}[/]", highlight=False)
