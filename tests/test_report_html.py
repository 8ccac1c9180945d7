"""The HTML reports: one self-contained page per run or comparison, drawn by templates
from records. Seeded synthetic runs (12 SWE-bench repos, 50 repos, multi-sample) check
the layout, the numbers and their intervals; real run directories (made by the
executor without containers, ``tests/test_view.build_run``) check the per-trial tables
and their links into each run's trial viewer, through ``evalrepro report --html`` and
``compare --html``. Pages are checked as parsed documents (structure, escaping, nothing
fetched) and rendered for real in headless Chromium (the page draws, its SVG plots are
in the DOM, no script ran)."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest

from evalrepro.cli import main
from evalrepro.config.gate import Gate, GateRule
from evalrepro.records.compare import ComparisonReport, PairComparison
from evalrepro.records.metrics import RepoBreakdown, RunMetrics
from evalrepro.records.report import Provenance, RunReport, SwebenchFields
from evalrepro.records.stats import Interval, level_label, p_label
from evalrepro.records.timing import PhaseSeconds, RunTiming
from evalrepro.records.trial import trial_label
from evalrepro.report.compare import compare_runs, instance_outcomes, load_run
from evalrepro.report.html import (
    PROVENANCE_LABELS,
    rate_range,
    render_comparison_html,
    render_run_html,
    trial_page,
    visible,
)
from evalrepro.report.run_report import build_run_report
from evalrepro.report.stats import compare_outcomes, pass_at_k_interval, wilson_interval
from tests.test_view import MIXED, SCRIPT, Case, build_run

SWEBENCH_REPOS = (
    "astropy/astropy",
    "django/django",
    "matplotlib/matplotlib",
    "mwaskom/seaborn",
    "pallets/flask",
    "psf/requests",
    "pydata/xarray",
    "pylint-dev/pylint",
    "pytest-dev/pytest",
    "scikit-learn/scikit-learn",
    "sphinx-doc/sphinx",
    "sympy/sympy",
)
FAILURES = ("tests_failed", "patch_rejected", "patch_empty")
INVALID = ("infrastructure_error", "timeout", "log_unparseable")


def _rate(count: int, planned: int) -> Interval:
    low, high = wilson_interval(count, planned)
    return Interval(
        estimate=count / planned if planned else 0.0, low=low, high=high, method="wilson"
    )


def synthetic_run(
    repos: tuple[str, ...],
    per_repo: int,
    *,
    seed: int,
    p_resolve: float = 0.45,
    samples: int = 1,
    missing: int = 0,
    target_id: str = "model",
    base: np.ndarray | None = None,
) -> tuple[RunMetrics, np.ndarray, np.ndarray]:
    """A run as compute_metrics would report it, plus each instance's resolved 0/1 (first
    sample) and repo. With ``base``, outcomes follow it closely (correlated runs)."""
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.array(repos), per_repo)
    n = clusters.size
    # Repos differ in difficulty, as in SWE-bench.
    difficulty = np.repeat(rng.uniform(-0.25, 0.25, len(repos)), per_repo)
    resolved = rng.random((n, samples)) < np.clip(p_resolve + difficulty, 0.02, 0.98)[:, None]
    if base is not None:
        keep = rng.random(n) < 0.8
        resolved[keep, 0] = base[keep].astype(bool)
    # One trial per (instance, sample), as the lockfile plans them.
    trial_repo = np.repeat(clusters, samples)
    trial_resolved = resolved.reshape(-1)
    outcome = np.where(trial_resolved, "resolved", "unresolved").astype(object)
    reasons = np.where(trial_resolved, "tests_passed", "tests_failed").astype(object)
    for index in np.flatnonzero(~trial_resolved):
        draw = rng.random()
        if draw < 0.12:
            outcome[index], reasons[index] = "invalid", INVALID[rng.integers(len(INVALID))]
        elif draw < 0.3:
            reasons[index] = FAILURES[1 + rng.integers(2)]
    outcome[rng.choice(outcome.size, size=missing, replace=False)] = "missing"
    finished = outcome != "missing"
    counts = Counter(outcome)
    by_repo = {}
    for repo in repos:
        mine = {
            o: int(np.sum((trial_repo == repo) & (outcome == o)))
            for o in ("resolved", "unresolved", "invalid", "missing")
        }
        by_repo[repo] = RepoBreakdown(
            planned=per_repo * samples, **mine, rate=_rate(mine["resolved"], per_repo * samples)
        )
    planned = outcome.size
    extra = {}
    if samples > 1:
        per_instance = list(resolved)
        extra["pass_at_k"] = {
            f"pass@{k}": pass_at_k_interval(per_instance, k, n_resamples=500)
            for k in (1, 2, 4)
            if k <= samples
        }
        extra["sample_rate"] = extra["pass_at_k"]["pass@1"]
    metrics = RunMetrics(
        experiment="swebench_lite",
        target_id=target_id,
        planned=planned,
        resolved=counts["resolved"],
        unresolved=counts["unresolved"],
        invalid=counts["invalid"],
        missing=counts["missing"],
        resolved_rate=_rate(counts["resolved"], planned),
        unresolved_rate=_rate(counts["unresolved"], planned),
        invalid_rate=_rate(counts["invalid"], planned),
        evidence_completeness=float(finished.mean()) if planned else 0.0,
        attempts=int(finished.sum()) + 7,
        retried_trials=5,
        retry_reasons={"infrastructure_error": 7},
        reasons=dict(sorted(Counter(reasons[finished]).items())),
        reason_outcomes=dict(zip(reasons[finished], outcome[finished], strict=True)),
        per_repo=by_repo,
        samples=samples,
        **extra,
    )
    first_sample = (outcome == "resolved").reshape(n, samples)[:, 0]
    return metrics, first_sample.astype(float), clusters


GATE = Gate(
    name="lite",
    rules=[
        GateRule(metric="resolved_rate", op=">=", threshold=0.4),
        GateRule(metric="invalid_rate", op="<=", threshold=0.02),
        GateRule(metric="evidence_completeness", op=">=", threshold=0.99),
        GateRule(metric="planned", op="==", threshold=300),
    ],
)
STARTED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def provenance_of(metrics: RunMetrics) -> Provenance:
    return Provenance(
        evalrepro_version="0.2.0",
        harness_version="0.2.0",
        harness_commit="0123456789abcdef0123456789abcdef01234567",
        lockfile_digest="sha256:" + "d" * 64,
        experiment=metrics.experiment,
        target_id=metrics.target_id,
        dataset="swe-bench-lite",
        instances=metrics.planned // max(metrics.samples, 1),
        planned_trials=metrics.planned,
        gate=GATE.name,
        gate_rules=[str(rule) for rule in GATE.rules],
        runtime=["podman rootless (4.3.1)"],
        sessions=2,
        started_at=STARTED,
        finished_at=datetime(2026, 11, 30, 11, 30, tzinfo=UTC),
        generated_at=datetime(2026, 12, 1, 8, 0, tzinfo=UTC),
        confidence=0.95,
        n_resamples=10_000,
        seed=0,
    )


def report_of(metrics: RunMetrics, *, gate: bool = True, **update) -> RunReport:
    """A RunReport around synthetic metrics (no trials: the real runs below have them)."""
    verdicts = GATE.evaluate(metrics.values()) if gate else []
    swebench = SwebenchFields.model_validate(
        {
            name: 0 if info.annotation is int else {} if name == "failure_reasons" else []
            for name, info in SwebenchFields.model_fields.items()
        }
        | {"schema_version": 2}
    )
    timing = RunTiming(
        trials=metrics.planned - metrics.missing,
        attempts=metrics.attempts,
        retried_trials=metrics.retried_trials,
        seconds=PhaseSeconds(wall=5400.0, container=5100.0, patch=60.0, reset=30.0, tests=4200.0),
        layers_built=14,
        build_seconds={"base": 95.0, "env": 610.5, "instance": 44.0},
        started_at=STARTED,
        finished_at=datetime(2026, 11, 30, 11, 30, tzinfo=UTC),
    )
    report = RunReport(
        run="/home/someone/runs/lite",
        provenance=provenance_of(metrics),
        metrics=metrics,
        gate_name=GATE.name if gate else "",
        gate=verdicts,
        gate_passed=all(v.passed for v in verdicts),
        swebench=swebench,
        timing=timing,
    )
    return report.model_copy(update=update)


class Document(HTMLParser):
    """Tags with their attributes, text per enclosing tag, and every SVG's children."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.svg_first_child: list[str] = []
        self.svg_titles: list[str] = []
        self.text: list[tuple[str, str]] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        if self.stack and self.stack[-1] == "svg":
            if len(self.svg_first_child) < sum(t == "svg" for t, _ in self.tags):
                self.svg_first_child.append(tag)
        self.tags.append((tag, dict(attrs)))
        if tag not in {"rect", "line", "circle", "polygon", "meta", "br"}:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if self.stack:
            self.text.append((self.stack[-1], data))
            if self.stack[-1] == "title" and "svg" in self.stack:
                self.svg_titles.append(data)

    def count(self, tag: str, css_class: str | None = None) -> int:
        return sum(
            t == tag and (css_class is None or css_class in (a.get("class") or "").split())
            for t, a in self.tags
        )

    def links(self) -> list[str]:
        return [a["href"] or "" for t, a in self.tags if t == "a" and a.get("href")]


