"""The statistics behind reports and comparisons (semantics.md, "Metrics and gates" and
"Comparing runs"): known values first, then seeded simulations of the coverage and power
the methods promise, then the degenerate inputs real runs produce."""

import dataclasses
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps

from evalrepro import stats
from evalrepro.stats import Comparison, Interval, McNemar

Z95 = 1.959963984540054


def correlated_pairs(rng, p_a, p_b, rho, size):
    """0/1 outcomes of runs A and B with the given rates and within-instance correlation
    (phi), drawn from the four cells of their joint distribution."""
    p11 = p_a * p_b + rho * math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))
    cells = [1 - p_a - p_b + p11, p_a - p11, p_b - p11, p11]  # 00, A only, B only, 11
    drawn = rng.choice(4, size=size, p=cells)
    return (drawn == 1) | (drawn == 3), (drawn == 2) | (drawn == 3)


def all_finite(value):
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, float):
        return math.isfinite(value)
    return True


# --- one proportion: Wilson ----------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_the_published_values_of_newcombe_1998(successes, n, low, high):
    # Newcombe, Statistics in Medicine 17 (1998), Table II, method 3 (score, no correction).
    assert [round(v, 4) for v in stats.wilson_interval(successes, n)] == [low, high]


def test_wilson_with_no_successes_reaches_z2_over_n_plus_z2():
    # Hand-computed: p = 0 makes the centre and the half-width both z^2 / 2(n + z^2).
    assert stats.wilson_interval(0, 10) == pytest.approx((0.0, Z95**2 / (10 + Z95**2)))


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
@pytest.mark.parametrize(("successes", "n"), [(0, 7), (3, 7), (7, 7), (40, 123), (999, 1000)])
def test_wilson_agrees_with_scipys_wilson_interval(successes, n, confidence):
    expected = sps.binomtest(successes, n).proportion_ci(confidence, method="wilson")
    low, high = stats.wilson_interval(successes, n, confidence)
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_wilson_with_no_trials_is_the_whole_unit_interval():
    assert stats.wilson_interval(0, 0) == (0.0, 1.0)


def test_one_run_of_500_instances_at_half_resolved_is_known_to_about_4_4_points():
    low, high = stats.wilson_interval(250, 500)
    assert round((high - low) / 2 * 100, 1) == 4.4


# --- pass@k ----------------------------------------------------------------------------


def test_pass_at_k_is_one_minus_the_chance_that_k_draws_all_fail():
    for n in range(1, 11):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert stats.pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_stays_exact_where_the_binomials_are_huge():
    exact = 1 - Fraction(math.comb(197, 100), math.comb(200, 100))
    assert stats.pass_at_k(200, 3, 100) == pytest.approx(float(exact), rel=1e-12)


def test_pass_at_k_is_one_when_fewer_samples_failed_than_k():
    assert stats.pass_at_k(10, 8, 3) == 1.0
    assert stats.pass_at_k(5, 5, 1) == 1.0


def test_pass_at_1_is_the_fraction_of_samples_resolved():
    assert stats.pass_at_k(10, 3, 1) == pytest.approx(0.3)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 1, 0), (3, 4, 1), (3, -1, 1)])
def test_pass_at_k_refuses_k_above_n_and_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        stats.pass_at_k(n, c, k)


def test_pass_at_k_mean_averages_over_instances_with_at_least_k_samples():
    outcomes = [np.array([1, 0, 0, 0]), np.array([0, 0, 0, 0]), np.array([1])]
    # The one-sample instance has no pass@2; the others: 1 - C(3,2)/C(4,2) = 0.5, and 0.
    assert stats.pass_at_k_mean(outcomes, 2) == pytest.approx(0.25)
    assert stats.pass_at_k_mean(outcomes, 1) == pytest.approx((0.25 + 0 + 1) / 3)
    with pytest.raises(ValueError, match="pass@5"):
        stats.pass_at_k_mean(outcomes, 5)


