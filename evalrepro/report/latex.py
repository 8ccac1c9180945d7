"""A run report or a comparison as a LaTeX table for a paper's appendix.

The output is a fragment to ``\\input{}``: one ``table`` float with booktabs rules (no
vertical rules), numbers right-aligned, each interval as "33.3 [13.8, 60.9]" in three
columns so that the decimal points line up, a caption above, a ``\\label``, and (for a
comparison) each verdict below. Where the numbers come from (versions, lockfile digests,
dates) is a note after the float, defined and not printed: the paper places it where it
keeps such notes with ``\\evalreproprovenance{<the table's label>}``. It needs only
``\\usepackage{booktabs}``; the fragment says so in a comment at its top.

Nothing is computed here: every number is one the record (``RunReport``,
``ComparisonReport``) holds, formatted, and every method name is the record's own. Text
from a run (names, ids, repos, reasons) goes through ``escape``, so no name can break
the document or run a command in it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime

from evalrepro import __version__
from evalrepro.records.compare import ComparisonReport, PairComparison, run_label
from evalrepro.records.database import Leaderboard
from evalrepro.records.report import Provenance, RunReport
from evalrepro.records.stats import Comparison, Interval, p_label
from evalrepro.text import visible

PREAMBLE = "\\usepackage{booktabs}"

#: Characters LaTeX reads as commands, and those its default (OT1) fonts print as
#: something else (< > | as inverted marks); each becomes a command printing itself.
_SPECIAL = {
    "\\": "\\textbackslash{}",
    "{": "\\{",
    "}": "\\}",
    # Math mode: \\$ in text needs a TS1 font, a bitmap with the default fonts.
    "$": "\\ensuremath{\\$}",
    "&": "\\&",
    "#": "\\#",
    "%": "\\%",
    "_": "\\_",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "<": "\\textless{}",
    ">": "\\textgreater{}",
    "|": "\\textbar{}",
    # After a \\ a [ or * would be read as its argument; braced, it is text.
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
}
#: Pairs of characters the fonts join into another (an id's "--" would print as a dash).
_LIGATURES = {"-": "-", "'": "'", "`": "`", "!": "`", "?": "`", ",": ","}

#: Non-ASCII letters LaTeX has a command for in every font encoding.
_LETTERS = {
    "ß": "\\ss{}",
    "æ": "\\ae{}",
    "Æ": "\\AE{}",
    "œ": "\\oe{}",
    "Œ": "\\OE{}",
    "ø": "\\o{}",
    "Ø": "\\O{}",
    "å": "\\aa{}",
    "Å": "\\AA{}",
    "ł": "\\l{}",
    "Ł": "\\L{}",
    "\u0131": "\\i{}",  # dotless i
    "\u2013": "\\textendash{}",
    "\u2014": "\\textemdash{}",
    "\u2018": "\\textquoteleft{}",
    "\u2019": "\\textquoteright{}",
    "\u201c": "\\textquotedblleft{}",
    "\u201d": "\\textquotedblright{}",
    "\u2026": "\\ldots{}",
}
#: Combining marks LaTeX has an accent command for, by code point.
_ACCENTS = {
    0x300: "`",
    0x301: "'",
    0x302: "^",
    0x303: "~",
    0x304: "=",
    0x306: "u",
    0x307: ".",
    0x308: '"',
    0x30A: "r",
    0x30B: "H",
    0x30C: "v",
    0x327: "c",
    0x328: "k",
}


def escape(text: str) -> str:
    """``text`` as LaTeX that prints it: specials as commands, whitespace (line breaks,
    tabs: a blank line would end a cell) as one space, accented Latin letters as accent
    commands, and any other character LaTeX's default fonts lack as ``[U+XXXX]``, visible
    and unambiguous rather than an error that stops the document."""
    out: list[str] = []
    text = " ".join(unicodedata.normalize("NFC", text).split())
    for index, char in enumerate(text):
        following = text[index + 1 : index + 2]
        if char in _SPECIAL:
            out.append(_SPECIAL[char])
        elif " " <= char <= "~":
            out.append(char + ("{}" if following and _LIGATURES.get(char) == following else ""))
        elif char in _LETTERS:
            out.append(_LETTERS[char])
        else:
            out.append(_accented(char) or f"[U+{ord(char):04X}]")
    return "".join(out)


def _accented(char: str) -> str | None:
    parts = unicodedata.normalize("NFD", char)
    if len(parts) != 2 or not ("A" <= parts[0] <= "Z" or "a" <= parts[0] <= "z"):
        return None
    accent = _ACCENTS.get(ord(parts[1]))
    if accent is None:
        return None
    # A dotless i under an accent, as LaTeX sets it.
    base = "\\i" if parts[0] == "i" and accent not in "ck" else parts[0]
    return f"\\{accent}{{{base}}}"


def label_key(*parts: str) -> str:
    """A ``\\label`` key from names: after the usual ``tab:``, letters, digits and hyphens
    only (TeX specials in a key break ``\\ref``, and babel makes more characters active)."""
    words = (re.sub(r"[^A-Za-z0-9]+", "-", part).strip("-").lower() for part in parts)
    return "tab:evalrepro-" + "-".join(word for word in words if word)


# --- numbers: the record's, formatted -------------------------------------------------


def _number(value: float, *, sign: bool = False) -> str:
    """A fraction as percent (or points) with one decimal; a typographic minus."""
    shown = round(value * 100, 1) + 0.0  # + 0.0: a rounded -0.0 prints as 0.0
    text = f"{abs(shown):.1f}"
    if shown < 0:
        return "$-$" + text
    return ("+" if sign and shown > 0 else "") + text


def _interval_cells(interval: Interval, *, sign: bool = False) -> str:
    """Three cells, estimate & low & high, for the ``_INTERVAL_COLUMNS`` group; ``sign``
    (a difference): every number of it signed, the bounds as the estimate, as the console
    prints "+17.8"."""
    return (
        f"{_number(interval.estimate, sign=sign)} & {_number(interval.low, sign=sign)} & "
        f"{_number(interval.high, sign=sign)}]"
    )


#: Estimate, low and high of an interval: "33.3 [13.8, 60.9]" with each number aligned on
#: its decimal point; the "]" is in the last cell, so the next column keeps its space.
_INTERVAL_COLUMNS = "r@{\\ [}r@{, }r"
_NO_INTERVAL = "\\multicolumn{3}{c}{---}"


def _prose(text: str) -> str:
    """A record's sentence (a verdict), escaped, with the typographic minus the table's
    numbers have: "CI -24.2 to 24.2" prints "$-$24.2", not a hyphen."""
    return re.sub(r"(?<![A-Za-z0-9}])-(?=\d)", "$-$", escape(text))


def _level(confidence: float) -> str:
    return f"{round(confidence * 100, 2):g}\\%"


def _method(method: str) -> str:
    """An interval's method as a sentence names it: the record's words, but Wilson's
    interval is recorded in lower case."""
    return "Wilson score" if method == "wilson" else method


def _p_cell(c: Comparison) -> str:
    """The p of the test behind the verdict: exact McNemar's, or the sign-flip test's for
    rates (marked so: the column is McNemar's)."""
    if c.mcnemar is not None:
        return _p_value(c.mcnemar.p_value)
    if c.sign_flip is not None:
        return f"{_p_value(c.sign_flip.p_value)}$^{{s}}$"
    return "---"


def _p_value(p: float) -> str:
    """The verdict's rounding rule (``p_label``): the table and the note below it print
    one p the same way."""
    return p_label(p).replace("<", "$<$")


def _when(value: datetime) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC"


def _ran(started: datetime | None, finished: datetime | None) -> str:
    if started and finished:
        return f"ran {_when(started)} to {_when(finished)}; "
    if finished:
        return f"finished {_when(finished)}; "
    return f"started {_when(started)}; " if started else ""


def _listing(items: Iterable[str]) -> str:
    listed = list(items)
    if len(listed) <= 2:
        return " and ".join(listed)
    return ", ".join(listed[:-1]) + ", and " + listed[-1]


def _header(kind: str, subject: str, label: str) -> list[str]:
    return [
        # One line whatever the name holds: a line break would end the comment.
        f"% evalrepro {__version__}: {kind} of {' '.join(subject.split())}, as a LaTeX fragment.",
        f"% Preamble: {PREAMBLE}  (\\input{{}} this file in the document body.)",
        "% Every number is one the report's record holds; nothing here is recomputed.",
        "% Where the numbers come from is defined after the table, not printed: place it",
        f"% where the paper keeps such notes with \\evalreproprovenance{{{label}}}.",
    ]


#: Defines the command that places a table's provenance note, once for every fragment.
_PLACE = "\\providecommand{\\evalreproprovenance}[1]{\\csname evalrepro@provenance@#1\\endcsname}"


def _provenance_note(label: str, lines: Sequence[str]) -> list[str]:
    """The provenance of the table labelled ``label``, defined (``\\gdef``, so that a
    table's fragment may sit in a group) but not printed: hashes and dates belong in
    an appendix or a footnote the paper chooses, not under a table in its body."""
    return [
        "",
        f"% The provenance of table {label}: \\evalreproprovenance{{{label}}} prints it.",
        _PLACE,
        f"\\expandafter\\gdef\\csname evalrepro@provenance@{label}\\endcsname{{%",
        # Small and ragged, as a note: a digest is one long word.
        "{\\footnotesize\\raggedright",
        *(
            line + (" \\par" if index < len(lines) - 1 else "\\par}}")
            for index, line in enumerate(lines)
        ),
    ]


def _note(lines: Sequence[str]) -> list[str]:
    """Small text under the table, as wide as the column, wrapping between words."""
    return [
        "\\par\\smallskip",
        "\\parbox{\\linewidth}{\\footnotesize\\raggedright",
        *(line + ("\\\\" if index < len(lines) - 1 else "") for index, line in enumerate(lines)),
        "\\par}",
    ]


def _name_cell(text: str, *, wrap: str | None) -> str:
    """A name in a table's first column; ``wrap``: the width every name of a column
    with a long one wraps at, after a space, "/", "_" or "-", rather than widen the
    table."""
    if wrap is None:
        return escape(text)
    return f"\\parbox[t]{{{wrap}}}{{\\raggedright {_name(text)}}}"


def _name(text: str) -> str:
    """A name in running text, free to break after "/", "_" or "-" (one without spaces,
    "swebench_lite/model-x", would otherwise stick out of its line or stretch it)."""
    return re.sub(r"(\\_|/|-(?:\{\})?)", r"\1\\allowbreak{}", escape(text))


def _wrap_width(names: Iterable[str], longest: int, width: str) -> str | None:
    return width if any(len(name) > longest for name in names) else None


#: SWE-bench's longest repo names (scikit-learn/scikit-learn) stay on one line; a
#: comparison's "experiment (target)" names wrap sooner, its columns being many.
_REPO_NAME = (26, "12em")
_RUN_NAME = (20, "9em")


def _two_line_head(cells: Sequence[tuple[str, str, int]]) -> list[str]:
    """A header of two lines (a name above its unit), each (top, bottom, columns)."""
    lines = []
    for part in (0, 1):
        row = []
        for top, bottom, span in cells:
            text = (top, bottom)[part]
            row.append(text if span == 1 else f"\\multicolumn{{{span}}}{{c}}{{{text}}}")
        lines.append(" & ".join(row) + " \\\\")
    return lines


# --- one run ----------------------------------------------------------------------------


def render_run_latex(report: RunReport, *, label: str | None = None) -> str:
    """The run's outcome counts and rates with their intervals (over planned trials),
    pass@k when the run has several samples, the per-repo rates, and its provenance."""
    m, p = report.metrics, report.provenance
    ci = f"[{_level(m.resolved_rate.confidence)} CI]"
    methods = sorted({_method(i.method) for i in (m.resolved_rate, m.invalid_rate)})
    pass_k = {**m.pass_at_k, **(m.pass_hat_k or {})}
    if m.sample_rate is not None and "pass@1" not in pass_k:
        pass_k["mean per-sample rate"] = m.sample_rate
    # Each pass@k over fewer than every instance, or not available, says so.
    coverage = {name: note for name, _, note in m.pass_at_k_rows() if note}
    unavailable = [name for name, interval, _ in m.pass_at_k_rows() if interval is None]
    caption = (
        f"Outcomes of {_subject(m.experiment, m.target_id)}: "
        f"{m.planned} planned trials on {p.instances} instances of dataset "
        f"{_name(p.dataset)}. Rates are percentages of all planned trials (invalid and "
        f"missing trials stay in the denominator) with "
        f"{_level(m.resolved_rate.confidence)} {_listing(methods)} intervals"
    )
    if pass_k:
        k_methods = {_method(i.method) for i in pass_k.values()}
        if len(k_methods) == 1:
            intervals = f"a {escape(k_methods.pop())} interval"
        else:
            each = "; ".join(f"{escape(k)}: {escape(_method(i.method))}" for k, i in pass_k.items())
            intervals = f"intervals ({each})"
        caption += (
            "; pass@$k$ is the unbiased estimator averaged over instances"
            + (
                ", pass\\textasciicircum{}$k$ the probability that $k$ samples all resolve, "
                "averaged over the same instances"
                if m.pass_hat_k
                else ""
            )
            + f", with {intervals} over instances"
        )
    if coverage:
        caption += "; " + "; ".join(f"{escape(k)} {escape(note)}" for k, note in coverage.items())
    label = label or label_key("run", *dict.fromkeys((m.experiment, m.target_id)))
    lines = [
        *_header("the run report", run_label(m.experiment, m.target_id), label),
        "\\begin{table}[tbp]",
        "\\centering",
        f"\\caption{{{caption}.}}",
        f"\\label{{{label}}}",
        "\\smallskip",
        "\\small",
        f"\\begin{{tabular}}{{@{{}}lr{_INTERVAL_COLUMNS}}}",
        "\\toprule",
        *_two_line_head([("", "Outcome", 1), ("", "Trials", 1), ("Rate, \\%", ci, 3)]),
        "\\midrule",
        f"Resolved & {m.resolved} & {_interval_cells(m.resolved_rate)} \\\\",
        f"Unresolved & {m.unresolved} & {_interval_cells(m.unresolved_rate)} \\\\",
        f"Invalid & {m.invalid} & {_interval_cells(m.invalid_rate)} \\\\",
    ]
    if m.missing:
        lines.append(f"Missing (no result) & {m.missing} & {_NO_INTERVAL} \\\\")
    lines += ["\\midrule", f"Planned & {m.planned} & \\multicolumn{{3}}{{c}}{{}} \\\\"]
    if pass_k or unavailable:
        lines.append("\\midrule")
        rows = {**pass_k, **dict.fromkeys(unavailable)}
        rows = {name: rows[name] for name in sorted(rows, key=_k_order)}
        lines += [
            f"{escape(name)} & & {_NO_INTERVAL if i is None else _interval_cells(i)} \\\\"
            for name, i in rows.items()
        ]
    if not report.gate_passed:
        # A failed gate is said in the table itself, not only in the provenance note.
        lines += [
            "\\midrule",
            f"\\multicolumn{{5}}{{@{{}}l}}{{Gate {escape(report.gate_name)}: "
            f"{_failed_gate(report)}}} \\\\",
        ]
    lines += ["\\bottomrule", "\\end{tabular}", *_repo_table(report)]
    lines.append("\\end{table}")
    lines += _provenance_note(label, _run_provenance(report))
    # Comment lines quote names raw: the one rule shows them (evalrepro.text.visible).
    return visible("\n".join(lines) + "\n")


def _failed_gate(report: RunReport) -> str:
    """\\textbf{failed}, and each rule that failed with what was measured."""
    failed = [
        f"{escape(str(v.rule))} (measured "
        + ("n/a" if v.value is None else escape(f"{v.value:.4g}"))
        + ")"
        for v in report.gate
        if not v.passed
    ]
    return "\\textbf{failed}" + (f": {_listing(failed)}" if failed else "")


def _subject(experiment: str, target_id: str) -> str:
    """ "experiment E, target T", or "experiment E" alone when T is E (not "model_a,
    target model_a")."""
    said = f"experiment {_name(experiment)}"
    return said if experiment == target_id else f"{said}, target {_name(target_id)}"


def _k_order(name: str) -> tuple[int, str]:
    """pass@k rows by k (pass@2 before pass@10), each pass^k after its pass@k, anything
    else after them."""
    k = name.removeprefix("pass@").removeprefix("pass^")
    return (int(k), name[4]) if k.isdigit() else (1 << 30, name)


def _repo_table(report: RunReport) -> list[str]:
    """Per repository: planned trials, resolved and invalid counts (and missing, when a
    trial is), and the resolved rate with its interval; unresolved is the rest."""
    m = report.metrics
    if not m.per_repo:
        return []
    missing = any(row.missing for row in m.per_repo.values())
    ci = f"[{_level(next(iter(m.per_repo.values())).rate.confidence)} CI]"
    head = [("", "Repository", 1), ("", "$n$", 1), ("", "Resolved", 1), ("", "Invalid", 1)]
    if missing:
        head.append(("", "Missing", 1))
    lines = [
        "",
        "\\medskip",
        f"\\begin{{tabular}}{{@{{}}lrrr{'r' if missing else ''}{_INTERVAL_COLUMNS}}}",
        "\\toprule",
        *_two_line_head([*head, ("Resolved, \\%", ci, 3)]),
        "\\midrule",
    ]
    wrap = _wrap_width(m.per_repo, *_REPO_NAME)
    for repo, row in m.per_repo.items():
        cells = [_name_cell(repo, wrap=wrap), row.planned, row.resolved, row.invalid]
        if missing:
            cells.append(row.missing)
        lines.append(" & ".join(map(str, cells)) + f" & {_interval_cells(row.rate)} \\\\")
    return [*lines, "\\bottomrule", "\\end{tabular}"]


def _trials_source(p: Provenance) -> str:
    """Which evalrepro ran the trials, and the lockfile (by its sha256) they ran."""
    harness = f"evalrepro {escape(p.harness_version)}"
    if p.harness_commit:
        harness += f" at commit \\texttt{{{escape(p.harness_commit[:12])}}}"
    return f"trials run by {harness}; lockfile \\texttt{{{_digest(p.lockfile_digest)}}}"


def _digest(digest: str | None) -> str:
    """A digest that may break after its "sha256:" and at its middle: 64 hex digits in one
    piece are wider than a column of two-column paper."""
    algorithm, _, hexdigits = (digest or "unknown").rpartition(":")
    half = len(hexdigits) // 2
    pieces = (
        [escape(hexdigits[:half]), escape(hexdigits[half:])] if half >= 16 else [escape(hexdigits)]
    )
    head = f"{escape(algorithm)}:\\allowbreak{{}}" if algorithm else ""
    return head + "\\allowbreak{}".join(pieces)


def _runtime(p: Provenance) -> str:
    return _listing(escape(r) for r in p.runtime) or "unknown"


def _run_provenance(report: RunReport) -> list[str]:
    p, m = report.provenance, report.metrics
    source = f"Source: evalrepro {escape(p.evalrepro_version)} report of {_trials_source(p)}."
    runtime = _runtime(p)
    subject = _subject(p.experiment, p.target_id)
    ran = (
        f"{subject[0].upper()}{subject[1:]}, dataset "
        f"{_name(p.dataset)} ({p.instances} instances, {p.planned_trials} planned trials); "
        f"runtime {runtime}, {p.sessions} session{'s' if p.sessions != 1 else ''}; "
        f"{_ran(p.started_at, p.finished_at)}report generated {_when(p.generated_at)}."
    )
    rules = f" ({'; '.join(escape(rule) for rule in p.gate_rules) or 'no rules'})"
    # The bootstrap's settings only where an interval of the table is a bootstrap's.
    intervals = [*m.pass_at_k.values(), *(m.pass_hat_k or {}).values()]
    resampled = [i for i in intervals if "bootstrap" in i.method]
    if m.sample_rate is not None and "pass@1" not in m.pass_at_k:
        resampled += [m.sample_rate] if "bootstrap" in m.sample_rate.method else []
    bootstrap = f"; bootstrap {p.n_resamples} resamples, seed {p.seed}" if resampled else ""
    settings = (
        f"Intervals at {_level(p.confidence)}{bootstrap}. Gate {escape(p.gate)}{rules}: "
        f"{'passed' if report.gate_passed else 'failed'}. Evidence complete for "
        f"{_number(m.evidence_completeness)}\\% of planned trials"
        + (
            f"; {len(report.evidence_problems)} evidence problems (see evalrepro verify)."
            if report.evidence_problems
            else "."
        )
    )
    return [source, ran, settings]


# --- a comparison ----------------------------------------------------------------------

Block = tuple[str, list[tuple[int, Comparison]]]


def _blocks(report: ComparisonReport) -> list[Block]:
    """Rows by metric: resolved first, then each pass@k the pairs hold beyond it (an entry
    that is the resolved comparison again, as pass@1 and the per-sample rate are, once)."""
    blocks: dict[str, list[tuple[int, Comparison]]] = {"resolved": []}
    for number, pair in enumerate(report.pairs):
        blocks["resolved"].append((number, pair.resolved))
        for name, other in pair.by_k.items():
            if other != pair.resolved:
                blocks.setdefault(name, []).append((number, other))
    return list(blocks.items())


def _mark(pair: PairComparison) -> str:
    return "" if pair.comparable else "\\textsuperscript{$\\dagger$}"


def _by_shares(pair: PairComparison) -> bool:
    """Whether the pair paired shares of resolved samples and recorded its discordant
    counts (a record of an older version did not)."""
    a_higher = getattr(pair, "a_higher", None)
    b_higher = getattr(pair, "b_higher", None)
    samples = (getattr(pair, "samples_a", None) or 1, getattr(pair, "samples_b", None) or 1)
    return a_higher is not None and b_higher is not None and max(samples) > 1


def render_comparison_latex(report: ComparisonReport, *, label: str | None = None) -> str:
    """Each run against the first: both rates and the difference B - A with their
    intervals (the difference's method as recorded), the discordant pairs and the exact
    McNemar p, one block of rows per metric; under the table each verdict in full, the
    multiple-comparison correction, and what was not comparable."""
    pairs = report.pairs
    if not pairs:
        raise ValueError("a comparison report without pairs has no table")
    blocks = _blocks(report)
    comparisons = [c for _, rows in blocks for _, c in rows]
    levels = list(dict.fromkeys(_level(c.difference.confidence) for c in comparisons))
    ci = f"[{levels[0]} CI]" if len(levels) == 1 else "[CI]"
    # n in a column only when the pairs share different numbers of instances.
    with_n = len({c.n for c in comparisons}) > 1
    n_cell = (lambda c: f" & {c.n}") if with_n else (lambda c: "")
    head = [("", "Run", 1), *([("", "$n$", 1)] if with_n else [])]
    head += [
        ("Resolved, \\%", ci, 3),
        ("B $-$ A, points", ci, 3),
        ("Discordant", "A / B", 1),
        ("McNemar", "$p$", 1),
    ]
    width = sum(span for *_, span in head)
    wrap = _wrap_width([pairs[0].a, *(pair.b for pair in pairs)], *_RUN_NAME)
    label = label or label_key("compare", pairs[0].a, *(p.b for p in pairs))
    lines = [
        *_header("a comparison", " vs ".join([pairs[0].a, *(pair.b for pair in pairs)]), label),
        "\\begin{table}[tbp]",
        "\\centering",
        f"\\caption{{{_comparison_caption(report, blocks, levels)}}}",
        f"\\label{{{label}}}",
        "\\smallskip",
        "\\small",
        # Signed bounds and three-digit p: columns set close, to keep within the text.
        "\\setlength{\\tabcolsep}{3.5pt}",
        f"\\begin{{tabular}}{{@{{}}l{'r' if with_n else ''}{_INTERVAL_COLUMNS * 2}cr@{{}}}}",
        "\\toprule",
        *_two_line_head(head),
        "\\midrule",
    ]
    for index, (name, rows) in enumerate(blocks):
        if index:
            lines.append("\\midrule")
        if len(blocks) > 1:
            shown = "Resolved" if name == "resolved" else escape(name)
            lines.append(f"\\multicolumn{{{width}}}{{@{{}}l}}{{\\emph{{{shown}}}}} \\\\")
        baseline: tuple[str, Interval] | None = None
        for number, c in rows:
            pair = pairs[number]
            # A's row once, and again only where a pair's A differs (other shared instances).
            if baseline != (pair.a, c.rate_a):
                baseline = (pair.a, c.rate_a)
                lines.append(
                    f"{_name_cell(pair.a, wrap=wrap)}{n_cell(c)} & {_interval_cells(c.rate_a)} "
                    "& \\multicolumn{3}{c}{A, the baseline} & --- & --- \\\\"
                )
            test = c.mcnemar
            discordant = f"{test.a_only} / {test.b_only}" if test else "---"
            if not test and c == pair.resolved and _by_shares(pair):
                # Shares of resolved samples: the instances whose share is higher in A, in B.
                discordant = f"{pair.a_higher} / {pair.b_higher}"
            lines.append(
                f"{_name_cell(pair.b, wrap=wrap)}{_mark(pair)}{n_cell(c)} & "
                f"{_interval_cells(c.rate_b)} & "
                f"{_interval_cells(c.difference, sign=True)} & {discordant} & "
                f"{_p_cell(c)} \\\\"
            )
    lines += ["\\bottomrule", "\\end{tabular}", *_note(_comparison_notes(report, blocks))]
    lines.append("\\end{table}")
    lines += _provenance_note(label, _comparison_provenance(report, blocks))
    # Comment lines quote names raw: the one rule shows them (evalrepro.text.visible).
    return visible("\n".join(lines) + "\n")


def _comparison_caption(report: ComparisonReport, blocks: list[Block], levels: list[str]) -> str:
    pairs = report.pairs
    comparisons = [c for _, rows in blocks for _, c in rows]
    rate_methods = sorted({_method(c.rate_b.method) for c in comparisons})
    by_method: dict[str, list[str]] = {}
    for name, rows in blocks:
        for _, c in rows:
            names = by_method.setdefault(_method(c.difference.method), [])
            if escape(name) not in names:
                names.append(escape(name))
    if len(by_method) == 1:
        difference = f"{escape(next(iter(by_method)))} interval"
    else:
        difference = (
            "interval ("
            + "; ".join(
                f"{escape(method)} for {_listing(names)}" for method, names in by_method.items()
            )
            + ")"
        )
    shares = any(_by_shares(pair) for pair in pairs)
    sizes = {c.n for c in comparisons}
    shared = f"the $n = {sizes.pop()}$" if len(sizes) == 1 else "the $n$"
    caption = (
        f"Each run B against A = {_name(pairs[0].a)}, on {shared} instances both hold: "
        f"resolve rates with {_listing(rate_methods)} intervals, the paired difference "
        f"B $-$ A in percentage points with its {difference}, the discordant instances "
        f"(resolved by A only, by B only"
        + ("; for shares of resolved samples, higher in A, in B" if shares else "")
        + ") and the exact McNemar test"
        + (
            " ($^{s}$: for shares of resolved samples, the exact sign-flip test of the "
            "per-instance differences)"
            if any(c.sign_flip is not None for c in comparisons)
            else ""
        )
        + "; verdicts below."
    )
    if len(levels) > 1:
        caption += f" Intervals at {_listing(levels)}."
    # Read defensively: a report of another version may lack the correction's fields.
    correction = getattr(report, "correction", None)
    each = getattr(report, "comparison_confidence", None)
    family = getattr(report, "confidence", None)
    if correction and correction != "none" and each is not None and family is not None:
        caption += (
            f" With {len(pairs)} comparisons, {escape(str(correction))}-corrected: each "
            f"interval and test at {_level(each)}, all together at {_level(family)}."
        )
    return caption


def _comparison_notes(report: ComparisonReport, blocks: list[Block]) -> list[str]:
    """Under the table: what each pair paired and how failures count in it, each verdict,
    the correction, and what was not comparable or missing."""
    pairs = report.pairs
    notes = []
    # Once per table: what the pairs paired, naming the runs only when it differs
    # between them (other shared instances, other numbers of samples). Read
    # defensively: a record of an older version says nothing of it.
    by_sentence: dict[str, list[str]] = {}
    for pair in pairs:
        paired = getattr(pair, "paired", None)
        if paired:
            by_sentence.setdefault(paired, []).append(_name(pair.b))
    for paired, runs in by_sentence.items():
        whose = "" if len(by_sentence) == 1 else f"{_listing(runs)} against A, "
        said = f"{whose}paired: {_prose(paired)}."
        notes.append(said[0].upper() + said[1:])
    counting = {getattr(pair, "counting", None) for pair in pairs} - {None}
    for said in sorted(counting):
        notes.append(f"{_prose(said[0].upper() + said[1:])}.")
    for name, rows in blocks:
        for number, c in rows:
            metric = "" if name == "resolved" else f", {escape(name)}"
            notes.append(f"{_name(pairs[number].b)}{metric}: {_prose(c.verdict())}.")
    note = getattr(report, "multiple_comparisons_note", None)
    if note:
        notes.append(escape(str(note)).rstrip(".") + ".")
    for pair in pairs:
        if not pair.comparable:
            found = "; ".join(escape(f"{d.kind}: {d.detail}") for d in pair.differences)
            notes.append(
                f"{_mark(pair)}{_name(pair.b)} is not comparable with A (compared with "
                f"\\texttt{{-{{}}-force}}): {found}."
            )
        if pair.missing_trials:
            notes.append(
                f"{_name(pair.b)}: {pair.missing_trials} planned trials of the two runs have "
                "no result and count as unresolved."
            )
    return notes


def _comparison_provenance(report: ComparisonReport, blocks: list[Block]) -> list[str]:
    """Where the numbers come from: the evalrepro that compared, the resampling (only
    when a bootstrap made a number of the table or its verdicts), each run's source."""
    comparisons = [c for _, rows in blocks for _, c in rows]
    resampled = []
    if any("bootstrap" in c.difference.method for c in comparisons):
        resampled.append(f"{escape(report.method)} bootstrap for per-instance rates")
    # The by-repo cluster bootstrap enters a verdict only when the verdict names it.
    if any("by-repo sensitivity" in c.verdict() for c in comparisons):
        resampled.append("a cluster bootstrap over repositories for the by-repo sensitivity")
    # Each run's provenance, where the record has it (reports of older versions did not).
    runs: list[Provenance] = list(getattr(report, "runs", None) or [])
    made_by = runs[0].evalrepro_version if runs else __version__
    source = f"Source: evalrepro {escape(made_by)} compare, from the runs' records"
    if resampled:
        source += f"; {_listing(resampled)}, {report.n_resamples} resamples, seed {report.seed}"
    notes = [source + "."]
    for index, p in enumerate(runs):
        role = "A" if index == 0 else "B"
        notes.append(
            f"{role} = {_name(run_label(p.experiment, p.target_id))}: {_trials_source(p)}; "
            f"dataset {_name(p.dataset)} ({p.instances} instances, {p.planned_trials} planned "
            f"trials); runtime {_runtime(p)}; {_ran(p.started_at, p.finished_at)}".rstrip("; ")
            + "."
        )
    return notes


# --- a leaderboard ---------------------------------------------------------------------


def render_leaderboard_latex(board: Leaderboard, *, label: str | None = None) -> str:
    """The leaderboard as one table: a block of rows per comparability class, each headed
    by what makes its class (the record's heading), ranked as the record ranks them, each
    rate with the interval its run recorded; under it, that a rank is no comparison."""
    from evalrepro.report.leaderboard import RANK_NOTE, heading, pass_k

    label = label or label_key("leaderboard", board.dataset or "all")
    lines = [*_header("a leaderboard", board.dataset or "every dataset", label)]
    if not board.groups:
        return "\n".join([*lines, "% No complete, finished runs."]) + "\n"
    rows = [row for group in board.groups for row in group.rows]
    levels = list(dict.fromkeys(_level(row.resolved_rate.confidence) for row in rows))
    methods = sorted({_method(row.resolved_rate.method) for row in rows})
    ci = f"[{levels[0]} CI]" if len(levels) == 1 else "[CI]"
    names = [run_label(row.experiment, row.target_id) for row in rows]
    wrap = _wrap_width(names, *_RUN_NAME)
    head = [
        ("", "Rank", 1),
        ("", "Run", 1),
        ("", "Resolved", 1),
        ("Resolved, \\%", ci, 3),
        ("Invalid", "\\%", 1),
        ("", "Gate", 1),
    ]
    width = sum(span for *_, span in head)
    caption = (
        f"Published runs of {escape(board.dataset) if board.dataset else 'every dataset'}, "
        "ranked by resolve rate within each comparability class (runs of different classes "
        "measured different experiments and are not ranked together): resolved trials of "
        f"planned, and each run's recorded rate with its {_listing(levels)} "
        f"{_listing(methods)} interval"
    )
    lines += [
        "\\begin{table}[tbp]",
        "\\centering",
        f"\\caption{{{caption}.}}",
        f"\\label{{{label}}}",
        "\\smallskip",
        "\\small",
        f"\\begin{{tabular}}{{@{{}}rl r{_INTERVAL_COLUMNS}rl@{{}}}}",
        "\\toprule",
        *_two_line_head(head),
    ]
    for group in board.groups:
        lines += [
            "\\midrule",
            f"\\multicolumn{{{width}}}{{@{{}}l}}{{\\emph{{{_name(heading(group))}}}}} \\\\",
        ]
        for row in group.rows:
            lines.append(
                f"{row.rank} & {_name_cell(run_label(row.experiment, row.target_id), wrap=wrap)}"
                f" & {row.resolved}/{row.planned} & {_interval_cells(row.resolved_rate)} & "
                f"{_number(row.invalid_rate.estimate)} & "
                f"{'passed' if row.gate_passed else 'failed'} \\\\"
            )
    lines += ["\\bottomrule", "\\end{tabular}"]
    # The note's Markdown code marks are not LaTeX's: the command in typewriter type.
    pieces = RANK_NOTE.split("`evalrepro compare`")
    notes = [" \\texttt{evalrepro compare} ".join(map(escape, pieces))]
    # Multi-sample runs: pass@k and pass^k at the largest k, under the table (one line each).
    for name, row in zip(names, rows, strict=True):
        if said := pass_k(row):
            notes.append(f"{_name(name)}: {escape(said)}.")
    for group in board.groups[1:]:
        found = "; ".join(escape(f"{d.kind}: {d.detail}") for d in group.differences)
        if found:
            notes.append(f"{_name(heading(group))}: not comparable with the first class ({found}).")
    lines += [*_note(notes), "\\end{table}"]
    lines += _provenance_note(
        label,
        [
            f"Source: evalrepro {escape(__version__)} leaderboard of the database "
            f"\\texttt{{{escape(board.database)}}}; each rate is the run's own recorded "
            "metric, read back, not computed again.",
            "Runs: "
            + "; ".join(
                f"{_name(name)} \\texttt{{{escape(row.run_id)}}}"
                for name, row in zip(names, rows, strict=True)
            )
            + ".",
        ],
    )
    return "\n".join(lines) + "\n"
