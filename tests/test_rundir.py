"""The run directory's promises, checked with real runs of the CLI in rootless podman.

A run killed with SIGKILL at any moment loses no finished trial and, resumed, runs each
unfinished one exactly once; a resume with another plan is refused, naming what differs;
one process at a time; corrupt or hand-edited files are refused by resume, verify and
compare, never used, and listed by report (which counts them against evidence
completeness); results.json is rebuilt from the trial results alone; a committed
lockfile runs as it is, or not at all.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalrepro.cli import EXIT_GATE_FAILED, EXIT_OK, main
from evalrepro.errors import UserError
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.records.trial import read_trial_result
from evalrepro.report.results import rebuild_results
from evalrepro.run.execute import container_prefix
from evalrepro.run.rundir import RunDirectory
from tests.demo_expectations import EXPECTED
from tests.podman_support import cache_dir, needs_podman

pytestmark = needs_podman

CHECKOUT = Path(__file__).resolve().parent.parent
COMMITTED_LOCKFILE = CHECKOUT / "lockfiles" / "demo.lock.json"
#: model_a, one trial at a time (so kills land between and inside trials), and a short
#: timeout for its looping patch (demo__ledger-3).
MODEL_A = ("+experiment=model_a", "executor.max_workers=1", "environment.timeout=5")
#: Wide enough that no console line wraps.
ENV = {**os.environ, "COLUMNS": "500"}


def evalrepro(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args), "--cache-dir", str(cache_dir())],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=CHECKOUT,
        env=ENV,
    )


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one-line error of a refused command."""
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalrepro: error: "), done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def gold(tmp_path_factory) -> Path:
    """A complete run of the demo's gold patches; tests work on copies of it."""
    run_dir = tmp_path_factory.mktemp("gold") / "run"
    done = evalrepro("run", "+experiment=demo", "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    return run_dir


@pytest.fixture
def gold_copy(gold, tmp_path) -> Path:
    return Path(shutil.copytree(gold, tmp_path / "run"))


def trial_folder(run_dir: Path, instance_id: str) -> Path:
    (folder,) = (run_dir / "trials").glob(f"{instance_id}--s0--*")
    return folder


def results_of(run_dir: Path) -> dict[Path, tuple[bytes, int]]:
    """Every finished trial's result.json: its bytes and mtime."""
    return {
        path: (path.read_bytes(), path.stat().st_mtime_ns)
        for path in (run_dir / "trials").glob("*/result.json")
    }


def stray_containers(run_dir: Path) -> list[str]:
    listed = subprocess.run(
        ["podman", "ps", "--all", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
    )
    prefix = container_prefix(run_dir.resolve())
    return [name for name in listed.stdout.split() if name.startswith(prefix)]


def in_the_looping_trial(run_dir: Path):
    """When the looping trial (demo__ledger-3) has its container: a moment the kill can
    count on to leave that container behind, however slow the machine is (a fixed wait
    after its inputs were written could fall before the container exists)."""

    def ready() -> bool:
        inputs = any((run_dir / "trials").glob("demo__ledger-3--*/attempt-1/program.json"))
        return inputs and bool(stray_containers(run_dir))

    return ready


# --- kill -9 and resume ------------------------------------------------------------------


class Session:
    """One ``evalrepro run`` in the background, to be killed or waited for."""

    def __init__(self, run_dir: Path, log: Path, config: tuple[str, ...] = MODEL_A) -> None:
        self.log = log
        command = [sys.executable, "-m", "evalrepro", "run", *config]
        command += ["--run-dir", str(run_dir), "--cache-dir", str(cache_dir())]
        with log.open("w") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, cwd=CHECKOUT, env=ENV
            )

    def kill_when(self, ready, *, then: float = 0.0, within: float = 600) -> None:
        # A bound on the wait, far above a quiet machine's seconds: a loaded one is slow.
        deadline = time.monotonic() + within
        while not ready():
            assert self.process.poll() is None, f"ended before the kill: {self.log.read_text()}"
            assert time.monotonic() < deadline, "the moment to kill never came"
            time.sleep(0.05)
        time.sleep(then)
        # Only the main process, as the OOM killer would: its podman children live on.
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def finish(self) -> str:
        assert self.process.wait(timeout=600) == 0, self.log.read_text()
        return self.log.read_text()


def test_a_run_killed_at_random_moments_loses_nothing_and_runs_each_trial_once(tmp_path):
    seed = int(os.environ.get("EVALREPRO_KILL_SEED") or time.time_ns() % 10**6)
    rng = random.Random(seed)
    print(f"kill moments from EVALREPRO_KILL_SEED={seed}")
    run_dir = tmp_path / "run"
    try:
        # 1. While it plans (the lock is held, images are being looked up).
        Session(run_dir, tmp_path / "1.log").kill_when(
            lambda: (run_dir / ".evalrepro.lock").exists(), then=rng.uniform(0, 0.5)
        )
        # 2. After some trials, between or inside the next ones.
        wanted = rng.randint(1, 7)
        Session(run_dir, tmp_path / "2.log").kill_when(
            lambda: len(results_of(run_dir)) >= wanted, then=rng.uniform(0, 1.0)
        )
        before = results_of(run_dir)
        assert len(before) >= wanted
        # 3. Inside the looping trial (the 11th): its container loops on after the kill.
        # Whether its container is still there when the next session starts depends on
        # how fast the machine is (it stops itself after 5 s): both are checked below.
        Session(run_dir, tmp_path / "3.log").kill_when(in_the_looping_trial(run_dir))
        killed_at = results_of(run_dir)
        assert {p: killed_at[p] for p in before} == before

        resumed_at = time.time()
        output = Session(run_dir, tmp_path / "4.log").finish()
    finally:
        for name in stray_containers(run_dir):
            subprocess.run(["podman", "rm", "--force", "--time", "0", name], check=False)

    # The last session resumed and ran only what was left. The looping trial's container
    # was either still there (and removed) or had already stopped itself: its supervisor
    # ends the tests at their timeout, with or without evalrepro.
    done_before = len(killed_at)
    assert f"resuming {run_dir}: {done_before} of 12 trials done" in output
    assert output.count(f"/{12 - done_before}] demo__") == 12 - done_before
    assert stray_containers(run_dir) == []

    after = results_of(run_dir)
    assert len(after) == 12
    # Trials finished before a kill are untouched: same bytes, same mtime.
    assert {p: after[p] for p in killed_at} == killed_at
    for result_file in after:
        result = read_trial_result(result_file)
        folder = result_file.parent
        # Exactly one attempt each (nothing here is an infrastructure error), and no
        # attempt folder from a killed session beside it.
        assert [a.number for a in result.attempts] == [1], folder
        assert sorted(p.name for p in folder.iterdir()) == ["attempt-1", "result.json"]
        if result_file not in killed_at:
            assert result.attempts[0].started_at.timestamp() >= resumed_at - 1
    results = json.loads((run_dir / "results.json").read_text())
    outcomes = {line["instance_id"]: line["outcome"] for line in results["trials"]}
    assert outcomes == {i: outcome for (t, i), outcome in EXPECTED.items() if t == "model_a"}
    assert results["missing"] == 0
    assert rebuild_results(RunDirectory(run_dir)).model_dump(mode="json") == results


def test_a_killed_run_leaves_no_container_running_and_a_resume_removes_its_strays(tmp_path):
    run_dir = tmp_path / "run"
    looping = in_the_looping_trial(run_dir)
    try:
        # Killed inside the looping trial (its container was there at the kill), never
        # resumed: the container stops itself at the trial's timeout (5 s here), nothing
        # of it left running. Whether it is still there right after the kill is the
        # machine's speed, not evalrepro's doing, so that is not asserted.
        Session(run_dir, tmp_path / "1.log").kill_when(looping)
        # Bounds on waits are far above what they wait for (a loaded machine is slow).
        deadline = time.monotonic() + 120
        while stray_containers(run_dir) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert stray_containers(run_dir) == [], "its container outlived the trial's timeout"

        # With a long timeout it is still running when the next session starts: removed.
        shutil.rmtree(run_dir)
        long = ("+experiment=model_a", "executor.max_workers=1", "environment.timeout=120")
        session = Session(run_dir, tmp_path / "2.log", config=long)
        session.kill_when(looping, then=1.0)
        assert stray_containers(run_dir)
        resumed = Session(run_dir, tmp_path / "3.log", config=long)
        deadline = time.monotonic() + 120
        while "stray containers removed" not in (tmp_path / "3.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "3.log").read_text()
            time.sleep(0.2)
        resumed.process.kill()
        resumed.process.wait()
    finally:
        for name in stray_containers(run_dir):
            subprocess.run(["podman", "rm", "--force", "--time", "0", name], check=False)


def test_ctrl_c_lets_the_running_trial_finish_and_starts_no_other(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "evalrepro", "run", *MODEL_A, "--run-dir", str(run_dir)]
    process = subprocess.Popen(
        [*command, "--cache-dir", str(cache_dir())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=CHECKOUT,
        env=ENV,
        start_new_session=True,
    )
    try:
        while len(results_of(run_dir)) < 2:
            assert process.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)
        # As a terminal sends it: to the whole process group.
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=300) == 130
    finally:
        process.kill()
    folders = list((run_dir / "trials").iterdir())
    assert len(folders) < 12
    for folder in folders:  # none left half-done, none retried because of the signal
        result = read_trial_result(folder / "result.json")
        assert len(result.attempts) == 1 and result.score.reason != "infrastructure_error"


# --- resume: the same plan only ---------------------------------------------------------


def test_resume_refuses_another_target_naming_it(gold_copy):
    message = refused(evalrepro("run", "+experiment=model_a", "--run-dir", gold_copy))
    assert "refusing to resume" in message
    assert "target: gold 'gold' vs predictions 'model_a'" in message


def test_resume_refuses_a_changed_test_command_naming_each_instance_it_changes(gold_copy, tmp_path):
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "demo_vv.yaml").write_text(
        "# @package _global_\ndefaults:\n  - demo\n  - _self_\n"
        "dataset:\n  specs:\n    demo/calc:\n      '1.0':\n"
        "        test_cmd: pytest -rA -vv -p no:cacheprovider\n"
    )
    done = evalrepro(
        "run", "--config-dir", tmp_path / "conf", "+experiment=demo_vv", "--run-dir", gold_copy
    )
    message = refused(done)
    assert "refusing to resume" in message
    changed = {f"test_spec: demo__calc-{n}: test spec" for n in range(1, 5)}
    assert all(part in message for part in changed), message
    assert "textkit" not in message and "ledger" not in message


