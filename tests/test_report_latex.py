"""The LaTeX tables: a run report and a comparison as booktabs fragments for a paper.

The runs are real run directories, made without containers the way users make them of
another harness's logs: ``evalrepro regrade`` of the real eval logs in
``tests/corpus/swebench_eval`` (SWE-bench's layout), copied under twelve instances of
four repositories, one of them named with every character TeX treats specially. Model A
left one patch empty, B and C lost logs of resolved instances. Each fragment is then
``\\input`` into a minimal document, compiled by a real pdflatex, and read back with
pdftotext: it compiles without an error or an overfull box, with outline fonts only,
and the numbers of the record are on the page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

from evalrepro.cli import main
from evalrepro.config.gate import GateRule, RuleVerdict
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.records.compare import ComparisonReport
from evalrepro.records.report import RunReport
from evalrepro.records.stats import Interval, p_label
from evalrepro.regrade import regrade
from evalrepro.report.compare import compare_runs
from evalrepro.report.latex import (
    PREAMBLE,
    escape,
    label_key,
    render_comparison_latex,
    render_run_latex,
)
from evalrepro.report.run_report import build_run_report
from evalrepro.report.stats import compare_outcomes, instance_pass_at_k
from evalrepro.run.rundir import RunDirectory
from tests.test_swebench_layout import LOGS, PLANNED, build_run, instance

#: Resolved, unresolved, unresolved, resolved, resolved: as swebench grades these logs.
HONEST = [p for p in PLANNED if p.honest and p.sample_index == 0]
#: Every character TeX reads as a command or prints as another, in one repo name.
HOSTILE_REPO = "evil/#%&${x}~^\\_[*]<|>"
REPOS = ("django/django", "psf/requests", HOSTILE_REPO, "scikit-learn/scikit-learn")
HOSTILE_MODEL = "m#%&${c}~^[*]"
#: Per model, what went otherwise than in the honest logs: trial index -> "empty" (an
#: empty patch) or "lost" (a log that holds no test run).
MODELS = {"model_a": {0: "empty"}, "model_b": {3: "lost", 4: "lost", 8: "lost"}}
MODELS[HOSTILE_MODEL] = {5: "lost", 9: "lost"}
N_RESAMPLES = 500


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("latex")
    planned = [HONEST[i % len(HONEST)] for i in range(12)]
    rows = [
        {
            **instance(p).model_dump(mode="json", by_alias=True),
            "instance_id": f"instance__{i:02d}",
            "repo": REPOS[i % len(REPOS)],
            "log_parser": p.parser,
        }
        for i, p in enumerate(planned)
    ]
    dataset = root / "instances.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    made = {}
    for model, changed in MODELS.items():
        logs = root / "logs" / model
        for i, p in enumerate(planned):
            folder = logs / f"instance__{i:02d}"
            folder.mkdir(parents=True)
            lost = changed.get(i) == "lost"
            (folder / "test_output.txt").write_text(
                "the runner died\n" if lost else LOGS[p.instance_id].text
            )
            (folder / "patch.diff").write_text("" if changed.get(i) == "empty" else p.patch)
        made[model] = root / "runs" / model
        regrade(logs, dataset, run_dir=made[model])
    return made


def run_report(run_dir: Path) -> RunReport:
    directory = RunDirectory(run_dir)
    lockfile = read_lockfile(directory.lockfile_path)
    return build_run_report(
        run_dir, lockfile, directory.completed(lockfile), n_resamples=N_RESAMPLES
    )


@pytest.fixture(scope="module")
def report_a(runs) -> RunReport:
    return run_report(runs["model_a"])


@pytest.fixture(scope="module")
def comparison(runs) -> ComparisonReport:
    return compare_runs([runs[m] for m in MODELS], n_resamples=N_RESAMPLES)


@pytest.fixture(scope="module")
def multi_sample(tmp_path_factory) -> RunReport:
    """Two samples of an instance (pass@1, pass@2) and a trial with no result."""
    run_dir = tmp_path_factory.mktemp("samples") / "run"
    lockfile, results = build_run(run_dir)
    lockfile.write(run_dir / LOCKFILE_NAME)
    return build_run_report(run_dir, lockfile, results, n_resamples=N_RESAMPLES)


def cells(interval: Interval, *, sign: bool = False) -> str:
    """The three cells an interval is printed in, as the record holds it."""

    def number(value: float, signed: bool = False) -> str:
        shown = round(value * 100, 1) + 0.0
        text = f"{abs(shown):.1f}"
        return ("$-$" if shown < 0 else "+" if signed and shown > 0 else "") + text

    low, high = number(interval.low, sign), number(interval.high, sign)
    return f"{number(interval.estimate, sign)} & {low} & {high}]"


# --- escaping -------------------------------------------------------------------------

ESCAPED = {
    "\\": "\\textbackslash{}",
    "{": "\\{",
    "}": "\\}",
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
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
}


@pytest.mark.parametrize("char", list(ESCAPED))
def test_escape_turns_each_special_character_into_a_command_that_prints_it(char):
    assert escape(f"a{char}b") == f"a{ESCAPED[char]}b"


def test_escape_leaves_no_command_a_name_could_start():
    hostile = "x}\\input{/etc/passwd}\\def\\a{$^^5c$ % rest\n\n\\end{document}"
    escaped = escape(hostile)
    # Every backslash left is one escape() wrote: the name's own are \textbackslash{}.
    written = {"\\textbackslash", "\\{", "\\}", "\\%", "\\ensuremath", "\\$"}
    commands = set(re.findall(r"\\(?:[A-Za-z]+|.)", escaped))
    assert commands <= written | {"\\textasciicircum"}
    assert "^^" not in escaped  # TeX would read ^^5c as a backslash
    assert "\n" not in escaped  # a blank line would end a table cell


def test_escape_collapses_whitespace_and_keeps_ids_apart_from_ligatures():
    assert escape("a\n\n b\tc\r\nd") == "a b c d"
    assert escape("django__django--11099") == "django\\_\\_django-{}-11099"
    assert escape("''x``") == "'{}'x`{}`"


def test_escape_sets_accents_and_names_what_the_default_fonts_lack():
    assert escape("café") == "caf\\'{e}"
    assert escape("Straße, Ørsted") == "Stra\\ss{}e, \\O{}rsted"
    assert escape("ð 🙂") == "[U+00F0] [U+1F642]"


def test_label_keys_hold_only_letters_digits_and_hyphens():
    assert label_key("run", "regrade-m#%&${c}~^", "org/Model X") == (
        "tab:evalrepro-run-regrade-m-c-org-model-x"
    )


# --- the run table ----------------------------------------------------------------------


def test_run_table_is_a_booktabs_float_with_caption_label_and_its_preamble_stated(report_a):
    tex = render_run_latex(report_a)
    assert tex.startswith("% evalrepro ")
    assert f"% Preamble: {PREAMBLE}" in tex
    assert tex.count("\\begin{table}[tbp]") == 1 and tex.count("\\end{table}") == 1
    assert "\\caption{" in tex and "\\label{tab:evalrepro-run-regrade-model-a-model-a}" in tex
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert rule in tex
    specs = re.findall(r"\\begin\{tabular\}\{(.*)\}$", tex, flags=re.M)
    assert len(specs) == 2 and not any("|" in spec for spec in specs)  # no vertical rules
    # Numbers right-aligned: every column but the names' is r.
    assert all(set(re.sub(r"@\{[^}]*\}", "", spec)) <= {"l", "r"} for spec in specs)
    assert "\\hline" not in tex


def test_run_table_prints_each_outcome_with_its_wilson_interval_over_planned_trials(report_a):
    m = report_a.metrics
    tex = render_run_latex(report_a)
    # Model A: 6 of 12 resolved (its empty patch is unresolved), nothing invalid.
    assert (m.resolved, m.unresolved, m.invalid, m.planned) == (6, 6, 0, 12)
    assert "Resolved & 6 & 50.0 & 25.4 & 74.6] \\\\" in tex
    assert f"Unresolved & 6 & {cells(m.unresolved_rate)} \\\\" in tex
    assert "Invalid & 0 & 0.0 & 0.0 & 24.2] \\\\" in tex
    assert "Planned & 12 &" in tex
    assert "percentages of all planned trials" in tex and "95\\% Wilson score intervals" in tex


def test_run_table_gives_each_repo_its_n_and_rate_interval_with_the_name_escaped(report_a):
    tex = render_run_latex(report_a)
    for repo, row in report_a.metrics.per_repo.items():
        line = f"{escape(repo)} & {row.planned} & {row.resolved} & {row.invalid} & "
        assert line + f"{cells(row.rate)} \\\\" in tex
    assert "evil/\\#\\%\\&\\ensuremath{\\$}\\{x\\}" in tex


def float_and_note(tex: str) -> tuple[str, str]:
    """A fragment's float, and the provenance note defined after it."""
    end = tex.index("\\end{table}") + len("\\end{table}")
    return tex[:end], tex[end:]