def assert_self_contained(page: str) -> Document:
    doc = Document(page)
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert "url(" not in page and "@import" not in page
    assert not {t for t, _ in doc.tags} & {"script", "link", "img", "iframe", "object", "embed"}
    assert not [k for _, a in doc.tags for k in a if k.startswith("on")]
    csp = [a for t, a in doc.tags if t == "meta" and a.get("http-equiv")]
    assert csp and (csp[0]["content"] or "").startswith("default-src 'none'; style-src 'sha256-")
    assert doc.count("style") == 1 and not [a for _, a in doc.tags if "style" in a]
    return doc


@pytest.fixture(scope="module")
def run12():
    return synthetic_run(SWEBENCH_REPOS, 25, seed=1, missing=4)


def comparison_of(
    base: RunMetrics, others: list[tuple[RunMetrics, np.ndarray]], a, clusters, **settings
) -> ComparisonReport:
    """Every run against the first, at the corrected level a ComparisonReport records."""
    m = len(others)
    each = 1 - 0.05 / max(m, 1)
    pairs = [
        PairComparison(
            a=f"{base.experiment} ({base.target_id})",
            b=f"{metrics.experiment} ({metrics.target_id})",
            a_path="runs/a",
            b_path=f"runs/{metrics.target_id}",
            comparable=True,
            differences=[],
            shared_instances=len(a),
            missing_trials=0,
            paired=f"each of the {len(a)} shared instances: its one trial in A and in B",
            samples_a=1,
            samples_b=1,
            a_higher=int(np.sum(np.greater(a, b))),
            b_higher=int(np.sum(np.greater(b, a))),
            resolved=compare_outcomes(a, b, clusters, n_resamples=2000, seed=0, confidence=each),
        )
        for metrics, b in others
    ]
    note = None
    if m > 1:
        note = (
            f"{m} comparisons against the first run, Bonferroni-corrected: each interval, "
            f"McNemar test and verdict is at {level_label(each)}"
        )
    fields = {
        "confidence": 0.95,
        "comparison_confidence": each,
        "correction": "Bonferroni" if m > 1 else "none",
        "n_resamples": 2000,
        "seed": 0,
        "method": "BCa",
        "pairs": pairs,
        "multiple_comparisons_note": note,
    }
    return ComparisonReport(**(fields | settings))