def test_resume_refuses_other_limits_naming_the_field(gold_copy):
    message = refused(
        evalrepro("run", "+experiment=demo", "environment.timeout=31", "--run-dir", gold_copy)
    )
    assert "environment: timeout: 30 vs 31" in message


def test_resume_ignores_the_command_line_and_the_order_of_instances(gold, gold_copy, tmp_path):
    lines = (CHECKOUT / "evalrepro" / "demo" / "instances.jsonl").read_text().splitlines()
    random.Random(7).shuffle(lines)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(lines) + "\n")
    done = evalrepro(
        "run",
        "+experiment=demo",
        f"dataset.instances={shuffled}",
        "executor.max_workers=1",
        "--run-dir",
        gold_copy,
    )
    assert done.returncode == 0, done.stderr
    assert f"resuming {gold_copy}: 12 of 12 trials done" in done.stdout
    assert results_of(gold_copy) == {
        gold_copy / path.relative_to(gold): value for path, value in results_of(gold).items()
    }
    assert (gold_copy / "results.json").read_bytes() == (gold / "results.json").read_bytes()
    assert (gold_copy / "lockfile.lock.json").read_bytes() == (
        gold / "lockfile.lock.json"
    ).read_bytes()
    sessions = json.loads((gold_copy / "run.json").read_text())["sessions"]
    assert [session["resumed"] for session in sessions] == [False, True]


