"""Canaries in the test files the command runs outside the test patch (issue 35, item 2).

demo__calc-1's test patch touches ``tests/test_eval.py``; run on the folder ``tests``, its
command also runs ``tests/test_tokenizer.py``, whose tests are PASS_TO_PASS here. The
plan finds that file at the base commit and keeps its bytes; each trial's twins and
canaries shaped like a neighbour go into it too. An adversary who read this repository
(the canaries used to go into the test patch's files only) breaks a test there and
forges that file's results alone: invalid. The gold patch beside it resolves, tripping
nothing.
"""

from __future__ import annotations

import ast
import json
import subprocess

import pytest

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.demo import DEMO_DIR
from evalrepro.grade import canary
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.plan.outside import find_outside, outside_bytes, store_of
from evalrepro.records.trial import read_trial_result
from evalrepro.sources.demo_repos import build_repo
from tests.adversarial.attacks import OUTSIDE_ATTACKS, write_adversary
from tests.podman_support import needs_podman, run_demo

pytestmark = needs_podman

OUTSIDE = "tests/test_tokenizer.py"


def _instance(repo) -> dict:
    """demo__calc-1 with the tests of the file outside its test patch as PASS_TO_PASS."""
    record = next(
        json.loads(line)
        for line in (DEMO_DIR / "instances.jsonl").read_text().splitlines()
        if json.loads(line)["instance_id"] == "demo__calc-1"
    )
    source = subprocess.run(
        ["git", "show", f"{record['base_commit']}:{OUTSIDE}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    ]
    assert len(names) >= 3
    record["PASS_TO_PASS"] = record["PASS_TO_PASS"] + [f"{OUTSIDE}::{n}" for n in names]
    return record


def _overrides(tmp, adversary) -> list[str]:
    instances = tmp / "instances.jsonl"
    instances.write_text(json.dumps(_instance(tmp / "repos" / "calc")) + "\n")
    return adversary.config(
        f"dataset.instances={instances}",
        "dataset.specs[demo/calc][1.0].test_directives=[tests]",
    )


def test_the_plan_finds_the_files_the_command_runs_outside_the_test_patch(tmp_path):
    repo = tmp_path / "calc"
    build_repo("calc", repo)
    config = compose(["+experiment=demo", "dataset.specs[demo/calc][1.0].test_directives=[tests]"])
    row = next(s for s in config.dataset.load() if s.instance_id == "demo__calc-1")
    spec = instance_test_spec(config.dataset, row)
    store = store_of(tmp_path / "cache")
    kept, left = find_outside(repo / ".git", spec, tmp_path / "cache")
    assert [f.path for f in kept] == [OUTSIDE] and left == 0
    with_them = spec.model_copy(update={"outside_files": kept})
    data = outside_bytes(with_them, store)
    assert set(data) == {OUTSIDE} and b"def test_positions" in data[OUTSIDE]
    # A changed copy in the cache is not used (no canary, never one from wrong bytes).
    (store / kept[0].sha256).write_bytes(b"def test_x():\n    pass\n")
    assert outside_bytes(with_them, store) == {}
    # A command that runs the test patch's file only runs nothing outside it.
    only = spec.model_copy(update={"test_directives": ["tests/test_eval.py"]})
    assert find_outside(repo / ".git", only, tmp_path / "cache") == ([], 0)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("outside-files")
    adversary = write_adversary(tmp, OUTSIDE_ATTACKS, every_instance=False)
    run_demo(compose(_overrides(tmp, adversary)), tmp / "run")
    results = {}
    for path in (tmp / "run" / "trials").glob("*/result.json"):
        result = read_trial_result(path)
        results[(result.instance_id, result.sample_index)] = result
    return adversary, results, tmp / "run"


@pytest.mark.parametrize("attack", OUTSIDE_ATTACKS, ids=lambda a: a.name)
def test_a_forgery_confined_to_a_file_outside_the_test_patch_is_invalid(graded, attack):
    adversary, results, _ = graded
    index = next(i for (iid, i), a in adversary.expected.items() if a is attack)
    result = results[(attack.instance, index)]
    assert (str(result.score.outcome), result.score.reason) == attack.expect, result.score.detail
    # What tripped is a canary of the file outside the test patch: the forgery left the
    # test patch's file honest.
    tampered = [c for c in result.attempts[-1].observation.canaries if c.tampered]
    assert tampered


def test_the_gold_patch_of_that_dataset_resolves_and_trips_nothing(graded):
    adversary, results, _ = graded
    gold = results[("demo__calc-1", adversary.samples - 1)]
    assert str(gold.score.outcome) == "resolved", gold.score.detail
    checks = gold.attempts[-1].observation.canaries
    assert checks and not [c for c in checks if c.tampered]
    # Twins of the outside file's tests ran beside them, each judged by its pair.
    outside_names = {"test_numbers_and_operators", "test_positions"}
    assert any(c.twin_of in outside_names for c in checks), checks


def test_the_lockfile_names_the_outside_file_and_verify_passes(graded, capsys):
    # The run's lockfile names the file by path and digest (its TestSpec's digest covers
    # it); verify recomputes the spec with that list and regrades every trial.
    run_dir = graded[2]
    lock = read_lockfile(run_dir / LOCKFILE_NAME)
    (instance,) = lock.dataset.instances
    assert [f.path for f in instance.outside_files] == [OUTSIDE]
    assert main(["verify", str(run_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["problems"]) == (True, [])


def test_every_kept_outside_file_is_rewritten_at_the_reset_canaries_or_not(tmp_path, monkeypatch):
    # Were only the files that hold canaries written again, their new inode and time
    # would point at them. With no canary drawn outside the test patch (a trial draws a
    # few of the kept files: here none), the outside file is written all the same.
    monkeypatch.setattr(canary, "OUTSIDE_PER_TRIAL", 0)
    build_repo("calc", tmp_path / "repos" / "calc")
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(_instance(tmp_path / "repos" / "calc")) + "\n")
    config = compose(
        [
            "+experiment=demo",
            f"dataset.instances={instances}",
            "dataset.specs[demo/calc][1.0].test_directives=[tests]",
        ]
    )
    run_demo(config, tmp_path / "run")
    (path,) = (tmp_path / "run" / "trials").glob("*/attempt-1/supervisor.json")
    reset = json.loads(path.read_text())["reset"]
    assert reset["ok"] and reset["canaries"], reset
    placed = json.loads(path.with_name("program.json").read_text())["canaries"]
    assert {c["file"] for c in placed} == {"tests/test_eval.py"}
    # The test patch's one file, and the one file the command runs outside it.
    assert (reset["test_files"], reset["verified"]) == (1, 2), reset
