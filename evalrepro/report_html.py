"""Report as one self-contained HTML page: a run (``render_run_html``) or a comparison of
runs, every run against the first (``render_comparison_html``).

The page needs nothing but a browser: inline CSS, plots as inline SVG written here (no
plotting library, no scripts, no fonts or images to fetch), and a Content-Security-Policy
that forbids loading anything, so a page mailed or archived years later still shows the
same thing. Every value from a run (repo names, reasons, labels) is escaped. Rates are
shown as percent with one decimal, differences in percentage points (pp), and always
with their interval; rates are over planned trials, as everywhere in evalrepro.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence

from evalrepro.gate import RuleVerdict
from evalrepro.metrics import RepoBreakdown, RunMetrics
from evalrepro.report import FlaggedTrial
from evalrepro.score import JUDGEMENT, Outcome
from evalrepro.stats import Comparison, Interval, wilson_interval

# Blue / light orange / dark red / grey: told apart with the common colour-vision
# deficiencies, and every chart also labels its segments in text.
_OUTCOME_COLOURS = {
    "resolved": "#2166ac",
    "unresolved": "#f4a582",
    "invalid": "#b2182b",
    "missing": "#bdbdbd",
}
_OUTCOME_TEXT = {"resolved": "#fff", "unresolved": "#000", "invalid": "#fff", "missing": "#000"}
_OUTCOMES = tuple(_OUTCOME_COLOURS)
_REASON_OUTCOME = {reason: outcome.value for reason, outcome, *_ in JUDGEMENT} | {
    "tests_passed": Outcome.RESOLVED.value,
    "tests_failed": Outcome.UNRESOLVED.value,
}
# Okabe-Ito, for runs on a comparison page; marker shapes repeat the distinction.
_RUN_COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000")
_RUN_SHAPES = ("circle", "square", "triangle", "diamond")

# SVG text is 12px; a character of DejaVu/Liberation Sans is at most ~7px wide at that
# size, which is all the layout needs to keep labels from overlapping.
_CHAR_WIDTH = 7.0
_EN_DASH, _MINUS = "\u2013", "\u2212"  # typography: ranges, and "B minus A"
_MAX_LABEL_CHARS = 34

_CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1a1a1a;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans",
  sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 19px; margin: 32px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.subtitle { color: #555; margin: 0 0 16px; overflow-wrap: anywhere; }
.note { color: #444; margin: 6px 0 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { flex: 1 1 150px; border: 1px solid #ddd; border-top: 5px solid #999;
  border-radius: 4px; padding: 8px 12px; }
.card .label { font-size: 13px; color: #555; text-transform: uppercase; letter-spacing: .04em; }
.card .count { font-size: 26px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .rate { font-variant-numeric: tabular-nums; }
.card .ci { font-size: 13px; color: #555; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; margin: 8px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 5px 10px; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { background: #f5f5f5; font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
.verdict { font-weight: 600; }
.pass { color: #1a6b2d; }
.fail { color: #b2182b; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 13px;
  font-weight: 600; color: #fff; }
.badge.pass { background: #1a6b2d; color: #fff; }
.badge.fail { background: #b2182b; color: #fff; }
figure { margin: 12px 0 20px; }
figcaption { color: #444; font-size: 14px; margin-top: 4px; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font: 12px "DejaVu Sans", "Liberation Sans", system-ui, sans-serif; fill: #1a1a1a; }
svg .small { font-size: 11px; fill: #555; }
svg .strong { font-weight: 600; }
table.comparison { table-layout: fixed; width: 100%; }
table.comparison th:first-child { width: 15em; }
details { margin: 4px 0 12px; }
summary { cursor: pointer; color: #333; }
code { font-size: 13px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
"""


# --- formatting ------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _one_decimal(value: float) -> float:
    # + 0.0 turns a rounded -0.0 into 0.0.
    return round(value, 1) + 0.0


def _pct(fraction: float) -> str:
    return f"{_one_decimal(fraction * 100):.1f}%"


def _pp(difference: float) -> str:
    return f"{_one_decimal(difference * 100):+.1f} pp"


