"""Every command's console output prints ids, paths, reasons and details as text.

rich reads ``[...]`` in a printed string as markup: a parametrized test id such as
``test_x[/tmp/a]`` or a closing ``[/]`` raises ``MarkupError``, and ``[bold]`` silently
disappears. Here each printing function and command is driven with ids, names, paths and
details full of markup (runs made by the real executor without containers:
``tests/test_view.py``'s ``build_run``, the demo on ``tests/fake_backend.py``), and must
not raise and must show each literal text.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.pipeline import lock_experiment, run_experiment
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.publish.verify import check_run, compare, print_comparison, print_run_check
from evalrepro.records.report import RunResults, TrialLine
from evalrepro.report.compare import compare_runs, print_comparison_report
from evalrepro.report.progress import TrialProgress
from evalrepro.report.run_printer import print_results, print_run_report
from evalrepro.report.run_report import build_run_report
from evalrepro.run.rundir import RunDirectory
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario
from tests.test_view import F2P, P2P, Case, build_run, pytest_output

#: Instance ids become folder names: markup without a "/".
IDS = ["demo__[bold]calc[red]-1", "demo__calc[#ff0000]-2", "demo__[link=x]calc-3"]
#: Planned, never run: it is named in verify's problems. (An id holds no "/": it is one
#: safe path component, refused at read time otherwise; the closing "[/]" is in TESTS.)
SLASHED = "demo__x[tmp][bold]-9"
TESTS = ["tests/test_calc.py::test_x[/tmp/a]", "tests/test_calc.py::test_y[[bold]x[/]]"]
TARGET = "org/[bold]model[/]"
REPO = "org/[red]calc[/]"


def hostile_dir(root: Path) -> Path:
    """A folder whose path holds "[/tmp/a]", "[bold]" and "[/]"."""
    return root / "x[" / "tmp" / "a]" / "[bold]runs" / "[" / "]"


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=400, color_system=None), buffer


def flat(text: str) -> str:
    """Output with table borders and runs of spaces as one space."""
    return " ".join(text.replace("│", " ").replace("┃", " ").split())


def assert_shown(output: str, *texts: str) -> None:
    shown = flat(output)
    for text in texts:
        assert flat(text) in shown, text


def cases(*, failing: str | None = None, target_tests: bool = True) -> list[Case]:
    f2p = (*F2P, *TESTS) if target_tests else F2P
    made = []
    for instance_id in IDS:
        passed, failed = ([*P2P], [*f2p]) if instance_id == failing else ([*f2p, *P2P], [])
        made.append(
            Case(
                instance_id,
                repo=REPO,
                f2p=f2p,
                output=pytest_output(passed, failed),
                exit_code=1 if failed else 0,
            )
        )
    return [*made, Case(SLASHED, finished=False)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> SimpleNamespace:
    root = hostile_dir(tmp_path_factory.mktemp("markup"))
    a, b = root / "a[/]", root / "b[bold]"
    build_run(a, cases(), target_id=TARGET)
    build_run(b, cases(failing=IDS[0]), target_id="org/[/]other")
    return SimpleNamespace(a=a, b=b, root=root)


# --- the printing functions --------------------------------------------------------------


def test_results_and_invalid_reasons_print_ids_reasons_and_details_as_text():
    lines = [
        TrialLine(
            trial_id="sha256:1",
            instance_id=IDS[0],
            sample_index=0,
            outcome="invalid",
            reason="unscorable[/]",
            detail="log line: PASSED test_x[/tmp/a] [bold]x[/]",
            attempts=1,
        ),
        TrialLine(
            trial_id="sha256:2",
            instance_id=SLASHED,
            sample_index=0,
            outcome="resolved",
            reason="tests_passed",
            attempts=1,
        ),
    ]
    results = RunResults(
        experiment="[bold]exp[/]",
        target_id=TARGET,
        planned=2,
        resolved=1,
        unresolved=0,
        invalid=1,
        resolved_rate=0.5,
        invalid_rate=0.5,
        retried_trials=0,
        reasons={"unscorable[/]": 1, "tests_passed": 1},
        trials=lines,
    )
    out, buffer = console()
    print_results(out, results)
    assert_shown(
        buffer.getvalue(),
        f"[bold]exp[/]: {TARGET}",
        IDS[0],
        SLASHED,
        "invalid unscorable[/] (1 trial), e.g. "
        f"{IDS[0]}: log line: PASSED test_x[/tmp/a] [bold]x[/]",
    )


def test_the_run_report_prints_repos_targets_and_paths_as_text(runs):
    directory = RunDirectory(runs.a)
    lockfile = read_lockfile(directory.lockfile_path)
    survey = directory.survey(lockfile)
    report = build_run_report(
        runs.a,
        lockfile,
        survey.results,
        n_resamples=200,
        evidence_problems=[f"{runs.a}/trials/{IDS[0]}: changed [/]"],
    )
    out, buffer = console()
    print_run_report(out, report)
    assert_shown(buffer.getvalue(), f"({TARGET})", REPO, f"{runs.a}/trials/{IDS[0]}: changed [/]")


def test_the_comparison_report_prints_instance_ids_and_run_names_as_text(runs):
    report = compare_runs([runs.a, runs.b], n_resamples=200)
    out, buffer = console()
    print_comparison_report(out, report)
    assert_shown(buffer.getvalue(), IDS[0], TARGET, "org/[/]other")


def test_verify_prints_problems_differences_and_paths_as_text(runs):
    out, buffer = console()
    check = check_run(runs.a)
    assert check.problems  # the slashed trial never ran
    print_run_check(out, check)
    comparison = compare(runs.a, runs.b, same_target=False)
    print_comparison(out, comparison)
    assert_shown(buffer.getvalue(), str(runs.a), SLASHED, str(runs.b), TARGET, "org/[/]other")


def test_progress_names_trials_as_text_on_a_terminal_and_in_a_log():
    trial = SimpleNamespace(
        trial=SimpleNamespace(trial_id="sha256:1"),
        sample=SimpleNamespace(instance_id=SLASHED),
        prediction=SimpleNamespace(sample_index=0),
    )
    result = SimpleNamespace(
        score=SimpleNamespace(outcome="invalid", reason="timeout[/]"), attempts=[object()]
    )
    for terminal in (True, False):
        buffer = io.StringIO()
        out = Console(file=buffer, force_terminal=terminal, width=200, color_system=None)
        with TrialProgress(out, total=2, timeout=30) as progress:
            progress.attempt_started(trial, 1)
            if terminal:
                assert progress._progress is not None
                progress._progress.refresh()
                assert_shown(buffer.getvalue(), SLASHED)
            progress.trial_finished(trial, result)
        if not terminal:
            assert_shown(buffer.getvalue(), f"[1/2] {SLASHED} (sample 0): invalid (timeout[/])")


# --- the commands --------------------------------------------------------------------------


def run_command(capsys, *args: object) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_report_verify_compare_and_view_commands_print_hostile_text(runs, capsys, tmp_path):
    code, out = run_command(capsys, "report", runs.a, "--n-resamples", 200)
    assert code in (0, 3)
    assert_shown(out, f"({TARGET})", REPO)
    html = tmp_path / "x[/]" / "[bold]r.html"
    html.parent.mkdir(parents=True)
    code, out = run_command(capsys, "report", runs.a, "--n-resamples", 200, "--html", html)
    assert code in (0, 3)
    assert_shown(out, f"html report: {html}")

    code, out = run_command(capsys, "verify", runs.a)
    assert code == 1
    assert_shown(out, str(runs.a), SLASHED)
    code, out = run_command(capsys, "verify", runs.a, runs.b)
    assert_shown(out, f"comparable: {runs.a} and {runs.b}", "org/[/]other")

    code, out = run_command(capsys, "compare", runs.a, runs.b, "--n-resamples", 200)
    assert code == 0
    assert_shown(out, IDS[0], TARGET, "org/[/]other")

    code, out = run_command(capsys, "view", runs.a, "--n-resamples", 200)
    assert code == 0
    assert_shown(out, f"trial viewer: {runs.a}/view/index.html")


def test_compare_refusing_incomparable_runs_prints_the_differences_as_text(runs, capsys, tmp_path):
    other = hostile_dir(tmp_path) / "c[/]"
    build_run(other, [Case("demo__[bold]other-1")], target_id=TARGET)
    code, out = run_command(capsys, "compare", runs.a, other, "--n-resamples", 200)
    assert code == 1
    assert_shown(out, f"only in the first: {IDS[0]}", SLASHED, "second: demo__[bold]other-1")
    code, out = run_command(capsys, "verify", runs.a, other)
    assert code == 1
    assert_shown(out, f"between {runs.a} and {other}")


def test_regrade_prints_model_run_id_differences_and_its_folder_as_text(capsys, tmp_path):
    instance_id = IDS[0]
    logs = tmp_path / "[bold]logs" / "[run]" / "[red]model"
    folder = logs / instance_id
    folder.mkdir(parents=True)
    region = "\n".join([f"FAILED {TESTS[0]} - assert 1 == 2", f"PASSED {TESTS[1]}"])
    (folder / "test_output.txt").write_text(
        f"+ git apply -v -\n>>>>> Start Test Output\n{region}\n>>>>> End Test Output\n"
    )
    (folder / "patch.diff").write_text(
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    )
    # swebench's report.json says resolved; the log says a FAIL_TO_PASS test failed.
    (folder / "report.json").write_text(json.dumps({instance_id: {"resolved": True}}))
    dataset = tmp_path / "instances.jsonl"
    row = {
        "instance_id": instance_id,
        "repo": REPO,
        "base_commit": "abc",
        "test_patch": "",
        "FAIL_TO_PASS": TESTS[:1],
        "PASS_TO_PASS": TESTS[1:],
        "log_parser": "pytest",
    }
    dataset.write_text(json.dumps(row) + "\n")
    run_dir = hostile_dir(tmp_path) / "regraded"
    code, out = run_command(
        capsys, "regrade", logs, "--dataset", dataset, "--run-dir", run_dir, "--run-id", "[bold]run"
    )
    assert code == 0, out
    assert_shown(
        out,
        "regraded 1 logs of [red]model (run [bold]run)",
        instance_id,
        f"run directory: {run_dir}",
    )


# --- run and lock (the demo, on the fake backend) -------------------------------------------


@pytest.fixture(scope="module")
def demo():
    config = compose(["+experiment=demo"])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    gate = config.gate.model_copy(update={"name": "[/]gate"})
    named = config.model_copy(update={"name": "demo[/][bold]x", "gate": gate})
    return named, gold_scenario(samples)


def test_run_and_lock_print_the_experiment_and_paths_as_text(demo, tmp_path):
    config, scenario = demo
    out, buffer = console()
    run_dir = hostile_dir(tmp_path) / "run"
    outcome = run_experiment(
        config,
        out,
        run_dir=run_dir,
        cache_dir=tmp_path / "cache",
        backend=fake_backend(scenario),
    )
    assert outcome.results.resolved == 12
    output = hostile_dir(tmp_path) / "demo[/].lock.json"
    lock_experiment(
        config, out, output=output, cache_dir=tmp_path / "cache", backend=fake_backend(scenario)
    )
    assert_shown(
        buffer.getvalue(),
        "demo[/][bold]x: resolving the plan",
        "[1/12] demo__",
        "gate '[/]gate'",
        f"run directory: {run_dir}",
        f"locked 12 trials into {output}",
    )


def test_config_prints_names_as_they_are(capsys):
    code, out = run_command(capsys, "config", "+experiment=demo", "name='[bold]x[/]'")
    assert code == 0
    assert "name: '[bold]x[/]'" in out
