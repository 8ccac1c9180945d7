"""Inputs are data, never names or commands (docs/threat-model.md, "Inputs and the author").

A dataset, a predictions file and a lockfile are written by someone else. Each hostile
input here goes through the real command (``evalrepro run`` on the fake environment: the
records, not a sandbox, are what is at stake) and must be one line naming the file and
line, with nothing written outside the run directory; strings that reach the output are
shown through one rule (``evalrepro.text.visible``): no raw control byte on the console,
in Markdown, HTML, LaTeX or the viewer.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.errors import UserError
from evalrepro.run.recorder import Recorder
from evalrepro.run.rundir import RunDirectory

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "evalrepro" / "demo"
INSTANCES = DEMO / "instances.jsonl"
MODEL_A = DEMO / "predictions" / "model_a.jsonl"
#: What a terminal would obey: set the window title, clear the screen, ring, colour.
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\x9b31m"
#: Raw control bytes no output may hold (tab, newline and carriage return aside).
CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")

HOSTILE_IDS = {
    "parent-path": "../../../x/y",
    "dot-dot": "..",
    "dot": ".",
    "slash": "a/b",
    "backslash": "a\\b",
    "nul": "demo\x00calc",
    "terminal-escapes": f"demo{ESCAPES}",
    "bidi-override": "demo\u202ecalc",
    "very-long": "x" * 5000,
}


def evalrepro(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 2, done.stderr
    assert b"Traceback" not in done.stderr
    assert not CONTROL.search(done.stderr), done.stderr
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalrepro: error: "), done.stderr
    assert len(lines[0]) < 1000
    return lines[0]


def lines_with(path: Path, line: int, edit) -> list[str]:
    records = [json.loads(text) for text in path.read_text().splitlines()]
    edit(records[line - 1])
    return [json.dumps(record) for record in records]


@pytest.mark.parametrize("hostile", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
def test_a_hostile_instance_id_in_a_dataset_is_one_line_naming_its_line(tmp_path, hostile):
    dataset = tmp_path / "data" / "instances.jsonl"
    dataset.parent.mkdir()
    dataset.write_text("\n".join(lines_with(INSTANCES, 3, lambda r: r.update(instance_id=hostile))))
    run_dir = tmp_path / "runs" / "run"
    done = evalrepro(
        "run", "+experiment=demo", "environment=fake", f"dataset.instances={dataset}",
        "--run-dir", run_dir, "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    message = one_line(done)
    assert f"{dataset}:3:" in message and "one safe path component" in message
    assert not run_dir.exists() and not (tmp_path.parent / "x").exists()


@pytest.mark.parametrize("hostile", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
def test_a_hostile_instance_id_in_a_predictions_file_is_one_line_naming_its_line(tmp_path, hostile):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        "\n".join(lines_with(MODEL_A, 2, lambda r: r.update(instance_id=hostile)))
    )
    done = evalrepro(
        "run", "+experiment=model_a", "environment=fake", f"target.path={predictions}",
        "--run-dir", tmp_path / "run", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    message = one_line(done)
    assert f"{predictions}:2:" in message and "one safe path component" in message
    assert not (tmp_path / "run").exists()


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_nested_200000_deep_is_one_line_in_a_predictions_file_and_a_dataset(tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    first = MODEL_A.read_text().splitlines()[0]
    predictions.write_text(
        first + "\n" + '{"instance_id": "demo__calc-2", "model_name_or_path": "model_a", '
        f'"model_patch": "", "extra": {deep(200_000)}}}\n'
    )
    done = evalrepro(
        "run", "+experiment=model_a", "environment=fake", f"target.path={predictions}",
        "--run-dir", tmp_path / "run", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert f"{predictions}:2: JSON nested deeper than 100 levels" in one_line(done)
    # A whole-file JSON dataset, and a string field holding JSON (SWE-bench's test lists).
    dataset = tmp_path / "instances.json"
    dataset.write_text(deep(200_000))
    done = evalrepro(
        "run", "+experiment=demo", "environment=fake", f"dataset.instances={dataset}",
        "--run-dir", tmp_path / "run", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert f"{dataset}: JSON nested deeper than 100 levels" in one_line(done)
    listed = tmp_path / "listed.jsonl"
    listed.write_text(
        "\n".join(lines_with(INSTANCES, 1, lambda r: r.update(FAIL_TO_PASS=deep(200_000))))
    )
    done = evalrepro(
        "run", "+experiment=demo", "environment=fake", f"dataset.instances={listed}",
        "--run-dir", tmp_path / "run", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert f"{listed}:1:" in one_line(done)


def test_a_deep_lockfile_is_one_line(tmp_path):
    lockfile = tmp_path / "deep.lock.json"
    lockfile.write_text('{"record": "Lockfile", "config": ' + deep(200_000) + "}")
    assert "deep.lock.json" in one_line(evalrepro("run", "--lockfile", lockfile))


def test_a_huge_predictions_file_is_refused_before_it_is_read(tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    with predictions.open("wb") as handle:
        handle.truncate(5 << 30)  # sparse: 5 GiB on paper, nothing on disk
    done = evalrepro(
        "run", "+experiment=model_a", "environment=fake", f"target.path={predictions}",
        "--run-dir", tmp_path / "run", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert "5120 MiB, larger than 4096 MiB: not read" in one_line(done)


def test_a_large_predictions_file_is_read_a_line_at_a_time_and_names_the_line(tmp_path):
    # 200,000 lines (~60 MB): the unknown instance on the last line is named by its line.
    predictions = tmp_path / "predictions.jsonl"
    line = json.dumps(
        {"instance_id": "demo__calc-1", "model_name_or_path": "m", "model_patch": "x" * 300}
    )
    with predictions.open("w") as handle:
        handle.write(line + "\n")
        for number in range(2, 200_001):
            handle.write("\n" if number < 200_000 else line.replace("calc-1", "nope-1") + "\n")
    done = evalrepro(
        "run", "+experiment=model_a", "environment=fake", f"target.path={predictions}",
        "--run-dir", tmp_path / "run", "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert f"{predictions}:200000: prediction for unknown instance 'demo__nope-1'" in one_line(done)


def test_no_trial_folder_is_made_or_removed_outside_the_run_directory(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "trials").mkdir(parents=True)
    outside = tmp_path / "x"
    outside.mkdir()
    for label in ("../../x", "a/../../../x", "/etc"):
        with pytest.raises(UserError, match="leaves"):
            RunDirectory(run_dir).trial_folder(label)
        with pytest.raises(UserError, match="leaves"):
            Recorder(run_dir).trial_dir(label)
    # A link planted where a folder would be made is followed no further than the run.
    (run_dir / "trials" / "planted").symlink_to(outside)
    with pytest.raises(UserError, match="leaves"):
        RunDirectory(run_dir).trial_folder("planted")
    assert RunDirectory(run_dir).trial_folder("demo__calc-1--s0--0123").parent.name == "trials"
    assert outside.is_dir()


def test_a_link_planted_at_swebench_sends_no_write_or_removal_elsewhere(escaping_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(escaping_run[0], run_dir, symlinks=True)
    outside = tmp_path / "outside"
    shutil.copytree(run_dir / "swebench", outside)
    (outside / "keep.txt").write_text("mine\n")
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    shutil.rmtree(run_dir / "swebench")
    (run_dir / "swebench").symlink_to(outside)
    message = one_line(evalrepro("report", run_dir, "--rebuild"))
    assert "SWE-bench layout folder leaves" in message
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before


# --- terminal escapes ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def escaping_run(tmp_path_factory) -> tuple[Path, bytes]:
    """model_a on the fake environment, its model named with terminal escapes and a test
    name of the dataset carrying them: the run, and its console output."""
    root = tmp_path_factory.mktemp("escapes")
    predictions = root / "predictions.jsonl"
    predictions.write_text(
        "\n".join(
            json.dumps({**json.loads(line), "model_name_or_path": f"model{ESCAPES}"})
            for line in MODEL_A.read_text().splitlines()
        )
    )
    dataset = root / "instances.jsonl"

    def hostile_test(record: dict) -> None:
        listed = (
            json.loads(record["FAIL_TO_PASS"])
            if isinstance(record["FAIL_TO_PASS"], str)
            else record["FAIL_TO_PASS"]
        )
        record["FAIL_TO_PASS"] = [listed[0] + ESCAPES, *listed[1:]]

    dataset.write_text("\n".join(lines_with(INSTANCES, 1, hostile_test)))
    run_dir = root / "run"
    done = evalrepro(
        "run", "+experiment=model_a", "environment=fake", f"target.path={predictions}",
        f"dataset.instances={dataset}", "environment.tests=fail", "target.name=null",
        "--run-dir", run_dir, "--cache-dir", root / "cache",
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr
    return run_dir, done.stdout + done.stderr


def test_terminal_escapes_never_reach_the_console_raw(escaping_run):
    run_dir, output = escaping_run
    assert not CONTROL.search(output), output
    report = evalrepro("report", run_dir)
    # rich drops a BEL itself; every other byte of the escapes is shown by the one rule.
    assert "model«ESC»]0;pwned«ESC»[2J«ESC»[31m«U+009B»31m".encode() in report.stdout
    for done in (report, evalrepro("verify", run_dir)):
        assert not CONTROL.search(done.stdout + done.stderr), done.stdout


def test_terminal_escapes_never_reach_markdown_html_latex_or_the_viewer(escaping_run, tmp_path):
    run_dir, _ = escaping_run
    markdown = evalrepro("report", run_dir, "--markdown")
    latex = evalrepro("report", run_dir, "--latex")
    page = tmp_path / "page.html"
    html = evalrepro("report", run_dir, "--html", page)
    view = evalrepro("view", run_dir, "--output", tmp_path / "view")
    for done in (markdown, latex, html, view):
        assert done.returncode in (0, 3), done.stderr
        assert not CONTROL.search(done.stdout + done.stderr), done.stdout
    assert "model«ESC»" in markdown.stdout.decode()
    written = [page, *(tmp_path / "view").rglob("*.html")]
    assert len(written) > 10
    for path in written:
        assert not CONTROL.search(path.read_bytes()), path
    assert any("«ESC»" in path.read_text() for path in written)


def test_an_error_line_quoting_an_input_shows_its_escapes(tmp_path):
    lockfile = tmp_path / f"lock{ESCAPES}.json"
    assert "lock«ESC»" in one_line(evalrepro("run", "--lockfile", lockfile))