@pytest.fixture(scope="module")
def comparison_pages():
    base, a, clusters = synthetic_run(SWEBENCH_REPOS, 25, seed=1, target_id="model_a")
    others = []
    for seed, p, name in ((2, 0.55, "model_b"), (3, 0.45, "model_c"), (4, 0.30, "model_d")):
        metrics, b, _ = synthetic_run(
            SWEBENCH_REPOS, 25, seed=seed, p_resolve=p, target_id=name, base=a
        )
        others.append((metrics, b))
    comparison = comparison_of(base, others, a, clusters)
    return comparison, [report_of(base), *(report_of(m) for m, _ in others)]


# --- the run page ----------------------------------------------------------------------


def test_run_page_is_one_self_contained_document(run12):
    page = render_run_html(report_of(run12[0]), title="SWE-bench Lite: model")
    assert_self_contained(page)


def test_every_svg_starts_with_a_title(run12):
    doc = Document(render_run_html(report_of(run12[0]), title="t"))
    assert doc.count("svg") == 2  # outcomes per repo, failure modes (single sample)
    assert doc.svg_first_child == ["title"] * doc.count("svg")
    assert all(title.strip() for title in doc.svg_titles)
    assert all(a.get("role") == "img" for t, a in doc.tags if t == "svg")


def test_summary_says_rates_are_over_planned_trials_with_intervals(run12):
    metrics = run12[0]
    page = render_run_html(report_of(metrics, gate=False), title="t")
    assert "Rates are over planned trials</strong> (300)" in page
    for outcome in ("resolved", "unresolved", "invalid", "missing"):
        assert f'<div class="label">{outcome}</div>' in page
    low, high = metrics.resolved_rate.low * 100, metrics.resolved_rate.high * 100
    estimate = metrics.resolved_rate.estimate * 100
    assert f"{estimate:.1f}% of planned" in page
    assert f"95% CI {low:.1f}\u2013{high:.1f}%" in page
    assert f"{metrics.evidence_completeness * 100:.1f}% of planned\ntrials have every" in page
    assert "No gate rules." in page


def test_missing_gets_no_interval_and_a_rate_of_zero_keeps_its_upper_bound():
    metrics, _, _ = synthetic_run(("psf/requests",), 10, seed=7, p_resolve=1.0)
    assert metrics.invalid == metrics.unresolved == metrics.missing == 0
    page = render_run_html(report_of(metrics), title="t")
    block = page.split('<div class="cards">')[1].split('<p class="note">')[0]
    cards = block.split('<div class="card ')[1:]
    for card in cards:
        outcome, card = card.split('"', 1)[0], card.split('<div class="card')[0]
        # Every outcome rate has its interval, 0 of 10 included; "missing" is no rate.
        assert ("CI" in card) == (outcome in ("resolved", "unresolved", "invalid")), outcome
    # Nothing resolved anywhere: each repo's whisker runs from 0 to its Wilson bound.
    some, _, _ = synthetic_run(("psf/requests", "pallets/flask"), 10, seed=7, p_resolve=0.3)
    nothing = {
        repo: b.model_copy(
            update={
                "resolved": 0,
                "unresolved": b.unresolved + b.resolved,
                "rate": b.rate.model_copy(
                    update=dict(
                        zip(("low", "high"), wilson_interval(0, b.planned), strict=True),
                        estimate=0.0,
                    )
                ),
            }
        )
        for repo, b in some.per_repo.items()
    }
    zero = some.model_copy(update={"resolved": 0, "per_repo": nothing})
    page = render_run_html(report_of(zero), title="t")
    # One whisker per repo and one on the total.
    assert Document(page).count("g", "resolved-ci") == len(nothing) + 1
    assert "0.0\u201327.8%" in page  # 0 of 10: the rate could still be as high as 27.8%


def test_gate_rules_show_measured_value_and_verdict(run12):
    metrics = run12[0]
    doc = Document(render_run_html(report_of(metrics), title="t"))
    verdicts = [text for tag, text in doc.text if tag == "td" and text in {"pass", "fail"}]
    expected = ["pass" if v.passed else "fail" for v in GATE.evaluate(metrics.values())]
    assert verdicts == expected and "fail" in verdicts and "pass" in verdicts
    cells = [text for tag, text in doc.text if tag == "td"]
    assert f"{metrics.resolved_rate.estimate * 100:.1f}%" in cells  # rates as percent
    assert "300" in cells  # counts as counts


