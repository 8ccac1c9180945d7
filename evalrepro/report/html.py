"""Reports as self-contained HTML pages: a run (``render_run_html``) or a comparison of
runs, every run against the first (``render_comparison_html``); the trial viewer
(``evalrepro.report.view``) is drawn by the same templates.

A page needs nothing but a browser: Jinja2 templates (``evalrepro/templates/``,
autoescaped, ``StrictUndefined``) with the CSS inline, plots as inline SVG drawn here (no
plotting library, no scripts, no fonts or images to fetch), and a Content-Security-Policy
that forbids loading or running anything and allows exactly the page's own stylesheet
(by its hash), so a page mailed or archived years later shows the same thing, and text
from a run can never become markup, a script or a style. Every value from a run (ids,
repo names, reasons, test names, logs) is escaped, and control characters, bidi overrides
and lone surrogates are shown as visible marks (``visible``).

Presentation reads records (``RunReport``, ``ComparisonReport``, ``InstanceOutcomes``)
and computes no statistic and no verdict (the outcome a score reason stands for is the
one its metrics carry, ``RunMetrics.reason_outcomes``): rates are shown as percent
with one decimal, differences in percentage points (pp), each with the interval and
method its record holds; rates are over planned trials, as everywhere in evalrepro.
Missing trials (no outcome) get no interval; a rate of 0 keeps its interval, whose upper
bound is informative.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from evalrepro.records.compare import ComparisonReport, InstanceOutcomes, RunCell, run_label
from evalrepro.records.labels import LIMIT_LABELS, reason_code, reason_label
from evalrepro.records.metrics import RepoBreakdown, RunMetrics
from evalrepro.records.report import Provenance, RunReport, TrialRow
from evalrepro.records.stats import Comparison, Interval, level_label, p_label
from evalrepro.records.words import reason_words
from evalrepro.report.run_printer import pass_at_k_value, provenance_line, seconds
from evalrepro.text import clip, size, visible

TEMPLATES = Path(__file__).parent / "templates"

# Blue / light orange / dark red / grey: told apart with the common colour-vision
# deficiencies, and every chart also labels its segments in text.
_OUTCOME_COLOURS = {
    "resolved": "#2166ac",
    "unresolved": "#f4a582",
    "invalid": "#b2182b",
    "missing": "#bdbdbd",
}
_ON_DARK = {"resolved", "invalid"}
OUTCOMES = tuple(_OUTCOME_COLOURS)
#: Provenance fields as the block labels them (a field missing here shows by its name).
PROVENANCE_LABELS = {
    "evalrepro_version": "evalrepro (this report)",
    "harness_version": "harness that ran the trials",
    "harness_commit": "harness commit",
    "lockfile_digest": "lockfile (sha256 of its bytes)",
    "experiment": "experiment",
    "target_id": "target",
    "dataset": "dataset",
    "instances": "instances",
    "planned_trials": "planned trials",
    "gate": "gate",
    "gate_rules": "gate rules",
    "runtime": "runtime",
    "sessions": "sessions",
    "started_at": "started",
    "finished_at": "finished",
    "generated_at": "report generated",
    "confidence": "interval level",
    "n_resamples": "bootstrap resamples",
    "seed": "seed",
}
_COMPARISON_LABELS = {
    "confidence": "family-wise level",
    "comparison_confidence": "each comparison at",
    "correction": "multiple-comparison correction",
    "n_resamples": "bootstrap resamples",
    "seed": "seed",
    "method": "bootstrap method (per-instance rates)",
    "multiple_comparisons_note": "note",
}
# Okabe-Ito, for runs on a comparison page; marker shapes repeat the distinction.
_RUN_COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000")
_RUN_SHAPES = ("circle", "square", "triangle", "diamond")

# SVG text is 12px; a character of DejaVu/Liberation Sans is at most ~7px wide at that
# size, which is all the layout needs to keep labels from overlapping.
_CHAR_WIDTH = 7.0
_EN_DASH, _MINUS = "\u2013", "\u2212"  # typography: ranges, and "B minus A"
_MAX_LABEL_CHARS = 34


# --- text from a run, made visible (the one rule: evalrepro.text.visible) ---------------


def _e(value: object) -> str:
    """Escaped for HTML and SVG text and attributes, hidden characters made visible."""
    return str(escape(visible(str(value))))


# --- formatting ------------------------------------------------------------------------


def _one_decimal(value: float) -> float:
    # + 0.0 turns a rounded -0.0 into 0.0.
    return round(value, 1) + 0.0


def pct(fraction: float) -> str:
    return f"{_one_decimal(fraction * 100):.1f}%"


def pp(difference: float) -> str:
    return f"{_one_decimal(difference * 100):+.1f} pp"


def points(difference: float) -> str:
    return f"{_one_decimal(difference * 100):.1f}"


def level(confidence: float) -> str:
    return f"{level_label(confidence)} CI"


def rate_range(interval: Interval) -> str:
    return f"{_one_decimal(interval.low * 100):.1f}{_EN_DASH}{pct(interval.high)}"


def difference_range(interval: Interval) -> str:
    return f"{points(interval.low)} to {points(interval.high)} pp"


def p_value(p: float) -> str:
    # The verdict's rule: the table and the verdict below it print one p the same way.
    return p_label(p)


def when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def thousands(count: int | None) -> str:
    return "-" if count is None else f"{count:,}"


def usd(amount: float | None) -> str:
    return "-" if amount is None else f"${amount:,.2f}"


def _is_fraction(metric: str) -> bool:
    return (
        metric.endswith("_rate") or metric == "evidence_completeness" or metric.startswith("pass@")
    )


def gate_value(value: float, metric: str) -> str:
    return pct(value) if _is_fraction(metric) else f"{value:g}"


def provenance_rows(p: Provenance) -> list[tuple[str, str, str]]:
    """(field, label, value) for every field of the record, in its order."""
    rows = []
    for name in type(p).model_fields:
        value = getattr(p, name)
        if isinstance(value, datetime):
            shown = when(value)
        elif name == "confidence":
            shown = level_label(value)
        elif isinstance(value, list):
            shown = "; ".join(str(v) for v in value) or "-"
        elif value is None or value == "":
            shown = "not known" if name != "harness_commit" else "none (an installed release)"
        else:
            shown = str(value)
        rows.append((name, PROVENANCE_LABELS.get(name, name.replace("_", " ")), shown))
    return rows


def comparison_settings(report: ComparisonReport) -> list[tuple[str, str, str]]:
    """(field, label, value) for every setting the comparison record holds."""
    rows = []
    for name in type(report).model_fields:
        value = getattr(report, name)
        # Records inside it (pairs, runs, instances) have sections of their own.
        if name in {"record", "schema_version"} or not isinstance(value, str | int | float):
            continue
        shown = level_label(value) if "confidence" in name else str(value)
        rows.append((name, _COMPARISON_LABELS.get(name, name.replace("_", " ")), shown))
    return rows


def has_usage(rows: Iterable[TrialRow]) -> bool:
    return any(
        row.timing is not None
        and (row.timing.cost_usd is not None or row.timing.input_tokens is not None)
        for row in rows
    )


# --- links into the trial viewer --------------------------------------------------------

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")


def trial_page(folder: str) -> str:
    """A trial's page in the viewer, relative to the viewer's folder:
    ``trials/<label>.html``. A label that is no safe file name (an instance id with a
    slash, spaces, control characters, or too long) is cleaned, and made unique again by
    a digest of the label."""
    label = folder.removeprefix("trials/")
    if _SAFE_NAME.fullmatch(label):
        return f"trials/{label}.html"
    cleaned = re.sub(r"[^A-Za-z0-9._+-]", "_", label)[:80].lstrip(".") or "trial"
    digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"trials/{cleaned}~{digest}.html"


def href(*parts: str) -> str:
    """A relative link from path parts (already relative), each percent-encoded."""
    joined = "/".join(part.strip("/") for part in parts if part)
    return quote(joined, safe="/~")


# --- the Jinja environment ---------------------------------------------------------------


def _finalize(value: Any) -> Any:
    # Every value a template prints goes through here, then through autoescaping.
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return visible(value)


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.filters.update(
        pct=pct,
        pp=pp,
        points=points,
        level=level,
        rate_range=rate_range,
        difference_range=difference_range,
        p_value=p_value,
        seconds=seconds,
        size=size,
        when=when,
        thousands=thousands,
        usd=usd,
        clip=clip,
        reason_label=reason_label,
        reason_code=reason_code,
        reason_words=reason_words,
        limit_label=lambda limit: LIMIT_LABELS.get(limit, limit),
        gate_value=gate_value,
        provenance_rows=provenance_rows,
        has_usage=has_usage,
    )
    return env


@cache
def _base_css() -> str:
    return (TEMPLATES / "style.css").read_text(encoding="utf-8")


def render_page(template: str, *, title: str, extra_css: str = "", **context: Any) -> str:
    """A page of ``template``; its stylesheet is allowed by hash, nothing else is."""
    css = _base_css() + extra_css
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        environment()
        .get_template(template)
        .render(title=title, css=Markup(css), style_hash=f"sha256-{digest}", **context)
    )


# --- SVG -------------------------------------------------------------------------------


def _f(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _svg(ident: str, width: float, height: float, title: str, desc: str, body: list[str]) -> str:
    """An accessible SVG: role img, labelled by its <title> and <desc>."""
    return (
        # No xmlns: inline SVG in HTML needs none, and the page names no URL at all.
        f'<svg id="{ident}" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" width="{_f(width)}" '
        f'height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}">'
        f'<title id="{ident}-title">{_e(title)}</title><desc id="{ident}-desc">{_e(desc)}</desc>'
        + "".join(body)
        + "</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return (
        f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" '
        f'dominant-baseline="middle"{cls}>{_e(text)}</text>'
    )


def _rect(
    x: float, y: float, w: float, h: float, fill: str, extra: str = "", *, css: str = ""
) -> str:
    cls = f'class="{css}" ' if css else ""
    return (
        f'<rect {cls}x="{_f(x)}" y="{_f(y)}" width="{_f(max(w, 0.0))}" height="{_f(h)}" '
        f'fill="{fill}"{extra}/>'
    )


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str, extra: str = "") -> str:
    return (
        f'<line x1="{_f(x1)}" y1="{_f(y1)}" x2="{_f(x2)}" y2="{_f(y2)}" stroke="{stroke}"{extra}/>'
    )


def _marker(shape: str, x: float, y: float, size: float, fill: str, opacity: float = 1.0) -> str:
    r = size / 2
    paint = f'fill="{fill}"' + (f' fill-opacity="{opacity:g}"' if opacity < 1 else "")
    if shape == "circle":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" {paint}/>'
    if shape == "square":
        corners = [(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r)]
    elif shape == "triangle":
        corners = [(x, y - r), (x + r, y + r), (x - r, y + r)]
    else:  # diamond
        corners = [(x, y - r), (x + r, y), (x, y + r), (x - r, y)]
    points = " ".join(f"{_f(px)},{_f(py)}" for px, py in corners)
    return f'<polygon points="{points}" {paint}/>'


def _whisker(x_low: float, x_high: float, y: float, colour: str, css: str) -> list[str]:
    """A horizontal interval: a line with end caps."""
    width = ' stroke-width="1.5"'
    return [
        f'<g class="{css}">',
        _line(x_low, y, x_high, y, colour, width),
        _line(x_low, y - 5, x_low, y + 5, colour, width),
        _line(x_high, y - 5, x_high, y + 5, colour, width),
        "</g>",
    ]


def _legend(
    items: Sequence[tuple[str, str]], x0: float, y: float, width: float
) -> tuple[list[str], float]:
    """Swatches with names, (colour, name), wrapped to ``width``; the body and the y below."""
    body, x = [], x0
    for colour, name in items:
        step = 17 + len(name) * _CHAR_WIDTH + 18
        if x > x0 and x + step > width:
            x, y = x0, y + 20
        body.append(_rect(x, y - 6, 12, 12, colour, ' stroke="#777" stroke-width="0.5"'))
        body.append(_text(x + 17, y, name))
        x += step
    return body, y + 20


def _percent_axis(x0: float, width: float, y_top: float, y_axis: float) -> list[str]:
    """Grid lines and 0-100% tick labels under a horizontal 0-1 scale."""
    body = []
    for tick in range(0, 101, 25):
        x = x0 + width * tick / 100
        body.append(_line(x, y_top, x, y_axis, "#e0e0e0"))
        body.append(_text(x, y_axis + 10, f"{tick}%", anchor="middle", css="small"))
    return body


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if multiple * magnitude >= raw:
            return multiple * magnitude
    return 10 * magnitude


def _truncate(label: str, limit: int = _MAX_LABEL_CHARS) -> str:
    """Cut in the middle: repos like "org/long-name-01" differ at both ends."""
    if len(label) <= limit:
        return label
    tail = (limit - 1) // 2
    return label[: limit - 1 - tail] + "\u2026" + label[-tail:]


def _label_width(labels: Iterable[str]) -> float:
    longest = max((len(_truncate(label)) for label in labels), default=4)
    return longest * _CHAR_WIDTH + 16


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


# --- plots -----------------------------------------------------------------------------


def _outcomes_svg(per_repo: dict[str, RepoBreakdown], total: RepoBreakdown) -> str:
    """Stacked horizontal bars of outcomes per repo (share of that repo's planned trials),
    led by the whole run when there is more than one repo; a whisker on the resolved
    share shows its interval (none when nothing resolved)."""
    rows = list(per_repo.items())
    if len(rows) > 1:
        rows.insert(0, (f"all {len(rows)} repos", total))
    label_w = _label_width(repo for repo, _ in rows)
    summaries = [
        f"{c.resolved}/{c.planned} resolved ({pct(_share(c.resolved, c.planned))})" for _, c in rows
    ]
    # Bold text (the first row) is wider: 8px a character.
    bar_w, right_w, row_h, bar_h = 500.0, max(len(t) for t in summaries) * 8.0 + 16, 24.0, 16.0
    width = label_w + bar_w + right_w
    legend = [(_OUTCOME_COLOURS[o], o) for o in OUTCOMES]
    legend.append(("#000", f"resolved share, {level(total.rate.confidence)}"))
    body, top = _legend(legend, label_w, 12, width)
    gap = 8.0 if len(rows) > 1 else 0.0  # sets the whole run apart from its repos
    bottom = top + row_h * len(rows) + gap
    height = bottom + 28
    body += _percent_axis(label_w, bar_w, top - 4, bottom)
    for index, (repo, counts) in enumerate(rows):
        y = top + index * row_h + (gap if index else 0.0)
        whole = counts.planned
        parts = ", ".join(
            f"{o} {getattr(counts, o)} ({pct(_share(getattr(counts, o), whole))})" for o in OUTCOMES
        )
        if counts.resolved:
            parts += f"; resolved {level(counts.rate.confidence)} {rate_range(counts.rate)}"
        bold = " strong" if index == 0 and len(rows) > 1 else ""
        body.append(f'<g class="repo-row"><title>{_e(repo)}: {whole} planned; {_e(parts)}</title>')
        body.append(_text(label_w - 8, y + row_h / 2, _truncate(repo), anchor="end", css=bold))
        x = label_w
        for outcome in OUTCOMES:
            count = getattr(counts, outcome)
            w = bar_w * _share(count, whole)
            if count:
                colour = _OUTCOME_COLOURS[outcome]
                bar_y = y + (row_h - bar_h) / 2
                body.append(_rect(x, bar_y, w, bar_h, colour, css=f"segment {outcome}"))
                if w >= len(str(count)) * _CHAR_WIDTH + 6:
                    on_dark = "on-dark" if outcome in _ON_DARK else ""
                    body.append(
                        _text(x + w / 2, y + row_h / 2, str(count), anchor="middle", css=on_dark)
                    )
            x += w
        # 0 resolved keeps its whisker: from 0 to how high the rate could be at this n.
        if whole:
            low = label_w + bar_w * counts.rate.low
            high = label_w + bar_w * counts.rate.high
            body += _whisker(low, high, y + row_h / 2 + bar_h / 2 + 1, "#000", "resolved-ci")
        if not whole:
            body.append(_text(label_w + 4, y + row_h / 2, "no planned trials", css="small"))
        body.append(_text(label_w + bar_w + 10, y + row_h / 2, summaries[index], css=bold.strip()))
        body.append("</g>")
    return _svg(
        "outcomes-by-repo",
        width,
        height,
        "Outcomes per repository",
        "Stacked bars: share of each repository's planned trials that resolved, stayed "
        "unresolved, were invalid or are missing (no result); a whisker below each bar "
        "spans the interval of its resolved share.",
        body,
    )


def _failure_modes_svg(
    reasons: dict[str, int], outcomes: Mapping[str, str], missing: int, planned: int
) -> str | None:
    """Bars of score reasons for trials that did not resolve (plus missing trials), as
    counts and share of planned trials, each in the colour of the outcome the grading gave
    its trials (``outcomes``: ``RunMetrics.reason_outcomes``); None when there are none."""
    rows = [
        (reason_label(reason), reason, count, outcomes.get(reason, "other"))
        for reason, count in reasons.items()
        if outcomes.get(reason) != "resolved" and count > 0
    ]
    rows.sort(key=lambda row: (-row[2], row[1]))
    if missing:
        rows.append(("missing (no result)", "missing", missing, "missing"))
    if not rows:
        return None
    label_w = _label_width(label for label, *_ in rows)
    bar_w, right_w, row_h, bar_h = 440.0, 200.0, 24.0, 16.0
    width = label_w + bar_w + right_w
    largest = max(count for _, _, count, _ in rows)
    legend = [(_OUTCOME_COLOURS[o], o) for o in ("unresolved", "invalid", "missing")]
    body, top = _legend(legend, label_w, 12, width)
    height = top + row_h * len(rows) + 8
    for index, (label, code, count, outcome) in enumerate(rows):
        y = top + index * row_h
        share = f"{count} ({pct(_share(count, planned))} of planned)"
        body.append(f'<g class="reason-row"><title>{_e(label)} ({_e(code)}): {share}</title>')
        body.append(_text(label_w - 8, y + row_h / 2, _truncate(label), anchor="end"))
        w = bar_w * count / largest
        colour = _OUTCOME_COLOURS.get(outcome, "#999")
        bar_y = y + (row_h - bar_h) / 2
        body.append(_rect(label_w, bar_y, w, bar_h, colour, css=f"bar {outcome}"))
        body.append(_text(label_w + w + 8, y + row_h / 2, share))
        body.append("</g>")
    body.append(_line(label_w, top - 4, label_w, top + row_h * len(rows), "#555"))
    return _svg(
        "failure-modes",
        width,
        height,
        "Failure modes",
        "Horizontal bars: for each score reason of trials that did not resolve, the number of "
        "trials and their share of planned trials.",
        body,
    )


def _pass_at_k_svg(pass_at_k: dict[str, Interval], coverage: dict[str, str] | None = None) -> str:
    """pass@k estimates with interval whiskers, k on the x axis, 0-100% on the y axis;
    ``coverage``: per pass@k, over which instances when not all (in its tooltip)."""
    coverage = coverage or {}
    left, plot_h, top, col_w = 56.0, 220.0, 20.0, 90.0
    width = left + col_w * len(pass_at_k) + 20
    height = top + plot_h + 44
    bottom = top + plot_h
    body = []
    for tick in range(0, 101, 20):
        y = bottom - plot_h * tick / 100
        body.append(_line(left, y, width - 10, y, "#e6e6e6"))
        body.append(_text(left - 6, y, f"{tick}%", anchor="end", css="small"))
    body.append(_line(left, top, left, bottom, "#555"))

    def y_of(value: float) -> float:
        return bottom - plot_h * min(max(value, 0.0), 1.0)

    for index, (name, interval) in enumerate(pass_at_k.items()):
        x = left + col_w * (index + 0.5)
        title = f"{name}: {pct(interval.estimate)} ({level(interval.confidence)} "
        title += f"{rate_range(interval)}, {interval.method})"
        if coverage.get(name):
            title += f", {coverage[name]}"
        body.append(f'<g class="k-point"><title>{_e(title)}</title>')
        if interval.high > 0:  # nothing resolved at all: no whisker
            stroke = ' stroke-width="2"'
            body.append(_line(x, y_of(interval.low), x, y_of(interval.high), "#2166ac", stroke))
            for end in (interval.low, interval.high):
                body.append(_line(x - 7, y_of(end), x + 7, y_of(end), "#2166ac", stroke))
        body.append(_marker("circle", x, y_of(interval.estimate), 10, "#2166ac"))
        body.append(_text(x + 10, y_of(interval.estimate), pct(interval.estimate), css="strong"))
        body.append(_text(x, bottom + 14, name, anchor="middle"))
        body.append("</g>")
    body.append(_text(left, height - 10, "k = samples drawn per instance", css="small"))
    return _svg(
        "pass-at-k",
        width,
        height,
        "pass@k and pass^k with confidence intervals",
        "For each k, the unbiased pass@k (some of k samples resolves) and pass^k (all k "
        "samples resolve) averaged over instances, each with its bootstrap interval over "
        "instances as a whisker.",
        body,
    )


def _forest_svg(rows: list[tuple[str, Comparison]], base_label: str) -> str:
    """Forest plot: per compared run, B - A with its interval (and the cluster bootstrap
    beside it), a zero line, a +-MDE band and pp ticks."""
    values = [0.0]
    for _, c in rows:
        values += [c.difference.low, c.difference.high, c.difference.estimate]
        values += [-c.minimum_detectable_difference, c.minimum_detectable_difference]
        if c.cluster is not None:
            values += [c.cluster.low, c.cluster.high]
    low, high = min(values) * 100, max(values) * 100
    step = _nice_step(high - low) if high > low else 1.0
    low, high = math.floor(low / step) * step, math.ceil(high / step) * step
    if low == high:
        low, high = -step, step
    clustered = any(c.cluster is not None for _, c in rows)
    label_w = _label_width(label for label, _ in rows)
    plot_w, right_w = 480.0, 230.0
    row_h = 46.0 if clustered else 32.0
    width = label_w + plot_w + right_w

    def x_of(fraction: float) -> float:
        return label_w + plot_w * (fraction * 100 - low) / (high - low)

    confidence = rows[0][1].confidence if rows else 0.95
    legend = [("#222", f"difference B {_MINUS} A, {level(confidence)}")]
    if clustered:
        legend.append(("#8c8c8c", "cluster bootstrap (repos)"))
    legend.append(("#f0f0f0", "\u00b1MDE (80% power)"))
    body, top = _legend(legend, label_w, 12, width)
    top += 4
    axis_y = top + row_h * len(rows) + 4
    height = axis_y + 68
    tick = low
    while tick <= high + step / 1000:
        x = label_w + plot_w * (tick - low) / (high - low)
        body.append(_line(x, top - 4, x, axis_y, "#ececec" if tick else "#333"))
        body.append(_line(x, axis_y, x, axis_y + 5, "#555"))
        label = "0" if abs(tick) < step / 1000 else f"{tick:+g}"
        body.append(_text(x, axis_y + 14, label, anchor="middle", css="small"))
        tick += step
    for index, (label, c) in enumerate(rows):
        y = top + index * row_h
        mid = y + (row_h / 2 - 6 if c.cluster is not None else row_h / 2)
        d = c.difference
        mde = c.minimum_detectable_difference
        title = (
            f"{label} - {base_label}: {pp(d.estimate)} ({level(d.confidence)} "
            f"{difference_range(d)}, {d.method}); MDE {points(mde)} pp"
        )
        body.append(f'<g class="forest-row"><title>{_e(title)}</title>')
        body.append(_rect(x_of(-mde), y + 3, x_of(mde) - x_of(-mde), row_h - 6, "#f0f0f0"))
        body.append(_text(label_w - 8, mid, _truncate(label), anchor="end"))
        if d.method != "degenerate":
            body.append(_line(x_of(d.low), mid, x_of(d.high), mid, "#222", ' stroke-width="2"'))
            for end in (d.low, d.high):
                body.append(
                    _line(x_of(end), mid - 6, x_of(end), mid + 6, "#222", ' stroke-width="2"')
                )
        body.append(_marker("square", x_of(d.estimate), mid, 10, "#222"))
        estimate = f"{pp(d.estimate)} ({difference_range(d).removesuffix(' pp')})"
        body.append(_text(label_w + plot_w + 10, mid, estimate, css="strong"))
        if c.cluster is not None:
            k = c.cluster
            cy = mid + 14
            body.append(
                _line(
                    x_of(k.low),
                    cy,
                    x_of(k.high),
                    cy,
                    "#8c8c8c",
                    ' stroke-width="2" stroke-dasharray="4 3"',
                )
            )
            body.append(_marker("diamond", x_of(k.estimate), cy, 8, "#8c8c8c"))
            flag = ", few" if k.too_few_clusters else ""
            cluster_text = (
                f"{difference_range(k).removesuffix(' pp')} ({k.n_clusters} clusters{flag})"
            )
            body.append(_text(label_w + plot_w + 10, cy, cluster_text, css="small"))
        body.append("</g>")
    body.append(_line(label_w, axis_y, label_w + plot_w, axis_y, "#555"))
    body.append(_text(label_w, axis_y + 30, "\u2190 A better", css="small"))
    body.append(_text(label_w + plot_w, axis_y + 30, "B better \u2192", anchor="end", css="small"))
    body.append(
        _text(
            label_w + plot_w / 2,
            axis_y + 52,
            f"B {_MINUS} A in percentage points (A = {_truncate(base_label, 30)})",
            anchor="middle",
        )
    )
    return _svg(
        "forest",
        width,
        height,
        "Forest plot of resolve-rate differences",
        f"One row per compared run B against {base_label} (A): the difference B - A in "
        "percentage points as a square with its interval, the cluster bootstrap interval "
        "beneath it, a vertical line at zero and a shaded band of plus or minus the minimum "
        "detectable difference.",
        body,
    )


def _repo_rates_svg(runs: list[tuple[str, RunMetrics]]) -> str:
    """Dot plot: each repository's resolve rate (of its planned trials) in every run."""
    repos = sorted({repo for _, metrics in runs for repo in metrics.per_repo})
    label_w = _label_width(repos)
    plot_w, right_w, row_h = 520.0, 24.0, 24.0
    width = label_w + plot_w + right_w
    body: list[str] = []
    x, y = label_w, 12.0
    for index, (label, _) in enumerate(runs):
        short = _truncate(label, 40)
        step = 16 + len(short) * _CHAR_WIDTH + 18
        if x > label_w and x + step > width:
            x, y = label_w, y + 20
        body.append(_marker(_RUN_SHAPES[index % 4], x + 6, y, 10, _RUN_COLOURS[index % 7]))
        body.append(_text(x + 16, y, short))
        x += step
    top = y + 24
    height = top + row_h * len(repos) + 28
    body += _percent_axis(label_w, plot_w, top - 4, top + row_h * len(repos))
    for row, repo in enumerate(repos):
        y = top + row * row_h + row_h / 2
        parts = []
        markers = []
        for index, (label, metrics) in enumerate(runs):
            counts = metrics.per_repo.get(repo)
            if counts is None or not counts.planned:
                continue
            rate = counts.rate.estimate
            parts.append(f"{label}: {counts.resolved}/{counts.planned} ({pct(rate)})")
            shape, colour = _RUN_SHAPES[index % 4], _RUN_COLOURS[index % 7]
            # Each run a little lower than the last, so equal rates stay visible.
            dodge = (index - (len(runs) - 1) / 2) * min(4.0, 14 / max(len(runs), 1))
            # Translucent: markers that still coincide show through each other.
            markers.append(_marker(shape, label_w + plot_w * rate, y + dodge, 9, colour, 0.85))
        body.append(f'<g class="repo-rates"><title>{_e(repo)}: {_e("; ".join(parts))}</title>')
        body.append(_line(label_w, y, label_w + plot_w, y, "#f0f0f0"))
        body.append(_text(label_w - 8, y, _truncate(repo), anchor="end"))
        body += markers
        body.append("</g>")
    return _svg(
        "repo-rates",
        width,
        height,
        "Resolve rate per repository, per run",
        "For each repository, one marker per run at its resolve rate over that repository's "
        "planned trials.",
        body,
    )


# --- pages -----------------------------------------------------------------------------


def _total(metrics: RunMetrics) -> RepoBreakdown:
    return RepoBreakdown(
        planned=metrics.planned,
        resolved=metrics.resolved,
        unresolved=metrics.unresolved,
        invalid=metrics.invalid,
        missing=metrics.missing,
        rate=metrics.resolved_rate,
    )


def relative_problems(problems: Iterable[str], run_dir: str | Path) -> list[str]:
    """Evidence problems with the run directory's own path left out: a page shows paths
    inside the run, never where the run happened to sit."""
    prefix = str(run_dir).rstrip("/") + "/"
    return [problem.replace(prefix, "") for problem in problems]


def _trial_links(viewer: str | None) -> Callable[[TrialRow], str | None]:
    def link(row: TrialRow) -> str | None:
        return None if viewer is None else href(viewer, trial_page(row.folder))

    return link


def run_sections(report: RunReport) -> dict[str, Any]:
    """The plots and lines of a run's headline, for the run page and the viewer's index."""
    m = report.metrics
    rows = m.pass_at_k_rows()
    coverage = {name: note for name, _, note in rows}
    # pass@k and pass^k in one plot, each pass^k beside its pass@k.
    estimated = {name: interval for name, interval, _ in rows if interval is not None}
    return {
        "provenance_line": provenance_line(report.provenance),
        "problems": relative_problems(report.evidence_problems, report.run),
        "outcomes_svg": Markup(_outcomes_svg(m.per_repo, _total(m))) if m.per_repo else "",
        "failure_svg": Markup(svg)
        if (svg := _failure_modes_svg(m.reasons, m.reason_outcomes, m.missing, m.planned))
        else "",
        "pass_at_k_svg": Markup(_pass_at_k_svg(estimated, coverage)) if estimated else "",
        "pass_at_k_notes": [f"{name}: {note}" for name, note in coverage.items() if note],
        "pass_at_k_rows": [
            (name, pass_at_k_value(interval, note)) for name, interval, note in rows if interval
        ],
    }


def render_run_html(report: RunReport, *, title: str, viewer: str | None = None) -> str:
    """One run's report: outcomes with intervals, gate, per-repo outcomes and rates,
    failure modes, flagged trials, pass@k (multi-sample targets), time and cost, every
    trial, and the provenance. ``viewer``: the run's trial viewer folder relative to
    where the page is written (a link per trial), or None for no links."""
    return render_page(
        "run.html",
        title=title,
        report=report,
        viewer=viewer,
        trial_href=_trial_links(viewer),
        **run_sections(report),
    )


@dataclass(frozen=True)
class _Run:
    label: str
    report: RunReport


def run_labels(reports: Sequence[RunReport]) -> list[str]:
    """ "experiment (target)" as compare.py names runs; numbered when two would share one."""
    labels = [run_label(r.provenance.experiment, r.provenance.target_id) for r in reports]
    return [
        f"{label} #{index + 1}" if labels.count(label) > 1 else label
        for index, label in enumerate(labels)
    ]


def render_comparison_html(
    comparison: ComparisonReport,
    runs: Sequence[RunReport],
    instances: Sequence[InstanceOutcomes] | None = None,
    *,
    title: str,
    viewers: Sequence[str | None] | None = None,
) -> str:
    """Runs compared with the first (A = ``runs[0]``, B = each other run, one pair of
    ``comparison`` each): the runs side by side, a forest plot of the differences, the
    statistics behind each, each repository's resolve rate per run, each instance's
    outcome per run (discordant first; the record's own, unless ``instances`` is given),
    the comparison's settings and every run's provenance (the record's, where it holds
    them). ``viewers``: each run's viewer folder relative to the page, for links."""
    if instances is None:
        instances = comparison.instances
    if len(comparison.runs) == len(runs):
        paired = zip(runs, comparison.runs, strict=True)
        runs = [r.model_copy(update={"provenance": p}) for r, p in paired]
    labels = run_labels(runs)
    pairs = list(zip(labels[1:], comparison.pairs, strict=True))
    links = list(viewers) if viewers is not None else [None] * len(runs)

    def cell_href(index: int, cell: RunCell) -> str | None:
        viewer = links[index]
        return None if viewer is None else href(viewer, trial_page(cell.folder))

    compared = [(label, pair.resolved) for label, pair in pairs]
    by_k = [
        (label, name, c)
        for label, pair in pairs
        for name, c in pair.by_k.items()
        if name != "pass@1"
    ]
    metrics = [(label, report.metrics) for label, report in zip(labels, runs, strict=True)]
    return render_page(
        "comparison.html",
        title=title,
        comparison=comparison,
        runs=[_Run(label, report) for label, report in zip(labels, runs, strict=True)],
        pairs=pairs,
        outcomes=OUTCOMES,
        by_k=by_k,
        settings=comparison_settings(comparison),
        forest_svg=Markup(_forest_svg(compared, labels[0])) if compared else "",
        repo_rates_svg=Markup(_repo_rates_svg(metrics))
        if any(m.per_repo for _, m in metrics)
        else "",
        instances=instances,
        discordant=sum(row.discordant for row in instances),
        cell_href=cell_href,
    )
