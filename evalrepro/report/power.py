"""Power of the verdict of ``evalrepro compare`` (docs/statistics.md, "Planning a run
that can decide"): how many instances it needs to detect a difference, and what n
instances can detect.

The power is that of the rule the verdict applies to one-sample runs (0/1 outcomes), not
of a normal approximation: a direction is claimed when the exact McNemar p < alpha **and**
Tango's interval excludes 0, which it does exactly when the uncorrected McNemar statistic
|b - c| / sqrt(b + c) exceeds z_{1 - alpha/2} (``evalrepro.report.stats``). Both depend
on the discordant pairs only, so with per-instance probabilities p10 (A resolves, B not)
and p01 (B only):

    D ~ Binomial(n, p10 + p01),   B-only | D = d ~ Binomial(d, p01 / (p10 + p01)),
    power(n) = sum_d P(D = d) * P(the verdict claims a direction | d),

the second factor a sum over the two tails of the rejection set {x <= c(d)} and
{x >= d - c(d)}, c(d) the largest count both conditions reject. Exact power is not
monotone in n (the rejection set moves in integer steps), so the n required is the
smallest n from which every n up to 1.25 n + 10 reaches the target, and the first n that
reaches it is reported beside it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from rich.console import Console

from evalrepro.errors import UserError
from evalrepro.records.power import PilotEstimate, PowerAnalysis

#: The largest n the search for the required n scans.
MAX_N = 100_000

TEST = "exact McNemar and Tango's interval (the compare verdict), two-sided"


def _z(alpha: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(1 - alpha / 2))


def critical_counts(max_d: int, alpha: float) -> np.ndarray:
    """c(d) for d = 0..max_d: the largest count x <= d/2 of the rarer discordant kind at
    which the verdict claims a direction (-1: none). Both conditions only tighten as x
    nears d/2, so the rejection set is the two tails x <= c(d) and x >= d - c(d)."""
    from scipy.stats import binom

    d = np.arange(max_d + 1)
    # Exact McNemar: 2 P(X <= x) < alpha, X ~ Binomial(d, 1/2).
    exact = binom.ppf(alpha / 2, d, 0.5).astype(np.int64) - 1
    # ppf is computed in floating point: step to the exact boundary.
    exact = np.where(2 * binom.cdf(exact, d, 0.5) < alpha, exact, exact - 1)
    exact = np.where(2 * binom.cdf(exact + 1, d, 0.5) < alpha, exact + 1, exact)
    # Tango: (d - 2x) / sqrt(d) > z, i.e. x < (d - z sqrt(d)) / 2.
    bound = (d - _z(alpha) * np.sqrt(d)) / 2
    tango = np.ceil(bound).astype(np.int64) - 1
    critical = np.minimum(np.minimum(exact, tango), (d - 1) // 2)
    critical[0] = -1
    return np.maximum(critical, -1)


def conditional_power(critical: np.ndarray, q: float) -> np.ndarray:
    """P(the verdict claims a direction | d discordant pairs) for each d, when each
    discordant pair is B-only with probability q."""
    from scipy.stats import binom

    d = np.arange(critical.size)
    low = binom.cdf(critical, d, q)
    high = binom.sf(d - critical - 1, d, q)
    return np.where(critical >= 0, low + high, 0.0)


def _power(n: int, discordance: float, given_d: np.ndarray) -> float:
    """sum_d P(D = d) given_d[d], D ~ Binomial(n, discordance), over the d that carry
    all but a negligible share (< 1e-20) of the probability."""
    from scipy.special import gammaln

    if discordance <= 0:
        return 0.0
    if discordance >= 1:
        return float(given_d[n])
    mean, sd = n * discordance, math.sqrt(n * discordance * (1 - discordance))
    lo, hi = max(0, int(mean - 10 * sd) - 10), min(n, int(mean + 10 * sd) + 10)
    d = np.arange(lo, hi + 1)
    log_pmf = (
        gammaln(n + 1)
        - gammaln(d + 1)
        - gammaln(n - d + 1)
        + d * math.log(discordance)
        + (n - d) * math.log1p(-discordance)
    )
    return float(np.clip(np.exp(log_pmf) @ given_d[lo : hi + 1], 0.0, 1.0))


def exact_power(n: int, p10: float, p01: float, alpha: float) -> float:
    """The probability that the verdict over n instances claims a direction (either), when
    each instance is A-only with probability p10 and B-only with probability p01."""
    _check_cell(p10, p01)
    discordance = p10 + p01
    if n < 1 or discordance == 0:
        return 0.0
    given_d = conditional_power(critical_counts(n, alpha), p01 / discordance)
    return _power(n, discordance, given_d)


def required_n(
    p10: float, p01: float, alpha: float, target: float, max_n: int = MAX_N
) -> tuple[int | None, int | None, int | None]:
    """(required, stable_until, first): the smallest n from which the power reaches
    ``target`` for every n up to stable_until = ceil(1.25 n) + 10, and the smallest n that
    reaches it at all; None when no n up to ``max_n`` does."""
    _check_cell(p10, p01)
    discordance = p10 + p01
    if discordance == 0 or p10 == p01:
        return None, None, None
    q = p01 / discordance
    given_d = np.zeros(0)
    first = start = None
    for n in range(1, max_n + 1):
        if n >= given_d.size:
            # Grown by doubling: most designs need far fewer than max_n instances.
            given_d = conditional_power(critical_counts(min(max_n, 2 * n + 1024), alpha), q)
        if _power(n, discordance, given_d) >= target:
            if first is None:
                first = n
            if start is None:
                start = n
            if n >= _stable_until(start):
                return start, _stable_until(start), first
        else:
            start = None
    return None, None, first


def _stable_until(n: int) -> int:
    return math.ceil(1.25 * n) + 10


def detectable_difference(n: int, discordance: float, alpha: float, target: float) -> float | None:
    """The smallest |p01 - p10| that n instances detect with ``target`` power when the
    discordance p10 + p01 is held; None when not even p01 - p10 = discordance does.
    Power rises with |p01 - p10| at a fixed discordance, so bisection finds it."""
    if n < 1 or discordance <= 0:
        return None
    critical = critical_counts(n, alpha)

    def power(delta: float) -> float:
        return _power(
            n, discordance, conditional_power(critical, (discordance + delta) / 2 / discordance)
        )

    if power(discordance) < target:
        return None
    low, high = 0.0, discordance
    while high - low > 1e-6:
        middle = (low + high) / 2
        low, high = (low, middle) if power(middle) >= target else (middle, high)
    return high


def normal_n(p10: float, p01: float, alpha: float, target: float) -> float | None:
    """Connor (1987): n = (z_{1-alpha/2} sqrt(pd) + z_power sqrt(pd - delta^2))^2 / delta^2,
    pd = p10 + p01, delta = p01 - p10; the normal approximation of McNemar's test."""
    from scipy.special import ndtri

    pd, delta = p10 + p01, p01 - p10
    if delta == 0:
        return None
    root = _z(alpha) * math.sqrt(pd) + float(ndtri(target)) * math.sqrt(pd - delta**2)
    return root**2 / delta**2


