"""Compare runs: a difference in resolve rate is reported with its interval over the
instances both runs share (Tango's score interval for 0/1 outcomes, a paired bootstrap
for per-instance rates: ``stats``), the discordant counts and exact McNemar, each run's
rate, the outcome correlation and the minimum detectable difference; never a raw rate
difference alone. Each instance's outcome in each run, discordant ones first, and each
run's provenance come with it.

Runs are first checked for comparability (``lockfile.differences`` with the target
allowed to differ): a difference in instances, test specs, images, harness, limits or
gate makes the comparison refuse, or, with ``force``, marks it not comparable.
When either run has several samples of an instance (a one-sample run against a two-sample
one too), each instance's share of resolved samples is paired (a paired bootstrap over
instances, unless every share is 0 or 1), pass@k and pass^k are compared for each k both runs have,
and an instance is discordant when its shares differ; always resampling instances, never
samples. Every output says what was paired (``PairComparison.paired``) and that invalid
and missing trials count as unresolved in the paired difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape

from evalrepro.console import Table
from evalrepro.errors import UserError
from evalrepro.plan.lockfile import differences
from evalrepro.records.compare import (
    ComparisonReport,
    InstanceOutcomes,
    PairComparison,
    RunCell,
    run_label,
)
from evalrepro.records.lockfile import Difference, Lockfile
from evalrepro.records.report import Provenance
from evalrepro.records.stats import Comparison, level_label, p_label
from evalrepro.records.trial import TrialResult
from evalrepro.report.metrics import sample_outcomes
from evalrepro.report.run_printer import percent
from evalrepro.report.run_report import provenance, trial_rows
from evalrepro.report.stats import compare_outcomes, instance_pass_at_k, pass_k_values
from evalrepro.report.timing import run_timing
from evalrepro.run.rundir import RunDirectory


@dataclass(frozen=True)
class LoadedRun:
    path: Path
    lockfile: Lockfile
    results: dict[str, TrialResult]

    @property
    def name(self) -> str:
        return run_label(self.lockfile.experiment, self.lockfile.target.target_id)


def load_run(path: Path) -> LoadedRun:
    directory, lockfile = RunDirectory.open(path)
    return LoadedRun(directory.path, lockfile, directory.completed(lockfile))


# --- per instance: each instance's outcome in each run ---------------------------------


def instance_outcomes(runs: list[LoadedRun]) -> list[InstanceOutcomes]:
    """Each instance of any run, discordant ones first, then by instance id."""
    cells: list[dict[str, RunCell]] = []
    repos: dict[str, str] = {}
    for run in runs:
        by_instance: dict[str, list] = {}
        for row in trial_rows(run.path, run.lockfile, run.results):
            by_instance.setdefault(row.instance_id, []).append(row)
            repos.setdefault(row.instance_id, row.repo)
        per_run = {}
        for instance_id, rows in by_instance.items():
            rows.sort(key=lambda r: r.sample_index)
            resolved = sum(r.outcome == "resolved" for r in rows)
            timed = [r.timing.seconds.wall for r in rows if r.timing is not None]
            per_run[instance_id] = RunCell(
                outcome=rows[0].outcome if len(rows) == 1 else f"{resolved}/{len(rows)} resolved",
                resolved=resolved,
                samples=len(rows),
                reason=rows[0].reason,
                attempts=sum(r.attempts for r in rows),
                seconds=round(sum(timed), 3) if timed else None,
                folder=rows[0].folder,
            )
        cells.append(per_run)
    ids = list(dict.fromkeys(i for per_run in cells for i in per_run))
    table = []
    for instance_id in ids:
        row = [per_run.get(instance_id) for per_run in cells]
        first = row[0]
        discordant = any(
            cell is not None and first is not None and _share_differs(cell, first)
            for cell in row[1:]
        )
        table.append(
            InstanceOutcomes(
                instance_id=instance_id,
                repo=repos.get(instance_id, ""),
                discordant=discordant,
                runs=row,
            )
        )
    table.sort(key=lambda r: (not r.discordant, r.instance_id))
    return table


def _share_differs(cell: RunCell, first: RunCell) -> bool:
    """Whether two cells' shares of resolved samples differ (1 of 1 and 2 of 2 agree);
    in integers, so that no rounding calls equal shares different."""
    return cell.resolved * first.samples != first.resolved * cell.samples


class NotComparable(Exception):
    def __init__(self, found: list[Difference], first: Path, second: Path) -> None:
        super().__init__("; ".join(f"{d.kind}: {d.detail}" for d in found))
        self.differences = found
        #: The two runs that differ (a comparison of several refuses at its first pair).
        self.first, self.second = first, second


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
        raise NotComparable(found, a.path, b.path)
    outcomes_a, outcomes_b = _per_instance(a), _per_instance(b)
    shared = [i for i in outcomes_a if i in outcomes_b]
    if len(shared) < 1:
        raise UserError(f"{a.path} and {b.path} share no instance: nothing to compare")
    repo = {i.instance_id: i.repo for i in a.lockfile.dataset.instances}
    clusters = np.array([repo[i] for i in shared])
    options = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed, "method": method}

    def rates(
        outcomes: dict[str, np.ndarray], k: int, ids: list[str], kind: str = "pass@"
    ) -> np.ndarray:
        # pass@1 of an instance is its share of resolved samples; of one sample, 0 or 1.
        return instance_pass_at_k([outcomes[i] for i in ids], k, kind=kind)

    samples_a = max(outcomes_a[i].size for i in shared)
    samples_b = max(outcomes_b[i].size for i in shared)
    values_a, values_b = rates(outcomes_a, 1, shared), rates(outcomes_b, 1, shared)
    resolved = compare_outcomes(values_a, values_b, clusters, **options)
    by_k: dict[str, Comparison] = {}
    if max(samples_a, samples_b) > 1:
        # Each instance's share of resolved samples, whatever either run's number of
        # samples: a run of one sample against one of two is not read at sample 0 only.
        by_k["pass@1"] = resolved
        for k in pass_k_values(min(samples_a, samples_b))[1:]:
            # pass@k only for a k both runs have, over the shared instances with k samples
            # in both (a target with missing: skip plans fewer); its n says how many.
            ids = [i for i in shared if min(outcomes_a[i].size, outcomes_b[i].size) >= k]
            if ids:
                by_k[f"pass@{k}"] = compare_outcomes(
                    rates(outcomes_a, k, ids),
                    rates(outcomes_b, k, ids),
                    np.array([repo[i] for i in ids]),
                    **options,
                )
                # pass^k (all k samples resolve) beside it, over the same instances.
                by_k[f"pass^{k}"] = compare_outcomes(
                    rates(outcomes_a, k, ids, "pass^"),
                    rates(outcomes_b, k, ids, "pass^"),
                    np.array([repo[i] for i in ids]),
                    **options,
                )
        by_k["sample_rate"] = resolved
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
        paired=_paired(len(shared), samples_a, samples_b, sorted(by_k)),
        samples_a=samples_a,
        samples_b=samples_b,
        a_higher=int(np.sum(values_a > values_b)),
        b_higher=int(np.sum(values_b > values_a)),
        resolved=resolved,
        by_k=by_k,
    )


def _samples(count: int) -> str:
    return "1 sample" if count == 1 else f"up to {count} samples"


def _paired(shared: int, samples_a: int, samples_b: int, compared: list[str]) -> str:
    """What the pair's paired difference is over, in words every output prints."""
    instances = f"{shared} shared instance{'' if shared == 1 else 's'}"
    if max(samples_a, samples_b) == 1:
        return f"each of the {instances}: its one trial in A and in B, resolved or not"
    said = (
        f"each of the {instances}: its share of resolved samples ({_samples(samples_a)} "
        f"in A, {_samples(samples_b)} in B)"
    )
    ks = sorted(int(n[5:]) for n in compared if n.startswith("pass@") and n != "pass@1")
    if ks:
        return f"{said}; pass@k and pass^k also for k = {', '.join(map(str, ks))}"
    if min(samples_a, samples_b) == 1:
        fewer = "A" if samples_a == 1 else "B"
        return f"{said}; pass@k for k > 1 not compared ({fewer} has one sample an instance)"
    return said


