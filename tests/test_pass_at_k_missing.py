"""pass@k of a target that gave fewer samples than it declares (``target.missing: skip``).

The run plans only the samples the predictions give, as the policy says. pass@k for one
k is then the mean over the instances with at least k planned samples, and the record
says over how many (``metrics.pass_at_k_instances``); a k no instance has is "not
available", never estimated from another set and never a crash. ``run``, ``report``
(every format), ``report --rebuild``, ``view``, ``compare``, ``verify`` and a bundle of
such a run all work. Runs are the demo's two-sample target (``+experiment=model_k2``) in
the fake environment: only the sandbox is scripted (every listed test passes).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.config.gate import Gate, GateRule
from evalrepro.pipeline import run_experiment
from evalrepro.publish.bundle import write_bundle
from evalrepro.records.base import parse_record
from evalrepro.records.metrics import RunMetrics
from evalrepro.report.stats import pass_at_k

K2 = Path(__file__).resolve().parents[1] / "evalrepro" / "demo" / "predictions" / "model_k2.jsonl"


def predictions(path: Path, keep) -> Path:
    """model_k2's predictions, only the (instance, sample) that ``keep`` says."""
    lines = [json.loads(line) for line in K2.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if keep(line["instance_id"], line["sample_index"])]
    path.write_text("".join(json.dumps(line) + "\n" for line in kept))
    return path


def make_run(root: Path, name: str, keep):
    config = compose(
        [
            "+experiment=model_k2",
            "environment=fake",
            f"target.path={predictions(root / f'{name}.jsonl', keep)}",
            "target.missing=skip",
        ]
    )
    outcome = run_experiment(
        config, Console(file=io.StringIO()), run_dir=root / name, cache_dir=root / "cache"
    )
    return outcome, root / name


#: The last four instances of the demo (textkit) have sample 0 only.
SHORT = ("demo__textkit-1", "demo__textkit-2", "demo__textkit-3", "demo__textkit-4")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("k")
    return {
        # Every instance has one sample of the two declared: pass@2 is for no instance.
        "one": make_run(root, "one", lambda iid, i: i == 0),
        # Eight instances have both samples, four only the first.
        "mixed": make_run(root, "mixed", lambda iid, i: i == 0 or iid not in SHORT),
    }


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def test_one_sample_of_two_runs_every_trial_and_records_pass_at_2_as_not_available(runs):
    outcome, _ = runs["one"]
    m = outcome.report.metrics
    assert (m.planned, m.resolved, m.instances, m.samples) == (12, 12, 12, 2)
    assert set(m.pass_at_k) == {"pass@1"}
    assert m.pass_at_k_instances == {"pass@1": 12, "pass@2": 0}
    assert m.sample_rate == m.pass_at_k["pass@1"]
    assert "pass@2" not in m.values()
    assert m.pass_at_k_coverage("pass@2") == "not available: no instance has 2 samples"
    assert m.pass_at_k_coverage("pass@1") == ""


def test_a_gate_on_a_pass_at_k_that_is_not_available_fails_and_says_n_a(runs):
    m = runs["one"][0].report.metrics
    (verdict,) = Gate(rules=[GateRule(metric="pass@2", op=">=", threshold=0.5)]).evaluate(
        m.values()
    )
    assert verdict.value is None and not verdict.passed


def test_some_instances_short_of_k_make_pass_at_k_over_the_rest_and_say_so(runs):
    outcome, run_dir = runs["mixed"]
    m = outcome.report.metrics
    assert (m.planned, m.instances) == (20, 12)
    assert m.pass_at_k_instances == {"pass@1": 12, "pass@2": 8}
    # The mean over exactly the eight two-sample instances, from the trial results.
    lines = json.loads((run_dir / "results.json").read_text())["trials"]
    by_instance: dict[str, list[bool]] = {}
    for line in lines:
        by_instance.setdefault(line["instance_id"], []).append(line["outcome"] == "resolved")
    two = [v for v in by_instance.values() if len(v) == 2]
    assert len(two) == 8
    expected = sum(pass_at_k(2, sum(v), 2) for v in two) / 8
    assert m.pass_at_k["pass@2"].estimate == pytest.approx(expected)
    every = sum(sum(v) / len(v) for v in by_instance.values()) / 12
    assert m.pass_at_k["pass@1"].estimate == pytest.approx(every)
    assert m.pass_at_k_coverage("pass@2") == (
        "over 8 of 12 instances, those with at least 2 samples"
    )


