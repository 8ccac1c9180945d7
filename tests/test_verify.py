"""``evalrepro verify``, on real lockfiles and real runs of the demo in podman.

Two experiments: verify tells a re-run of the same experiment (comparable) from one with
a changed test command, a changed package, another harness version or a removed
instance, naming each difference by class; two models are comparable unless
``--same-target`` asks for a reproduction. One run directory: a finished run passes
every check; each kind of tampering is reported, naming the file or trial, and all of
them at once, not only the first.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.cli import main
from evalrepro.pipeline import lock_experiment, plan_and_lock
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from tests.podman_support import cache_dir, demo_config, needs_podman, run_demo
from tests.test_podman_demo import _with_spec

pytestmark = needs_podman


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


@pytest.fixture(scope="module")
def lockfiles(tmp_path_factory):
    """lockfiles(name, config) -> the path of a real lockfile of that config (made once)."""
    directory = tmp_path_factory.mktemp("lockfiles")

    def lock(name, config) -> Path:
        output = directory / f"{name}.lock.json"
        if not output.exists():
            lock_experiment(config, _quiet(), output=output, cache_dir=cache_dir())
        return output

    return lock


@pytest.fixture(scope="module")
def demo_lock(lockfiles) -> Path:
    return lockfiles("demo", demo_config("demo"))


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory) -> Path:
    """The demo's gold target run once; tampering tests work on copies of it."""
    run_dir = tmp_path_factory.mktemp("gold") / "run"
    run_demo(demo_config("demo"), run_dir)
    return run_dir


def verify(capsys, *argv) -> tuple[int, dict]:
    code = main(["verify", *map(str, argv), "--json"])
    return code, json.loads(capsys.readouterr().out)


def kinds(found: list[dict]) -> set[str]:
    return {entry["kind"] for entry in found}


# --- two experiments -------------------------------------------------------------------


def test_the_same_experiment_locked_again_is_comparable(capsys, lockfiles, demo_lock):
    again = lockfiles("again", demo_config("demo"))
    assert verify(capsys, demo_lock, again) == (
        0,
        {
            "comparable": True,
            "first": str(demo_lock),
            "second": str(again),
            "same_target": False,
            "differences": [],
            "information": [],
        },
    )
    assert verify(capsys, demo_lock, again, "--same-target")[0] == 0


def test_a_run_directory_is_comparable_with_a_lockfile_of_its_experiment(
    capsys, demo_lock, gold_run
):
    assert main(["verify", str(gold_run), str(demo_lock), "--same-target"]) == 0
    assert "comparable" in capsys.readouterr().out


def test_a_changed_test_command_is_a_test_spec_difference_of_that_repo_only(
    capsys, lockfiles, demo_lock
):
    config = demo_config("demo")
    changed = _with_spec(config, "demo/calc", test_cmd="pytest -rA -vv -p no:cacheprovider")
    code, report = verify(capsys, demo_lock, lockfiles("test-cmd", changed))
    assert (code, report["comparable"]) == (1, False)
    assert kinds(report["differences"]) == {"test_spec"}
    calc = {i.instance_id for i in read_lockfile(demo_lock).dataset.instances if "calc" in i.repo}
    details = [d["detail"] for d in report["differences"]]
    assert {d.split(":")[0] for d in details if not d.startswith("setting ")} == calc
    # ... and the setting that changed them is named.
    assert [d for d in details if d.startswith("setting ")] == [
        "setting dataset.specs.demo/calc.1.0.test_cmd: "
        '"pytest -rA -v -p no:cacheprovider" vs "pytest -rA -vv -p no:cacheprovider"'
    ]


def test_a_changed_package_version_is_an_image_and_test_spec_difference(
    capsys, tmp_path, demo_lock
):
    config = demo_config("demo")
    # A requirement whose marker is false changes the packages (the env layer's key)
    # without a download; a fresh one each time, so its layers are removed afterwards.
    inert = f"evalrepro-nonce==0.{uuid.uuid4().int % 10**9}; python_version < '3'"
    packages = [*config.dataset.specs["demo/calc"]["1.0"].packages, inert]
    _, plan, lockfile = plan_and_lock(
        _with_spec(config, "demo/calc", packages=packages), _quiet(), cache_dir()
    )
    try:
        lockfile.write(tmp_path / "packages.lock.json")
        code, report = verify(capsys, demo_lock, tmp_path / "packages.lock.json")
    finally:
        built = {
            record.tag for planned in plan.trials for record in planned.image.layers if record.built
        }
        subprocess.run(["podman", "rmi", *sorted(built)], capture_output=True, check=False)
    assert code == 1
    assert kinds(report["differences"]) == {"images", "test_spec"}
    images = [d["detail"] for d in report["differences"] if d["kind"] == "images"]
    assert images and all(
        detail.startswith("demo__calc-")
        and "env layer" in detail
        and "requirement evalrepro-nonce" in detail
        for detail in images
    )
    settings = [d["detail"] for d in report["differences"] if d["detail"].startswith("setting ")]
    assert [s.split(":")[0] for s in settings] == ["setting dataset.specs.demo/calc.1.0.packages"]


