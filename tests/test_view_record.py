"""Presentation reads records only: a trial's view is a record (``TrialView``), built
where the trial's evidence is read (``evalrepro.run.trial_view``), and the renderers draw
from records alone.

* The renderers (the viewer, the HTML and LaTeX pages, the console and Markdown printer)
  import no reader of a trial's files, no module of ``grade/`` and no parser, and call
  no file reader: checked on their code, the way ``tests/test_layers.py`` checks imports.
* A site drawn from the records alone, after they went through JSON and the one reader
  of records and the run directory is gone, is byte for byte the site ``view`` writes.
* A trial's view is bounded whatever the trial holds: a 50 MB log, a link in place of
  an artifact, hostile text.

The runs are made as ``tests/test_view.py`` makes them: evalrepro's own executor, a
supervisor stream written there, the real recorder.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from evalrepro.errors import UserError
from evalrepro.records.base import read_record, records
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.report import RunReport
from evalrepro.records.view import TrialView
from evalrepro.report.html import _failure_modes_svg
from evalrepro.report.run_report import build_run_report
from evalrepro.report.view import render_site, write_view
from evalrepro.run.rundir import RunDirectory
from evalrepro.run.trial_view import LOG, MAX_LISTED, trial_views
from tests.test_layers import import_edges, module_files
from tests.test_view import (
    CANARY,
    F2P,
    HOSTILE_ID,
    MIXED,
    P2P,
    SCRIPT,
    Case,
    build_run,
    pytest_output,
)

# --- 1. the renderers' code -------------------------------------------------------------

#: The modules that draw or print what a run holds.
RENDERERS = (
    "evalrepro.report.view",
    "evalrepro.report.html",
    "evalrepro.report.latex",
    "evalrepro.report.run_printer",
)
#: What reads a trial's files, parses them or grades them: no renderer imports it.
READERS = (
    "evalrepro.grade",
    "evalrepro.files",
    "evalrepro.jsonfile",
    "evalrepro.run",
    "evalrepro.regrade",
)
#: The viewer's two ways into ``run/``: its command's body opens the run as every
#: command does (``view_run``), and ``write_view`` calls the builder of the records.
VIEWER_MAY_IMPORT = {
    "evalrepro.run.rundir": {"RunDirectory"},
    "evalrepro.run.trial_view": {"trial_views"},
}
#: Standard modules that read or parse bytes.
PARSERS = {"json", "stat", "errno", "mmap", "pickle", "marshal", "csv", "tomllib"}
#: Calls that read a file or parse a record, by the name called.
FILE_READERS = {"open", "pread", "read", "fdopen", "read_bytes", "loads", "load", "parse_record"}


def _is_reader(module: str) -> bool:
    return any(module == r or module.startswith(f"{r}.") for r in READERS)


def _tree(module: str) -> tuple[Path, ast.Module]:
    path = module_files()[module]
    return path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_the_renderers_import_no_reader_of_evidence_no_grading_and_no_parser():
    files = module_files()
    found = []
    for module in RENDERERS:
        path, tree = _tree(module)
        allowed = VIEWER_MAY_IMPORT if module == "evalrepro.report.view" else {}
        for edge in import_edges(module, path, set(files)):
            if _is_reader(edge.imported) and edge.imported not in allowed:
                found.append(f"{module} (line {edge.line}) imports {edge.imported}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                named = [(alias.name, set()) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                named = [(node.module, {alias.name for alias in node.names})]
            else:
                continue
            for name, names in named:
                if name.split(".")[0] in PARSERS:
                    found.append(f"{module} (line {node.lineno}) imports {name}")
                if name in allowed and not names <= allowed[name]:
                    found.append(
                        f"{module} (line {node.lineno}) imports {sorted(names - allowed[name])} "
                        f"of {name}"
                    )
    assert not found, "renderers reaching for evidence:\n" + "\n".join(found)


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def test_the_renderers_call_no_file_reader():
    """No renderer opens, reads or parses a file, but the viewer's own manifest (what it
    wrote) and the page's stylesheet (a template); ``RunDirectory.open`` is the
    command's opening of the run, as every command opens it."""
    found = []
    for module in RENDERERS:
        _, tree = _tree(module)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name, source = _called(node), ast.unparse(node)
            if name == "read_record":
                if len(node.args) < 2 or ast.unparse(node.args[1]) != "ViewManifest":
                    found.append(f"{module} (line {node.lineno}): {source}")
            elif name == "read_text":
                if "TEMPLATES" not in ast.unparse(node.func):
                    found.append(f"{module} (line {node.lineno}): {source}")
            elif name in FILE_READERS and source != "RunDirectory.open(run_dir)":
                found.append(f"{module} (line {node.lineno}): {source}")
    assert not found, "renderers reading files:\n" + "\n".join(found)