def _level(confidence: float) -> str:
    return f"{confidence * 100:g}% CI"


def _rate_range(interval: Interval) -> str:
    return f"{_one_decimal(interval.low * 100):.1f}{_EN_DASH}{_pct(interval.high)}"


def _difference_range(interval: Interval) -> str:
    low, high = (f"{_one_decimal(v * 100):.1f}" for v in (interval.low, interval.high))
    return f"{low} to {high} pp"


def _num(value: float) -> str:
    return f"{value:.4g}"


def _p_value(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _truncate(label: str, limit: int = _MAX_LABEL_CHARS) -> str:
    """Cut in the middle: repos like "org/long-name-01" differ at both ends."""
    if len(label) <= limit:
        return label
    tail = (limit - 1) // 2
    return label[: limit - 1 - tail] + "…" + label[-tail:]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _label_width(labels: Iterable[str]) -> float:
    longest = max((len(_truncate(label)) for label in labels), default=4)
    return longest * _CHAR_WIDTH + 16


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


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


# --- plots -----------------------------------------------------------------------------


def _outcomes_svg(per_repo: dict[str, RepoBreakdown], total: RepoBreakdown) -> str:
    """Stacked horizontal bars of outcomes per repo (share of that repo's planned trials),
    led by the whole run when there is more than one repo."""
    rows = [(repo, breakdown) for repo, breakdown in per_repo.items()]
    if len(rows) > 1:
        rows.insert(0, (f"all {len(rows)} repos", total))
    label_w = _label_width(repo for repo, _ in rows)
    summaries = [
        f"{c.resolved}/{c.planned} resolved ({_pct(_share(c.resolved, c.planned))})"
        for _, c in rows
    ]
    # Bold text (the first row) is wider: 8px a character.
    bar_w, right_w, row_h, bar_h = 500.0, max(len(t) for t in summaries) * 8.0 + 16, 22.0, 16.0
    width = label_w + bar_w + right_w
    legend = [(_OUTCOME_COLOURS[o], o) for o in _OUTCOMES]
    body, top = _legend(legend, label_w, 12, width)
    gap = 8.0 if len(rows) > 1 else 0.0  # sets the whole run apart from its repos
    bottom = top + row_h * len(rows) + gap
    height = bottom + 28
    body += _percent_axis(label_w, bar_w, top - 4, bottom)
    for index, (repo, counts) in enumerate(rows):
        y = top + index * row_h + (gap if index else 0.0)
        whole = counts.planned
        parts = ", ".join(
            f"{o} {getattr(counts, o)} ({_pct(_share(getattr(counts, o), whole))})"
            for o in _OUTCOMES
        )
        bold = " strong" if index == 0 and len(rows) > 1 else ""
        body.append(f'<g class="repo-row"><title>{_e(repo)}: {whole} planned; {_e(parts)}</title>')
        body.append(_text(label_w - 8, y + row_h / 2, _truncate(repo), anchor="end", css=bold))
        x = label_w
        for outcome in _OUTCOMES:
            count = getattr(counts, outcome)
            w = bar_w * _share(count, whole)
            if count:
                colour = _OUTCOME_COLOURS[outcome]
                bar_y = y + (row_h - bar_h) / 2
                body.append(_rect(x, bar_y, w, bar_h, colour, css=f"segment {outcome}"))
                if w >= len(str(count)) * _CHAR_WIDTH + 6:
                    body.append(
                        f'<text x="{_f(x + w / 2)}" y="{_f(y + row_h / 2)}" text-anchor="middle" '
                        f'dominant-baseline="middle" style="fill:{_OUTCOME_TEXT[outcome]}">'
                        f"{count}</text>"
                    )
            x += w
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
        "unresolved, were invalid or are missing (no result).",
        body,
    )