@pytest.mark.parametrize(
    ("max_samples", "expected"),
    [
        (0, []),
        (1, [1]),
        (3, [1, 2]),
        (5, [1, 2, 4, 5]),
        (10, [1, 2, 4, 5, 8, 10]),
        (16, [1, 2, 4, 5, 8, 10, 16]),
    ],
)
def test_the_reported_k_are_powers_of_two_plus_5_and_10(max_samples, expected):
    assert stats.pass_k_values(max_samples) == expected


def test_a_pass_at_k_interval_resamples_instances_not_samples():
    rng = np.random.default_rng(3)
    outcomes = list(rng.random((60, 10)) < rng.random((60, 1)))
    interval = stats.pass_at_k_interval(outcomes, 4, n_resamples=999, seed=5)
    per_instance = stats.instance_pass_at_k(outcomes, 4)
    expected = sps.bootstrap(
        (per_instance,), np.mean, n_resamples=999, random_state=np.random.default_rng(5)
    )
    assert interval.estimate == pytest.approx(stats.pass_at_k_mean(outcomes, 4))
    assert (interval.low, interval.high) == pytest.approx(tuple(expected.confidence_interval))


# --- two runs: McNemar, correlation, standard error, MDE ----------------------------


def test_mcnemar_counts_the_discordant_pairs_and_tests_them_exactly():
    a, b = correlated_pairs(np.random.default_rng(1), 0.3, 0.4, 0.4, 150)
    result = stats.mcnemar_exact(a, b)
    assert (result.a_only, result.b_only) == (int(np.sum(a & ~b)), int(np.sum(~a & b)))
    expected = sps.binomtest(result.b_only, result.a_only + result.b_only, 0.5).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-12)


def test_mcnemar_without_discordant_pairs_has_p_one():
    same = np.array([1, 0, 1, 1])
    assert stats.mcnemar_exact(same, same) == McNemar(a_only=0, b_only=0, p_value=1.0)


def test_mcnemar_refuses_rates():
    with pytest.raises(ValueError, match="0/1"):
        stats.mcnemar_exact([0.5, 1.0], [1.0, 0.0])


def test_outcome_correlation_is_pearsons_phi_and_zero_when_a_run_has_no_variance():
    a, b = correlated_pairs(np.random.default_rng(2), 0.3, 0.4, 0.4, 300)
    assert stats.outcome_correlation(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert stats.outcome_correlation(np.ones(5), np.array([0, 1, 0, 1, 1])) == 0.0


def test_minimum_detectable_difference_matches_the_formula_by_hand():
    # (z_.975 + z_.8) * sqrt(.25 + .25 - 2 rho .25) / sqrt(500)
    assert stats.minimum_detectable_difference(500, 0.5, 0.5, 0.0) == pytest.approx(
        (Z95 + 0.8416212335729143) * math.sqrt(0.5 / 500)
    )
    assert stats.minimum_detectable_difference(500, 0.5, 0.5, 0.5) == pytest.approx(
        (Z95 + 0.8416212335729143) * math.sqrt(0.25 / 500)
    )


def test_at_the_minimum_detectable_difference_a_paired_test_has_the_promised_power():
    # Choose n so that the MDD is exactly p_b - p_a = 0.1, then simulate 4000 such studies
    # (vectorized) and count how often a two-sided paired z-test at 5% rejects: 80% +-
    # 3 points (binomial SD 0.6 points; the rest allows for the normal approximation).
    p_a, p_b, rho = 0.4, 0.5, 0.5
    sd = math.sqrt(0.24 + 0.25 - 2 * rho * math.sqrt(0.24 * 0.25))
    n = round(((Z95 + 0.8416212335729143) * sd / 0.1) ** 2)
    assert stats.minimum_detectable_difference(n, p_a, p_b, rho) == pytest.approx(0.1, rel=0.01)
    a, b = correlated_pairs(np.random.default_rng(4), p_a, p_b, rho, (4000, n))
    d = b.astype(float) - a
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    assert 0.77 <= np.mean(np.abs(z) > Z95) <= 0.83


def test_paired_standard_error_is_the_sd_of_the_differences_over_root_n():
    a, b = np.array([1, 0, 1, 1, 0]), np.array([1, 1, 1, 0, 1])
    assert stats.paired_standard_error(a, b) == pytest.approx(np.std(b - a, ddof=1) / math.sqrt(5))
    assert stats.paired_standard_error([1], [0]) == 0.0


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([0, 1], [0, 1, 1], "equal length"),
        ([], [], "no instances"),
        ([0, 2], [0, 1], "run A"),
        ([0, 1], [0, np.nan], "run B"),
    ],
)
def test_paired_functions_refuse_misaligned_or_out_of_range_outcomes(a, b, message):
    with pytest.raises(ValueError, match=message):
        stats.compare_outcomes(a, b, n_resamples=99)