def test_run_table_says_where_its_numbers_come_from(report_a):
    p = report_a.provenance
    # Names in running text may break after "-" or "_": those breaks aside.
    tex = render_run_latex(report_a).replace("\\allowbreak{}", "")
    _, note = float_and_note(tex)
    for fact in (
        f"evalrepro {p.evalrepro_version}",
        f"\\texttt{{{p.lockfile_digest}}}",
        "Experiment regrade-model\\_a, target model\\_a, dataset instances",
        "runtime recorded",
        "Intervals at 95\\%",
        "Gate default (evidence\\_completeness == 1; invalid\\_rate \\textless{}= 0.2): passed",
        f"report generated {p.generated_at:%Y-%m-%d %H:%M} UTC",
    ):
        assert fact in note, fact


def test_the_provenance_is_a_note_after_the_float_that_the_paper_places(report_a, comparison):
    """Hashes and dates are not printed under a table in a paper's body: the fragment
    defines them as a note, which \\evalreproprovenance{label} places."""
    for tex, label in (
        (render_run_latex(report_a), "tab:evalrepro-run-regrade-model-a-model-a"),
        (render_comparison_latex(comparison), None),
    ):
        table, note = float_and_note(tex)
        label = label or re.search(r"\\label\{(.*)\}", table)[1]
        assert "lockfile" not in table and "sha256:" not in table and "Source:" not in table
        assert "\\providecommand{\\evalreproprovenance}[1]" in note
        assert f"\\csname evalrepro@provenance@{label}\\endcsname{{%" in note
        assert "sha256:" in note and "Source: evalrepro" in note
        assert f"\\evalreproprovenance{{{label}}}" in tex.split("\\begin{table}")[0]