def _failure_modes_svg(reasons: dict[str, int], missing: int, planned: int) -> str | None:
    """Bars of score reasons for trials that did not resolve (plus missing trials), as
    counts and share of planned trials; None when there are none."""
    rows = [
        (reason, count, _REASON_OUTCOME.get(reason, "other"))
        for reason, count in reasons.items()
        if _REASON_OUTCOME.get(reason) != "resolved" and count > 0
    ]
    rows.sort(key=lambda row: (-row[1], row[0]))
    if missing:
        rows.append(("missing (no result)", missing, "missing"))
    if not rows:
        return None
    label_w = _label_width(reason for reason, _, _ in rows)
    bar_w, right_w, row_h, bar_h = 440.0, 200.0, 24.0, 16.0
    width = label_w + bar_w + right_w
    largest = max(count for _, count, _ in rows)
    legend = [(_OUTCOME_COLOURS[o], o) for o in ("unresolved", "invalid", "missing")]
    body, top = _legend(legend, label_w, 12, width)
    height = top + row_h * len(rows) + 8
    for index, (reason, count, outcome) in enumerate(rows):
        y = top + index * row_h
        share = f"{count} ({_pct(_share(count, planned))} of planned)"
        body.append(f'<g class="reason-row"><title>{_e(reason)}: {share}</title>')
        body.append(_text(label_w - 8, y + row_h / 2, _truncate(reason), anchor="end"))
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


def _pass_at_k_svg(pass_at_k: dict[str, Interval]) -> str:
    """pass@k estimates with interval whiskers, k on the x axis, 0-100% on the y axis."""
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
        title = f"{name}: {_pct(interval.estimate)} ({_level(interval.confidence)} "
        title += f"{_rate_range(interval)}, {interval.method})"
        body.append(f'<g class="k-point"><title>{_e(title)}</title>')
        body.append(
            _line(x, y_of(interval.low), x, y_of(interval.high), "#2166ac", ' stroke-width="2"')
        )
        for end in (interval.low, interval.high):
            body.append(_line(x - 7, y_of(end), x + 7, y_of(end), "#2166ac", ' stroke-width="2"'))
        body.append(_marker("circle", x, y_of(interval.estimate), 10, "#2166ac"))
        body.append(_text(x + 10, y_of(interval.estimate), _pct(interval.estimate), css="strong"))
        body.append(_text(x, bottom + 14, name, anchor="middle"))
        body.append("</g>")
    body.append(_text(left, height - 10, "k = samples drawn per instance", css="small"))
    return _svg(
        "pass-at-k",
        width,
        height,
        "pass@k with confidence intervals",
        "For each k, the unbiased pass@k averaged over instances, with its bootstrap interval "
        "over instances as a whisker.",
        body,
    )


def _forest_svg(rows: list[tuple[str, Comparison]], base_label: str) -> str:
    """Forest plot: per compared run, B - A with its paired bootstrap interval (and the
    cluster bootstrap beside it), a zero line, a +-MDE band and pp ticks."""
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
    legend = [("#222", f"difference, paired bootstrap {_level(confidence)}")]
    if clustered:
        legend.append(("#8c8c8c", "cluster bootstrap (repos)"))
    legend.append(("#f0f0f0", "±MDE (80% power)"))
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
            f"{label} - {base_label}: {_pp(d.estimate)} ({_level(d.confidence)} "
            f"{_difference_range(d)}, {d.method}); MDE {_one_decimal(mde * 100):.1f} pp"
        )
        body.append(f'<g class="forest-row"><title>{_e(title)}</title>')
        body.append(_rect(x_of(-mde), y + 3, x_of(mde) - x_of(-mde), row_h - 6, "#f0f0f0"))
        body.append(_text(label_w - 8, mid, _truncate(label), anchor="end"))
        body.append(_line(x_of(d.low), mid, x_of(d.high), mid, "#222", ' stroke-width="2"'))
        for end in (d.low, d.high):
            body.append(_line(x_of(end), mid - 6, x_of(end), mid + 6, "#222", ' stroke-width="2"'))
        body.append(_marker("square", x_of(d.estimate), mid, 10, "#222"))
        estimate = f"{_pp(d.estimate)} ({_difference_range(d).removesuffix(' pp')})"
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
                f"{_difference_range(k).removesuffix(' pp')} ({k.n_clusters} clusters{flag})"
            )
            body.append(_text(label_w + plot_w + 10, cy, cluster_text, css="small"))
        body.append("</g>")
    body.append(_line(label_w, axis_y, label_w + plot_w, axis_y, "#555"))
    body.append(_text(label_w, axis_y + 30, "← A better", css="small"))
    body.append(_text(label_w + plot_w, axis_y + 30, "B better →", anchor="end", css="small"))
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
        "percentage points as a square with its paired bootstrap interval, the cluster "
        "bootstrap interval beneath it, a vertical line at zero and a shaded band of plus or "
        "minus the minimum detectable difference.",
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
            rate = counts.resolved_rate
            parts.append(f"{label}: {counts.resolved}/{counts.planned} ({_pct(rate)})")
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