def test_the_check_sees_a_renderer_that_reads_or_grades(tmp_path, monkeypatch):
    # The checks themselves: a renderer as report/view.py was (it read and parsed the
    # trial's files itself and imported the judgement table) is caught by both.
    import tests.test_view_record as this

    bad = tmp_path / "view.py"
    bad.write_text(
        "import json\nimport os\nfrom evalrepro.grade.score import JUDGEMENT\n"
        "from evalrepro.run.trial_view import open_in_run\n\n\n"
        "def page(run_dir, artifact, folder):\n"
        "    fd, length = open_in_run(run_dir, artifact.path, folder)\n"
        "    return json.loads(os.pread(fd, length, 0))\n"
    )
    files = module_files() | {"evalrepro.report.view": bad}
    monkeypatch.setattr(this, "module_files", lambda: files)
    with pytest.raises(AssertionError) as imports:
        test_the_renderers_import_no_reader_of_evidence_no_grading_and_no_parser()
    assert "imports evalrepro.grade.score" in str(imports.value)
    assert "imports json" in str(imports.value)
    assert "imports ['open_in_run'] of evalrepro.run.trial_view" in str(imports.value)
    with pytest.raises(AssertionError) as calls:
        test_the_renderers_call_no_file_reader()
    assert "json.loads(os.pread(fd, length, 0))" in str(calls.value)


# --- 2. a site from records alone ---------------------------------------------------------


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("records") / "run"
    build_run(run_dir, MIXED)
    outside = run_dir.parent / "secret.txt"
    outside.write_text(f"{CANARY}\n")
    attempt = next((run_dir / "trials").glob("demo__links-1--*")) / "attempt-1"
    for name in ("test_output.txt", "patch.diff"):
        (attempt / name).unlink()
        (attempt / name).symlink_to(outside)
    return run_dir


def _built(run_dir: Path) -> tuple[RunReport, list[TrialView], dict, Lockfile]:
    """The run's report and its trials' views, as ``view`` builds them."""
    directory, lockfile = RunDirectory.open(run_dir)
    survey = directory.survey(lockfile)
    report = build_run_report(
        directory.path,
        lockfile,
        survey.results,
        n_resamples=200,
        evidence_problems=survey.messages(),
    )
    views = trial_views(directory.path, report.trials, survey.results, lockfile)
    return report, views, survey.results, lockfile


def _views(run_dir: Path) -> tuple[RunReport, list[TrialView]]:
    report, views, _, _ = _built(run_dir)
    return report, views