# --- the paired bootstrap ------------------------------------------------------------


def test_the_paired_bootstrap_is_scipys_with_the_seed_whatever_the_batching():
    a, b = correlated_pairs(np.random.default_rng(6), 0.3, 0.35, 0.5, 1500)
    interval = stats.paired_bootstrap(a, b, n_resamples=2000, seed=11)

    def difference(x, y, axis):
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    # One batch, BCa: the documented call; stats batches the resamples to bound memory.
    expected = sps.bootstrap(
        (a.astype(float), b.astype(float)),
        difference,
        paired=True,
        vectorized=True,
        n_resamples=2000,
        method="BCa",
        random_state=np.random.default_rng(11),
    )
    assert interval.method == "BCa"
    assert interval.estimate == pytest.approx(b.mean() - a.mean())
    assert (interval.low, interval.high) == pytest.approx(tuple(expected.confidence_interval))
    assert interval == stats.paired_bootstrap(a, b, n_resamples=2000, seed=11)


def test_the_bca_interval_covers_the_true_difference_at_close_to_95_percent():
    # 500 simulated comparisons of n=200 instances, true difference 5 points, within-
    # instance correlation 0.5. The coverage estimate has a binomial SD of 1 point at
    # 95%, so [0.90, 0.98] is about -5/+3 SD: the low side is wider because bootstrap
    # intervals at n=200 are known to undercover by a point or so. A mistake in the
    # method lands outside: ignoring the pairing gives an interval ~1.4x too wide here
    # (coverage > 0.99), an SE off by 30% too narrow gives ~0.83.
    rng = np.random.default_rng(20240601)
    true_difference, covered, reps = 0.05, 0, 500
    for rep in range(reps):
        a, b = correlated_pairs(rng, 0.40, 0.40 + true_difference, 0.5, 200)
        interval = stats.paired_bootstrap(a, b, n_resamples=999, seed=rep)
        covered += interval.low <= true_difference <= interval.high
    assert 0.90 <= covered / reps <= 0.98


def test_on_a_large_sample_the_bootstrap_standard_error_is_the_analytic_one():
    # 5000 resamples estimate an SE to about 1% (relative SD 1/sqrt(2 * 5000)); 3% is ~3 SD.
    a, b = correlated_pairs(np.random.default_rng(7), 0.40, 0.45, 0.5, 5000)
    interval = stats.paired_bootstrap(a, b, n_resamples=5000, method="percentile", seed=1)
    assert interval.standard_error == pytest.approx(stats.paired_standard_error(a, b), rel=0.03)


def test_an_undefined_bca_interval_falls_back_to_the_percentile_one(monkeypatch):
    real = sps.bootstrap

    def bca_undefined(*args, **kwargs):
        result = real(*args, **kwargs)
        if kwargs.get("method") == "BCa":
            nan = type(result.confidence_interval)(np.nan, np.nan)
            return dataclasses.replace(result, confidence_interval=nan)
        return result

    monkeypatch.setattr(sps, "bootstrap", bca_undefined)
    a, b = correlated_pairs(np.random.default_rng(8), 0.4, 0.45, 0.5, 300)
    interval = stats.paired_bootstrap(a, b, n_resamples=999)
    monkeypatch.undo()
    percentile = stats.paired_bootstrap(a, b, n_resamples=999, method="percentile")
    assert interval.method == "percentile (BCa undefined)"
    assert (interval.low, interval.high) == (percentile.low, percentile.high)