# --- sections --------------------------------------------------------------------------


def _page(title: str, sections: list[str]) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # Nothing may be fetched: the page must look the same offline and years later.
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="evalrepro">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
        f"<h1>{_e(title)}</h1>\n" + "\n".join(sections) + "\n</main>\n</body>\n</html>\n"
    )


def _total(metrics: RunMetrics) -> RepoBreakdown:
    return RepoBreakdown(
        planned=metrics.planned,
        resolved=metrics.resolved,
        unresolved=metrics.unresolved,
        invalid=metrics.invalid,
        missing=metrics.missing,
    )


def _cards(metrics: RunMetrics) -> str:
    confidence = metrics.resolved_rate.confidence
    low, high = wilson_interval(metrics.missing, metrics.planned, confidence)
    missing_rate = Interval(
        estimate=_share(metrics.missing, metrics.planned),
        low=low,
        high=high,
        method="wilson",
        confidence=confidence,
    )
    rates = {
        "resolved": metrics.resolved_rate,
        "unresolved": metrics.unresolved_rate,
        "invalid": metrics.invalid_rate,
        "missing": missing_rate,
    }
    cards = [
        '<div class="card" style="border-top-color:#555"><div class="label">planned</div>'
        f'<div class="count">{metrics.planned}</div><div class="rate">trials</div>'
        f'<div class="ci">{_plural(metrics.samples, "sample")} per instance</div></div>'
    ]
    for outcome, interval in rates.items():
        cards.append(
            f'<div class="card {outcome}" style="border-top-color:{_OUTCOME_COLOURS[outcome]}">'
            f'<div class="label">{outcome}</div>'
            f'<div class="count">{getattr(metrics, outcome)}</div>'
            f'<div class="rate">{_pct(interval.estimate)} of planned</div>'
            f'<div class="ci">{_level(interval.confidence)} {_rate_range(interval)}</div></div>'
        )
    return '<div class="cards">' + "".join(cards) + "</div>"


def _summary(metrics: RunMetrics) -> str:
    level = _level(metrics.resolved_rate.confidence)
    retry = ", ".join(f"{_e(reason)} {count}" for reason, count in metrics.retry_reasons.items())
    facts = [
        (
            "Evidence completeness",
            f"{_pct(metrics.evidence_completeness)} of planned trials "
            "have every artifact with its recorded digest",
        ),
        (
            "Attempts",
            f"{_plural(metrics.attempts, 'attempt')}; "
            f"{_plural(metrics.retried_trials, 'trial')} retried"
            + (f" ({retry})" if retry else ""),
        ),
    ]
    if metrics.sample_rate is not None:
        rate = metrics.sample_rate
        facts.append(
            (
                "Mean per-sample resolve rate",
                f"{_pct(rate.estimate)} ({level} {_rate_range(rate)}, bootstrap over instances)",
            )
        )
    rows = "".join(f'<tr><th scope="row">{name}</th><td>{value}</td></tr>' for name, value in facts)
    return (
        '<section id="summary"><h2>Summary</h2>'
        f'<p class="subtitle">experiment <code>{_e(metrics.experiment)}</code>, target '
        f"<code>{_e(metrics.target_id)}</code></p>"
        + _cards(metrics)
        + f'<p class="note"><strong>Rates are over planned trials</strong> ({metrics.planned}): '
        "a missing trial (no result) counts in no outcome but stays in the denominator. "
        f"Intervals are {level}s (Wilson score).</p>"
        f"<table>{rows}</table></section>"
    )


