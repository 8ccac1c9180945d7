"""pass^k (all k samples resolve) beside pass@k.

Per instance with n samples of which c resolved, pass^k = C(c, k)/C(n, k): checked here
against scipy's binomial coefficients and a direct enumeration of every k-subset of the
samples; the run's pass^k is the mean over the instances with at least k samples (as
pass@k's), with the same bootstrap over instances (checked against scipy.stats.bootstrap
called directly). A real two-sample run (the demo's ``+experiment=model_k2`` in the fake
environment: only the sandbox is scripted) shows it in every report format, in
``compare``, on the leaderboard, in results.json and a bundle's reports; a run whose
results.json pass^k was edited, or a bundle whose reported pass^k was (manifests
rewritten to match), is refused by ``verify``.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import tarfile

import bagit
import numpy as np
import pytest
from rich.console import Console
from scipy import special
from scipy import stats as sps

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment
from evalrepro.publish.bundle import write_bundle
from evalrepro.publish.bundle_verify import check_bundle
from evalrepro.publish.verify import check_run
from evalrepro.records.base import parse_record
from evalrepro.records.metrics import RunMetrics
from evalrepro.records.score import Outcome
from evalrepro.records.trial import TrialResult
from evalrepro.report.stats import (
    instance_pass_hat_k,
    pass_hat_k,
    pass_hat_k_interval,
    pass_hat_k_mean,
)


def enumerated(outcomes: list[bool], k: int) -> float:
    """The share of k-subsets of the samples that are all resolved: the definition."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(all(s) for s in subsets) / len(subsets)


def random_table(rng: np.random.Generator, instances: int, most: int) -> list[np.ndarray]:
    return [rng.random(int(rng.integers(1, most + 1))) < rng.random() for _ in range(instances)]


def test_pass_hat_k_of_an_instance_is_the_share_of_k_subsets_that_all_resolve():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 13))
        c = int(rng.integers(0, n + 1))
        k = int(rng.integers(1, n + 1))
        outcomes = [True] * c + [False] * (n - c)
        expected = special.comb(c, k, exact=True) / special.comb(n, k, exact=True)
        assert pass_hat_k(n, c, k) == pytest.approx(expected, abs=1e-12)
        assert pass_hat_k(n, c, k) == pytest.approx(enumerated(outcomes, k), abs=1e-12)
    # Large n: neither overflows nor loses precision.
    exact = special.comb(180, 40, exact=True) / special.comb(200, 40, exact=True)
    assert pass_hat_k(200, 180, 40) == pytest.approx(exact, rel=1e-10)
    assert pass_hat_k(5, 1, 2) == 0.0 and pass_hat_k(4, 4, 3) == 1.0
    assert pass_hat_k(10, 3, 1) == pytest.approx(0.3)  # pass^1 is pass@1
    with pytest.raises(ValueError, match="pass\\^3 needs at least 3 samples"):
        pass_hat_k(2, 1, 3)


def test_a_runs_pass_hat_k_is_the_mean_over_instances_with_k_samples():
    rng = np.random.default_rng(11)
    for _ in range(40):
        table = random_table(rng, int(rng.integers(3, 25)), 8)
        for k in (2, 3, 4):
            kept = [list(map(bool, o)) for o in table if o.size >= k]
            if not kept:
                with pytest.raises(ValueError, match="no instance has"):
                    pass_hat_k_mean(table, k)
                continue
            expected = np.mean([enumerated(o, k) for o in kept])
            assert pass_hat_k_mean(table, k) == pytest.approx(expected, abs=1e-12)


def test_the_interval_is_scipys_bca_bootstrap_over_instances_with_the_same_seed():
    rng = np.random.default_rng(3)
    table = random_table(rng, 30, 6)
    k = 2
    kept = [o for o in table if o.size >= k]
    exact = [
        (special.comb(int(o.sum()), k, exact=True), special.comb(o.size, k, exact=True))
        for o in kept
    ]
    values = np.array([share / of for share, of in exact])
    ours = pass_hat_k_interval(table, k, n_resamples=2000, seed=5, confidence=0.9)
    theirs = sps.bootstrap(
        (values,),
        np.mean,
        n_resamples=2000,
        confidence_level=0.9,
        method="BCa",
        random_state=np.random.default_rng(5),
    )
    assert ours.method == "BCa bootstrap" and ours.confidence == 0.9
    assert ours.estimate == pytest.approx(values.mean())
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=1e-9)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=1e-9)
    assert ours.standard_error == pytest.approx(theirs.standard_error, abs=1e-9)
    np.testing.assert_allclose(instance_pass_hat_k(kept, k), values)