def _check_cell(p10: float, p01: float) -> None:
    if not (0 <= p10 <= 1 and 0 <= p01 <= 1 and p10 + p01 <= 1):
        raise ValueError(f"need p10, p01 >= 0 with p10 + p01 <= 1, got {p10}, {p01}")


def cells(p_a: float, p_b: float, agreement: float) -> tuple[float, float]:
    """(p10, p01) of per-instance rates p_a, p_b and the share of instances on which the
    runs agree: the discordance 1 - agreement splits so that p01 - p10 = p_b - p_a."""
    for name, value in (("rate", p_a), ("rate", p_b), ("agreement", agreement)):
        if not 0 <= value <= 1:
            raise UserError(f"--power-{name}s {value}: must be between 0 and 1")
    discordance, delta = 1 - agreement, p_b - p_a
    p10, p01 = (discordance - delta) / 2, (discordance + delta) / 2
    # Each of the four cells of the 2x2 table must be a probability.
    both = p_a - p10
    if min(p10, p01) < -1e-12 or both < -1e-12 or 1 - both - p10 - p01 < -1e-12:
        raise UserError(
            f"--power-agreement {agreement}: rates {p_a} and {p_b} cannot agree on that "
            f"share of instances (need {1 - min(1, 1 - abs(delta)):.3g} <= 1 - agreement "
            f"<= {min(p_a + p_b, 2 - p_a - p_b):.3g})"
        )
    return max(p10, 0.0), max(p01, 0.0)


def _wilson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    from evalrepro.report.stats import wilson_interval

    return wilson_interval(successes, n, confidence)