def test_bootstrap_settings_are_printed_only_under_a_table_that_resampled(
    report_a, multi_sample, comparison
):
    # One sample: every interval is Wilson's; the multi-sample run's pass@1 is BCa's.
    assert "resamples" not in render_run_latex(report_a)
    p = multi_sample.provenance
    assert f"bootstrap {p.n_resamples} resamples, seed {p.seed}" in render_run_latex(multi_sample)
    # Tango intervals: no BCa bootstrap; the cluster bootstrap only where a verdict names it.
    tex = render_comparison_latex(comparison)
    verdicts = [pair.resolved.verdict() for pair in comparison.pairs]
    assert "BCa bootstrap" not in tex
    assert ("by-repo sensitivity" in " ".join(verdicts)) == ("cluster bootstrap" in tex)


def test_verdicts_print_the_tables_minus_and_no_hyphen(comparison):
    tex = render_comparison_latex(comparison)
    verdict = comparison.pairs[0].resolved.verdict()
    assert re.search(r"CI -\d", verdict)  # the record's plain text has a hyphen
    lines = [line for line in tex.splitlines() if "points fewer" in line or "points more" in line]
    assert lines and all(not re.search(r"(?<![A-Za-z0-9}])-\d", line) for line in lines)
    assert "CI $-$" in tex