def describe_runs(
    runs: list[LoadedRun], *, confidence: float, n_resamples: int, seed: int
) -> tuple[list[Provenance], list[InstanceOutcomes]]:
    """Each run's provenance, and each instance's outcome in each run."""
    provenances = []
    for run in runs:
        results = run.results
        finished = [results[t.trial_id] for t in run.lockfile.trials if t.trial_id in results]
        rows = trial_rows(run.path, run.lockfile, results)
        timing = run_timing(run.path, finished, [r.timing for r in rows if r.timing])
        provenances.append(
            provenance(
                run.path,
                run.lockfile,
                timing,
                confidence=confidence,
                n_resamples=n_resamples,
                seed=seed,
            )
        )
    return provenances, instance_outcomes(runs)


def compare_runs(
    paths: list[Path],
    *,
    force: bool = False,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "BCa",
) -> ComparisonReport:
    """Every run against the first. With m > 1 pairs each interval, test and verdict is at
    1 - (1 - confidence)/m (Bonferroni), so that all m hold together at ``confidence``;
    Holm would reject more but has no matching intervals, and a verdict must agree with
    the interval it prints."""
    if len(paths) < 2:
        raise UserError("compare needs at least two run directories")
    if not 0 < confidence < 1:
        raise UserError(f"--confidence {confidence}: must be between 0 and 1")
    if n_resamples < 100:
        raise UserError(f"--n-resamples {n_resamples}: use at least 100")
    runs = [load_run(path) for path in paths]
    m = len(runs) - 1
    each = 1 - (1 - confidence) / m
    pairs = [
        compare_pair(
            runs[0],
            other,
            force=force,
            n_resamples=n_resamples,
            confidence=each,
            seed=seed,
            method=method,
        )
        for other in runs[1:]
    ]
    note = None
    if m > 1:
        note = (
            f"{m} comparisons against the first run, Bonferroni-corrected: each interval, "
            f"McNemar test and verdict is at {level_label(each)} (alpha {1 - each:.3g}), so that "
            f"all {m} hold together at {level_label(confidence)}"
        )
    provenances, instances = describe_runs(
        runs, confidence=each, n_resamples=n_resamples, seed=seed
    )
    return ComparisonReport(
        confidence=confidence,
        comparison_confidence=each,
        correction="Bonferroni" if m > 1 else "none",
        n_resamples=n_resamples,
        seed=seed,
        method=method,
        pairs=pairs,
        multiple_comparisons_note=note,
        runs=provenances,
        instances=instances,
    )