def analyse(
    *,
    p_a: float | None,
    p_b: float | None,
    p10: float,
    p01: float,
    alpha: float,
    target: float,
    n: int | None,
    difference: float | None = None,
    pilot: PilotEstimate | None = None,
    max_n: int = MAX_N,
) -> PowerAnalysis:
    """The power analysis of a design with per-instance rates p_a, p_b and discordant
    probabilities p10, p01 (a pilot's estimates, or stated), planned for ``difference``
    (B - A; default p01 - p10) with the discordance p10 + p01 held."""
    if not 0 < alpha < 1:
        raise UserError(f"alpha {alpha}: must be between 0 and 1")
    if not 0 < target < 1:
        raise UserError(f"--power-target {target}: must be between 0 and 1")
    if n is not None and n < 1:
        raise UserError(f"--power-n {n}: must be at least 1")
    discordance = p10 + p01
    observed = p01 - p10
    stated = difference is not None
    delta = observed if difference is None else difference
    if abs(delta) > discordance + 1e-12:
        raise UserError(
            f"--power-difference {delta:g}: larger than the discordance {discordance:.3g} "
            "(instances resolved by one run only); a difference needs that many discordant"
        )
    plan10, plan01 = max(0.0, (discordance - delta) / 2), max(0.0, (discordance + delta) / 2)
    notes = [
        "power of the one-sample verdict (0/1 outcomes): exact McNemar p < alpha and "
        "Tango's interval excluding 0, two-sided, summed exactly over the discordant counts",
        f"required n: the smallest n from which every n up to 1.25 n + 10 has the power "
        f"(exact power is not monotone in n); searched up to {max_n}",
        "detectable difference: |B - A| at the target power with the discordance held",
    ]
    if pilot is not None:
        notes.append(
            "the rates and discordance are a pilot's estimates: the required n at the ends "
            "of the discordance interval shows their uncertainty; the power to detect the "
            "observed difference is a plug-in, no evidence beyond the p-value"
        )
    required, until, first = required_n(plan10, plan01, alpha, target, max_n)
    at_low = at_high = None
    if pilot is not None:
        for end in (pilot.discordance_low, pilot.discordance_high):
            found = None
            if abs(delta) <= end and delta != 0:
                found = required_n((end - delta) / 2, (end + delta) / 2, alpha, target, max_n)[0]
            at_low, at_high = (found, at_high) if end == pilot.discordance_low else (at_low, found)
    return PowerAnalysis(
        source="stated" if pilot is None else "runs",
        test=TEST,
        alpha=alpha,
        target_power=target,
        p_a=p_a,
        p_b=p_b,
        p10=plan10,
        p01=plan01,
        difference=delta,
        difference_from="stated" if stated else "design" if pilot is None else "observed",
        n=n,
        power_at_n=None if n is None else exact_power(n, plan10, plan01, alpha),
        detectable_difference=None
        if n is None
        else detectable_difference(n, discordance, alpha, target),
        required_n=required,
        stable_until=until,
        first_n=first,
        max_n=max_n,
        normal_n=normal_n(plan10, plan01, alpha, target),
        pilot=pilot,
        required_n_at_discordance_low=at_low,
        required_n_at_discordance_high=at_high,
        notes=notes,
    )


# --- from a pilot run pair, or from stated numbers; printing ---------------------------