def test_a_run_whose_experiment_is_its_target_is_named_once(comparison):
    renamed = comparison.model_copy(
        update={"runs": [p.model_copy(update={"experiment": p.target_id}) for p in comparison.runs]}
    )
    _, note = float_and_note(render_comparison_latex(renamed))
    assert "A = model\\_\\allowbreak{}a: trials run by" in note
    assert "model\\_\\allowbreak{}a (model" not in note


def test_a_multi_sample_run_shows_pass_at_k_and_the_missing_trial(multi_sample):
    m = multi_sample.metrics
    tex = render_run_latex(multi_sample)
    assert set(m.pass_at_k) == {"pass@1", "pass@2"} and m.missing == 1
    for name, interval in m.pass_at_k.items():
        assert f"{name} & & {cells(interval)} \\\\" in tex
    # Each k's interval method, as the record names it.
    assert "pass@1: BCa bootstrap; pass@2: degenerate" in tex
    assert "Missing (no result) & 1 & \\multicolumn{3}{c}{---}" in tex
    assert "& Missing &" in tex  # the per-repo table gets the column too


# --- the comparison table ---------------------------------------------------------------


def minus(text: str) -> str:
    """A sentence's negative numbers with the typographic minus the table's have."""
    return re.sub(r"(?<![A-Za-z0-9}])-(?=\d)", "$-$", text)


def test_comparison_prints_both_rates_the_difference_mcnemar_and_each_verdict(comparison):
    tex = render_comparison_latex(comparison)
    first = comparison.pairs[0].resolved
    assert "A, the baseline" in tex and cells(first.rate_a) in tex
    for pair in comparison.pairs:
        c = pair.resolved
        row = (
            f"{cells(c.rate_b)} & {cells(c.difference, sign=True)} & "
            f"{c.mcnemar.a_only} / {c.mcnemar.b_only} & {p_label(c.mcnemar.p_value)} \\\\"
        )
        assert row in tex, row
        assert minus(escape(c.verdict())) in tex
    # B lost three resolved logs, and resolves the one A left empty.
    model_b = comparison.pairs[0].resolved
    assert (model_b.mcnemar.a_only, model_b.mcnemar.b_only) == (3, 1)
    assert "$-$16.7 & $-$" in tex


def test_comparison_names_the_interval_method_the_record_holds_verbatim(comparison):
    tex = render_comparison_latex(comparison)
    assert comparison.pairs[0].resolved.difference.method == "Tango score"
    assert "with its Tango score interval" in tex
    renamed = comparison.pairs[0].resolved.difference.model_copy(
        update={"method": "Newcombe_hybrid & co"}
    )
    pair = comparison.pairs[0]
    changed = pair.model_copy(
        update={"resolved": pair.resolved.model_copy(update={"difference": renamed})}
    )
    report = comparison.model_copy(update={"pairs": [changed, *comparison.pairs[1:]]})
    tex = render_comparison_latex(report)
    assert "Newcombe\\_hybrid \\& co for resolved" in tex and "Tango score for resolved" in tex


def test_comparison_of_several_runs_states_the_correction(comparison):
    tex = render_comparison_latex(comparison)
    assert comparison.correction == "Bonferroni" and len(comparison.pairs) == 2
    assert "With 2 comparisons, Bonferroni-corrected: each interval and test at 97.5\\%" in tex
    assert "all together at 95\\%" in tex
    assert "[97.5\\% CI]" in tex
    assert escape(comparison.multiple_comparisons_note) in tex