def test_outcome_bars_one_row_per_repo_led_by_the_whole_run_with_resolved_whiskers(run12):
    metrics = run12[0]
    doc = Document(render_run_html(report_of(metrics), title="t"))
    assert doc.count("g", "repo-row") == len(SWEBENCH_REPOS) + 1
    nonzero = sum(
        getattr(b, o) > 0
        for b in [*metrics.per_repo.values(), metrics]
        for o in ("resolved", "unresolved", "invalid", "missing")
    )
    assert doc.count("rect", "segment") == nonzero
    assert ("text", f"all {len(SWEBENCH_REPOS)} repos") in doc.text
    with_resolved = sum(b.resolved > 0 for b in metrics.per_repo.values()) + 1
    assert doc.count("g", "resolved-ci") == with_resolved


def test_per_repo_rates_are_shown_with_their_n_and_interval(run12):
    metrics = run12[0]
    page = render_run_html(report_of(metrics), title="t")
    table = page[page.index('id="per-repo-table"') :]
    for repo, b in metrics.per_repo.items():
        rate = (
            f"{b.rate.estimate * 100:.1f}% ({b.rate.low * 100:.1f}\u2013{b.rate.high * 100:.1f}%)"
        )
        assert re.search(
            rf"<th scope=\"row\">{re.escape(repo)}</th><td class=\"num\">{b.planned}</td>.*?"
            rf"{re.escape(rate)}",
            table,
            re.S,
        )


def test_one_repo_draws_one_bar_without_a_total_row():
    metrics, _, _ = synthetic_run(("django/django",), 40, seed=5)
    doc = Document(render_run_html(report_of(metrics), title="t"))
    assert doc.count("g", "repo-row") == 1


def test_fifty_repos_get_fifty_rows_and_long_names_are_cut_keeping_the_full_name():
    repos = tuple(f"org-{i:02d}/a-rather-long-repository-name-number-{i:02d}" for i in range(50))
    metrics, _, _ = synthetic_run(repos, 3, seed=6)
    page = render_run_html(report_of(metrics), title="t")
    doc = Document(page)
    assert doc.count("g", "repo-row") == 51
    labels = [text for tag, text in doc.text if tag == "text" and text.startswith("org-")]
    # Cut in the middle: both ends tell repos apart.
    assert len(set(labels)) == 50 and all(
        len(label) <= 34 and "\u2026" in label for label in labels
    )
    assert all(f"<title>{repo}: " in page for repo in repos)


def test_failure_modes_show_reasons_as_words_and_missing(run12):
    metrics = run12[0]
    doc = Document(render_run_html(report_of(metrics), title="t"))
    failures = {r for r in metrics.reasons if r != "tests_passed"}
    assert doc.count("g", "reason-row") == len(failures) + 1  # + missing (no result)
    labels = {text for tag, text in doc.text if tag == "text"}
    assert {"tests failed", "patch does not apply", "timeout", "missing (no result)"} <= labels
    assert "tests passed" not in labels


def test_an_empty_patch_is_an_unresolved_failure_mode_never_an_invalid_one(run12):
    metrics = run12[0]
    assert metrics.reasons["patch_empty"] > 0
    page = render_run_html(report_of(metrics), title="t")
    row = re.search(r'<g class="reason-row"><title>empty patch \(patch_empty\).*?</g>', page)
    assert row and 'class="bar unresolved"' in row.group()


def test_no_failure_modes_renders_a_note_instead_of_an_empty_plot():
    metrics, _, _ = synthetic_run(("psf/requests",), 10, seed=7, p_resolve=1.0)
    assert metrics.reasons == {"tests_passed": 10}
    page = render_run_html(report_of(metrics), title="t")
    assert "No failure modes: every finished trial resolved." in page
    assert 'id="failure-modes"' not in page


def test_a_run_with_nothing_planned_still_renders():
    empty = _rate(0, 0)
    metrics = RunMetrics(
        experiment="e",
        target_id="t",
        planned=0,
        resolved=0,
        unresolved=0,
        invalid=0,
        missing=0,
        resolved_rate=empty,
        unresolved_rate=empty,
        invalid_rate=empty,
        evidence_completeness=0.0,
        attempts=0,
        retried_trials=0,
        retry_reasons={},
        reasons={},
        per_repo={},
        samples=1,
    )
    page = render_run_html(report_of(metrics), title="t")
    Document(page)
    assert "No planned trials." in page and "No finished trials" in page


def test_repo_names_reasons_and_titles_are_escaped_and_control_characters_shown():
    hostile = '<script>alert("x")</script>'
    metrics, _, _ = synthetic_run((hostile, "a&b/c", "ctl\x1b[2J\u202e"), 10, seed=8, p_resolve=0.3)
    metrics = metrics.model_copy(update={"reasons": metrics.reasons | {"<img src=x>": 2}})
    page = render_run_html(report_of(metrics), title="<b>title</b>\x00")
    doc = assert_self_contained(page)
    assert not {t for t, _ in doc.tags} & {"script", "img", "b"}
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "a&amp;b/c" in page and "&lt;img src=x&gt;" in page
    assert ("h1", "<b>title</b>\u00abNUL\u00bb") in doc.text
    assert "ctl\u00abESC\u00bb[2J\u00abU+202E\u00bb" in page
    assert not re.search("[\x00-\x08\x0b-\x1f\u202e]", page)