def _points(value: float) -> str:
    return f"{value * 100:+.1f} points"


def print_comparison_report(console: Console, report: ComparisonReport) -> None:
    for pair in report.pairs:
        c = pair.resolved
        level = level_label(c.confidence)
        title = escape(f"{pair.a} vs {pair.b}")
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
        # The method really used: Tango's score interval for 0/1, a bootstrap for rates.
        table.add_row(
            f"B - A ({level} CI, {d.method})",
            f"{_points(d.estimate)} [{_points(d.low)}, {_points(d.high)}]",
        )
        # The discordant instances the per-instance table flags, counted the same way.
        counts = f"{pair.a_higher} / {pair.b_higher}"
        if pair.a_higher is None or pair.b_higher is None:
            pass  # not recorded (schema 2)
        elif pair.samples_a == pair.samples_b == 1:
            table.add_row("discordant: A only / B only", counts)
        else:
            table.add_row("discordant (share of resolved samples): A higher / B higher", counts)
        if c.mcnemar is not None:
            table.add_row("exact McNemar p", p_label(c.mcnemar.p_value))
        elif c.sign_flip is not None:
            table.add_row(f"{c.sign_flip.name} p", p_label(c.sign_flip.p_value))
        correlation = "undefined (a run is constant)"
        if c.correlation is not None:
            correlation = f"{c.correlation:.2f}"
        table.add_row("outcome correlation", correlation)
        table.add_row(
            "minimum detectable difference (80% power)",
            f"{c.minimum_detectable_difference * 100:.1f} points",
        )
        if c.cluster is not None:
            note = f"; {c.cluster.note}" if c.cluster.note else ""
            table.add_row(
                f"by repo ({level}, {c.cluster.n_clusters} clusters, cluster bootstrap)",
                f"[{_points(c.cluster.low)}, {_points(c.cluster.high)}]{note}",
            )
        for name, other in pair.by_k.items():
            if other == c:  # pass@1 and the per-sample rate: the rows above
                continue
            od = other.difference
            over = f" ({other.n} instances)" if other.n != pair.shared_instances else ""
            table.add_row(
                f"{name}{over}: A / B / B - A",
                f"{percent(other.rate_a.estimate)} / {percent(other.rate_b.estimate)} / "
                f"{_points(od.estimate)} [{_points(od.low)}, {_points(od.high)}]",
            )
        console.print(table, highlight=False)
        for difference in pair.differences:
            console.print(
                f"  [red]differs[/] {difference.kind}: {escape(difference.detail)}",
                highlight=False,
            )
        # What the verdict is over, and how failures count in it, where the verdict is.
        console.print(f"[bold]paired[/]: {escape(pair.paired)}", highlight=False)
        console.print(f"[bold]counted[/]: {escape(pair.counting)}", highlight=False)
        console.print(f"[bold]verdict[/]: {c.verdict()}", highlight=False)
    if report.multiple_comparisons_note:
        console.print(f"[dim]note: {report.multiple_comparisons_note}[/]", highlight=False)
    print_discordant(console, report)


#: Discordant instances the console lists (JSON and HTML list every instance).
_SHOWN_DISCORDANT = 25


def print_discordant(console: Console, report: ComparisonReport) -> None:
    discordant = [row for row in report.instances if row.discordant]
    if not discordant or not report.runs:
        return
    names = [run_label(p.experiment, p.target_id) for p in report.runs]
    table = Table(
        "instance",
        *(escape(name) for name in names),
        title=f"discordant instances ({len(discordant)})",
        title_justify="left",
    )
    for row in discordant[:_SHOWN_DISCORDANT]:
        cells = [
            "-" if cell is None else escape(f"{cell.outcome} ({cell.reason})") for cell in row.runs
        ]
        table.add_row(escape(row.instance_id), *cells)
    console.print(table, highlight=False)
    if len(discordant) > _SHOWN_DISCORDANT:
        console.print(
            f"[dim]and {len(discordant) - _SHOWN_DISCORDANT} more (--json or --html lists "
            "every instance)[/]",
            highlight=False,
        )