# --- a real two-sample run ------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hat")
    outcome = run_experiment(
        compose(["+experiment=model_k2", "environment=fake"]),
        Console(file=io.StringIO()),
        run_dir=root / "k2",
        cache_dir=root / "cache",
    )
    return outcome.report.metrics, root / "k2"


def cli(capsys, *args: object) -> tuple[int, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def test_the_recorded_pass_hat_k_is_the_independent_computation_from_the_trial_results(run):
    m, run_dir = run
    by_instance: dict[str, list[bool]] = {}
    for path in sorted((run_dir / "trials").glob("*/result.json")):
        result = parse_record(json.loads(path.read_text()), TrialResult, where=str(path))
        by_instance.setdefault(result.instance_id, []).append(
            result.score.outcome is Outcome.RESOLVED
        )
    assert {len(o) for o in by_instance.values()} == {2}
    expected = np.mean([enumerated(o, 2) for o in by_instance.values()])
    assert set(m.pass_hat_k) == {"pass^2"}
    hat = m.pass_hat_k["pass^2"]
    assert hat.estimate == pytest.approx(expected)
    # The demo's two samples disagree on some instance: pass^2 sits below pass@2.
    assert hat.estimate < m.pass_at_k["pass@2"].estimate
    assert hat.low <= hat.estimate <= hat.high and "bootstrap" in hat.method
    assert [name for name, _, _ in m.pass_at_k_rows()] == ["pass@1", "pass@2", "pass^2"]


def test_pass_hat_k_is_in_every_report_format(run, capsys, tmp_path):
    m, run_dir = run
    hat = m.pass_hat_k["pass^2"]
    shown = f"{percent(hat.estimate)} (95% CI {percent(hat.low)} to {percent(hat.high)})"
    code, text = cli(capsys, "report", run_dir)
    assert code == 0 and "pass^2" in text and percent(hat.low) in text
    code, text = cli(capsys, "report", run_dir, "--markdown")
    assert code == 0
    rows = [row for row in text.splitlines() if row.startswith(("| pass@2 |", "| pass^2 |"))]
    assert rows[1].startswith("| pass^2 | ") and percent(hat.estimate) in rows[1]
    code, text = cli(capsys, "report", run_dir, "--json")
    metrics = json.loads(text)["metrics"]
    assert metrics["schema_version"] == RunMetrics.model_fields["schema_version"].default
    assert metrics["pass_hat_k"]["pass^2"]["estimate"] == hat.estimate
    code, tex = cli(capsys, "report", run_dir, "--latex")
    assert code == 0
    assert "pass\\textasciicircum{}2 & &" in tex
    assert "pass\\textasciicircum{}$k$ the probability that $k$ samples all resolve" in tex
    page = tmp_path / "run.html"
    assert cli(capsys, "report", run_dir, "--html", page)[0] == 0
    html = page.read_text()
    assert '<th scope="row">pass^2</th>' in html and "pass^2: " in html
    assert shown.split(" (")[0] in html


def test_compare_pairs_pass_hat_k_over_the_instances_pass_at_k_is_over(run, capsys):
    m, run_dir = run
    code, text = cli(capsys, "compare", "--json", "--n-resamples", "200", run_dir, run_dir)
    assert code == 0
    (pair,) = json.loads(text)["pairs"]
    hat = pair["by_k"]["pass^2"]
    assert hat["n"] == pair["by_k"]["pass@2"]["n"] == 12
    assert hat["rate_a"]["estimate"] == pytest.approx(m.pass_hat_k["pass^2"].estimate)
    assert "pass@k and pass^k also for k = 2" in pair["paired"]
    code, text = cli(capsys, "compare", "--n-resamples", "200", run_dir, run_dir)
    assert code == 0 and "pass^2: A / B / B - A" in " ".join(text.split())


def test_the_leaderboard_shows_pass_hat_k_beside_pass_at_k(run, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALREPRO_CACHE", str(tmp_path / "cache"))
    m, run_dir = run
    db = tmp_path / "team.db"
    code, _ = cli(capsys, "publish", run_dir, "--db", db, "--store", tmp_path / "store")
    assert code == 0
    code, text = cli(capsys, "leaderboard", "--db", db, "--json")
    (group,) = json.loads(text)["groups"]
    (row,) = group["rows"]
    assert row["pass_hat_k"]["pass^2"]["estimate"] == m.pass_hat_k["pass^2"].estimate
    hat = percent(m.pass_hat_k["pass^2"].estimate)
    code, text = cli(capsys, "leaderboard", "--db", db, "--markdown")
    assert "pass@k, pass^k" in text and f"pass^2 {hat} (95% CI" in text
    code, text = cli(capsys, "leaderboard", "--db", db)
    assert "pass^2" in text
    code, tex = cli(capsys, "leaderboard", "--db", db, "--latex")
    assert f"pass\\textasciicircum{{}}2 {hat[:-1]}\\%" in tex
    page = tmp_path / "board.html"
    assert cli(capsys, "leaderboard", "--db", db, "--html", page)[0] == 0
    assert f"pass^2 {hat}" in page.read_text()
    code, text = cli(capsys, "runs", "--db", db, "--json")
    assert code == 0


def test_an_old_metrics_record_reads_with_no_pass_hat_k(run):
    m, _ = run
    old = m.model_dump(mode="json", exclude={"pass_hat_k"})
    old["schema_version"] = 4
    read = parse_record(old, RunMetrics, where="old")
    assert (
        read.schema_version == RunMetrics.model_fields["schema_version"].default
        and read.pass_hat_k is None
    )
    assert read.pass_at_k == m.pass_at_k
    assert [name for name, _, _ in read.pass_at_k_rows()] == ["pass@1", "pass@2"]


def test_a_bundles_reports_hold_pass_hat_k_and_an_edited_one_is_refused(run, capsys, tmp_path):
    m, run_dir = run
    bundle = tmp_path / "k2.bundle.tar.gz"
    write_bundle(run_dir, bundle)
    code, text = cli(capsys, "report", bundle, "--json")
    assert code == 0
    assert (
        json.loads(text)["metrics"]["pass_hat_k"]
        == json.loads(m.model_dump_json(include={"pass_hat_k"}))["pass_hat_k"]
    )
    assert cli(capsys, "verify", bundle)[0] == 0
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path / "open")  # our own archive
    (bag,) = (tmp_path / "open").iterdir()
    report = bag / "data" / "reports" / "report.json"
    data = json.loads(report.read_text())
    data["metrics"]["pass_hat_k"]["pass^2"]["estimate"] = 1.0
    report.write_text(json.dumps(data, indent=2) + "\n")
    cwd = os.getcwd()
    try:  # what an adversary who knows the format does after an edit: new manifests
        bagit.Bag(str(bag)).save(manifests=True)
    finally:
        os.chdir(cwd)
    problems = check_bundle(bag).problems
    assert not [p for p in problems if p.kind == "checksum"]
    assert any(
        p.kind == "report" and "metrics.pass_hat_k" in p.detail and "pass^2" in p.detail
        for p in problems
    ), problems
    assert cli(capsys, "verify", bag)[0] != 0


def test_results_json_holds_pass_at_k_and_pass_hat_k_and_verify_recomputes_them(
    run, capsys, tmp_path
):
    m, run_dir = run
    copy = tmp_path / "k2"
    shutil.copytree(run_dir, copy, symlinks=True)
    results = copy / "results.json"
    data = json.loads(results.read_text())
    assert data["schema_version"] == 3
    assert data["pass_at_k"] == {name: i.estimate for name, i in m.pass_at_k.items()}
    assert data["pass_hat_k"] == {"pass^2": m.pass_hat_k["pass^2"].estimate}
    check = check_run(copy)
    assert check.ok, check.problems
    # An edited pass^2 (everything else kept) is refused, naming the field.
    data["pass_hat_k"]["pass^2"] = 1.0
    results.write_text(json.dumps(data, indent=2) + "\n")
    problems = check_run(copy).problems
    assert [p.kind for p in problems] == ["results"], problems
    assert problems[0].detail.startswith('results.json: pass_hat_k is {"pass^2": 1.0}')
    code, _ = cli(capsys, "verify", copy)
    assert code != 0
    # A results.json of schema 2 recorded neither: it claims nothing, and verifies.
    del data["pass_at_k"], data["pass_hat_k"]
    data["schema_version"] = 2
    results.write_text(json.dumps(data, indent=2) + "\n")
    assert check_run(copy).ok