def test_a_site_drawn_from_the_records_alone_is_the_site_view_writes(mixed, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(mixed, copy, symlinks=True)
    report, views, results, lockfile = _built(copy)
    assert [v.trial_id for v in views] == [row.trial_id for row in report.trials]
    site = write_view(copy, report, results, tmp_path / "site", lockfile)
    written = {
        p.relative_to(site.root).as_posix(): p.read_text(encoding="utf-8")
        for p in site.root.rglob("*.html")
    }
    # The records through JSON and the one reader of records, from files of their own...
    kept = tmp_path / "records"
    kept.mkdir()
    for number, view in enumerate(views):
        (kept / f"{number}.json").write_text(view.model_dump_json())
    (kept / "report.json").write_text(report.model_dump_json())
    shutil.rmtree(copy)  # ... and nothing of the run left to read.
    report = read_record(kept / "report.json", RunReport)
    read = [read_record(kept / f"{n}.json", TrialView) for n in range(len(views))]
    assert read == views
    drawn = render_site(copy.resolve(), report, read)
    assert sorted(drawn) == sorted(written) and len(drawn) == len(MIXED) + 1
    for name, page in drawn.items():
        assert page == written[name], name


def test_the_view_records_carry_the_verdict_in_words(mixed):
    report, views = _views(mixed)
    by_id = {row.instance_id: view for row, view in zip(report.trials, views, strict=True)}
    failed = by_id["demo__calc-2"]
    assert failed.has_result and failed.attempts[-1].score_reason == "tests_failed"
    assert {(t.group, t.test): t.result for t in failed.tests} == {
        ("FAIL_TO_PASS", F2P[0]): "failed",
        **{("PASS_TO_PASS", test): "passed" for test in P2P},
    }
    assert failed.status_map_total == 3 and failed.parser == "pytest"
    # The empty patch is the target's answer, said so in the record's words.
    empty = by_id["demo__calc-3"]
    assert ["empty patch"] in [v.lines for v in empty.observation if v.name == "patch_problem"]
    assert empty.tests_note.startswith("Not graded: no tests ran (empty patch)")
    retried = by_id["demo__calc-5"]
    assert [a.outcome for a in retried.attempts] == ["invalid", "resolved"]
    assert not by_id["demo__calc-6"].has_result  # never ran
    resolved = by_id["demo__calc-1"]
    assert resolved.program and resolved.supervisor and resolved.image
    assert resolved.log is not None and any(r.kind == "graded" for r in resolved.log.rows)
    assert resolved.patch is not None and {"add", "del", "hunk"} <= {
        r.kind for r in resolved.patch.rows
    }


# --- 3. bounded, whatever the trial holds --------------------------------------------------


def test_a_view_of_links_names_them_and_holds_nothing_they_point_to(mixed):
    report, views = _views(mixed)
    links = next(
        view
        for row, view in zip(report.trials, views, strict=True)
        if row.instance_id == "demo__links-1"
    )
    assert links.log is not None and links.patch is not None
    assert (
        links.log.problem
        == links.patch.problem
        == ("a symbolic link (or one in its path): not followed")
    )
    assert CANARY not in links.model_dump_json()
    assert [a.ok for a in links.artifacts if a.name in ("test_output.txt", "patch.diff")] == [
        False,
        False,
    ]


def test_hostile_text_stays_data_in_the_record(mixed):
    report, views = _views(mixed)
    hostile = next(
        view
        for row, view in zip(report.trials, views, strict=True)
        if row.instance_id == HOSTILE_ID
    )
    assert hostile.log is not None
    text = "\n".join(row.text for row in hostile.log.rows)
    # The record keeps what the log said (the renderer escapes and marks it)...
    assert SCRIPT in text and "\x1b[31mred\x1b[0m" in text
    # ... and the invalid UTF-8 as the replacement character: the record is valid JSON.
    assert "\ufffd" in text
    json.loads(hostile.model_dump_json())


def test_a_50_mb_log_gives_a_small_view_that_says_what_was_cut(tmp_path):
    filler = b"".join(f"filler {i:07d} ".encode() + b"." * 64 + b"\n" for i in range(700_000))
    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__big-1", output=pytest_output([*F2P, *P2P], filler=filler))])
    _, (view,) = _views(run_dir)
    assert view.log is not None and view.log.size > 50 << 20
    budget = LOG.head + LOG.tail + LOG.region_head + LOG.region_tail + 4 * LOG.context
    assert view.log.shown <= budget and view.log.cut == view.log.size - view.log.shown
    assert len(view.model_dump_json()) < 1 << 20
    cuts = [row.text for row in view.log.rows if row.kind == "cut"]
    assert cuts and all("not shown" in cut for cut in cuts)


def test_a_view_cuts_long_lists_and_counts_the_rest(tmp_path):
    many = tuple(f"tests/test_calc.py::test_{i}" for i in range(MAX_LISTED + 10))
    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__many-1", p2p=many, output=pytest_output(F2P, failed=many))])
    _, (view,) = _views(run_dir)
    assert view.tests_total == MAX_LISTED + 11
    assert len(view.tests) == MAX_LISTED + 1  # each list cut at the bound
    # Counted over every listed test, the cut ones too.
    assert view.tests_failed == MAX_LISTED + 10 and view.tests_not_run == 0
    assert view.status_map_total == MAX_LISTED + 11 and len(view.status_map) == MAX_LISTED


def test_a_trial_view_is_a_record_read_by_the_one_reader(mixed, tmp_path):
    assert records()["TrialView"] is TrialView
    _, views = _views(mixed)
    path = tmp_path / "view.json"
    path.write_text(views[0].model_dump_json())
    assert read_record(path, TrialView) == views[0]
    newer = json.loads(path.read_text()) | {"schema_version": TrialView.pinned_version() + 1}
    path.write_text(json.dumps(newer))
    with pytest.raises(UserError, match="TrialView schema version 2; this evalrepro reads"):
        read_record(path, TrialView)


# --- the outcome of a reason is the grading's, carried by the metrics ------------------------


def test_failure_modes_take_each_reasons_outcome_from_the_metrics(mixed):
    report, _ = _views(mixed)
    outcomes = report.metrics.reason_outcomes
    assert outcomes["tests_failed"] == "unresolved" and outcomes["tests_passed"] == "resolved"
    assert outcomes["patch_empty"] == "unresolved"
    assert set(outcomes) == set(report.metrics.reasons)
    m = report.metrics
    svg = _failure_modes_svg(m.reasons, outcomes, m.missing, m.planned)
    assert svg is not None
    assert 'class="bar unresolved"' in svg and "tests passed" not in svg
    # Without the metrics' word for it, a reason is no outcome's: never "resolved".
    unknown = _failure_modes_svg({"tests_passed": 3}, {}, 0, 3)
    assert unknown is not None and 'class="bar other"' in unknown
