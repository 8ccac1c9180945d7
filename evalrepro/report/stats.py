"""Statistics behind reports and comparisons: pure functions over numpy arrays.

Which method for what, and why (../shared/docs/semantics.md, "Metrics and gates" and
"Comparing runs"):

* One run's resolve rate: the **Wilson score interval** (``wilson_interval``). Unlike the
  normal (Wald) interval it stays inside [0, 1] and keeps close to nominal coverage at
  rates near 0 or 1 and at small n. For per-instance rates in [0, 1] (several samples per
  instance) it is conservative: such a variable's variance is at most p(1 - p).
* pass@k: the **unbiased estimator** 1 - C(n-c, k)/C(n, k), computed as a product so that
  it neither overflows nor cancels (``pass_at_k``), averaged over instances that have at
  least k samples; its interval is a bootstrap over instances, never over samples
  (``pass_at_k_interval``): instances are the sampling unit.
* pass^k (tau-bench's "pass hat k": all k samples resolve): per instance C(c, k)/C(n, k),
  the probability that k samples drawn without replacement are all resolved, the
  unbiased estimator of p^k (``pass_hat_k``); averaged over the same instances as pass@k
  and with the same bootstrap over instances (``pass_hat_k_interval``).
* The difference between two runs on the same instances, 0/1 outcomes (one sample per
  instance): **Tango's asymptotic score interval** for paired proportions
  (``tango_interval``; Tango, Statistics in Medicine 17, 1998), at every n. It inverts
  the score test of p_B - p_A = delta, the discordance rate at its restricted maximum
  likelihood: the discordant counts and a root find, no resampling. Always, because in
  seeded simulations (2,000 datasets per case, tests/test_stats.py) the paired BCa
  bootstrap covers a true difference of 4 points with 8% discordant pairs in only 50% of
  datasets at n = 12, 80% at n = 30 and 92% at n = 100, and 89-92% at n = 12 even with
  40% discordant; it is accurate at n = 500, or from n = 30 with 40% discordant, where
  Tango's interval agrees with it. Tango's covers 94-100% in all those cases (exactly,
  summed over every table: 0.940 to 0.9996), and its exact coverage is at least 0.93 over
  a grid of 325 true cells at each of n = 12, 30 and 100. It is conservative (up to 1.0)
  when about one discordant pair or fewer is expected: with none it still reports
  +-z^2/(n + z^2), the difference such a sample cannot rule out. It excludes 0 exactly
  when the uncorrected McNemar statistic (b - c)/sqrt(b + c) exceeds z.
* The difference between per-instance rates in [0, 1] (several samples per instance,
  pass@k): a **paired bootstrap** (``paired_bootstrap``), resampling instances with both
  runs' values together, so the strong within-instance correlation (an easy instance is
  easy for both) narrows the interval as it should. The default is **BCa** (bias-corrected
  and accelerated), which corrects for the skewed bootstrap distribution of rates near 0
  or 1; ``scipy.stats.bootstrap`` does the work. When every per-instance difference is
  equal (identical runs, n = 1) there is no sampling variation to resample: the interval
  is zero-width at the estimate, method ``"degenerate"``, never NaN.
* The discordant pairs: the **exact McNemar test** (``mcnemar_exact``), a two-sided
  binomial test of the B-only count among the discordant pairs. Exact because discordant
  counts are often small, where the chi-square version is poor.
* For rates, the **sign-flip test** (``sign_flip_test``): the paired permutation test of
  the per-instance differences, exact up to 20 differing instances. On 0/1 outcomes it
  is exact McNemar's test; on rates it keeps the verdict as cautious as McNemar keeps
  it on outcomes, where a bootstrap interval over a dozen instances is too narrow.
* How far apart two runs must be to be told apart: the **minimum detectable difference**
  of a paired design under the normal approximation (``minimum_detectable_difference``),
  and the analytic paired standard error (``paired_standard_error``), a check on the
  bootstrap.
* Sensitivity: a **cluster bootstrap** over repositories (``cluster_bootstrap``).
  Instances of one repository are not independent (shared code, shared test suite), and
  the instance-level bootstrap ignores that. With few clusters (SWE-bench has 12 repos)
  the cluster bootstrap is itself unreliable, so it is reported beside the main interval,
  flagged when there are fewer than 10 clusters, and never replaces it.

``compare_outcomes`` bundles all of it in a ``Comparison`` whose ``verdict()`` says the
result in one plain line, by one rule that cannot contradict the reported test: for 0/1
outcomes a direction ("B is better" / "A is better") is claimed only when the interval
excludes 0 **and** the exact McNemar p < alpha = 1 - confidence; otherwise "not
distinguishable at this n", saying which of the two disagreed. (The exact test keeps its
level at every n, so the verdict never claims more than it.) For rates the same rule
holds with the sign-flip test in McNemar's place. The cluster bootstrap is a sensitivity
line: with fewer than ``MIN_CLUSTERS`` clusters it is only mentioned, never decides;
with enough, a cluster interval that does not point the same way turns a claimed
direction into "not distinguishable", saying why.

Every random draw comes from ``numpy.random.default_rng(seed)``, and resamples are drawn
in bounded batches of arrays (never a Python loop per resample), so a result is
reproducible and its memory does not grow with ``n_resamples``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from evalrepro.records.stats import (
    MIN_CLUSTERS,
    ClusterInterval,
    Comparison,
    Interval,
    McNemar,
    SignFlip,
)

# scipy is imported inside the functions that use it: the models here (``Interval``) are
# part of every record, and ``run``, ``lock`` and ``verify`` import them without computing
# an interval; scipy.stats alone costs them about 0.5 s and 70 MiB at startup
# (benchmarks/startup.py). A Wilson interval needs only scipy.special.

#: Elements per resampled batch: ~8 MB of float64, which keeps the gathers in cache
#: (measured faster than one large batch) and bounds peak memory at any n_resamples.
_BATCH_ELEMENTS = 1 << 20


# --- one proportion ------------------------------------------------------------------


#: ndtri(1 - (1 - c)/2) for the usual confidences c, as scipy computes it, bit for bit
#: (tests/test_stats.py checks): importing scipy.special alone costs a report 0.2-0.3 s.
_Z = {
    0.8: 1.2815515655446004,
    0.9: 1.6448536269514722,
    0.95: 1.959963984540054,
    0.99: 2.5758293035489004,
}


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if confidence in _Z:
        return _Z[confidence]
    # scipy.stats.norm.ppf is ndtri, bit for bit; scipy.special loads in a third of the
    # time, and a Wilson interval (every report of one-sample runs) needs nothing else.
    from scipy.special import ndtri

    return float(ndtri(1 - (1 - confidence) / 2))


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion successes/n, within [0, 1] always: exactly 0
    below when successes = 0, exactly 1 above when successes = n; (0, 1) when n = 0.

    center = (p + z^2/2n) / (1 + z^2/n); half-width = z/(1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2).
    ``successes`` may be fractional (a sum of per-instance rates): see the module docstring.
    """
    z = _z(confidence)
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2n = z * z / n
    center = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # At 0 or n successes the bound is 0 or 1 exactly; rounding would leave ~1e-17.
    low = 0.0 if successes == 0 else min(max(center - half, 0.0), 1.0)
    high = 1.0 if successes == n else min(max(center + half, 0.0), 1.0)
    return low, high