def test_another_harness_version_is_a_harness_difference(capsys, tmp_path, demo_lock):
    # Building evalrepro under another version is not possible inside a test: the
    # lockfile of that harness is this one with its version changed.
    locked = read_lockfile(demo_lock)
    trials = []
    for trial in locked.trials:
        key = trial.key.model_copy(update={"harness_version": "0.0.1"})
        trials.append(trial.model_copy(update={"key": key, "trial_id": key.trial_id()}))
    other = locked.model_copy(
        update={
            "harness": locked.harness.model_copy(update={"version": "0.0.1"}),
            "trials": trials,
        }
    )
    other.write(tmp_path / "old-harness.lock.json")
    code, report = verify(capsys, demo_lock, tmp_path / "old-harness.lock.json")
    assert code == 1
    assert report["differences"] == [
        {"kind": "harness", "detail": f"harness version {locked.harness.version} vs 0.0.1"}
    ]


def test_a_removed_instance_is_named(capsys, tmp_path, lockfiles, demo_lock):
    config = demo_config("demo")
    lines = Path(config.dataset.instances).read_text().splitlines(keepends=True)
    removed = json.loads(lines[-1])["instance_id"]
    (tmp_path / "instances.jsonl").write_text("".join(lines[:-1]))
    smaller = config.model_copy(
        update={
            "dataset": config.dataset.model_copy(update={"instances": tmp_path / "instances.jsonl"})
        }
    )
    code, report = verify(capsys, demo_lock, lockfiles("removed", smaller))
    assert code == 1
    assert report["differences"] == [
        {"kind": "instances", "detail": f"only in the first: {removed}"}
    ]
    # The gold target lost that instance's patch, and the plan its trial: information, as
    # a target's (and so its trials') differences always are between two runs.
    assert kinds(report["information"]) == {"target", "trials"}


def test_a_setting_no_other_class_covers_is_a_config_difference(capsys, lockfiles, demo_lock):
    changed = demo_config("demo", "environment.allow_user_namespaces=true")
    code, report = verify(capsys, demo_lock, lockfiles("namespaces", changed))
    assert code == 1
    assert report["differences"] == [
        {"kind": "config", "detail": "environment.allow_user_namespaces: false vs true"}
    ]


def test_the_executor_is_not_what_a_trial_measures(capsys, lockfiles, demo_lock):
    retries = demo_config("demo", "executor=serial", "executor.max_attempts=3")
    code, report = verify(capsys, demo_lock, lockfiles("serial", retries))
    assert code == 0
    assert report["differences"] == []


def test_two_models_are_comparable_unless_the_target_must_be_the_same(capsys, lockfiles):
    model_a = lockfiles("model_a", demo_config("model_a"))
    model_b = lockfiles("model_b", demo_config("model_b"))
    code, report = verify(capsys, model_a, model_b)
    assert (code, report["differences"]) == (0, [])
    assert report["information"] == [
        {"kind": "target", "detail": "predictions 'model_a' vs predictions 'model_b'"}
    ]
    code, report = verify(capsys, model_a, model_b, "--same-target")
    assert (code, kinds(report["differences"]), report["information"]) == (1, {"target"}, [])


def test_the_table_lists_each_difference_by_class(capsys, lockfiles, demo_lock):
    model_a = lockfiles("model_a", demo_config("model_a"))
    assert main(["verify", str(demo_lock), str(model_a), "--same-target"]) == 1
    out = capsys.readouterr().out
    assert "target" in out and "gold 'gold' vs predictions 'model_a'" in out
    assert "not comparable: 1 difference between" in out


# --- one run directory -----------------------------------------------------------------


