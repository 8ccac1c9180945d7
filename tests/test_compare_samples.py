"""`compare` of a run of one sample an instance against one of two, and what every output
says it paired.

The runs are the demo's in the fake environment (every listed test passes): model_a,
one sample an instance, resolves all 12; model_k2, two samples an instance (model_a's
patch and model_b's), resolves 21 of 24 samples: model_b's patch is empty for calc-2
and suspect (invalid) for calc-1 and ledger-1. Paired by each instance's share of
resolved samples, B is 3/24 = 12.5 points lower with three discordant instances; read at
sample 0 only (as compare once did) both resolve everything and nothing differs, while
the per-instance table listed every instance as discordant (1 of 1 against 2 of 2).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from markupsafe import escape
from rich.console import Console

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment
from evalrepro.publish.bundle import write_bundle
from evalrepro.records.compare import COUNTING, ComparisonReport
from evalrepro.report.compare import compare_runs, print_comparison_report
from evalrepro.report.latex import render_comparison_latex
from tests.test_report_latex import compile_fragments

N_RESAMPLES = 500
#: Instances whose second model_k2 sample does not resolve.
SHORT = {"demo__calc-1", "demo__calc-2", "demo__ledger-1"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("samples")
    made = {}
    for experiment in ("model_a", "model_k2"):
        config = compose([f"+experiment={experiment}", "environment=fake"])
        run_experiment(
            config, Console(file=io.StringIO()), run_dir=root / experiment, cache_dir=root / "c"
        )
        made[experiment] = root / experiment
    return made


def printed(report: ComparisonReport) -> str:
    console = Console(file=io.StringIO(), width=400, color_system=None)
    print_comparison_report(console, report)
    return console.file.getvalue()


def test_one_sample_against_two_pairs_each_instances_share_of_resolved_samples(runs):
    report = compare_runs([runs["model_a"], runs["model_k2"]], n_resamples=N_RESAMPLES)
    (pair,) = report.pairs
    c = pair.resolved
    assert (pair.samples_a, pair.samples_b) == (1, 2)
    assert c.n == 12 and c.rate_a.estimate == 1.0
    assert c.rate_b.estimate == pytest.approx(21 / 24)  # not sample 0's 12 of 12
    assert c.difference.estimate == pytest.approx(-3 / 24)
    assert c.mcnemar is None and "bootstrap" in c.difference.method  # shares, not 0/1
    assert (pair.a_higher, pair.b_higher) == (3, 0)
    # pass@k only for a k both runs have: A has one sample, so pass@1 alone.
    assert set(pair.by_k) == {"pass@1", "sample_rate"}
    assert "share of resolved samples (1 sample in A, up to 2 samples in B)" in pair.paired
    assert "pass@k for k > 1 not compared (A has one sample an instance)" in pair.paired
    # The per-instance table flags the same three: 1 of 1 and 2 of 2 agree.
    flagged = {row.instance_id for row in report.instances if row.discordant}
    assert flagged == SHORT


def test_the_other_way_round_the_difference_turns_and_the_counts_swap(runs):
    report = compare_runs([runs["model_k2"], runs["model_a"]], n_resamples=N_RESAMPLES)
    (pair,) = report.pairs
    assert pair.resolved.difference.estimate == pytest.approx(3 / 24)
    assert (pair.a_higher, pair.b_higher) == (0, 3)
    assert "(B has one sample an instance)" in pair.paired


def test_two_runs_of_two_samples_compare_pass_at_2_and_pass_hat_2_too(runs):
    report = compare_runs([runs["model_k2"], runs["model_k2"]], n_resamples=N_RESAMPLES)
    (pair,) = report.pairs
    assert set(pair.by_k) == {"pass@1", "pass@2", "pass^2", "sample_rate"}
    assert pair.paired.endswith("pass@k and pass^k also for k = 2")
    assert (pair.a_higher, pair.b_higher) == (0, 0)


def test_the_console_headline_counts_the_discordant_instances_its_table_lists(runs):
    report = compare_runs([runs["model_a"], runs["model_k2"]], n_resamples=N_RESAMPLES)
    text = printed(report)
    flat = " ".join(re.sub("[\u2500-\u257f]", " ", text).split())
    assert "discordant (share of resolved samples): A higher / B higher 3 / 0" in flat
    assert "discordant instances (3)" in flat
    assert "model_a (model_a)" not in flat  # one name when experiment and target agree
    lines = text.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict: "))
    # What was paired, and how invalid trials count, right above the verdict.
    assert lines[verdict - 2].startswith("paired: each of the 12 shared instances: its share")
    assert lines[verdict - 1] == f"counted: {COUNTING}"
    assert "invalid and missing trials count as unresolved (failures)" in COUNTING
    assert "B resolves 12.5 points fewer" in lines[verdict]


def test_one_sample_runs_say_they_paired_each_trial(runs):
    report = compare_runs([runs["model_a"], runs["model_a"]], n_resamples=N_RESAMPLES)
    (pair,) = report.pairs
    assert pair.paired == "each of the 12 shared instances: its one trial in A and in B, " + (
        "resolved or not"
    )
    flat = " ".join(printed(report).split())
    assert "discordant: A only / B only │ 0 / 0" in flat
    assert f"counted: {COUNTING}" in flat


def test_a_schema_2_comparison_reads_as_3_saying_it_did_not_record_the_pairing(runs):
    report = compare_runs([runs["model_a"], runs["model_a"]], n_resamples=N_RESAMPLES)
    old = json.loads(report.model_dump_json())
    old["schema_version"] = 2
    for pair in old["pairs"]:
        for field in ("paired", "counting", "samples_a", "samples_b", "a_higher", "b_higher"):
            del pair[field]
    read = ComparisonReport.model_validate(old)
    (pair,) = read.pairs
    assert read.schema_version == 3
    assert pair.paired == "not recorded (a schema 2 comparison)" and pair.samples_a is None
    assert (pair.a_higher, pair.b_higher) == (0, 0)  # McNemar's discordant pairs


def test_html_says_what_was_paired_and_keeps_a_bundles_viewer_in_the_pages_folder(
    runs, tmp_path, capsys
):
    bundle = tmp_path / "a.bundle.tar.gz"
    write_bundle(runs["model_a"], bundle)
    page = tmp_path / "out" / "cmp.html"
    code = main(
        ["compare", str(bundle), str(runs["model_k2"]), "--html", str(page), "--n-resamples", "500"]
    )
    assert code == 0, capsys.readouterr().err
    # One folder beside the page, named after it; nothing else beside it.
    assert sorted(p.name for p in page.parent.iterdir()) == ["cmp.html", "cmp_files"]
    assert sorted(p.name for p in (page.parent / "cmp_files").iterdir()) == ["view-1"]
    text = page.read_text()
    links = re.findall(r'href="(cmp_files/[^"#]+)"', text)
    assert links and all((page.parent / link).is_file() for link in links)
    # A run directory's viewer stays in the run: RUN/view/.
    assert (runs["model_k2"] / "view" / "index.html").is_file()
    assert "its share of resolved samples (1 sample in A, up to 2 samples in B)" in text
    assert str(escape(COUNTING)) in text
    assert "A higher 3, B higher 0 (shares of resolved samples)" in text


def test_latex_of_the_demo_names_each_run_once_says_what_was_paired_and_compiles(runs, tmp_path):
    report = compare_runs([runs["model_a"], runs["model_k2"]], n_resamples=N_RESAMPLES)
    tex = render_comparison_latex(report)
    assert "(model\\_\\allowbreak{}a)" not in tex and "model\\_a (model\\_a)" not in tex
    table = tex[: tex.index("\\end{table}")]
    # Said once for the table (one pair: no run named).
    assert "Paired: each of the 12 shared instances" in table
    assert "Invalid and missing trials count as unresolved (failures)" in table
    assert "CI $-$" in table and not re.search(r"CI -\d", table)
    # The discordant column counts the instances whose share is higher in A, in B.
    (row,) = [line for line in table.splitlines() if line.startswith("model\\_k2 &")]
    # Three instances each half a sample apart: the exact sign-flip p, 2/8, as McNemar
    # would give for 3 discordant pairs all one way.
    assert row.endswith("& 3 / 0 & 0.25$^{s}$ \\\\")
    assert "for shares of resolved samples, higher in A, in B" in table
    label = re.search(r"\\label\{(.*)\}", tex)[1]
    log, text, _ = compile_fragments(
        {"compare": tex, "note": f"\\evalreproprovenance{{{label}}}\n"}, tmp_path
    )
    assert "Overfull" not in log
    page = " ".join(text.split())
    assert "count as unresolved (failures)" in page
    # pdftotext drops the rule "_" prints as; the placed note names A once.
    assert "A=modela:trialsrunby" in "".join(text.split())
