"""Reports, gates and comparisons of real demo runs, through the CLI.

The demo's gate (conf/gate/demo.yaml) passes for gold and fails for model_b, whose
resolved rate is below its threshold; the exit codes say so. `compare` on model_a and
model_b prints the interval, McNemar, MDE and a verdict, and --json gives the same
numbers.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys

import pytest

from evalrepro.cli import EXIT_CHECK_FAILED, EXIT_GATE_FAILED, EXIT_OK
from evalrepro.report.stats import compare_outcomes
from tests.demo_expectations import EXPECTED
from tests.podman_support import needs_podman

pytestmark = needs_podman

TIMEOUT = "environment.timeout=5"  # the same for every run, so that they are comparable


def evalrepro(*args):
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    done = {}
    for experiment in ("demo", "model_a", "model_b"):
        run_dir = root / experiment
        done[experiment] = (
            evalrepro("run", f"+experiment={experiment}", TIMEOUT, "--run-dir", str(run_dir)),
            run_dir,
        )
    return done


def test_the_demo_gate_passes_for_gold_and_fails_for_model_b_with_distinct_exit_codes(runs):
    gold, _ = runs["demo"]
    model_b, _ = runs["model_b"]
    assert gold.returncode == EXIT_OK, gold.stderr
    assert "gate passed" in gold.stdout
    assert model_b.returncode == EXIT_GATE_FAILED
    assert "resolved_rate >= 0.5" in model_b.stdout and "gate failed" in model_b.stdout


def test_report_exit_code_follows_the_gate_too(runs):
    assert evalrepro("report", str(runs["demo"][1])).returncode == EXIT_OK
    assert evalrepro("report", str(runs["model_b"][1])).returncode == EXIT_GATE_FAILED


def test_report_json_has_metrics_gate_and_swebench_run_report_fields(runs):
    done = evalrepro("report", str(runs["model_a"][1]), "--json")
    report = json.loads(done.stdout)
    expected = {i: o for (t, i), o in EXPECTED.items() if t == "model_a"}
    swe = report["swebench"]
    assert set(swe["resolved_ids"]) == {i for i, o in expected.items() if o == "resolved"}
    assert set(swe["error_ids"]) == {i for i, o in expected.items() if o == "invalid"}
    assert swe["total_instances"] == 12
    metrics = report["metrics"]
    assert metrics["resolved"] == 8 and metrics["planned"] == 12
    rate = metrics["resolved_rate"]
    assert rate["method"] == "wilson" and rate["low"] < 8 / 12 < rate["high"]
    assert metrics["evidence_completeness"] == 1.0
    assert metrics["per_repo"]["demo/calc"]["planned"] == 4
    assert [v["passed"] for v in report["gate"]] == [True, True, True]


def test_report_json_counts_the_empty_patch_apart(runs):
    # As swebench 5.0.2's make_run_report: an empty patch is submitted, never completed.
    swe = json.loads(evalrepro("report", str(runs["model_b"][1]), "--json").stdout)["swebench"]
    assert swe["empty_patch_ids"] == ["demo__calc-2"]
    assert "demo__calc-2" in swe["submitted_ids"]
    assert "demo__calc-2" not in swe["completed_ids"]
    assert swe["schema_version"] == 2


def test_report_markdown_is_a_table_for_an_appendix(runs):
    text = evalrepro("report", str(runs["model_a"][1]), "--markdown").stdout
    assert "| resolved rate | 66.7% (95% CI" in text
    assert "| demo/calc | 4 |" in text


def test_compare_prints_interval_mcnemar_mde_and_verdict(runs):
    done = evalrepro(
        "compare", str(runs["model_a"][1]), str(runs["model_b"][1]), "--n-resamples", "2000"
    )
    assert done.returncode == EXIT_OK, done.stderr
    text = " ".join(done.stdout.split())
    for expected in (
        "B - A (95% CI, Tango score)",
        "discordant: A only / B only",
        "7 / 3",
        "exact McNemar p",
        "minimum detectable difference",
        "verdict:",
    ):
        assert expected in text
    assert "B resolves 33.3 points fewer" in text


def test_four_discordant_pairs_all_one_way_are_not_a_difference_at_n_12(runs):
    # gold resolves all 12, model_a 8: the exact McNemar p is 0.125, so no verdict of a
    # difference, whatever a bootstrap interval would say.
    done = evalrepro("compare", str(runs["demo"][1]), str(runs["model_a"][1]))
    assert done.returncode == EXIT_OK, done.stderr
    text = " ".join(done.stdout.split())
    assert "4 / 0" in text and "p=0.125" in text
    assert "not distinguishable at this n" in text
    assert "undefined (a run is constant)" in text


def test_compare_json_gives_the_same_numbers_as_the_statistics(runs):
    done = evalrepro(
        "compare",
        str(runs["model_a"][1]),
        str(runs["model_b"][1]),
        "--json",
        "--n-resamples",
        "2000",
        "--seed",
        "7",
    )
    (pair,) = json.loads(done.stdout)["pairs"]
    order = sorted({i for _, i in EXPECTED})
    a = [EXPECTED[("model_a", i)] == "resolved" for i in order]
    b = [EXPECTED[("model_b", i)] == "resolved" for i in order]
    repos = [i.split("__")[1].rsplit("-", 1)[0] for i in order]
    # The runs list instances in lockfile order (sorted ids), as here.
    expected = compare_outcomes(a, b, repos, n_resamples=2000, seed=7)
    resolved = pair["resolved"]
    assert resolved["mcnemar"] == expected.mcnemar.model_dump()
    assert resolved["difference"]["estimate"] == pytest.approx(expected.difference.estimate)
    assert resolved["difference"]["low"] == pytest.approx(expected.difference.low)
    assert resolved["minimum_detectable_difference"] == pytest.approx(
        expected.minimum_detectable_difference
    )


def test_compare_several_runs_pairs_each_with_the_first_and_notes_multiplicity(runs):
    done = evalrepro(
        "compare",
        str(runs["demo"][1]),
        str(runs["model_a"][1]),
        str(runs["model_b"][1]),
        "--json",
        "--n-resamples",
        "1000",
    )
    report = json.loads(done.stdout)
    assert [p["b"] for p in report["pairs"]] == ["model_a", "model_b"]
    assert "Bonferroni" in report["multiple_comparisons_note"]


def test_compare_refuses_runs_of_different_experiments_unless_forced(runs, tmp_path):
    other = tmp_path / "other"
    evalrepro("run", "+experiment=model_b", "environment.timeout=6", "--run-dir", str(other))
    refused = evalrepro("compare", str(runs["model_a"][1]), str(other))
    assert refused.returncode == EXIT_CHECK_FAILED
    assert "timeout" in refused.stderr and "not comparable" in refused.stderr
    forced = evalrepro(
        "compare", str(runs["model_a"][1]), str(other), "--force", "--json", "--n-resamples", "1000"
    )
    assert json.loads(forced.stdout)["pairs"][0]["comparable"] is False


def test_report_and_compare_write_self_contained_html(runs, tmp_path):
    page = tmp_path / "run.html"
    evalrepro("report", str(runs["model_a"][1]), "--html", str(page))
    text = page.read_text()
    # Self-contained: nothing fetched (the SVG namespace is a name, not a download).
    assert "<svg" in text
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", text)
    forest = tmp_path / "compare.html"
    evalrepro(
        "compare",
        str(runs["model_a"][1]),
        str(runs["model_b"][1]),
        "--html",
        str(forest),
        "--n-resamples",
        "1000",
    )
    assert "<svg" in forest.read_text()


@pytest.fixture(scope="module")
def two_samples(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("k2") / "run"
    done = evalrepro("run", "+experiment=model_k2", TIMEOUT, "--run-dir", str(run_dir))
    assert done.returncode in (EXIT_OK, EXIT_GATE_FAILED), done.stderr
    return run_dir


def test_a_two_sample_target_plans_instances_times_samples_and_reports_pass_at_k(two_samples):
    metrics = json.loads(evalrepro("report", str(two_samples), "--json").stdout)["metrics"]
    assert metrics["planned"] == 24
    resolved = {(t, i) for (t, i), o in EXPECTED.items() if o == "resolved"}
    instances = sorted({i for _, i in EXPECTED})
    either = sum(("model_a", i) in resolved or ("model_b", i) in resolved for i in instances)
    assert set(metrics["pass_at_k"]) == {"pass@1", "pass@2"}
    # pass@1 is the mean per-sample rate; pass@2 whether either sample resolved.
    assert metrics["pass_at_k"]["pass@1"]["estimate"] == pytest.approx(12 / 24)
    assert metrics["pass_at_k"]["pass@2"]["estimate"] == pytest.approx(either / 12)
    assert metrics["sample_rate"]["estimate"] == pytest.approx(0.5)
    low, high = metrics["pass_at_k"]["pass@2"]["low"], metrics["pass_at_k"]["pass@2"]["high"]
    assert low <= either / 12 <= high


def test_comparing_two_sample_runs_resamples_instances_for_each_k(two_samples, tmp_path):
    done = evalrepro(
        "compare", str(two_samples), str(two_samples), "--json", "--n-resamples", "1000"
    )
    (pair,) = json.loads(done.stdout)["pairs"]
    assert set(pair["by_k"]) == {"pass@1", "pass@2", "pass^2", "sample_rate"}
    assert pair["shared_instances"] == 12
    assert pair["by_k"]["pass@2"]["difference"]["estimate"] == 0


def test_the_console_says_why_trials_are_invalid_once_per_reason(runs):
    done, run_dir = runs["model_b"]
    results = json.loads((run_dir / "results.json").read_text())
    invalid = [t for t in results["trials"] if t["outcome"] == "invalid"]
    assert invalid, "model_b has invalid trials (demo_expectations)"
    for reason in {t["reason"] for t in invalid}:
        count = sum(t["reason"] == reason for t in invalid)
        assert f"invalid {reason} ({count} trial" in done.stdout


def test_the_report_says_where_its_numbers_come_from(runs):
    run_dir = runs["model_a"][1]
    report = json.loads(evalrepro("report", str(run_dir), "--json", "--seed", "7").stdout)
    p = report["provenance"]
    lockfile = (run_dir / "lockfile.lock.json").read_bytes()
    assert p["lockfile_digest"] == "sha256:" + hashlib.sha256(lockfile).hexdigest()
    assert (p["experiment"], p["target_id"], p["dataset"]) == ("model_a", "model_a", "demo")
    assert (p["instances"], p["planned_trials"], p["seed"]) == (12, 12, 7)
    assert p["runtime"] and p["runtime"][0].startswith("podman ")
    assert p["gate"] == "demo" and p["gate_rules"]
    assert p["started_at"] <= p["finished_at"] <= p["generated_at"]
    text = evalrepro("report", str(run_dir)).stdout
    assert p["lockfile_digest"][:19] in text


def test_every_planned_trial_is_a_row_with_its_time(runs):
    report = json.loads(evalrepro("report", str(runs["model_b"][1]), "--json").stdout)
    rows = {row["instance_id"]: row for row in report["trials"]}
    assert len(report["trials"]) == 12 and set(rows) == {i for _, i in EXPECTED}
    expected = {i: o for (t, i), o in EXPECTED.items() if t == "model_b"}
    assert {i: row["outcome"] for i, row in rows.items()} == expected
    assert rows["demo__calc-2"]["reason"] == "patch_empty"  # empty, not invalid
    ran = [row for row in rows.values() if row["reason"] != "patch_empty"]
    for row in ran:
        phases = row["timing"]["seconds"]
        assert phases["wall"] >= phases["container"] > 0, row
    timing = report["timing"]
    assert timing["attempts"] == sum(row["attempts"] for row in rows.values())
    assert timing["seconds"]["tests"] == pytest.approx(
        sum(row["timing"]["seconds"]["tests"] for row in rows.values()), abs=0.01
    )


def test_each_attempt_carries_its_phase_times_and_a_trials_time_is_their_sum(runs):
    run_dir = runs["model_b"][1]
    report = json.loads(evalrepro("report", str(run_dir), "--json").stdout)
    rows = {row["instance_id"]: row for row in report["trials"]}
    for result_path in run_dir.glob("trials/*/result.json"):
        result = json.loads(result_path.read_text())
        summed: dict[str, float] = {}
        for attempt in result["attempts"]:
            phases = attempt["phases"]
            folder = result_path.parent / f"attempt-{attempt['number']}"
            supervisor = folder / "supervisor.json"
            if supervisor.exists():  # the clocks the supervisor reported, kept as they were
                clocks = json.loads(supervisor.read_text())
                assert phases["container"] == clocks["runtime"]["seconds"]
                assert phases["tests"] == (clocks["tests"] or {}).get("seconds", 0.0)
            for name, seconds in phases.items():
                summed[name] = summed.get(name, 0.0) + seconds
        shown = rows[result["instance_id"]]["timing"]["seconds"]
        assert shown == pytest.approx(summed), result["instance_id"]


def test_per_repo_rates_have_their_n_and_interval(runs):
    report = json.loads(evalrepro("report", str(runs["model_a"][1]), "--json").stdout)
    for row in report["metrics"]["per_repo"].values():
        rate = row["rate"]
        assert rate["method"] == "wilson"
        assert rate["low"] <= row["resolved"] / row["planned"] <= rate["high"]
    text = evalrepro("report", str(runs["model_a"][1])).stdout
    assert "n (planned)" in text


def test_a_tampered_artifact_lowers_evidence_completeness_and_is_listed(runs, tmp_path):
    copy = tmp_path / "tampered"
    shutil.copytree(runs["demo"][1], copy)
    log = sorted(copy.glob("trials/*/attempt-1/test_output.txt"))[0]
    log.write_text(log.read_text() + "PASSED forged\n")
    # An export is written whatever the gate says; --enforce-gate makes the gate the exit.
    assert evalrepro("report", str(copy), "--json").returncode == EXIT_OK
    done = evalrepro("report", str(copy), "--json", "--enforce-gate")
    assert done.returncode == EXIT_GATE_FAILED  # the demo gate requires complete evidence
    report = json.loads(done.stdout)
    assert report["metrics"]["evidence_completeness"] == pytest.approx(11 / 12)
    (problem,) = report["evidence_problems"]
    assert str(log) in problem and "changed since it was recorded" in problem
    assert report["metrics"]["planned"] == 12 and report["metrics"]["missing"] == 0
    assert evalrepro("verify", str(copy)).returncode == EXIT_CHECK_FAILED


def test_compare_lists_each_instance_in_each_run_discordant_first(runs):
    a, b = runs["model_a"][1], runs["model_b"][1]
    report = json.loads(evalrepro("compare", str(a), str(b), "--json").stdout)
    rows = report["instances"]
    assert len(rows) == 12
    expected = {i: (EXPECTED[("model_a", i)], EXPECTED[("model_b", i)]) for _, i in EXPECTED}
    flags = [row["discordant"] for row in rows]
    assert flags == sorted(flags, reverse=True)  # discordant ones first
    for row in rows:
        outcomes = tuple(cell["outcome"] for cell in row["runs"])
        assert outcomes == expected[row["instance_id"]]
        resolved = [o == "resolved" for o in outcomes]
        assert row["discordant"] == (resolved[0] != resolved[1])
        for cell, run_dir in zip(row["runs"], (a, b), strict=True):
            assert (run_dir / cell["folder"] / "result.json").is_file()
    assert [p["experiment"] for p in report["runs"]] == ["model_a", "model_b"]