def test_a_finished_run_passes_every_check(capsys, gold_run):
    code, report = verify(capsys, gold_run)
    assert (code, report["ok"], report["problems"]) == (0, True, [])
    assert report["planned"] == report["checked"] == report["regraded"] == 12
    assert main(["verify", str(gold_run)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


@pytest.fixture
def copy(gold_run, tmp_path) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(gold_run, run_dir)
    return run_dir


def trial_dir(run_dir: Path, instance_id: str) -> Path:
    (folder,) = (run_dir / "trials").glob(f"{instance_id}--s0--*")
    return folder


def rel(run_dir: Path, path: Path) -> str:
    return path.relative_to(run_dir).as_posix()


def test_an_edited_test_log_is_a_changed_artifact_and_regrades_otherwise(capsys, copy):
    log = trial_dir(copy, "demo__calc-1") / "attempt-1" / "test_output.txt"
    text = log.read_text()
    passed = "\nPASSED tests/test_eval.py::test_power\n"
    assert passed in text
    log.write_text(text.replace(passed, passed.replace("PASSED", "FAILED")))
    code, report = verify(capsys, copy)
    assert code == 1
    assert {(p["kind"], p["detail"].split(":")[0]) for p in report["problems"]} == {
        ("artifact", rel(copy, log)),
        ("regrade", rel(copy, log)),
    }


def test_a_deleted_trial_result_is_a_missing_trial_and_a_wrong_aggregate(capsys, copy):
    folder = trial_dir(copy, "demo__textkit-1")
    (folder / "result.json").unlink()
    code, report = verify(capsys, copy)
    assert code == 1
    assert {
        "kind": "missing",
        "detail": f"{rel(copy, folder)}: no result.json (the trial did not finish)",
    } in report["problems"]
    assert kinds(report["problems"]) == {"missing", "results"}
    assert any("missing is 0, the trial results give 1" in p["detail"] for p in report["problems"])


def test_an_edited_aggregate_differs_from_the_rebuilt_one(capsys, copy):
    results = json.loads((copy / "results.json").read_text())
    results["resolved"] -= 1
    (copy / "results.json").write_text(json.dumps(results, indent=2))
    code, report = verify(capsys, copy)
    assert (code, report["problems"]) == (
        1,
        [{"kind": "results", "detail": "results.json: resolved is 11, the trial results give 12"}],
    )


def test_a_recorded_score_the_final_log_does_not_give_is_caught_by_regrading(capsys, copy):
    result_file = trial_dir(copy, "demo__ledger-1") / "result.json"
    result = json.loads(result_file.read_text())
    # Both the trial's score and its attempt's, so that the records agree with each other.
    forged = {"outcome": "unresolved", "reason": "tests_failed", "resolution": "RESOLVED_NO"}
    result["score"] |= forged
    result["attempts"][-1]["score"] |= forged
    result_file.write_text(json.dumps(result, indent=2))
    code, report = verify(capsys, copy)
    assert code == 1
    log = rel(copy, result_file.parent / "attempt-1" / "test_output.txt")
    assert {
        "kind": "regrade",
        "detail": f"{log}: re-graded resolved (tests_passed), recorded unresolved (tests_failed)",
    } in report["problems"]


def test_every_problem_is_reported_not_only_the_first(capsys, copy):
    (trial_dir(copy, "demo__calc-1") / "result.json").unlink()
    log = trial_dir(copy, "demo__ledger-1") / "attempt-1" / "test_output.txt"
    log.write_text(log.read_text() + "\n")
    (copy / "trials" / "stray").mkdir()
    (copy / "results.json").unlink()
    code, report = verify(capsys, copy)
    assert code == 1
    assert kinds(report["problems"]) == {"missing", "artifact", "unplanned"}
    assert {p["detail"].split(":")[0] for p in report["problems"]} == {
        rel(copy, trial_dir(copy, "demo__calc-1")),
        rel(copy, log),
        "trials/stray",
        "results.json",
    }
    assert main(["verify", str(copy)]) == 1
    assert "4 problems" in capsys.readouterr().out


# --- bad input -------------------------------------------------------------------------


def one_line_error(capsys, *argv) -> str:
    assert main(["verify", *map(str, argv)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    return captured.err


def test_a_path_that_is_neither_a_lockfile_nor_a_run_directory_is_one_line(
    capsys, tmp_path, demo_lock
):
    assert "no such lockfile or run directory" in one_line_error(
        capsys, tmp_path / "nothing", demo_lock
    )
    assert "not a run directory" in one_line_error(capsys, tmp_path, demo_lock)
    (tmp_path / "results.json").write_text("{}")
    assert "not a Lockfile record" in one_line_error(capsys, tmp_path / "results.json", demo_lock)
    assert "not a run directory" in one_line_error(capsys, demo_lock)


def test_a_corrupt_lockfile_is_one_line(capsys, copy, demo_lock):
    lockfile = copy / LOCKFILE_NAME
    lockfile.write_text(lockfile.read_text()[:-200])
    assert "not a readable Lockfile record" in one_line_error(capsys, copy)
    assert "not a readable Lockfile record" in one_line_error(capsys, demo_lock, copy)