def test_comparison_says_where_each_runs_numbers_come_from(comparison):
    tex = render_comparison_latex(comparison).replace("\\allowbreak{}", "")
    assert len(comparison.runs) == 3
    for p in comparison.runs:
        assert f"lockfile \\texttt{{{p.lockfile_digest}}}" in tex
    assert tex.count("A = regrade-") == 2  # the caption and A's provenance line


def test_comparison_reads_a_record_without_the_correction_or_the_runs(comparison):
    """A report of another version may lack those fields: the table still renders."""
    newer = {"correction", "comparison_confidence", "runs"}
    older = ComparisonReport.model_construct(
        **{k: v for k, v in dict(comparison).items() if k not in newer}
    )
    tex = render_comparison_latex(older)
    (caption,) = re.findall(r"^\\caption\{(.*)\}$", tex, re.M)
    assert "Each run B against A" in caption and "corrected" not in caption
    assert "lockfile" not in tex


def test_comparison_of_pass_at_k_gets_a_block_of_rows_per_k(comparison):
    """Multi-sample pairs hold pass@k comparisons of per-instance rates (no McNemar)."""
    pair = comparison.pairs[0]
    a = [[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]] * 3
    b = [[1, 1, 1], [0, 0, 1], [1, 1, 0], [0, 0, 0]] * 3
    by_k = {
        f"pass@{k}": compare_outcomes(
            instance_pass_at_k(a, k), instance_pass_at_k(b, k), n_resamples=N_RESAMPLES
        )
        for k in (1, 2)
    }
    by_k["sample_rate"] = by_k["pass@1"]
    multi = pair.model_copy(update={"resolved": by_k["pass@1"], "by_k": by_k})
    tex = render_comparison_latex(comparison.model_copy(update={"pairs": [multi]}))
    assert "\\emph{Resolved}" in tex and "\\emph{pass@2}" in tex
    assert "\\emph{sample\\_rate}" not in tex  # pass@1 again, shown once
    assert tex.count("A, the baseline") == 2
    # No McNemar for rates: the sign-flip test's p, marked.
    flip = by_k["pass@2"].sign_flip
    assert flip is not None and flip.resamples is None  # 12 instances: exact
    assert (
        f"{cells(by_k['pass@2'].difference, sign=True)} & --- & "
        f"{p_label(flip.p_value)}$^{{s}}$ \\\\" in tex
    )


def test_a_forced_comparison_is_marked_not_comparable(comparison):
    pair = comparison.pairs[0]
    forced = pair.model_copy(update={"comparable": False})
    tex = render_comparison_latex(comparison.model_copy(update={"pairs": [forced]}))
    assert "\\textsuperscript{$\\dagger$}" in tex and "is not comparable with A" in tex


# --- the command line -------------------------------------------------------------------


