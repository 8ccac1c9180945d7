"""A dataset on real projects (``realdata``), from config alone, agrees with pytest by hand.

The data is built from the six and toolz sdists (pinned by sha256): split histories, an
sdist as a source, empty and non-empty test patches. ``evalrepro run`` is started from
another directory with only ``--config-dir``; every gold trial resolves with exactly the
FAIL_TO_PASS / PASS_TO_PASS lists pytest gave on the host, and the model's patches end as
the by-hand run of each decided. The same data rebuilt in another directory locks to the
same trials.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.records.trial import TrialResult
from evalrepro.records.validation import ValidationReport
from evalrepro.run.rundir import RunDirectory
from evalrepro.validation.dataset import report_path
from tests.podman_support import cache_dir, needs_podman
from tests.realdata import RealData, build

pytestmark = needs_podman


@pytest.fixture(scope="module")
def realdata(tmp_path_factory) -> RealData:
    return build(tmp_path_factory.mktemp("realdata"))


def evalrepro(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALREPRO_CACHE": str(cache_dir()), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def run(
    realdata: RealData, experiment: str, where: Path, *overrides: str
) -> dict[str, TrialResult]:
    """The experiment run from ``where`` (not the config dir): {instance id: result}."""
    run_dir = where / experiment
    where.mkdir(exist_ok=True)
    evalrepro(
        "run", f"+experiment={experiment}", *overrides, "--config-dir", str(realdata.conf),
        "--run-dir", str(run_dir), cwd=where,
    )  # fmt: skip
    directory = RunDirectory(run_dir)
    done = directory.completed(read_lockfile(directory.lockfile_path))
    return {result.instance_id: result for result in done.values()}


@pytest.fixture(scope="module")
def gold(realdata, tmp_path_factory) -> dict[str, TrialResult]:
    return run(realdata, "realdata", tmp_path_factory.mktemp("elsewhere"))


@pytest.fixture(scope="module")
def model(realdata, tmp_path_factory) -> dict[str, TrialResult]:
    return run(realdata, "realdata_model", tmp_path_factory.mktemp("elsewhere"))


def test_the_dataset_has_what_real_data_has(realdata):
    test_patches = [bool(i["test_patch"]) for i in realdata.instances]
    assert True in test_patches and False in test_patches
    sources = {i["instance_id"].split("__")[0] for i in realdata.instances}
    assert sources == {"six", "toolz"}


def test_every_gold_trial_resolves_with_the_tests_found_by_hand(realdata, gold):
    assert set(gold) == {i["instance_id"] for i in realdata.instances}
    for instance in realdata.instances:
        result = gold[instance["instance_id"]]
        assert result.score.outcome == "resolved", (instance["instance_id"], result.score)
        tests = result.attempts[-1].observation.tests
        assert tests is not None
        assert sorted(tests.fail_to_pass.success) == instance["FAIL_TO_PASS"]
        assert sorted(tests.pass_to_pass.success) == instance["PASS_TO_PASS"]
        assert tests.fail_to_pass.failure == tests.pass_to_pass.failure == []


def test_every_model_trial_ends_as_the_by_hand_run_decided(realdata, model):
    outcomes = {instance_id: str(result.score.outcome) for instance_id, result in model.items()}
    assert outcomes == realdata.model_outcomes
    assert model["toolz__bug-frequencies"].score.reason == "patch_empty"


def test_the_canaries_ran_beside_real_projects_tests_and_held(realdata, gold, model):
    # Real projects' own test files (six, toolz) with canaries beside their tests: every
    # one placed in a trial whose test patch has a Python test file, none tripped by an
    # honest run.
    with_tests = {i["instance_id"] for i in realdata.instances if i["test_patch"]}
    for results in (gold, model):
        for instance_id, result in results.items():
            observation = result.attempts[-1].observation
            assert not [c for c in observation.canaries if c.tampered], (instance_id, result)
            if instance_id in with_tests and observation.tests is not None:
                assert {c.expect for c in observation.canaries} == {"pass", "fail"}, instance_id
            # No test the log reports is a canary (a canary's own status is kept apart).
            reported = {_test_name(key) for key in observation.status_map}
            assert not reported & {c.name for c in observation.canaries}, instance_id


def test_under_the_second_runner_every_gold_trial_still_resolves(realdata, tmp_path):
    # Real projects' tests run once more by the plain driver, without pytest: an honest
    # fix passes there too, and a test the driver cannot run plainly is no judgement.
    gold = run(realdata, "realdata", tmp_path, "dataset.protection.second_runner=5")
    ran: list[str] = []
    for instance_id, result in gold.items():
        assert result.score.outcome == "resolved", (instance_id, result.score)
        plain = [c for c in result.attempts[-1].observation.fresh if c.runner == "plain"]
        assert not [c for c in plain if c.differs_under_test or c.tampered], plain
        if [c for c in plain if c.expect == "pass" and c.outcome == "passed"]:
            ran.append(instance_id.split("__")[0])
        if not plain:  # an empty test patch: no canary is placed, nothing runs alone
            assert "no must-fail canary" in result.attempts[-1].observation.fresh_note
    # Each project's plain test functions ran under the driver (six's setup.cfg holds keys
    # of plugins not installed), and passed.
    assert sorted(set(ran)) == ["six", "toolz"]


def test_a_conftest_the_model_added_is_removed_before_the_tests(model):
    observation = model["toolz__bug-second"].attempts[-1].observation
    assert [p.path for p in observation.protected] == ["toolz/tests/conftest.py"]
    assert observation.protection_policy == "restore"
    assert observation.tests is not None and observation.tests.fail_to_pass.failure == []


def test_the_data_rebuilt_in_another_directory_locks_the_same_trials(realdata, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(realdata.root, copy, symlinks=True)
    locks = []
    for root in (realdata.root, copy):
        output = tmp_path / f"{root.name}.lock.json"
        evalrepro(
            "lock", "+experiment=realdata", "--config-dir", str(root / "conf"),
            "--output", str(output), cwd=tmp_path,
        )  # fmt: skip
        locks.append(read_lockfile(output))
    first, second = locks
    assert [t.trial_id for t in first.trials] == [t.trial_id for t in second.trials]
    assert differences(first, second) == []


def test_validation_derives_the_lists_pytest_gave_by_hand_and_the_result_resolves(
    realdata, tmp_path
):
    # Each side runs twice in fresh sandboxes, through the run path.
    output = tmp_path / "validated.jsonl"
    evalrepro(
        "validate", "+experiment=realdata", "validation.repeats=2",
        "--config-dir", str(realdata.conf), "--runs", str(tmp_path / "runs"),
        "--output", str(output), cwd=tmp_path,
    )  # fmt: skip
    report = ValidationReport.model_validate_json(report_path(output).read_text())
    assert {i.instance_id: i.verdict for i in report.instances} == {
        i["instance_id"]: "valid" for i in realdata.instances
    }
    by_hand = {i["instance_id"]: i for i in realdata.instances}
    for found in report.instances:
        assert found.fail_to_pass == by_hand[found.instance_id]["FAIL_TO_PASS"]
        assert found.pass_to_pass == by_hand[found.instance_id]["PASS_TO_PASS"]
        assert found.disagreements == []
        assert {t.repeats for t in found.transitions} == {2}
    # The validated dataset, the same format and fields, evaluates the gold at 100%.
    written = [json.loads(line) for line in output.read_text().splitlines()]
    assert [w["instance_id"] for w in written] == [i["instance_id"] for i in realdata.instances]
    assert all(w["FLAKY"] == [] for w in written)
    evalrepro(
        "run", "+experiment=realdata", f"dataset.instances={output}",
        "--config-dir", str(realdata.conf), "--run-dir", str(tmp_path / "gold"), cwd=tmp_path,
    )  # fmt: skip
    directory = RunDirectory(tmp_path / "gold")
    done = directory.completed(read_lockfile(directory.lockfile_path))
    assert {str(r.score.outcome) for r in done.values()} == {"resolved"}
    assert len(done) == len(realdata.instances)
    # Run again, the validation resumes: nothing is run twice.
    again = evalrepro(
        "validate", "+experiment=realdata", "validation.repeats=2",
        "--config-dir", str(realdata.conf), "--runs", str(tmp_path / "runs"),
        "--output", str(output), cwd=tmp_path,
    )  # fmt: skip
    assert "trials/min" not in again.stdout


def _test_name(key: str) -> str:
    """The test's own name in a status-map key: ``path::Class::name[params]`` (pytest) or
    ``name (module.Class)`` (unittest)."""
    return key.split("::")[-1].split("[")[0].split(" ")[0]