def test_visible_marks_every_character_that_would_hide_or_reorder_text():
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\x00\x1b\x7f\x85\u200b\u202e\u2066\ufeff\ud800") == (
        "\u00abNUL\u00bb\u00abESC\u00bb\u00abDEL\u00bb\u00abU+0085\u00bb\u00abU+200B\u00bb"
        "\u00abU+202E\u00bb\u00abU+2066\u00bb\u00abU+FEFF\u00bb\u00abU+D800\u00bb"
    )


def test_multi_sample_runs_plot_pass_at_k_with_whiskers():
    metrics, _, _ = synthetic_run(SWEBENCH_REPOS[:4], 20, seed=9, samples=4)
    doc = Document(render_run_html(report_of(metrics), title="t"))
    assert doc.count("g", "k-point") == 3  # pass@1, pass@2, pass@4
    assert {"pass@1", "pass@2", "pass@4"} <= {text for tag, text in doc.text if tag == "text"}
    assert doc.count("svg") == 3


def test_every_provenance_field_is_on_the_page(run12):
    report = report_of(run12[0])
    page = render_run_html(report, title="t")
    assert set(PROVENANCE_LABELS) == set(Provenance.model_fields)
    shown = re.findall(r'<dd data-field="(\w+)">([^<]*)</dd>', page)
    assert [name for name, _ in shown] == list(Provenance.model_fields)
    values = dict(shown)
    assert values["lockfile_digest"] == "sha256:" + "d" * 64
    assert values["runtime"] == "podman rootless (4.3.1)"
    assert values["started_at"] == "2026-11-30 09:00:00 UTC" and values["confidence"] == "95%"
    assert values["gate_rules"].startswith("resolved_rate &gt;= 0.4; ")
    # And in one line at the top, as every report prints it.
    assert "trials run by evalrepro 0.2.0 at commit 0123456789ab" in page


def test_time_and_cost_are_accounted_per_phase(run12):
    report = report_of(run12[0])
    doc = Document(render_run_html(report, title="t"))
    rows = [text.strip() for tag, text in doc.text if tag in {"th", "td"}]
    assert "image builds in this run (14 layers built)" in rows and "12 min 30 s" in rows
    assert "env layers" in rows and "10 min 10 s" in rows
    assert "trials, wall time (all attempts)" in rows and "1 h 30 min" in rows
    assert "tokens (input / output)" not in rows  # the target reported none
    usage = {"input_tokens": 12_345_678, "output_tokens": 9_876, "cost_usd": 123.456}
    costly = report.model_copy(update={"timing": report.timing.model_copy(update=usage)})
    rows = [text.strip() for tag, text in Document(render_run_html(costly, title="t")).text]
    assert "12,345,678 / 9,876" in rows and "$123.46" in rows


def test_evidence_problems_are_listed_with_paths_inside_the_run(run12):
    problems = [
        "/home/someone/runs/lite/trials/x--s0--0123456789ab/attempt-1/test_output.txt: "
        "missing or changed since it was recorded (sha256 0123456789ab...)",
        f"/home/someone/runs/lite/trials/{SCRIPT}: a trial folder that is not in the plan",
    ]
    page = render_run_html(report_of(run12[0], evidence_problems=problems), title="t")
    assert_self_contained(page)
    assert "Evidence problems (2)." in page
    assert "<li>trials/x--s0--0123456789ab/attempt-1/test_output.txt: missing" in page
    assert "/home/someone" not in page


# --- the comparison page ---------------------------------------------------------------


def test_forest_plot_has_one_row_per_compared_run_a_zero_line_and_pp_ticks(comparison_pages):
    comparison, reports = comparison_pages
    page = render_comparison_html(comparison, reports, title="A vs B, C, D")
    doc = assert_self_contained(page)
    assert doc.svg_first_child == ["title"] * doc.count("svg") == ["title"] * 2
    assert doc.count("g", "forest-row") == 3
    texts = [text for tag, text in doc.text if tag == "text"]
    assert "0" in texts and any(t.startswith("+") for t in texts)
    assert any(t.startswith("-") for t in texts)
    zero = [a for t, a in doc.tags if t == "line" and a.get("stroke") == "#333"]
    assert len(zero) == 1 and zero[0]["x1"] == zero[0]["x2"]
    for pair in comparison.pairs:
        assert f"{pair.resolved.difference.estimate * 100:+.1f} pp" in page


def test_comparison_table_reports_every_statistic_the_method_and_the_verdict(comparison_pages):
    comparison, reports = comparison_pages
    page = render_comparison_html(comparison, reports, title="t")
    for pair in comparison.pairs:
        c = pair.resolved
        assert f"A only {c.mcnemar.a_only}, B only {c.mcnemar.b_only}" in page
        assert f"{c.minimum_detectable_difference * 100:.1f} pp" in page
        assert f"{c.correlation:.2f}" in page
        assert f"(98.33% CI, {c.cluster.n_clusters} clusters, cluster percentile)" in page
        assert c.verdict().replace('"', "&#34;") in page
        # The interval's method, as the record names it: Tango's for 0/1 outcomes.
        assert f"98.33% CI {c.difference.low * 100:.1f} to" in page
    differences = page.split("difference B &#8722; A</th>")[1].split("</tr>")[0]
    assert differences.count(", Tango score)</td>") == 3 and "bootstrap" not in differences
    assert "A = <strong>swebench_lite (model_a)</strong>" in page
    doc = Document(page)
    assert doc.count("g", "repo-rates") == len(SWEBENCH_REPOS)