# --- the cluster bootstrap -----------------------------------------------------------


def test_with_one_instance_per_cluster_the_cluster_bootstrap_is_the_instance_bootstrap():
    a, b = correlated_pairs(np.random.default_rng(9), 0.40, 0.45, 0.5, 2000)
    clustered = stats.cluster_bootstrap(a, b, np.arange(2000), n_resamples=4000)
    paired = stats.paired_bootstrap(a, b, n_resamples=4000, method="percentile")
    assert clustered.n_clusters == 2000 and not clustered.too_few_clusters
    assert clustered.standard_error == pytest.approx(paired.standard_error, rel=0.05)
    assert (clustered.low, clustered.high) == pytest.approx((paired.low, paired.high), abs=0.004)


def test_clusters_that_move_together_widen_the_interval():
    # 40 repos of 50 instances; each repo shifts B's rate by its own amount, so instances
    # of one repo are not independent and the instance bootstrap is too narrow.
    rng = np.random.default_rng(10)
    shifts = rng.normal(0, 0.15, 40)
    repos = np.repeat(np.arange(40), 50)
    a = rng.random(2000) < 0.4
    b = rng.random(2000) < np.clip(0.45 + shifts[repos], 0, 1)
    clustered = stats.cluster_bootstrap(a, b, repos, n_resamples=2000)
    paired = stats.paired_bootstrap(a, b, n_resamples=2000, method="percentile")
    assert clustered.standard_error > 1.5 * paired.standard_error


def test_fewer_than_ten_clusters_are_flagged_and_the_note_says_so():
    a, b = correlated_pairs(np.random.default_rng(11), 0.4, 0.45, 0.5, 120)
    few = stats.cluster_bootstrap(a, b, np.arange(120) % 5, n_resamples=999)
    enough = stats.cluster_bootstrap(a, b, np.arange(120) % 12, n_resamples=999)
    assert few.too_few_clusters and "only 5 clusters" in few.note
    assert not enough.too_few_clusters and enough.note == ""
    assert enough.n_clusters == 12


def test_cluster_labels_may_be_repository_names():
    repos = ["django/django", "sympy/sympy", "astropy/astropy"] * 4
    result = stats.cluster_bootstrap([0, 1] * 6, [1, 1] * 6, repos, n_resamples=99)
    assert result.n_clusters == 3 and result.too_few_clusters


# --- the comparison and its verdict -------------------------------------------------


def comparison(estimate, low, high, method="BCa", mcnemar=None, n=500):
    rate = Interval(estimate=0.5, low=0.45, high=0.55, method="wilson")
    difference = Interval(estimate=estimate, low=low, high=high, method=method)
    return Comparison(
        n=n,
        confidence=0.95,
        rate_a=rate,
        rate_b=rate,
        difference=difference,
        mcnemar=mcnemar,
        correlation=0.5,
        standard_error=0.02,
        minimum_detectable_difference=0.05,
    )


@pytest.mark.parametrize(
    ("estimate", "low", "high", "verdict"),
    [
        (
            0.031,
            -0.012,
            0.074,
            "B resolves 3.1 points more (95% CI -1.2 to 7.4): not distinguishable at this n",
        ),
        (
            0.052,
            0.013,
            0.091,
            "B resolves 5.2 points more (95% CI 1.3 to 9.1): B is better at this n",
        ),
        (
            -0.052,
            -0.091,
            -0.013,
            "B resolves 5.2 points fewer (95% CI -9.1 to -1.3): A is better at this n",
        ),
        (
            0.0,
            -0.0004,
            0.0004,
            "B resolves as many as A (95% CI 0.0 to 0.0): not distinguishable at this n",
        ),
    ],
)
def test_the_verdict_states_the_difference_in_points_and_whether_the_interval_excludes_zero(
    estimate, low, high, verdict
):
    assert comparison(estimate, low, high).verdict() == verdict