# --- one process at a time ---------------------------------------------------------------


def test_a_second_process_is_refused_while_one_holds_the_directory(gold_copy):
    with RunDirectory(gold_copy).exclusive():
        message = refused(evalrepro("run", "+experiment=demo", "--run-dir", gold_copy))
    assert f"run directory {gold_copy} is in use by evalrepro pid {os.getpid()}" in message


# --- corrupt or hand-edited files ----------------------------------------------------------


def report_error(run_dir: Path, capsys) -> str:
    """The one evidence problem ``report`` lists (in process), which every strict reader
    (resume, verify, compare: ``RunDirectory.completed``) refuses with, word for word."""
    assert main(["report", str(run_dir), "--json"]) in (EXIT_OK, EXIT_GATE_FAILED)
    (problem,) = json.loads(capsys.readouterr().out)["evidence_problems"]
    with pytest.raises(UserError) as refused:
        RunDirectory(run_dir).completed(read_lockfile(run_dir / "lockfile.lock.json"))
    assert str(refused.value) == problem
    return "evalrepro: error: " + problem


def test_a_truncated_trial_result_is_refused(gold_copy, capsys):
    result_file = trial_folder(gold_copy, "demo__calc-2") / "result.json"
    result_file.write_bytes(result_file.read_bytes()[:300])
    message = report_error(gold_copy, capsys)
    assert f"{result_file}: not a readable TrialResult record" in message