def test_the_multiple_comparison_correction_is_the_records(comparison_pages):
    comparison, reports = comparison_pages
    page = render_comparison_html(comparison, reports, title="t")
    assert f"{comparison.multiple_comparisons_note}." in page
    settings = dict(
        re.findall(
            r'<dd data-field="(\w+)">([^<]*)</dd>',
            page.split('id="settings"')[1].split("</section>")[0],
        )
    )
    assert settings["confidence"] == "95%" and settings["comparison_confidence"] == "98.33%"
    assert settings["correction"] == "Bonferroni" and settings["method"] == "BCa"
    assert settings["n_resamples"] == "2000" and settings["seed"] == "0"
    # A record without a correction gets no Bonferroni from the page either.
    uncorrected = {"correction": "none", "comparison_confidence": 0.95}
    single = comparison.model_copy(
        update=uncorrected | {"pairs": comparison.pairs[:1], "multiple_comparisons_note": None}
    )
    page = render_comparison_html(single, reports[:2], title="t")
    assert "Bonferroni" not in page and "Correction: none." in page


def test_every_runs_provenance_is_on_the_comparison_page(comparison_pages):
    comparison, reports = comparison_pages
    page = render_comparison_html(comparison, reports, title="t")
    for index in range(len(reports)):
        section = page.split(f'id="provenance-{index}"')[1].split("</section>")[0]
        shown = re.findall(r'data-field="(\w+)"', section)
        assert shown == list(Provenance.model_fields)
    assert "B: swebench_lite (model_d), provenance" in page


def test_an_undefined_correlation_and_identical_runs_render_without_intervals():
    metrics, a, clusters = synthetic_run(SWEBENCH_REPOS[:3], 10, seed=10)
    everything = np.ones_like(a)
    comparison = comparison_of(metrics, [(metrics, a), (metrics, everything)], a, clusters)
    c = comparison.pairs[1].resolved
    assert c.correlation is None
    same = comparison.pairs[0].resolved.model_copy(
        update={"difference": Interval(estimate=0, low=0, high=0, method="degenerate")}
    )
    first = comparison.pairs[0].model_copy(update={"resolved": same})
    comparison = comparison.model_copy(update={"pairs": [first, comparison.pairs[1]]})
    reports = [report_of(metrics)] * 3
    page = render_comparison_html(comparison, reports, title="t")
    Document(page)
    assert "undefined (a run is constant)" in page
    assert "all paired differences equal, no interval" in page
    assert "swebench_lite (model) #1" in page and "swebench_lite (model) #3" in page


def test_per_instance_rates_compare_without_mcnemar():
    metrics, a, _ = synthetic_run(SWEBENCH_REPOS[:3], 10, seed=10)
    rates = compare_outcomes(a * 0.5, np.clip(a * 0.5 + 0.25, 0, 1), n_resamples=500)
    comparison = comparison_of(metrics, [(metrics, a)], a, None)
    pair = comparison.pairs[0].model_copy(
        update={"resolved": rates, "samples_b": 4, "a_higher": 0, "b_higher": len(a)}
    )
    page = render_comparison_html(
        comparison.model_copy(update={"pairs": [pair]}), [report_of(metrics)] * 2, title="t"
    )
    # The discordant instances are those whose shares differ; no McNemar for shares.
    assert f"A higher 0, B higher {len(a)} (shares of resolved samples)" in page
    flip = rates.sign_flip
    assert f"<td>{p_label(flip.p_value)} ({flip.name})</td>" in page and "not computed" in page
    assert f", {rates.difference.method})" in page


def test_a_comparison_with_nothing_to_compare_says_so(run12):
    comparison = comparison_of(run12[0], [], None, None)
    page = render_comparison_html(comparison, [report_of(run12[0])], title="t")
    assert "No runs to compare against." in page


# --- real runs: every trial, linked into each run's viewer ---------------------------


def _swapped(case: Case) -> Case:
    """Run B: calc-1 fails where A resolved it, calc-2 resolves where A failed."""
    if case.instance_id == "demo__calc-1":
        return Case(case.instance_id, output=b"FAILED tests/test_calc.py::test_add\n", exit_code=1)
    if case.instance_id == "demo__calc-2":
        return Case(case.instance_id)
    return case


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("real") / "runs"
    build_run(root / "a", MIXED, target_id="org/model-a")
    build_run(root / "b", [_swapped(case) for case in MIXED], target_id="org/model-b")
    return root / "a", root / "b"


def _resolves(page_file: Path, link: str) -> Path:
    parts = urlsplit(link)
    assert not parts.scheme and not parts.netloc and not link.startswith("/"), link
    target = (page_file.parent / unquote(parts.path)).resolve()
    assert target.is_file(), link
    return target