def test_the_verdict_says_when_clustering_by_repository_changes_the_conclusion():
    # B's whole gain is 60 instances of one repository out of four: instance by instance
    # it is clear, but a resample of repositories without that one shows no gain at all.
    a, b = np.zeros(1000), np.zeros(1000)
    b[:60] = 1
    repos = np.repeat(["r0", "r1", "r2", "r3"], 250)
    result = stats.compare_outcomes(a, b, repos, n_resamples=999)
    d, c = result.difference, result.cluster
    assert d.excludes_zero and not c.excludes_zero
    assert result.verdict() == (
        f"B resolves 6.0 points more (95% CI {d.low * 100:.1f} to {d.high * 100:.1f}): "
        "B is better at this n (resampling 4 clusters instead, too few to trust, 95% CI "
        f"0.0 to {c.high * 100:.1f}: not distinguishable at this n)"
    )


def test_comparing_two_runs_bundles_every_statistic():
    a, b = correlated_pairs(np.random.default_rng(14), 0.40, 0.45, 0.5, 500)
    result = stats.compare_outcomes(a, b, np.arange(500) % 12, n_resamples=999, seed=3)
    assert result.n == 500
    assert result.rate_a.estimate == pytest.approx(a.mean())
    assert (result.rate_b.low, result.rate_b.high) == stats.wilson_interval(b.sum(), 500)
    assert result.difference == stats.paired_bootstrap(a, b, n_resamples=999, seed=3)
    assert result.mcnemar == stats.mcnemar_exact(a, b)
    assert result.correlation == pytest.approx(stats.outcome_correlation(a, b))
    assert result.standard_error == pytest.approx(stats.paired_standard_error(a, b))
    assert result.cluster.n_clusters == 12
    assert re.fullmatch(
        r"B resolves \d+\.\d points (more|fewer) \(95% CI .*\): .* at this n", result.verdict()
    )
    assert Comparison.model_validate_json(result.model_dump_json()) == result


def test_rates_from_several_samples_per_instance_compare_without_mcnemar():
    rng = np.random.default_rng(15)
    a, b = rng.random(300), np.clip(rng.random(300) + 0.05, 0, 1)
    result = stats.compare_outcomes(a, b, n_resamples=999)
    assert result.mcnemar is None and result.cluster is None
    assert result.difference.method == "BCa"
    assert "B resolves" in result.verdict()


# --- degenerate inputs real runs produce ---------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "verdict"),
    [
        (
            [1, 0, 1, 1, 0],
            [1, 0, 1, 1, 0],
            "B resolves as many as A (all 5 paired differences equal, no interval; McNemar p=1): "
            "not distinguishable at this n",
        ),
        (
            [0] * 8,
            [0] * 8,
            "B resolves as many as A (all 8 paired differences equal, no interval; McNemar p=1): "
            "not distinguishable at this n",
        ),
        (
            [0],
            [1],
            "B resolves 100.0 points more (all 1 paired differences equal, no interval; "
            "McNemar p=1): not distinguishable at this n",
        ),
        (
            [0] * 10,
            [1] * 10,
            "B resolves 100.0 points more (all 10 paired differences equal, no interval; "
            "McNemar p=0.002): B is better at this n",
        ),
    ],
)
def test_degenerate_runs_give_a_finite_zero_width_interval_and_a_sensible_verdict(a, b, verdict):
    result = stats.compare_outcomes(a, b, clusters=[0] * len(a), n_resamples=999)
    assert result.difference.method == "degenerate"
    assert result.difference.low == result.difference.high == result.difference.estimate
    assert result.cluster.method == "degenerate"
    assert all_finite(result.model_dump())
    assert result.verdict() == verdict


def test_a_single_discordant_instance_still_gets_a_finite_interval():
    a, b = np.zeros(50), np.zeros(50)
    b[0] = 1
    interval = stats.paired_bootstrap(a, b, n_resamples=999)
    assert interval.method == "BCa"
    assert interval.low <= 0.02 <= interval.high
    assert all_finite(interval.model_dump())