def from_runs(
    a_path: Path,
    b_path: Path,
    *,
    confidence: float,
    target: float,
    difference: float | None,
    force: bool = False,
) -> PowerAnalysis:
    """The power analysis of two runs' shared instances, their discordance a pilot."""
    from evalrepro.plan.lockfile import differences
    from evalrepro.report.compare import _per_instance, load_run

    if not 0 < confidence < 1:
        raise UserError(f"--confidence {confidence}: must be between 0 and 1")
    a, b = load_run(a_path), load_run(b_path)
    found = differences(a.lockfile, b.lockfile, same_target=False)
    if found and not force:
        raise UserError(
            f"{a.path} and {b.path} measured different experiments ({found[0].kind}: "
            f"{found[0].detail}; {len(found)} difference(s)): --force plans from them anyway"
        )
    outcomes_a, outcomes_b = _per_instance(a), _per_instance(b)
    shared = [i for i in outcomes_a if i in outcomes_b]
    if not shared:
        raise UserError(f"{a.path} and {b.path} share no instance: nothing to plan from")
    if any(outcomes_a[i].size > 1 or outcomes_b[i].size > 1 for i in shared):
        # The verdict then pairs shares of resolved samples with a sign-flip test, whose
        # power depends on how samples vary within an instance: not computed here.
        raise UserError(
            "compare --power: a run has several samples an instance; power is computed for "
            "one-sample runs (0/1 outcomes) only: use --power-rates for a stated design"
        )
    x = np.array([outcomes_a[i][0] for i in shared], dtype=float)
    y = np.array([outcomes_b[i][0] for i in shared], dtype=float)
    n = len(shared)
    a_only, b_only = int(np.sum((x == 1) & (y == 0))), int(np.sum((x == 0) & (y == 1)))
    low, high = _wilson(a_only + b_only, n, confidence)
    pilot = PilotEstimate(
        a=a.name,
        b=b.name,
        n=n,
        a_only=a_only,
        b_only=b_only,
        discordance_low=low,
        discordance_high=high,
        confidence=confidence,
    )
    return analyse(
        p_a=float(x.mean()),
        p_b=float(y.mean()),
        p10=a_only / n,
        p01=b_only / n,
        alpha=1 - confidence,
        target=target,
        n=n,
        difference=difference,
        pilot=pilot,
    )


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _n(value: int | None, analysis: PowerAnalysis) -> str:
    return f"more than {analysis.max_n}" if value is None else str(value)


def print_power_analysis(console: Console, analysis: PowerAnalysis) -> None:
    from rich.markup import escape

    from evalrepro.console import Table

    target = _pct(analysis.target_power)
    title = "power of the compare verdict"
    if analysis.pilot is not None:
        title += escape(f": {analysis.pilot.a} vs {analysis.pilot.b} (pilot)")
    table = Table("", "value", title=title, title_justify="left")
    table.add_row("test", f"{analysis.test}, alpha {analysis.alpha:.3g}")
    if analysis.p_a is not None and analysis.p_b is not None:
        table.add_row("rates A / B", f"{_pct(analysis.p_a)} / {_pct(analysis.p_b)}")
    pilot = analysis.pilot
    if pilot is not None:
        level = f"{pilot.confidence * 100:g}%"
        table.add_row(
            f"discordant: A only / B only (of {pilot.n}; {level} Wilson of the discordance)",
            f"{pilot.a_only} / {pilot.b_only} ({_pct((pilot.a_only + pilot.b_only) / pilot.n)} "
            f"[{_pct(pilot.discordance_low)}, {_pct(pilot.discordance_high)}])",
        )
    table.add_row(
        "planned: p10 (A only) / p01 (B only)", f"{analysis.p10:.4f} / {analysis.p01:.4f}"
    )
    table.add_row(
        f"difference planned for (B - A, {analysis.difference_from})",
        f"{analysis.difference * 100:+.1f} points",
    )
    if analysis.n is not None:
        power = "-" if analysis.power_at_n is None else _pct(analysis.power_at_n)
        table.add_row(f"power with n = {analysis.n}", power)
        mdd = analysis.detectable_difference
        table.add_row(
            f"detectable difference with n = {analysis.n} ({target} power)",
            "none at this discordance" if mdd is None else f"{mdd * 100:.1f} points",
        )
    if analysis.difference == 0:
        needed = "none: no difference to detect"
    else:
        needed = _n(analysis.required_n, analysis)
        if analysis.required_n is not None:
            needed += f" (every n up to {analysis.stable_until})"
            if analysis.first_n != analysis.required_n:
                needed += f"; first reached at {analysis.first_n}"
    table.add_row(f"instances needed ({target} power)", needed)
    if pilot is not None and analysis.difference != 0:
        ends = []
        for end, found in (
            (pilot.discordance_low, analysis.required_n_at_discordance_low),
            (pilot.discordance_high, analysis.required_n_at_discordance_high),
        ):
            # A discordance below the difference cannot hold it: no n to plan.
            ends.append("-" if end < abs(analysis.difference) else _n(found, analysis))
        table.add_row(
            "instances needed at the discordance interval's ends (low / high)", " / ".join(ends)
        )
    if analysis.normal_n is not None:
        table.add_row("normal approximation (Connor 1987)", f"{analysis.normal_n:.1f}")
    console.print(table, highlight=False)
    for note in analysis.notes:
        console.print(f"[dim]note: {escape(note)}[/]", highlight=False)