def _is_fraction(metric: str) -> bool:
    return (
        metric.endswith("_rate") or metric == "evidence_completeness" or metric.startswith("pass@")
    )


def _gate(gate: list[RuleVerdict]) -> str:
    if not gate:
        return '<section id="gate"><h2>Gate</h2><p class="note">No gate rules.</p></section>'
    failed = sum(not verdict.passed for verdict in gate)
    overall = (
        '<span class="badge pass">passed</span> every rule holds'
        if not failed
        else f'<span class="badge fail">failed</span> {failed} of {_plural(len(gate), "rule")} fail'
    )
    rows = []
    for verdict in gate:
        rule = verdict.rule
        show = _pct if _is_fraction(rule.metric) else (lambda v: f"{v:g}")
        measured = "not measured" if verdict.value is None else show(verdict.value)
        status = "pass" if verdict.passed else "fail"
        rows.append(
            f"<tr><td><code>{_e(rule.metric)}</code></td><td>{_e(rule.op)} "
            f'{show(rule.threshold)}</td><td class="num">{measured}</td>'
            f'<td class="verdict {status}">{status}</td></tr>'
        )
    return (
        f'<section id="gate"><h2>Gate</h2><p>{overall}</p>'
        '<table><thead><tr><th scope="col">metric</th><th scope="col">rule</th>'
        '<th scope="col" class="num">measured</th><th scope="col">verdict</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _per_repo_table(per_repo: dict[str, RepoBreakdown]) -> str:
    head = "".join(f'<th scope="col" class="num">{name}</th>' for name in ("planned", *_OUTCOMES))
    rows = "".join(
        f'<tr><th scope="row">{_e(repo)}</th><td class="num">{b.planned}</td>'
        + "".join(f'<td class="num">{getattr(b, o)}</td>' for o in _OUTCOMES)
        + "</tr>"
        for repo, b in per_repo.items()
    )
    return (
        f"<details><summary>Per-repository counts as a table ({len(per_repo)} repos)</summary>"
        f'<table><thead><tr><th scope="col">repository</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></details>"
    )


def _outcomes_section(metrics: RunMetrics) -> str:
    if not metrics.per_repo:
        chart = '<p class="note">No planned trials.</p>'
    else:
        chart = (
            f"<figure>{_outcomes_svg(metrics.per_repo, _total(metrics))}<figcaption>Share of "
            "each repository's planned trials by outcome; counts inside the bars.</figcaption>"
            f"</figure>{_per_repo_table(metrics.per_repo)}"
        )
    return f'<section id="outcomes"><h2>Outcomes per repository</h2>{chart}</section>'


def _failure_section(metrics: RunMetrics) -> str:
    svg = _failure_modes_svg(metrics.reasons, metrics.missing, metrics.planned)
    if svg is None:
        finished = metrics.planned - metrics.missing
        text = (
            "No failure modes: every finished trial resolved."
            if finished
            else ("No finished trials, so no score reasons.")
        )
        body = f'<p class="note">{text}</p>'
    else:
        body = (
            f"<figure>{svg}<figcaption>Score reasons of trials that did not resolve, in trials "
            "and as a share of planned trials.</figcaption></figure>"
        )
    return f'<section id="failure-modes-section"><h2>Failure modes</h2>{body}</section>'


def _pass_at_k_section(metrics: RunMetrics) -> str:
    if not metrics.pass_at_k:
        return ""
    return (
        '<section id="pass-at-k-section"><h2>pass@k</h2>'
        f"<figure>{_pass_at_k_svg(metrics.pass_at_k)}<figcaption>Unbiased pass@k averaged over "
        "instances; whiskers are bootstrap intervals over instances (never over samples)."
        "</figcaption></figure></section>"
    )


def _flagged_section(flagged: Sequence[FlaggedTrial]) -> str:
    if not flagged:
        return ""
    rows = "".join(
        f'<tr><th scope="row">{_e(f.instance_id)} (sample {f.sample_index})</th>'
        f"<td>{_e(f.outcome)} ({_e(f.reason)})</td>"
        f"<td>{'<br>'.join(_e(s) for s in f.suspects) or '-'}</td>"
        f"<td>{'<br>'.join(_e(p) for p in f.protected) or '-'}</td>"
        f"<td>{_e(f.runner_exit or '-')}</td></tr>"
        for f in flagged
    )
    return (
        '<section id="flagged-section"><h2>Flagged trials</h2><p class="note">Patches that '
        "reach into the test framework, change test infrastructure, or whose runner left "
        "without its normal shutdown: look at them, whatever their score.</p>"
        '<table><thead><tr><th scope="col">trial</th><th scope="col">outcome (reason)</th>'
        '<th scope="col">suspect code</th><th scope="col">test infrastructure changed</th>'
        f'<th scope="col">runner exit</th></tr></thead><tbody>{rows}</tbody></table></section>'
    )


def render_run_html(
    metrics: RunMetrics,
    gate: list[RuleVerdict],
    *,
    title: str,
    flagged: Sequence[FlaggedTrial] = (),
) -> str:
    """One run's report: outcomes with intervals, gate, per-repo outcomes, failure modes,
    flagged trials and, for multi-sample targets, pass@k."""
    return _page(
        title,
        [
            _summary(metrics),
            _gate(gate),
            _outcomes_section(metrics),
            _failure_section(metrics),
            _flagged_section(flagged),
            _pass_at_k_section(metrics),
        ],
    )


# --- comparison ------------------------------------------------------------------------


def _run_labels(runs: Sequence[RunMetrics]) -> list[str]:
    """ "experiment (target)" as compare.py names runs; numbered when two would share one."""
    labels = [f"{m.experiment} ({m.target_id})" for m in runs]
    return [
        f"{label} #{index + 1}" if labels.count(label) > 1 else label
        for index, label in enumerate(labels)
    ]


def _runs_table(runs: list[tuple[str, RunMetrics]]) -> str:
    head = "".join(
        f'<th scope="col" class="num">{name}</th>'
        for name in ("planned", *_OUTCOMES, "resolved rate (CI)", "evidence")
    )
    rows = []
    for index, (label, m) in enumerate(runs):
        role = "A" if index == 0 else "B"
        rate = f"{_pct(m.resolved_rate.estimate)} ({_rate_range(m.resolved_rate)})"
        rows.append(
            f'<tr><th scope="row">{role}: {_e(label)}</th><td class="num">{m.planned}</td>'
            + "".join(f'<td class="num">{getattr(m, o)}</td>' for o in _OUTCOMES)
            + f'<td class="num">{rate}</td>'
            + f'<td class="num">{_pct(m.evidence_completeness)}</td></tr>'
        )
    return (
        f'<table><thead><tr><th scope="col">run</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _cluster_cell(c: Comparison) -> str:
    k = c.cluster
    if k is None:
        return "not computed"
    if k.method == "degenerate":
        text = f"{_pp(k.estimate)}, no spread across {_plural(k.n_clusters, 'cluster')}"
    else:
        text = f"{_difference_range(k)} ({k.n_clusters} clusters)"
    if k.too_few_clusters:
        text += f'<br><span class="note">{_e(k.note)}</span>'
    return text


def _comparison_table(rows: list[tuple[str, Comparison]], base_label: str) -> str:
    def difference(c: Comparison) -> str:
        d = c.difference
        if d.method == "degenerate":
            return f"{_pp(d.estimate)} (all paired differences equal, no interval)"
        interval = f"{_level(d.confidence)} {_difference_range(d)}, {_e(d.method)}"
        return f"<strong>{_pp(d.estimate)}</strong> ({interval})"

    def discordant(c: Comparison) -> str:
        if c.mcnemar is None:
            return "n/a (per-instance rates, not 0/1)"
        return f"A only {c.mcnemar.a_only}, B only {c.mcnemar.b_only}"

    def se(c: Comparison) -> str:
        boot = c.difference.standard_error
        text = f"{_one_decimal(c.standard_error * 100):.1f} pp analytic"
        return text + (f", {_one_decimal(boot * 100):.1f} pp bootstrap" if boot is not None else "")

    lines: list[tuple[str, Callable[[Comparison], str]]] = [
        ("instances (n)", lambda c: str(c.n)),
        ("resolve rate A", lambda c: f"{_pct(c.rate_a.estimate)} ({_rate_range(c.rate_a)})"),
        ("resolve rate B", lambda c: f"{_pct(c.rate_b.estimate)} ({_rate_range(c.rate_b)})"),
        (f"difference B {_MINUS} A", difference),
        ("discordant pairs", discordant),
        ("McNemar exact p", lambda c: "n/a" if c.mcnemar is None else _p_value(c.mcnemar.p_value)),
        (
            "minimum detectable difference (80% power)",
            lambda c: f"{_one_decimal(c.minimum_detectable_difference * 100):.1f} pp",
        ),
        ("outcome correlation", lambda c: f"{c.correlation:.2f}"),
        ("standard error of the difference", se),
        ("cluster bootstrap (sensitivity)", _cluster_cell),
        ("verdict", lambda c: f'<span class="verdict">{_e(c.verdict())}</span>'),
    ]
    head = "".join(f'<th scope="col">B: {_e(label)}</th>' for label, _ in rows)
    body = "".join(
        f'<tr><th scope="row">{name}</th>'
        + "".join(f"<td>{cell(c)}</td>" for _, c in rows)
        + "</tr>"
        for name, cell in lines
    )
    return (
        f'<table class="comparison"><thead><tr><th scope="col">against A</th>{head}'
        f"</tr></thead><tbody>{body}</tbody></table>"
    )


def render_comparison_html(
    base: RunMetrics, others: list[tuple[RunMetrics, Comparison]], *, title: str
) -> str:
    """Runs compared with the first (A = ``base``, B = each other run): the runs side by
    side, a forest plot of the differences, the statistics behind each, and each
    repository's resolve rate per run."""
    labels = _run_labels([base, *(metrics for metrics, _ in others)])
    runs = list(zip(labels, [base, *(metrics for metrics, _ in others)], strict=True))
    pairs = [(label, c) for label, (_, c) in zip(labels[1:], others, strict=True)]
    sections = [
        '<section id="runs"><h2>Runs</h2>'
        f'<p class="note">A = <strong>{_e(labels[0])}</strong>; every other run is B in a '
        "comparison against A. <strong>Rates are over planned trials</strong>; missing trials "
        "stay in the denominator.</p>" + _runs_table(runs) + "</section>"
    ]
    if not pairs:
        sections.append('<p class="note">No runs to compare against.</p>')
        return _page(title, sections)
    note = ""
    if len(pairs) > 1:
        confidence = pairs[0][1].confidence
        each = 1 - (1 - confidence) / len(pairs)
        note = (
            f'<p class="note">{len(pairs)} comparisons, each at {_level(confidence)}: for a '
            f"family-wise {confidence:.0%}, read each at {each:.2%} (Bonferroni).</p>"
        )
    sections.append(
        '<section id="differences"><h2>Differences in resolve rate</h2>'
        f"<figure>{_forest_svg(pairs, labels[0])}<figcaption>Squares: B {_MINUS} A over the "
        "instances both runs share, with the paired bootstrap interval over instances. "
        "Dashed: the same difference resampling whole repositories (a sensitivity check). "
        "Shaded: ± the "
        "minimum difference this n detects with 80% power.</figcaption></figure>"
        + note
        + _comparison_table(pairs, labels[0])
        + "</section>"
    )
    if any(metrics.per_repo for _, metrics in runs):
        sections.append(
            '<section id="per-repo"><h2>Resolve rate per repository</h2>'
            f"<figure>{_repo_rates_svg(runs)}<figcaption>Each repository's resolved trials over "
            "its planned trials, one marker per run.</figcaption></figure></section>"
        )
    return _page(title, sections)