def test_report_prints_over_which_instances_in_every_format(runs, capsys, tmp_path):
    _, one = runs["one"]
    _, mixed = runs["mixed"]
    code, text = cli(capsys, "report", str(one), "--markdown")
    assert code == 0
    assert "| pass@2 | not available: no instance has 2 samples |" in text
    # pass^2 beside it says the same: it is over the instances pass@2 is over.
    assert "| pass^2 | not available: no instance has 2 samples |" in text
    code, text = cli(capsys, "report", str(mixed), "--markdown")
    assert code == 0
    line = next(row for row in text.splitlines() if row.startswith("| pass@2 |"))
    assert line.endswith(", over 8 of 12 instances, those with at least 2 samples |")
    line = next(row for row in text.splitlines() if row.startswith("| pass^2 |"))
    assert line.endswith(", over 8 of 12 instances, those with at least 2 samples |")
    code, text = cli(capsys, "report", str(mixed))
    assert code == 0 and "over 8 of 12 instances, those with at least 2 samples" in text
    code, text = cli(capsys, "report", str(one), "--json")
    metrics = json.loads(text)["metrics"]
    assert metrics["schema_version"] == RunMetrics.model_fields["schema_version"].default
    assert metrics["pass_at_k_instances"] == {"pass@1": 12, "pass@2": 0}
    assert set(metrics["pass_at_k"]) == {"pass@1"}
    code, tex = cli(capsys, "report", str(one), "--latex")
    assert code == 0
    assert "pass@2 not available: no instance has 2 samples" in tex
    assert "pass@2 & & \\multicolumn{3}{c}{---} \\\\" in tex
    code, tex = cli(capsys, "report", str(mixed), "--latex")
    assert "pass@2 over 8 of 12 instances, those with at least 2 samples" in tex
    page = tmp_path / "one.html"
    code, _ = cli(capsys, "report", str(one), "--html", str(page))
    assert code == 0
    assert "<li>pass@2: not available: no instance has 2 samples</li>" in page.read_text()


def test_report_rebuild_and_view_of_such_a_run_work(runs, capsys, tmp_path):
    for name in ("one", "mixed"):
        _, run_dir = runs[name]
        before = json.loads((run_dir / "results.json").read_text())
        code, _ = cli(capsys, "report", str(run_dir), "--rebuild")
        assert code == 0
        assert json.loads((run_dir / "results.json").read_text()) == before
        code, _ = cli(capsys, "view", str(run_dir), "--output", str(tmp_path / name))
        assert code == 0 and (tmp_path / name / "index.html").is_file()
        code, _ = cli(capsys, "verify", str(run_dir))
        assert code == 0


def test_compare_pairs_pass_at_k_over_the_instances_both_runs_have_k_samples(runs, capsys):
    _, one = runs["one"]
    _, mixed = runs["mixed"]
    code, text = cli(capsys, "compare", "--json", "--n-resamples", "200", str(mixed), str(mixed))
    assert code == 0
    (pair,) = json.loads(text)["pairs"]
    assert pair["shared_instances"] == 12
    assert {k: c["n"] for k, c in pair["by_k"].items()} == {
        "pass@1": 12,
        "pass@2": 8,
        "pass^2": 8,
        "sample_rate": 12,
    }
    code, text = cli(capsys, "compare", "--n-resamples", "200", str(mixed), str(mixed))
    assert code == 0 and "pass@2 (8 instances): A / B / B - A" in " ".join(text.split())
    # No shared instance has two samples in both: pass@2 is not compared, pass@1 is.
    code, text = cli(capsys, "compare", "--json", "--n-resamples", "200", str(one), str(mixed))
    assert code == 0
    (pair,) = json.loads(text)["pairs"]
    assert set(pair["by_k"]) == {"pass@1", "sample_rate"}
    assert pair["by_k"]["pass@1"]["n"] == 12


def test_a_bundle_of_such_a_run_verifies_and_reports(runs, capsys, tmp_path):
    _, mixed = runs["mixed"]
    bundle = tmp_path / "mixed.bundle.tar.gz"
    write_bundle(mixed, bundle)
    code, _ = cli(capsys, "verify", str(bundle))
    assert code == 0
    code, text = cli(capsys, "report", str(bundle), "--json")
    assert json.loads(text)["metrics"]["pass_at_k_instances"] == {"pass@1": 12, "pass@2": 8}


def test_a_schema_2_metrics_record_reads_with_its_pass_at_k_not_said_to_cover_anything(runs):
    """Schema 2 did not record which instances pass@k is over: read, it says nothing of
    them rather than "all instances"."""
    m = runs["mixed"][0].report.metrics
    old = m.model_dump(mode="json", exclude={"instances", "pass_at_k_instances", "pass_hat_k"})
    old["schema_version"] = 2
    read = parse_record(old, RunMetrics, where="old")
    assert (
        read.schema_version == RunMetrics.model_fields["schema_version"].default
        and read.instances is None
        and read.pass_at_k_instances == {}
    )
    assert read.pass_at_k == m.pass_at_k
    assert [(name, note) for name, _, note in read.pass_at_k_rows()] == [
        ("pass@1", ""),
        ("pass@2", ""),
    ]