def test_report_html_lists_every_trial_linked_to_its_page_in_the_viewer(real_runs, tmp_path):
    run = real_runs[0]
    page_file = tmp_path / "pages" / "run.html"
    assert main(["report", str(run), "--html", str(page_file), "--n-resamples", "200"]) == 0
    page = page_file.read_text(encoding="utf-8")
    doc = assert_self_contained(page)
    rows = page.split('<table class="compact trial-table">')[1].split("</tbody>")[0]
    assert rows.count("<tr>") == len(MIXED) + 1  # the header row, then every planned trial
    links = doc.links()
    assert len(links) == len(MIXED)
    targets = [_resolves(page_file, link) for link in links]
    assert all(run / "view" / "trials" in t.parents for t in targets)
    lockfile = load_run(run).lockfile
    assert [t.name for t in targets] == [
        Path(
            trial_page(f"trials/{trial_label(t.key.instance_id, t.key.sample_index, t.trial_id)}")
        ).name
        for t in lockfile.trials
    ]
    empty = next(r for r in rows.split("<tr>") if "demo__calc-3" in r)
    assert "empty patch" in empty and "invalid" not in empty
    assert "<strong>1.2k" not in page and "$0.08" in page  # cost, where the target said


def test_a_run_page_from_a_run_with_usage_has_token_and_cost_columns(real_runs):
    run = real_runs[0]
    loaded = load_run(run)
    report = build_run_report(run, loaded.lockfile, loaded.results, n_resamples=200)
    page = render_run_html(report, title="t", viewer="view")
    assert "tokens in / out" in page and "1,200 / 300" in page and "$0.05" in page


def test_compare_html_shows_each_instance_in_each_run_discordant_first(real_runs, tmp_path):
    a, b = real_runs
    page_file = tmp_path / "cmp" / "compare.html"
    argv = ["compare", str(a), str(b), "--html", str(page_file), "--n-resamples", "200"]
    assert main(argv) == 0
    page = page_file.read_text(encoding="utf-8")
    doc = assert_self_contained(page)
    table = page.split('id="instance-table"')[1].split("</table>")[0]
    rows = table.split("<tbody>")[1].split("</tr>")[:-1]
    firsts = [re.search(r'<th scope="row">([^<]*)', row).group(1).strip() for row in rows]
    assert firsts[:2] == ["demo__calc-1", "demo__calc-2"]
    assert all('class="discordant"' in row for row in rows[:2])
    assert not any('class="discordant"' in row for row in rows[2:])
    expected = instance_outcomes([load_run(a), load_run(b)])
    assert len(rows) == len(expected)
    targets = [_resolves(page_file, link) for link in doc.links()]
    finished = sum(cell is not None for row in expected for cell in row.runs)
    assert len(targets) == finished
    assert {t.parents[2] for t in targets} == {a, b}
    assert "each comparison at" in page and "org/model-b" in page


def test_a_comparison_record_renders_its_pairs_with_real_runs(real_runs):
    a, b = real_runs
    comparison = compare_runs([a, b], n_resamples=200)
    runs = [load_run(a), load_run(b)]
    reports = [build_run_report(r.path, r.lockfile, r.results, n_resamples=200) for r in runs]
    page = render_comparison_html(comparison, reports, instance_outcomes(runs), title="t")
    assert_self_contained(page)
    assert "Correction: none." in page and "discordant" in page
    assert 'href="' not in page  # no viewer folders given: no links


# --- rendered for real -------------------------------------------------------------------


def _unfilter_sequential(kind: int, line: list[int], up: list[int], bpp: int) -> list[int]:
    out = [0] * len(line)
    for i, value in enumerate(line):
        left = out[i - bpp] if i >= bpp else 0
        corner = up[i - bpp] if i >= bpp else 0
        if kind == 3:
            predicted = (left + up[i]) // 2
        else:
            p = left + up[i] - corner
            pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - corner)
            predicted = left if pa <= pb and pa <= pc else up[i] if pb <= pc else corner
        out[i] = (value + predicted) & 0xFF
    return out


def _png_pixels(data: bytes) -> tuple[int, int, np.ndarray]:
    """Width, height and RGB pixels of an 8-bit RGB(A) non-interlaced PNG (stdlib + numpy)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        chunk = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat.append(chunk)
        position += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    rows = raw.reshape(height, 1 + width * channels)
    pixels = np.zeros((height, width * channels), dtype=np.uint8)
    previous = np.zeros(width * channels, dtype=np.int64)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int64)
        if kind == 0:
            current = line
        elif kind == 1:  # Sub: a running sum per channel
            current = np.cumsum(line.reshape(width, channels), axis=0).reshape(-1) % 256
        elif kind == 2:  # Up
            current = (line + previous) % 256
        else:  # Average, Paeth: sequential by nature; plain ints are fastest here
            current = np.array(
                _unfilter_sequential(kind, line.tolist(), previous.tolist(), channels)
            )
        pixels[y] = current
        previous = current
    return width, height, pixels.reshape(height, width, channels)[:, :, :3]


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and not os.environ.get("CI"):
        pytest.skip("chromium is not installed (scripts/setup installs it; CI requires it)")
    assert found, "chromium must be installed in CI (scripts/setup's apt list)"
    return found


def _chromium_args(chromium: str, profile: Path) -> list[str]:
    return [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]


def render_in_chromium(pages: dict[str, str], directory: Path) -> dict[str, tuple[bytes, str]]:
    """Each page's screenshot (PNG bytes, 1200x2000) and rendered DOM, all browsers at once."""
    chromium = _chromium()
    jobs = {}
    for name, page in pages.items():
        path = directory / f"{name}.html"
        path.write_text(page, encoding="utf-8")
        for mode in ("screenshot", "dom"):
            profile = directory / f"profile-{name}-{mode}"
            args = _chromium_args(chromium, profile)
            if mode == "screenshot":
                args += [f"--screenshot={directory / f'{name}.png'}", "--window-size=1200,2000"]
            else:
                args += ["--dump-dom"]
            jobs[name, mode] = subprocess.Popen(
                [*args, path.as_uri()],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=directory,
            )
    out = {}
    for (name, mode), job in jobs.items():
        stdout, stderr = job.communicate(timeout=60)
        assert job.returncode == 0, stderr[-2000:]
        out[name, mode] = stdout
    return {name: ((directory / f"{name}.png").read_bytes(), out[name, "dom"]) for name in pages}