def test_report_and_compare_print_the_tables_with_latex(runs, capsys):
    assert main(["report", str(runs["model_a"]), "--latex"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("% evalrepro") and "Resolved & 6 & 50.0 & 25.4 & 74.6]" in printed
    assert main(["compare", str(runs["model_a"]), str(runs["model_b"]), "--latex"]) == 0
    printed = capsys.readouterr().out
    assert "\\label{tab:evalrepro-compare-" in printed and "3 / 1 & 0.625" in printed


def test_latex_and_json_are_one_output_or_the_other(runs, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["compare", str(runs["model_a"]), str(runs["model_b"]), "--latex", "--json"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit):
        main(["report", str(runs["model_a"]), "--latex", "--markdown"])
    assert "not allowed with" in capsys.readouterr().err


# --- compiled by a real LaTeX -----------------------------------------------------------


def _tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None and not os.environ.get("CI"):
        pytest.skip(f"{name} is not installed (scripts/setup installs {package}; CI requires it)")
    assert found, f"{name} must be installed in CI ({package}, in scripts/setup's apt list)"
    return found


def compile_fragments(fragments: dict[str, str], directory: Path) -> tuple[str, str, str]:
    """Each fragment \\input into a minimal article: (the log, pdftotext -layout, pdffonts)."""
    pdflatex = _tool("pdflatex", "texlive-latex-recommended")
    pdftotext = _tool("pdftotext", "poppler-utils")
    pdffonts = _tool("pdffonts", "poppler-utils")
    for name, text in fragments.items():
        (directory / f"{name}.tex").write_text(text, encoding="utf-8")
    inputs = "\n".join(f"\\input{{{name}}}\n\\clearpage" for name in fragments)
    document = f"\\documentclass{{article}}\n{PREAMBLE}\n\\begin{{document}}\n{inputs}\n"
    (directory / "paper.tex").write_text(document + "\\end{document}\n", encoding="utf-8")
    # Fonts TeX would have to make go to the test's folder, not the user's home.
    env = {**os.environ, "TEXMFVAR": str(directory / "texmf-var")}
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "paper.tex"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = (directory / "paper.log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, log[-3000:]
    text = subprocess.run(
        [pdftotext, "-layout", "paper.pdf", "-"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fonts = subprocess.run(
        [pdffonts, "paper.pdf"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return log, text, fonts


def _squeezed(text: str) -> str:
    """Page text as comparable to source text: no whitespace (pdftotext lays out and
    breaks lines), and the glyphs TeX prints for ~ ^ - ' as those ASCII characters."""
    text = unicodedata.normalize("NFC", text)  # pdftotext gives an accent apart
    text = text.translate(str.maketrans({"\u02dc": "~", "\u02c6": "^", "\u2212": "-"}))
    return re.sub(r"\s+", "", text.replace("\u2019", "'"))


def _range(interval: Interval) -> str:
    def n(value: float) -> str:
        return f"{round(value * 100, 1) + 0.0:.1f}"

    return f"{n(interval.estimate)}[{n(interval.low)},{n(interval.high)}]"


def test_the_tables_compile_cleanly_and_print_the_records_numbers(
    report_a, comparison, multi_sample, tmp_path
):
    fragments = {
        "run": render_run_latex(report_a),
        "samples": render_run_latex(multi_sample),
        "compare": render_comparison_latex(comparison),
    }
    # The provenance notes, placed where a paper would: here, on a page of their own.
    labels = [re.search(r"\\label\{(.*)\}", tex)[1] for tex in fragments.values()]
    fragments["appendix"] = "".join(f"\\evalreproprovenance{{{k}}}\n\n" for k in labels)
    log, text, fonts = compile_fragments(fragments, tmp_path)
    assert not re.search(r"^! ", log, flags=re.M)
    assert "Overfull" not in log and "Underfull" not in log
    assert "Output written on paper.pdf (4 pages" in log
    # Outline fonts only: a bitmap (Type 3) font would mean a symbol TeX had to make.
    assert "Type 3" not in fonts and "Type 1" in fonts
    page = _squeezed(text)
    m = report_a.metrics
    assert "Resolved650.0[25.4,74.6]" in page and "Invalid00.0[0.0,24.2]" in page
    for row in m.per_repo.values():
        assert f"{row.planned}{row.resolved}{row.invalid}{_range(row.rate)}" in page
    assert _squeezed(HOSTILE_REPO.replace("_", "")) in page  # "_" prints as a rule
    for name, interval in multi_sample.metrics.pass_at_k.items():
        assert f"{name}{_range(interval)}" in page
    for pair in comparison.pairs:
        c = pair.resolved
        assert f"{_range(c.rate_b)}" in page
        assert f"{c.mcnemar.a_only}/{c.mcnemar.b_only}{p_label(c.mcnemar.p_value)}" in page
        assert _squeezed(c.verdict().replace("_", "")) in page
    assert report_a.provenance.lockfile_digest in page


def test_a_run_named_with_every_special_character_compiles_and_prints_its_names(runs, tmp_path):
    hostile = run_report(runs[HOSTILE_MODEL])
    tex = render_run_latex(hostile)
    label = re.search(r"\\label\{(.*)\}", tex)[1]
    placed = f"\\evalreproprovenance{{{label}}}\n"
    log, text, _ = compile_fragments({"hostile": tex, "note": placed}, tmp_path)
    # Its unbreakable names may stretch a caption line (Underfull), never stick out.
    assert "Overfull" not in log
    page = _squeezed(text)
    assert _squeezed(f"experiment regrade-{HOSTILE_MODEL}, target {HOSTILE_MODEL}:") in page
    assert _squeezed(HOSTILE_REPO.replace("_", "")) in page
    assert _range(hostile.metrics.resolved_rate) in page
    # The placed provenance note names the run too.
    assert _squeezed(f"Experiment regrade-{HOSTILE_MODEL}, target {HOSTILE_MODEL},") in page


def test_every_special_character_prints_as_itself_and_runs_nothing(tmp_path):
    hostile = "".join(ESCAPED) + " x}\\input{/etc/passwd}\\def\\a{ ^^5c % café ð a--b"
    _, text, _ = compile_fragments({"names": f"\\noindent {escape(hostile)}\n"}, tmp_path)
    page = _squeezed(text)
    # pdftotext drops the rule "_" prints as; every other character comes back.
    assert _squeezed(hostile.replace("_", "").replace("ð", "[U+00F0]")) in page
    assert "root:" not in text


# --- one rule for each thing the table and its note both say ----------------------------


def _table(tex: str) -> str:
    return tex.split("\\begin{tabular}")[1].split("\\end{tabular}")[0]


def test_the_p_in_the_table_is_the_p_in_the_verdict_under_it(comparison):
    tex = render_comparison_latex(comparison)
    for pair in comparison.pairs:
        p = pair.resolved.mcnemar.p_value
        shown = p_label(p)
        assert f" & {shown} \\\\" in _table(tex)
        assert f"exact McNemar p={shown})" in tex.split("\\end{tabular}")[1]


def test_a_difference_signs_its_bounds_as_the_console_does(comparison):
    tex = render_comparison_latex(comparison)
    for pair in comparison.pairs:
        d = pair.resolved.difference
        for bound in (d.low, d.high):
            if round(bound * 100, 1) > 0:
                assert f"+{round(bound * 100, 1):.1f}" in _table(tex)
    # A positive bound, as in a pair where B resolves more.
    swapped = comparison.pairs[0].model_copy(
        update={
            "resolved": comparison.pairs[0].resolved.model_copy(
                update={
                    "difference": Interval(
                        estimate=0.25, low=0.178, high=0.32, method="Tango score"
                    )
                }
            )
        }
    )
    tex = render_comparison_latex(comparison.model_copy(update={"pairs": [swapped]}))
    assert "+25.0 & +17.8 & +32.0]" in tex


def test_what_was_paired_is_said_once_per_table(comparison):
    assert len(comparison.pairs) > 1
    assert len({pair.paired for pair in comparison.pairs}) == 1
    tex = render_comparison_latex(comparison)
    assert tex.count("aired: ") == 1
    assert f"Paired: {minus(escape(comparison.pairs[0].paired))}." in tex


def test_a_run_whose_gate_failed_says_so_in_its_table(report_a):
    assert report_a.gate_passed
    assert "Gate" not in _table(render_run_latex(report_a))
    rule = GateRule(metric="resolved_rate", op=">=", threshold=0.9)
    failed = report_a.model_copy(
        update={
            "gate_name": "strict",
            "gate": [RuleVerdict(rule=rule, value=0.5, passed=False)],
            "gate_passed": False,
        }
    )
    table = _table(render_run_latex(failed))
    assert "Gate strict: \\textbf{failed}: " in table
    assert f"{escape(str(rule))} (measured 0.5)" in table
