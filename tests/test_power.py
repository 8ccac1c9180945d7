"""`compare --power`: the power of the compare verdict (exact McNemar and Tango's interval
on one-sample runs), the n a difference needs and what n instances can detect.

Checked against independent computations: the verdict's own rejection on every small
table, hand-enumerated small designs, a seeded Monte Carlo of the real verdict
(``compare_outcomes``) within its standard error, and Connor's (1987) normal
approximation at large n. The CLI on the demo's runs in the fake environment (every
listed test passes): model_a resolves all 12, model_b 9 (its patch is empty for calc-2
and suspect for calc-1 and ledger-1), so A-only 3, B-only 0.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from scipy.stats import binomtest

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from evalrepro.pipeline import run_experiment
from evalrepro.report.power import (
    cells,
    critical_counts,
    detectable_difference,
    exact_power,
    normal_n,
    required_n,
)
from evalrepro.report.stats import compare_outcomes

ALPHA = 0.05


def _claims_direction(a_only: int, b_only: int, n: int) -> bool:
    """The compare verdict on a table of n instances with these discordant counts."""
    x = np.array([1] * a_only + [0] * b_only + [1] * (n - a_only - b_only), dtype=float)
    y = np.array([0] * a_only + [1] * b_only + [1] * (n - a_only - b_only), dtype=float)
    return "not distinguishable" not in compare_outcomes(x, y, n_resamples=100).verdict()


def test_the_rejection_set_is_the_verdicts_on_every_table_up_to_30_discordant():
    critical = critical_counts(30, ALPHA)
    for d in range(1, 31):
        for b_only in range(d + 1):
            rejected = min(b_only, d - b_only) <= critical[d]
            # n = d + 2: two concordant instances; the verdict depends on d and b only.
            assert rejected == _claims_direction(d - b_only, b_only, d + 2), (d, b_only)


def test_the_critical_counts_agree_with_scipys_binomial_test_and_the_score_bound():
    critical = critical_counts(400, ALPHA)
    z = 1.959963984540054

    def rejected(x: int, d: int) -> bool:
        return binomtest(x, d, 0.5).pvalue < ALPHA and (d - 2 * x) / math.sqrt(d) > z

    # Both conditions only tighten towards d/2: c(d) rejects and c(d) + 1 does not.
    for d in range(1, 401):
        c = int(critical[d])
        assert c == -1 or rejected(c, d), d
        assert c + 1 > d // 2 or not rejected(c + 1, d), d


def test_small_designs_enumerated_by_hand():
    # B-only half the time, A-only never: the verdict needs 6 of 6 discordant (c(6) = 0,
    # the two-sided exact p of 6 of 6 is 1/32 < 0.05; of 5 of 5 it is 1/16).
    assert critical_counts(7, ALPHA).tolist() == [-1, -1, -1, -1, -1, -1, 0, 0]
    assert exact_power(6, 0.0, 0.5, ALPHA) == pytest.approx(1 / 64)
    # n = 7: D = 6 (7 ways) or D = 7 (1 way), each all B-only: 8 / 128.
    assert exact_power(7, 0.0, 0.5, ALPHA) == pytest.approx(8 / 128)
    # Five instances can never decide, whatever the difference.
    assert exact_power(5, 0.0, 1.0, ALPHA) == 0.0
    # No difference: the verdict claims one at most alpha of the time (exact test).
    assert exact_power(200, 0.1, 0.1, ALPHA) <= ALPHA


def test_the_exact_power_matches_a_seeded_monte_carlo_of_the_real_verdict():
    rng = np.random.default_rng(2026)
    n, p10, p01, runs = 40, 0.05, 0.25, 1500
    claimed = 0
    for _ in range(runs):
        a_only, b_only, _both = rng.multinomial(n, [p10, p01, 1 - p10 - p01])
        claimed += _claims_direction(int(a_only), int(b_only), n)
    estimate = claimed / runs
    power = exact_power(n, p10, p01, ALPHA)
    standard_error = math.sqrt(power * (1 - power) / runs)
    assert 0.3 < power < 0.95  # a case where the check has teeth
    assert abs(estimate - power) < 3 * standard_error


def test_the_required_n_is_near_connors_normal_approximation_at_large_n():
    required, until, first = required_n(0.09, 0.11, ALPHA, 0.8)
    approx = normal_n(0.09, 0.11, ALPHA, 0.8)
    assert required is not None and approx is not None
    assert abs(required - approx) / approx < 0.05
    assert first <= required < until == math.ceil(1.25 * required) + 10


def test_the_required_n_keeps_the_power_and_one_less_does_not():
    p10, p01 = 0.05, 0.15  # rates 0.40 and 0.50, agreeing on 80% of instances
    required, until, first = required_n(p10, p01, ALPHA, 0.8)
    assert required is not None
    assert all(exact_power(m, p10, p01, ALPHA) >= 0.8 for m in range(required, until + 1))
    assert exact_power(required - 1, p10, p01, ALPHA) < 0.8
    assert first == required
    # Every discordant pair B-only (p01 = 1 - p10): the power first reaches 80% at 49
    # instances, dips below it again, and keeps it only from 54.
    required, until, first = required_n(0.3, 0.7, ALPHA, 0.8)
    assert (first, required) == (49, 54)
    assert exact_power(49, 0.3, 0.7, ALPHA) >= 0.8 > exact_power(53, 0.3, 0.7, ALPHA)
    # No difference, or no discordance: no n detects it.
    assert required_n(0.1, 0.1, ALPHA, 0.8) == (None, None, None)


def test_the_detectable_difference_is_where_the_power_reaches_the_target():
    n, discordance = 300, 0.2
    mdd = detectable_difference(n, discordance, ALPHA, 0.8)
    assert mdd is not None

    def power(delta: float) -> float:
        return exact_power(n, (discordance - delta) / 2, (discordance + delta) / 2, ALPHA)

    assert power(mdd) >= 0.8 > power(mdd - 0.002)
    # Twelve instances with 25% discordant cannot detect even the largest difference.
    assert detectable_difference(12, 0.25, ALPHA, 0.8) is None


def test_stated_rates_and_agreement_give_the_discordant_cells():
    assert cells(0.4, 0.5, 0.8) == pytest.approx((0.05, 0.15))
    with pytest.raises(UserError, match="cannot agree on that share"):
        cells(0.4, 0.5, 0.95)  # a 10-point difference needs 10% discordant


# --- the command line -----------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("power")
    made = {}
    for experiment in ("model_a", "model_b", "model_k2"):
        config = compose([f"+experiment={experiment}", "environment=fake"])
        run_experiment(
            config, Console(file=io.StringIO()), run_dir=root / experiment, cache_dir=root / "c"
        )
        made[experiment] = root / experiment
    return made


def test_compare_power_of_two_runs_reads_them_as_a_pilot(runs, capsys):
    code = main(["compare", "--power", str(runs["model_a"]), str(runs["model_b"]), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(out)
    assert record["record"] == "PowerAnalysis" and record["schema_version"] == 1
    pilot = record["pilot"]
    assert (pilot["n"], pilot["a_only"], pilot["b_only"]) == (12, 3, 0)
    assert pilot["discordance_low"] < 0.25 < pilot["discordance_high"]
    assert record["difference"] == pytest.approx(-0.25)
    assert record["power_at_n"] == pytest.approx(exact_power(12, 0.25, 0.0, ALPHA))
    assert record["detectable_difference"] is None
    assert record["required_n"] == required_n(0.25, 0.0, ALPHA, 0.8)[0]
    # The discordance interval's low end (below 25%) cannot hold the difference.
    assert record["required_n_at_discordance_low"] is None
    assert record["required_n_at_discordance_high"] > record["required_n"]
    # The console says the same, and that it is a pilot estimate.
    assert main(["compare", "--power", str(runs["model_a"]), str(runs["model_b"])]) == 0
    printed = capsys.readouterr().out
    assert "pilot" in printed and f"{record['required_n']} (every n up to" in printed


def test_compare_power_from_stated_rates_needs_no_runs(capsys):
    argv = ["compare", "--power-rates", "0.40,0.50", "--power-agreement", "0.8"]
    assert main([*argv, "--power-n", "300", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["source"] == "stated" and record["pilot"] is None
    assert record["difference_from"] == "design" and record["p_b"] == 0.5
    assert record["required_n"] == required_n(0.05, 0.15, ALPHA, 0.8)[0]
    assert record["power_at_n"] == pytest.approx(exact_power(300, 0.05, 0.15, ALPHA))
    # A stated difference, the discordance held.
    assert main([*argv, "--power-difference", "0.05", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["p10"], record["p01"]) == pytest.approx((0.075, 0.125))
    assert record["difference_from"] == "stated"
    # Discordant shares alone: no rates are claimed.
    assert main(["compare", "--power-discordant", "0.05,0.15", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["p_a"] is None and record["required_n"] == required_n(0.05, 0.15, ALPHA, 0.8)[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--power-rates", "0.4"], "--power-rates '0.4': give two numbers"),
        (["--power-rates", "0.4,0.5"], "--power-rates needs --power-agreement"),
        (["--power-rates", "0.4,0.5", "--power-agreement", "0.95"], "cannot agree"),
        (["--power-discordant", "0.1,0.2", "--power-agreement", "0.8"], "goes with"),
        (
            ["--power-discordant", "0.1,0.2", "--power-difference", "0.5"],
            "larger than the discordance",
        ),
        (["--power-discordant", "0.1,0.2", "--power-target", "1.5"], "--power-target 1.5"),
        (["--power"], "needs two runs"),
    ],
)
def test_bad_power_flags_are_one_line_exit_2(argv, message, capsys):
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compare_power_refuses_runs_of_several_samples_in_one_line(runs, capsys):
    assert main(["compare", "--power", str(runs["model_a"]), str(runs["model_k2"])]) == 2
    err = capsys.readouterr().err
    assert "several samples an instance" in err and err.count("\n") == 1
