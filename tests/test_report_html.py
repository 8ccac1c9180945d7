"""The HTML report: one self-contained page per run or comparison, built from seeded
synthetic runs, checked as a parsed document (structure, escaping, nothing fetched) and
rendered for real in headless Chromium (the page draws, its SVG plots are in the DOM)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from evalrepro.gate import Gate, GateRule
from evalrepro.metrics import RepoBreakdown, RunMetrics
from evalrepro.report_html import render_comparison_html, render_run_html
from evalrepro.stats import Interval, compare_outcomes, pass_at_k_interval, wilson_interval

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
FAILURES = ("tests_failed", "patch_rejected", "patch_invalid")
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
    by_repo = {
        repo: RepoBreakdown(
            planned=per_repo * samples,
            **{
                o: int(np.sum((trial_repo == repo) & (outcome == o)))
                for o in ("resolved", "unresolved", "invalid", "missing")
            },
        )
        for repo in repos
    }
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
        evidence_completeness=float(finished.mean()),
        attempts=int(finished.sum()) + 7,
        retried_trials=5,
        retry_reasons={"infrastructure_error": 7},
        reasons=dict(sorted(Counter(reasons[finished]).items())),
        per_repo=by_repo,
        samples=samples,
        **extra,
    )
    first_sample = (outcome == "resolved").reshape(n, samples)[:, 0]
    return metrics, first_sample.astype(float), clusters


def gate_for(metrics: RunMetrics):
    gate = Gate(
        rules=[
            GateRule(metric="resolved_rate", op=">=", threshold=0.4),
            GateRule(metric="invalid_rate", op="<=", threshold=0.02),
            GateRule(metric="evidence_completeness", op=">=", threshold=0.99),
            GateRule(metric="planned", op="==", threshold=300),
        ]
    )
    return gate.evaluate(metrics.values())


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


@pytest.fixture(scope="module")
def run12():
    return synthetic_run(SWEBENCH_REPOS, 25, seed=1, missing=4)


@pytest.fixture(scope="module")
def comparison_pages():
    base, a, clusters = synthetic_run(SWEBENCH_REPOS, 25, seed=1, target_id="model_a")
    others = []
    for seed, p, name in ((2, 0.55, "model_b"), (3, 0.45, "model_c"), (4, 0.30, "model_d")):
        metrics, b, _ = synthetic_run(
            SWEBENCH_REPOS, 25, seed=seed, p_resolve=p, target_id=name, base=a
        )
        others.append((metrics, compare_outcomes(a, b, clusters, n_resamples=2000, seed=0)))
    return base, others


# --- the run page ----------------------------------------------------------------------


def test_run_page_is_one_self_contained_document(run12):
    metrics, _, _ = run12
    page = render_run_html(metrics, gate_for(metrics), title="SWE-bench Lite: model")
    doc = Document(page)
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert "url(" not in page and "@import" not in page
    assert not {t for t, _ in doc.tags} & {"script", "link", "img", "iframe", "object"}
    csp = [a for t, a in doc.tags if t == "meta" and a.get("http-equiv")]
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")


def test_every_svg_starts_with_a_title(run12):
    metrics, _, _ = run12
    doc = Document(render_run_html(metrics, gate_for(metrics), title="t"))
    assert doc.count("svg") == 2  # outcomes per repo, failure modes (single sample)
    assert doc.svg_first_child == ["title"] * doc.count("svg")
    assert all(title.strip() for title in doc.svg_titles)
    assert all(a.get("role") == "img" for t, a in doc.tags if t == "svg")


def test_summary_says_rates_are_over_planned_trials_with_intervals(run12):
    metrics, _, _ = run12
    page = render_run_html(metrics, [], title="t")
    assert "Rates are over planned trials</strong> (300)" in page
    for outcome in ("resolved", "unresolved", "invalid", "missing"):
        assert f'<div class="label">{outcome}</div>' in page
    low, high = metrics.resolved_rate.low * 100, metrics.resolved_rate.high * 100
    estimate = metrics.resolved_rate.estimate * 100
    assert f"{estimate:.1f}% of planned" in page
    assert f"95% CI {low:.1f}\u2013{high:.1f}%" in page
    assert f"{metrics.evidence_completeness * 100:.1f}% of planned trials have every" in page
    assert "No gate rules." in page


def test_gate_rules_show_measured_value_and_verdict(run12):
    metrics, _, _ = run12
    doc = Document(render_run_html(metrics, gate_for(metrics), title="t"))
    verdicts = [text for tag, text in doc.text if tag == "td" and text in {"pass", "fail"}]
    expected = ["pass" if v.passed else "fail" for v in gate_for(metrics)]
    assert verdicts == expected and "fail" in verdicts and "pass" in verdicts
    cells = [text for tag, text in doc.text if tag == "td"]
    assert f"{metrics.resolved_rate.estimate * 100:.1f}%" in cells  # rates as percent
    assert "300" in cells  # counts as counts


def test_outcome_bars_one_row_per_repo_led_by_the_whole_run(run12):
    metrics, _, _ = run12
    doc = Document(render_run_html(metrics, [], title="t"))
    assert doc.count("g", "repo-row") == len(SWEBENCH_REPOS) + 1
    nonzero = sum(
        getattr(b, o) > 0
        for b in [*metrics.per_repo.values(), metrics]
        for o in ("resolved", "unresolved", "invalid", "missing")
    )
    assert doc.count("rect", "segment") == nonzero
    assert ("text", f"all {len(SWEBENCH_REPOS)} repos") in doc.text


def test_one_repo_draws_one_bar_without_a_total_row():
    metrics, _, _ = synthetic_run(("django/django",), 40, seed=5)
    doc = Document(render_run_html(metrics, [], title="t"))
    assert doc.count("g", "repo-row") == 1


def test_fifty_repos_get_fifty_rows_and_long_names_are_cut_keeping_the_full_name():
    repos = tuple(f"org-{i:02d}/a-rather-long-repository-name-number-{i:02d}" for i in range(50))
    metrics, _, _ = synthetic_run(repos, 3, seed=6)
    page = render_run_html(metrics, [], title="t")
    doc = Document(page)
    assert doc.count("g", "repo-row") == 51
    labels = [text for tag, text in doc.text if tag == "text" and text.startswith("org-")]
    # Cut in the middle: both ends tell repos apart.
    assert len(set(labels)) == 50 and all(
        len(label) <= 34 and "\u2026" in label for label in labels
    )
    assert all(f"<title>{repo}: " in page for repo in repos)


def test_failure_modes_show_reasons_of_unresolved_trials_and_missing(run12):
    metrics, _, _ = run12
    doc = Document(render_run_html(metrics, [], title="t"))
    failures = {r for r in metrics.reasons if r != "tests_passed"}
    assert doc.count("g", "reason-row") == len(failures) + 1  # + missing (no result)
    labels = {text for tag, text in doc.text if tag == "text"}
    assert failures <= labels and "missing (no result)" in labels
    assert "tests_passed" not in labels


def test_no_failure_modes_renders_a_note_instead_of_an_empty_plot():
    metrics, _, _ = synthetic_run(("psf/requests",), 10, seed=7, p_resolve=1.0)
    assert metrics.reasons == {"tests_passed": 10}
    page = render_run_html(metrics, [], title="t")
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
    page = render_run_html(metrics, gate_for(metrics), title="t")
    Document(page)
    assert "No planned trials." in page and "No finished trials" in page


def test_repo_names_reasons_and_titles_are_escaped():
    hostile = '<script>alert("x")</script>'
    metrics, _, _ = synthetic_run((hostile, "a&b/c"), 10, seed=8, p_resolve=0.3)
    metrics = metrics.model_copy(update={"reasons": metrics.reasons | {"<img src=x>": 2}})
    page = render_run_html(metrics, [], title="<b>title</b>")
    doc = Document(page)
    assert not {t for t, _ in doc.tags} & {"script", "img", "b"}
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "a&amp;b/c" in page and "&lt;img src=x&gt;" in page
    assert ("h1", "<b>title</b>") in doc.text


def test_multi_sample_runs_plot_pass_at_k_with_whiskers():
    metrics, _, _ = synthetic_run(SWEBENCH_REPOS[:4], 20, seed=9, samples=4)
    doc = Document(render_run_html(metrics, [], title="t"))
    assert doc.count("g", "k-point") == 3  # pass@1, pass@2, pass@4
    assert {"pass@1", "pass@2", "pass@4"} <= {text for tag, text in doc.text if tag == "text"}
    assert doc.count("svg") == 3


# --- the comparison page ---------------------------------------------------------------


def test_forest_plot_has_one_row_per_compared_run_a_zero_line_and_pp_ticks(comparison_pages):
    base, others = comparison_pages
    page = render_comparison_html(base, others, title="A vs B, C, D")
    doc = Document(page)
    assert "http://" not in page and "https://" not in page
    assert doc.svg_first_child == ["title"] * doc.count("svg") == ["title"] * 2
    assert doc.count("g", "forest-row") == 3
    texts = [text for tag, text in doc.text if tag == "text"]
    assert "0" in texts and any(t.startswith("+") for t in texts)
    assert any(t.startswith("-") for t in texts)
    zero = [a for t, a in doc.tags if t == "line" and a.get("stroke") == "#333"]
    assert len(zero) == 1 and zero[0]["x1"] == zero[0]["x2"]
    for _, comparison in others:
        assert f"{comparison.difference.estimate * 100:+.1f} pp" in page


def test_comparison_table_reports_every_statistic_and_the_verdict(comparison_pages):
    base, others = comparison_pages
    page = render_comparison_html(base, others, title="t")
    for _, c in others:
        assert f"A only {c.mcnemar.a_only}, B only {c.mcnemar.b_only}" in page
        assert f"{c.minimum_detectable_difference * 100:.1f} pp" in page
        assert f"{c.correlation:.2f}" in page
        assert f"({c.cluster.n_clusters} clusters)" in page
        assert c.verdict().replace('"', "&quot;") in page
    assert "3 comparisons, each at 95% CI" in page and "98.33%" in page
    assert "A = <strong>swebench_lite (model_a)</strong>" in page
    doc = Document(page)
    assert doc.count("g", "repo-rates") == len(SWEBENCH_REPOS)


def test_identical_runs_and_rate_comparisons_render_without_intervals_or_mcnemar():
    metrics, a, clusters = synthetic_run(SWEBENCH_REPOS[:3], 10, seed=10)
    same = compare_outcomes(a, a, clusters, n_resamples=500)
    rates = compare_outcomes(a * 0.5, np.clip(a * 0.5 + 0.25, 0, 1), n_resamples=500)
    page = render_comparison_html(metrics, [(metrics, same), (metrics, rates)], title="t")
    Document(page)
    assert "all paired differences equal, no interval" in page
    assert "n/a (per-instance rates, not 0/1)" in page and "not computed" in page
    assert "swebench_lite (model) #1" in page and "swebench_lite (model) #3" in page


def test_a_comparison_with_nothing_to_compare_says_so(run12):
    page = render_comparison_html(run12[0], [], title="t")
    assert "No runs to compare against." in page


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


def test_pages_render_in_headless_chromium(tmp_path, run12, comparison_pages):
    metrics, _, _ = run12
    base, others = comparison_pages
    pages = {
        "run": render_run_html(metrics, gate_for(metrics), title="SWE-bench Lite: model"),
        "compare": render_comparison_html(base, others, title="model_a vs b, c, d"),
    }
    rendered = render_in_chromium(pages, tmp_path)
    # A colour only a drawn plot has: resolved-blue bars; an Okabe-Ito run marker.
    drawn = {"run": (0x21, 0x66, 0xAC), "compare": (0xE6, 0x9F, 0x00)}
    for name, (png, dom) in rendered.items():
        expected_svgs = Document(pages[name]).count("svg")
        assert dom.count("<svg") == expected_svgs and dom.count("</svg>") == expected_svgs
        assert dom.count('<title id="') == expected_svgs  # each plot's accessible name
        width, height, pixels = _png_pixels(png)
        assert (width, height) == (1200, 2000)
        colours = {tuple(c) for c in pixels[::4, ::4].reshape(-1, 3).tolist()}
        assert len(colours) > 50, f"{name}: the screenshot looks blank"
        assert np.any(np.all(pixels == drawn[name], axis=2)), f"{name}: no plot drawn"