def test_pages_render_in_headless_chromium(tmp_path, run12, comparison_pages, real_runs):
    comparison, reports = comparison_pages
    a, b = real_runs
    runs = [load_run(a), load_run(b)]
    real = [build_run_report(r.path, r.lockfile, r.results, n_resamples=200) for r in runs]
    pages = {
        "run": render_run_html(report_of(run12[0]), title="SWE-bench Lite: model"),
        "compare": render_comparison_html(comparison, reports, title="model_a vs b, c, d"),
        "hostile": render_run_html(real[0], title="hostile run"),
        "hostile-compare": render_comparison_html(
            compare_runs([a, b], n_resamples=200), real, instance_outcomes(runs), title="cmp"
        ),
    }
    rendered = render_in_chromium(pages, tmp_path)
    # A colour only a drawn plot has: resolved-blue bars; an Okabe-Ito run marker.
    drawn = {"run": (0x21, 0x66, 0xAC), "compare": (0xE6, 0x9F, 0x00)}
    drawn |= {"hostile": drawn["run"], "hostile-compare": drawn["compare"]}
    for name, (png, dom) in rendered.items():
        expected_svgs = Document(pages[name]).count("svg")
        assert dom.count("<svg") == expected_svgs and dom.count("</svg>") == expected_svgs
        assert dom.count('<title id="') == expected_svgs  # each plot's accessible name
        # Nothing of a run became an element, and no script ran (it would set the title).
        assert (
            "<script" not in dom and "<img" not in dom and "pwned" not in dom.split("</title>")[0]
        )
        width, height, pixels = _png_pixels(png)
        assert (width, height) == (1200, 2000)
        colours = {tuple(c) for c in pixels[::4, ::4].reshape(-1, 3).tolist()}
        assert len(colours) > 50, f"{name}: the screenshot looks blank"
        assert np.any(np.all(pixels == drawn[name], axis=2)), f"{name}: no plot drawn"


def test_two_sample_runs_compare_pass_at_k_and_show_k_of_n_per_instance(tmp_path):
    failing = b"FAILED tests/test_calc.py::test_add\n"
    runs = []
    for name, fails in (("a", {("demo__calc-1", 1)}), ("b", {("demo__calc-2", 0)})):
        cases = [
            Case(iid, sample_index=k, output=failing, exit_code=1)
            if (iid, k) in fails
            else Case(iid, sample_index=k)
            for iid in ("demo__calc-1", "demo__calc-2")
            for k in (0, 1)
        ]
        build_run(tmp_path / name, cases, target_id=f"org/{name}")
        runs.append(tmp_path / name)
    page_file = tmp_path / "cmp.html"
    argv = ["compare", *map(str, runs), "--html", str(page_file), "--n-resamples", "200"]
    assert main(argv) == 0
    page = page_file.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "<td>pass@2</td>" in page and "<td>sample_rate</td>" in page
    assert "1/2 resolved" in page and "2/2 resolved" in page
    assert len(Document(page).links()) == 4  # sample 0 of each instance, in each run


def test_a_compare_page_of_three_runs_has_one_level_per_quantity_and_states_each(
    real_runs, tmp_path
):
    """Two comparisons against A: each at 97.5% (Bonferroni). A run's resolve rate is on
    the page in the runs table and in the pair table: one interval, at one stated level."""
    a, b = real_runs
    page_file = tmp_path / "three.html"
    argv = ["compare", str(a), str(b), str(b), "--html", str(page_file), "--n-resamples", "200"]
    assert main(argv) == 0
    page = page_file.read_text(encoding="utf-8")
    comparison = compare_runs([a, b, b], n_resamples=200)
    assert comparison.comparison_confidence == pytest.approx(0.975)
    runs_table = page.split('<section id="runs">')[1].split("</table>")[0]
    pair_table = page.split('<table class="comparison">')[1].split("</table>")[0]
    rate_a = comparison.pairs[0].resolved.rate_a
    shown = f"97.5% CI {rate_range(rate_a)}"
    first_run = runs_table.split("<tbody>")[1].split("</tr>")[0]
    assert shown in first_run
    assert shown in pair_table.split("resolve rate A")[1].split("</tr>")[0]
    assert "95% CI" not in runs_table and "95% CI" not in pair_table