# --- pass@k ----------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one instance with n samples of which c resolved.

    1 - C(n-c, k)/C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k/i); 1 when n - c < k (every
    draw of k samples contains a resolved one).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one instance with n samples of which c resolved: the probability that k
    samples drawn without replacement all resolve, C(c, k)/C(n, k).

    Exact integers divided once (Python's int division is correctly rounded, whatever
    their size): the nearest float to the true value, so equal shares are equal floats
    (a bootstrap's BCa bias correction counts resamples below the estimate exactly).
    0 when c < k.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k > n:
        raise ValueError(f"pass^{k} needs at least {k} samples, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    return math.comb(c, k) / math.comb(n, k)


#: Each per-instance estimator by the name its metric is printed with ("pass@2", "pass^2").
ESTIMATORS: dict[str, Callable[[int, int, int], float]] = {"pass@": pass_at_k, "pass^": pass_hat_k}


def instance_pass_at_k(
    outcomes_per_instance: Sequence[npt.ArrayLike], k: int, *, kind: str = "pass@"
) -> np.ndarray:
    """pass@k (``kind="pass^"``: pass^k) of each instance (its samples' 0/1 outcomes);
    each needs >= k samples."""
    estimator = ESTIMATORS[kind]
    values = np.empty(len(outcomes_per_instance))
    for index, outcomes in enumerate(outcomes_per_instance):
        samples = np.asarray(outcomes, dtype=bool)
        if samples.size < k:
            raise ValueError(f"instance {index} has {samples.size} samples, {kind}{k} needs {k}")
        values[index] = estimator(samples.size, int(samples.sum()), k)
    return values


def instance_pass_hat_k(outcomes_per_instance: Sequence[npt.ArrayLike], k: int) -> np.ndarray:
    """pass^k of each instance (its samples' 0/1 outcomes); each needs >= k samples."""
    return instance_pass_at_k(outcomes_per_instance, k, kind="pass^")


def _with_k_samples(outcomes_per_instance: Sequence[npt.ArrayLike], k: int) -> list[np.ndarray]:
    kept = [np.asarray(o, dtype=bool) for o in outcomes_per_instance]
    kept = [o for o in kept if o.size >= k]
    if not kept:
        raise ValueError(f"no instance has the {k} samples pass@{k} needs")
    return kept


def instances_with_samples(outcomes_per_instance: Sequence[npt.ArrayLike], k: int) -> int:
    """How many instances have the k samples pass@k needs: those its mean is over."""
    return sum(np.asarray(o).size >= k for o in outcomes_per_instance)


def pass_at_k_mean(outcomes_per_instance: Sequence[npt.ArrayLike], k: int) -> float:
    """pass@k of a run: the mean over instances with at least k samples."""
    return float(instance_pass_at_k(_with_k_samples(outcomes_per_instance, k), k).mean())


def pass_k_values(max_samples: int) -> list[int]:
    """The k to report for a run with ``max_samples`` samples per instance: powers of two
    up to it, plus 5 and 10 where they fit."""
    values = {1 << i for i in range(max(max_samples, 1).bit_length()) if 1 << i <= max_samples}
    values |= {k for k in (5, 10) if k <= max_samples}
    return sorted(values)


def pass_hat_k_mean(outcomes_per_instance: Sequence[npt.ArrayLike], k: int) -> float:
    """pass^k of a run: the mean over instances with at least k samples."""
    values = instance_pass_hat_k(_with_k_samples(outcomes_per_instance, k), k)
    return float(values.mean())


def pass_at_k_interval(
    outcomes_per_instance: Sequence[npt.ArrayLike],
    k: int,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: str = "BCa",
    seed: int = 0,
    kind: str = "pass@",
) -> Interval:
    """pass@k (``kind="pass^"``: pass^k) with a bootstrap interval over instances
    (instances are resampled, each keeping its own samples: the instance is the sampling
    unit, not the sample)."""
    values = instance_pass_at_k(_with_k_samples(outcomes_per_instance, k), k, kind=kind)
    return _bootstrap(
        (values,),
        lambda x, axis: np.mean(x, axis=axis),
        values - values.mean(),
        paired=False,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
    )


def pass_hat_k_interval(
    outcomes_per_instance: Sequence[npt.ArrayLike],
    k: int,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: str = "BCa",
    seed: int = 0,
) -> Interval:
    """pass^k with the bootstrap interval over instances pass@k has."""
    return pass_at_k_interval(
        outcomes_per_instance,
        k,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        kind="pass^",
    )


# --- two runs on the same instances ------------------------------------------------


def _paired(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Two aligned 1-D arrays of per-instance outcomes or rates in [0, 1], as float64."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"need two 1-D arrays of equal length, got {x.shape} and {y.shape}")
    if x.size == 0:
        raise ValueError("no instances to compare")
    for name, values in (("A", x), ("B", y)):
        if not np.all((values >= 0) & (values <= 1)):  # also rejects NaN
            raise ValueError(f"run {name}: outcomes must be in [0, 1]")
    return x, y


def _is_binary(values: np.ndarray) -> bool:
    return bool(np.all((values == 0) | (values == 1)))


def _batch(n: int, n_resamples: int) -> int:
    return max(1, min(n_resamples, _BATCH_ELEMENTS // max(n, 1)))


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(b, axis=axis) - np.mean(a, axis=axis)


def _bootstrap(
    data: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    deviations: np.ndarray,
    *,
    paired: bool,
    n_resamples: int,
    confidence: float,
    method: str,
    seed: int,
) -> Interval:
    """scipy's bootstrap, with the cases it cannot handle answered without NaN.

    ``deviations`` are the per-instance values minus the estimate: all zero (or n < 2)
    means there is nothing to resample and the interval is zero-width.
    """
    from scipy import stats as sps

    _z(confidence)
    estimate = float(statistic(*data, axis=-1))
    if deviations.size < 2 or np.all(deviations == deviations[0]):
        return Interval(
            estimate=estimate,
            low=estimate,
            high=estimate,
            method="degenerate",
            confidence=confidence,
            standard_error=0.0,
        )
    options = {
        "paired": paired,
        "vectorized": True,
        "confidence_level": confidence,
        "batch": _batch(deviations.size, n_resamples),
    }
    with warnings.catch_warnings():
        # BCa can be undefined for a near-degenerate distribution; answered just below.
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        result = sps.bootstrap(
            data,
            statistic,
            n_resamples=n_resamples,
            method=method,
            random_state=np.random.default_rng(seed),
            **options,
        )
        low, high = result.confidence_interval
        used = f"{'BCa' if method.lower() == 'bca' else method.lower()} bootstrap"
        if not (np.isfinite(low) and np.isfinite(high)):
            # Same resamples, percentile interval: defined whenever the distribution is.
            result = sps.bootstrap(
                data,
                statistic,
                n_resamples=0,
                method="percentile",
                bootstrap_result=result,
                **options,
            )
            low, high = result.confidence_interval
            used = "percentile bootstrap (BCa undefined)"
    return Interval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        method=used,
        confidence=confidence,
        standard_error=float(result.standard_error),
    )


def paired_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: str = "BCa",
    seed: int = 0,
) -> Interval:
    """mean(b) - mean(a) with a paired bootstrap interval over instances.

    ``method`` is scipy's: "BCa" (default), "percentile" or "basic" (recorded as "BCa
    bootstrap" etc.). Zero-width at the estimate, method "degenerate", when all
    per-instance differences are equal or n < 2. For 0/1 outcomes ``compare_outcomes``
    uses ``tango_interval`` instead: see the module docstring.
    """
    x, y = _paired(a, b)
    d = y - x
    return _bootstrap(
        (x, y),
        _mean_difference,
        d - d.mean(),
        paired=True,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
    )


def tango_interval(a_only: int, b_only: int, n: int, confidence: float = 0.95) -> Interval:
    """Tango's asymptotic score interval for p_B - p_A of paired 0/1 outcomes, from the
    discordant counts (resolved by A only, by B only) among n pairs; estimate (b - c)/n.

    The limits are the delta where the score statistic
        Z(delta) = (b - c - n delta) / sqrt(n (2 q + delta (1 - delta)))
    equals -+z, q being the maximum likelihood of P(A only) given p_B - p_A = delta:
        q = (sqrt(W^2 + 8 n c delta (1 - delta)) - W) / 4n,  W = delta (2n - b + c) - (b + c)
    with b = B only, c = A only. Always finite and within [-1, 1], also with no
    discordant pair (+-z^2/(n + z^2)) or all of them one way (that bound is -1 or 1).
    """
    z = _z(confidence)
    b, c = b_only, a_only
    if n < 1 or b < 0 or c < 0 or b + c > n:
        raise ValueError(f"need 0 <= a_only + b_only <= n >= 1, got {a_only}, {b_only}, {n}")
    estimate = (b - c) / n

    def score(delta: float) -> float:
        w = delta * (2 * n - b + c) - (b + c)
        q = (math.sqrt(max(0.0, w * w + 8 * n * c * delta * (1 - delta))) - w) / (4 * n)
        variance = n * (2 * max(q, 0.0) + delta * (1 - delta))
        excess = b - c - n * delta
        if variance <= 0:
            # Only at delta = +-1, or at 0 with no discordant pair: the sign is enough.
            return math.copysign(1e300, excess) if excess else 0.0
        return excess / math.sqrt(variance)

    from scipy import optimize

    # Z falls from +inf at -1 through 0 at the estimate to -inf at 1: one root each side.
    low = -1.0 if estimate <= -1 else optimize.brentq(lambda d: score(d) - z, -1.0, estimate)
    high = 1.0 if estimate >= 1 else optimize.brentq(lambda d: score(d) + z, estimate, 1.0)
    return Interval(
        estimate=estimate,
        low=max(-1.0, min(float(low), estimate)),
        high=min(1.0, max(float(high), estimate)),
        method="Tango score",
        confidence=confidence,
    )


def mcnemar_exact(a: npt.ArrayLike, b: npt.ArrayLike) -> McNemar:
    """Exact two-sided McNemar test: binomial test of b_only among the discordant pairs
    against 1/2; p = 1 when there are none. Needs 0/1 outcomes."""
    x, y = _paired(a, b)
    if not (_is_binary(x) and _is_binary(y)):
        raise ValueError("McNemar's test needs 0/1 outcomes, not rates")
    a_only = int(np.sum((x == 1) & (y == 0)))
    b_only = int(np.sum((x == 0) & (y == 1)))
    discordant = a_only + b_only
    from scipy import stats as sps

    p_value = 1.0 if discordant == 0 else float(sps.binomtest(b_only, discordant, 0.5).pvalue)
    return McNemar(a_only=a_only, b_only=b_only, p_value=min(p_value, 1.0))


#: Up to this many nonzero differences, every sign pattern is counted (2**20 at most).
EXACT_SIGN_FLIPS = 20


def sign_flip_test(
    a: npt.ArrayLike, b: npt.ArrayLike, *, n_resamples: int = 10_000, seed: int = 0
) -> SignFlip:
    """Two-sided paired sign-flip test of the per-instance differences b - a: the share of
    sign patterns of the nonzero differences whose |sum| is at least the observed one.
    Exact (every pattern) up to :data:`EXACT_SIGN_FLIPS` nonzero differences, else
    ``n_resamples`` random patterns from ``default_rng(seed)``. On 0/1 outcomes it equals
    exact McNemar's p (tests/test_stats.py shows it on every small table)."""
    x, y = _paired(a, b)
    differences = y - x
    # Rates are shares k/n: a difference below this is rounding, not a sign.
    nonzero = differences[np.abs(differences) > 1e-12]
    m = int(nonzero.size)
    if m == 0:
        return SignFlip(nonzero=0, p_value=1.0)
    observed = abs(float(nonzero.sum()))
    # Sums equal to the observed one up to rounding count as "as extreme".
    tolerance = 1e-9 * max(1.0, float(np.abs(nonzero).sum()))
    as_extreme = 0
    if m <= EXACT_SIGN_FLIPS:
        total = 1 << m
        bits = np.arange(m, dtype=np.int64)
        step = _batch(m, total)
        for start in range(0, total, step):
            patterns = np.arange(start, min(start + step, total), dtype=np.int64)
            signs = 1.0 - 2.0 * ((patterns[:, None] >> bits) & 1)
            as_extreme += int(np.sum(np.abs(signs @ nonzero) >= observed - tolerance))
        return SignFlip(nonzero=m, p_value=min(1.0, as_extreme / total))
    rng = np.random.default_rng(seed)
    step = _batch(m, n_resamples)
    for start in range(0, n_resamples, step):
        count = min(step, n_resamples - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(count, m))
        as_extreme += int(np.sum(np.abs(signs @ nonzero) >= observed - tolerance))
    return SignFlip(
        nonzero=m, p_value=min(1.0, (1 + as_extreme) / (1 + n_resamples)), resamples=n_resamples
    )


def outcome_correlation(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """Pearson correlation of the per-instance outcomes (phi for 0/1); None when either run
    is constant (e.g. resolves everything), where it is undefined."""
    x, y = _paired(a, b)
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(np.dot(dx, dx)) * float(np.dot(dy, dy)))
    if denominator == 0:
        return None
    return float(np.clip(np.dot(dx, dy) / denominator, -1.0, 1.0))


def paired_standard_error(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Analytic standard error of mean(b) - mean(a): sd(b - a) / sqrt(n) (ddof=1); 0 at n=1."""
    x, y = _paired(a, b)
    if x.size < 2:
        return 0.0
    return float(np.std(y - x, ddof=1) / math.sqrt(x.size))


def minimum_detectable_difference(
    n: int,
    p_a: float,
    p_b: float,
    correlation: float | None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Smallest true difference a paired design of n instances detects with ``power`` in a
    two-sided test at level ``alpha`` (normal approximation):

        MDD = (z_{1-alpha/2} + z_{power}) * sqrt(var_a + var_b - 2 rho sd_a sd_b) / sqrt(n),
        var = p (1 - p), rho = the within-instance correlation of the outcomes.

    The variance is that of one instance's difference b - a; correlation shrinks it, which
    is why a paired comparison detects much smaller differences than two independent runs.
    For rates in [0, 1] p(1 - p) bounds the variance, so the MDD is conservative.

    ``correlation`` None (undefined: a run is constant) counts as 0. For 0/1 outcomes that
    is exact, as a constant run has p(1 - p) = 0 and the correlation term vanishes; for
    rates it leaves out a shrinkage the data cannot show, erring on the large side.
    """
    if correlation is None:
        correlation = 0.0
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not (0 <= p_a <= 1 and 0 <= p_b <= 1 and -1 <= correlation <= 1):
        raise ValueError("need p_a, p_b in [0, 1] and correlation in [-1, 1]")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("need alpha and power in (0, 1)")
    var_a, var_b = p_a * (1 - p_a), p_b * (1 - p_b)
    variance = max(0.0, var_a + var_b - 2 * correlation * math.sqrt(var_a * var_b))
    from scipy.special import ndtri

    z = float(ndtri(1 - alpha / 2) + ndtri(power))
    return z * math.sqrt(variance / n)


def cluster_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ClusterInterval:
    """mean(b) - mean(a) with a percentile interval from resampling whole clusters
    (repositories) with replacement; a sensitivity check, see the module docstring."""
    x, y = _paired(a, b)
    labels = np.asarray(clusters)
    if labels.shape != x.shape:
        raise ValueError(f"need one cluster label per instance, got {labels.shape} for {x.shape}")
    _z(confidence)
    d = y - x
    _, codes = np.unique(labels, return_inverse=True)
    # A resample's difference of means = sum of its clusters' difference sums / their sizes.
    sums = np.bincount(codes, weights=d)
    sizes = np.bincount(codes).astype(np.float64)
    g = sums.size
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be >= 2, got {n_resamples}")
    estimate = float(d.mean())
    too_few = g < MIN_CLUSTERS
    note = (
        f"only {g} clusters: a cluster bootstrap needs about {MIN_CLUSTERS} or more, "
        "so read this interval as a rough sensitivity check"
        if too_few
        else ""
    )
    if g < 2 or np.ptp(sums / sizes) == 0:
        # One cluster, or clusters that all agree: every resample gives the estimate.
        low = high = estimate
        method, standard_error = "degenerate", 0.0
    else:
        rng = np.random.default_rng(seed)
        distribution = np.empty(n_resamples)
        step = _batch(g, n_resamples)
        for start in range(0, n_resamples, step):
            drawn = rng.integers(0, g, size=(min(step, n_resamples - start), g))
            distribution[start : start + len(drawn)] = sums[drawn].sum(1) / sizes[drawn].sum(1)
        tail = (1 - confidence) / 2
        low, high = (float(q) for q in np.quantile(distribution, [tail, 1 - tail]))
        method, standard_error = "cluster percentile", float(np.std(distribution, ddof=1))
    return ClusterInterval(
        estimate=estimate,
        low=low,
        high=high,
        method=method,
        confidence=confidence,
        standard_error=standard_error,
        n_clusters=g,
        too_few_clusters=too_few,
        note=note,
    )


def compare_outcomes(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    clusters: npt.ArrayLike | None = None,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "BCa",
) -> Comparison:
    """Everything needed to say whether run B differs from run A on the same instances.

    ``a`` and ``b`` hold per-instance 0/1 outcomes (or per-instance rates / pass@k values
    in [0, 1] for multi-sample targets, where McNemar is left out), aligned by instance;
    ``clusters`` (e.g. each instance's repository) adds the cluster bootstrap. The
    difference's interval is Tango's score interval for 0/1 outcomes and a paired
    bootstrap (``method``, ``n_resamples``, ``seed``) for rates; ``confidence`` is this
    one comparison's level (a caller comparing several corrects it first).
    """
    x, y = _paired(a, b)
    n = x.size
    binary = _is_binary(x) and _is_binary(y)
    correlation = outcome_correlation(x, y)
    mcnemar = mcnemar_exact(x, y) if binary else None
    sign_flip = None
    if mcnemar is not None:
        difference = tango_interval(mcnemar.a_only, mcnemar.b_only, n, confidence)
    else:
        difference = paired_bootstrap(
            x, y, n_resamples=n_resamples, confidence=confidence, method=method, seed=seed
        )
        # A bootstrap interval is too narrow at small n; the verdict also needs this test.
        sign_flip = sign_flip_test(x, y, n_resamples=n_resamples, seed=seed)
    rates = []
    for values in (x, y):
        # min(): a float sum of values <= 1 must not round above n.
        low, high = wilson_interval(min(float(values.sum()), n), n, confidence)
        rates.append(
            Interval(
                estimate=float(values.mean()),
                low=low,
                high=high,
                method="wilson",
                confidence=confidence,
            )
        )
    return Comparison(
        n=n,
        confidence=confidence,
        rate_a=rates[0],
        rate_b=rates[1],
        difference=difference,
        mcnemar=mcnemar,
        sign_flip=sign_flip,
        correlation=correlation,
        standard_error=paired_standard_error(x, y),
        minimum_detectable_difference=minimum_detectable_difference(
            n, rates[0].estimate, rates[1].estimate, correlation, alpha=1 - confidence
        ),
        cluster=None
        if clusters is None
        else cluster_bootstrap(
            x, y, clusters, n_resamples=n_resamples, confidence=confidence, seed=seed
        ),
    )