def test_a_trial_folder_moved_to_another_trials_label_is_refused(gold_copy, capsys):
    one, two = trial_folder(gold_copy, "demo__calc-1"), trial_folder(gold_copy, "demo__calc-2")
    shutil.rmtree(two)
    one.rename(two)
    message = report_error(gold_copy, capsys)
    assert f"{two / 'result.json'}: holds trial" in message and "moved or copied" in message


def test_a_changed_artifact_is_listed_by_report_and_refused_by_resume(gold_copy, capsys):
    log = trial_folder(gold_copy, "demo__textkit-3") / "attempt-1" / "test_output.txt"
    log.write_text(log.read_text() + "PASSED tests/test_wrap.py::test_forged\n")
    message = report_error(gold_copy, capsys)
    assert f"{log}: changed since it was recorded (sha256 " in message
    assert refused(evalrepro("run", "+experiment=demo", "--run-dir", gold_copy)).endswith(
        message.removeprefix("evalrepro: error: ")
    )


def test_an_edited_score_is_refused(gold_copy, capsys):
    result_file = trial_folder(gold_copy, "demo__ledger-1") / "result.json"
    result = json.loads(result_file.read_text())
    result["score"]["outcome"] = result["attempts"][0]["score"]["outcome"] = "unresolved"
    result_file.write_text(json.dumps(result, indent=2))
    message = report_error(gold_copy, capsys)
    assert f"{result_file}: attempt 1's score unresolved is not what its observation" in message


def test_an_unknown_folder_in_trials_is_refused(gold_copy, capsys):
    stranger = gold_copy / "trials" / "demo__calc-1--s0--0123456789ab"
    stranger.mkdir()
    message = report_error(gold_copy, capsys)
    assert f"{stranger}: not a trial of the plan" in message


def test_an_extra_attempt_folder_in_a_finished_trial_is_refused(gold_copy, capsys):
    folder = trial_folder(gold_copy, "demo__calc-3")
    shutil.copytree(folder / "attempt-1", folder / "attempt-2")
    message = report_error(gold_copy, capsys)
    assert f"{folder}: holds attempt-1, attempt-2 but its result records attempt-1" in message


# --- results.json is an aggregate ----------------------------------------------------------


def test_report_rebuild_recreates_results_json_from_the_trial_results(gold_copy, capsys):
    original = (gold_copy / "results.json").read_bytes()
    (gold_copy / "results.json").unlink()
    assert main(["report", str(gold_copy), "--rebuild"]) == 0
    assert "12 planned trials: 12 resolved" in capsys.readouterr().out
    assert (gold_copy / "results.json").read_bytes() == original


# --- run --lockfile ------------------------------------------------------------------------


def test_run_lockfile_executes_the_committed_lockfile_as_it_is(tmp_path):
    run_dir = tmp_path / "run"
    done = evalrepro("run", "--lockfile", COMMITTED_LOCKFILE, "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    results = json.loads((run_dir / "results.json").read_text())
    assert (results["experiment"], results["resolved"], results["planned"]) == ("demo", 12, 12)
    committed = read_lockfile(COMMITTED_LOCKFILE)
    assert read_lockfile(run_dir).identity() == committed.identity()
    trials = {read_trial_result(p).trial.trial_id for p in results_of(run_dir)}
    assert trials == {trial.trial_id for trial in committed.trials}


def test_run_lockfile_refuses_an_image_that_is_not_the_locked_one(tmp_path):
    lockfile = json.loads(COMMITTED_LOCKFILE.read_text())
    (trial,) = [t for t in lockfile["trials"] if t["key"]["instance_id"] == "demo__ledger-2"]
    (image,) = [i for i in lockfile["environment"]["images"] if i["key"] == trial["image_key"]]
    image["image_digest"] = "sha256:" + "0" * 64
    edited = tmp_path / "edited.lock.json"
    edited.write_text(json.dumps(lockfile, indent=2))
    message = refused(evalrepro("run", "--lockfile", edited, "--run-dir", tmp_path / "run"))
    assert "the plan no longer matches the lockfile" in message
    assert "demo__ledger-2: instance layer 000000000000 vs" in message
    assert not (tmp_path / "run").exists()
