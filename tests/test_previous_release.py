"""A run directory written by evalrepro 0.2 (the previous release) still reports,
verifies and bundles.

``tests/corpus/previous_release/`` holds two run directories the 0.2 code wrote, byte for
byte (its README says how, from commit 65f2d36): the demo experiment with 0.2's fake
backend, and a regrade of a small SWE-bench-style logs folder. Since then TrialKey gained
a target digest (Trial schema 3, TrialResult 4, Lockfile 3; older records are migrated
when read), ``environment.max_workers`` / ``max_attempts`` moved to ``executor``, runs no
longer write ``config.json`` and attempts no longer write ``image.json``. Each test copies
a fixture to ``tmp_path`` and reads it with today's code only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.digest import sha256_json
from evalrepro.pipeline import lock_experiment, run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME, differences, lockfile_problems, read_lockfile
from evalrepro.publish.verify import check_run
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.trial import trial_label
from evalrepro.report.html import trial_page
from evalrepro.report.view import view_run
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario

FIXTURE = Path(__file__).parent / "corpus" / "previous_release"
#: The commit of evalrepro 0.2.0 whose code wrote the fixture.
PREVIOUS_COMMIT = "65f2d36557a38e40ae34ac8a6f34e3aed263a1a9"
#: Where it was written: the regrade's lockfile names its dataset and logs under it.
WRITTEN_AT = "/tmp/evalrepro-0.2.0-fixture"
#: The runs, with their planned trials.
RUNS = {"demo-run": 12, "regrade-run": 4}


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"), width=120)


def evalrepro(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def previous_run(tmp_path: Path, name: str) -> Path:
    """The fixture copied to ``tmp_path`` (same layout: the regrade's dataset and logs
    beside its run), its regrade's lockfile naming the copy's dataset and logs (the one
    rewrite, documented in the fixture's README: the paths and the config digest over
    them, as if 0.2 had written the run here). The run directory named ``name``."""
    root = tmp_path / "previous_release"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("*.py", "*.md"))
    lockfile = root / "regrade-run" / LOCKFILE_NAME
    data = json.loads(lockfile.read_text(encoding="utf-8").replace(WRITTEN_AT, str(root)))
    assert data["schema_version"] == 2
    data["config_digest"] = sha256_json(data["config"])
    lockfile.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return root / name


@pytest.fixture(scope="module")
def new_demo(tmp_path_factory) -> Path:
    """The same demo run with today's code and today's fake backend."""
    root = tmp_path_factory.mktemp("new-demo")
    config = compose(["+experiment=demo"])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    run_experiment(
        config,
        quiet(),
        run_dir=root / "demo-run",
        cache_dir=root / "cache",
        backend=fake_backend(gold_scenario(samples)),
    )
    return root / "demo-run"


# --- the fixture is what 0.2 wrote ---------------------------------------------------


@pytest.mark.parametrize("name", RUNS)
def test_the_fixture_is_a_run_directory_of_the_previous_release(name):
    run = FIXTURE / name
    sessions = json.loads((run / "run.json").read_text())["sessions"]
    assert {s["evalrepro"]["commit"] for s in sessions} == {PREVIOUS_COMMIT}
    assert json.loads((run / LOCKFILE_NAME).read_text())["schema_version"] == 2
    assert (run / "config.json").is_file()
    results = [json.loads(p.read_text()) for p in run.glob("trials/*/result.json")]
    assert len(results) == RUNS[name]
    # TrialResult 3 of Trial 2 (today: 4 of 3), their keys without a target digest.
    assert {(r["schema_version"], r["trial"]["schema_version"]) for r in results} == {(3, 2)}
    assert all("target_digest" not in r["trial"]["key"] for r in results)
    if name == "demo-run":
        assert len(list(run.glob("trials/*/attempt-1/image.json"))) == 12


# --- the lockfile --------------------------------------------------------------------


@pytest.mark.parametrize("name", RUNS)
def test_the_old_lockfile_reads_migrated_with_no_problems(name, tmp_path):
    lockfile = read_lockfile(previous_run(tmp_path, name) / LOCKFILE_NAME)
    assert lockfile_problems(lockfile) == []
    assert lockfile.schema_version == Lockfile.model_fields["schema_version"].default
    assert len(lockfile.trials) == RUNS[name]
    # Trial keys of 0.2 hold no target digest: their trial ids are the ids 0.2 gave.
    assert {trial.key.target_digest for trial in lockfile.trials} == {None}
    assert all(trial.trial_id == trial.key.trial_id() for trial in lockfile.trials)
    environment = lockfile.config["environment"]
    assert "max_workers" not in environment and "max_attempts" not in environment
    if name == "demo-run":  # its executor settings moved where today's config has them
        assert lockfile.config["executor"] == {"kind": "local", "max_workers": 2, "max_attempts": 2}


def test_the_old_demo_lockfile_differs_from_a_new_lock_of_the_demo_in_the_harness_and_its_specs(
    tmp_path,
):
    old = read_lockfile(previous_run(tmp_path, "demo-run") / LOCKFILE_NAME)
    config = compose(["+experiment=demo"])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    new = lock_experiment(
        config,
        quiet(),
        output=tmp_path / "new.lock.json",
        cache_dir=tmp_path / "cache",
        backend=fake_backend(gold_scenario(samples)),
    )
    found = differences(old, new)
    # The code that grades changed; the version did not. The test specs changed with the
    # protection they hold (canary tests, declared framework sources, fresh runs, the
    # second runner, site hooks, whether the tests may read git, the ecosystems whose
    # test infrastructure is protected too: Python's, the same patterns), and with them the
    # instance layers whose recipe holds the test spec; the environment gained the
    # re-runs of failing tests.
    # Nothing else of the config differs: not the executor's settings (0.2's
    # environment.max_workers / max_attempts).
    assert {d.kind for d in found} == {"harness", "test_spec", "images", "config"}, found
    assert found[0].kind == "harness" and found[0].detail.startswith("harness code ")
    assert old.harness.version == new.harness.version
    assert sorted(d.detail.split(":")[0] for d in found if d.kind == "config") == [
        "dataset.protection.canaries",
        "dataset.protection.ecosystems",
        "dataset.protection.framework_sources",
        "dataset.protection.fresh_runs",
        "dataset.protection.second_runner",
        "dataset.protection.site_hooks",
        "dataset.protection.tests_read_git",
        "environment.flaky_counts_as",
        "environment.rerun_failed",
    ]
    specs = [d for d in found if d.kind == "test_spec" and not d.detail.startswith("setting ")]
    assert len(specs) == len(new.dataset.instances)
    # The spec settings that changed since: each spec's debs and npm (none) are new, and the
    # ledger's test command is python3's (it has no env layer, so no venv's python).
    assert sorted(d.detail for d in found if d.kind == "test_spec" and d not in specs) == [
        "setting dataset.specs.demo/calc.1.0.debs: unset vs []",
        "setting dataset.specs.demo/calc.1.0.npm: unset vs []",
        "setting dataset.specs.demo/ledger.1.0.debs: unset vs []",
        "setting dataset.specs.demo/ledger.1.0.npm: unset vs []",
        'setting dataset.specs.demo/ledger.1.0.test_cmd: "python -m unittest -v" vs '
        '"python3 -m unittest -v"',
        "setting dataset.specs.demo/textkit.1.0.debs: unset vs []",
        "setting dataset.specs.demo/textkit.1.0.npm: unset vs []",
    ]
    assert all("recipe test spec" in d.detail for d in found if d.kind == "images")
    assert not [
        d
        for d in found
        if any(word in d.detail for word in ("executor", "max_workers", "max_attempts"))
    ]
    assert {d.kind for d in differences(new, old)} == {d.kind for d in found}
    # The same trials, but not the same trial ids: today's keys hold the target's digest.
    assert [(t.key.instance_id, t.key.sample_index) for t in old.trials] == [
        (t.key.instance_id, t.key.sample_index) for t in new.trials
    ]
    assert {t.trial_id for t in old.trials}.isdisjoint(t.trial_id for t in new.trials)
    assert None not in {t.key.target_digest for t in new.trials}


# --- verify, report, bundle -----------------------------------------------------------


@pytest.mark.parametrize("name", RUNS)
def test_an_old_run_verifies(name, tmp_path):
    check = check_run(previous_run(tmp_path, name))
    assert check.problems == []
    assert (check.planned, check.checked, check.regraded) == (RUNS[name],) * 3


@pytest.mark.parametrize("name", RUNS)
def test_an_old_run_reports_the_counts_of_its_results_json(name, tmp_path):
    run = previous_run(tmp_path, name)
    done = evalrepro("report", run, "--json", "--n-resamples", "200")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    recorded = json.loads((run / "results.json").read_text())
    counts = ("planned", "resolved", "unresolved", "invalid", "missing")
    assert {k: report["metrics"][k] for k in counts} == {k: recorded[k] for k in counts}
    assert report["metrics"]["planned"] == RUNS[name]
    assert report["evidence_problems"] == []
    assert len(report["trials"]) == RUNS[name]
    assert {row["outcome"] for row in report["trials"]} <= {"resolved", "unresolved"}


@pytest.mark.parametrize("name", RUNS)
def test_an_old_run_bundles_and_its_bundle_verifies(name, tmp_path):
    run = previous_run(tmp_path, name)
    bundle = tmp_path / f"{name}.tar.gz"
    done = evalrepro("bundle", run, "-o", bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    verified = evalrepro("verify", bundle)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"{RUNS[name]} logs re-graded" in verified.stdout

    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path / "unpacked")  # our own archive, not a hostile one
    data = tmp_path / "unpacked" / name / "data"
    # The bundle holds the run as 0.2 wrote it: its config.json too, as configuration.
    assert (data / "run" / "config.json").read_bytes() == (run / "config.json").read_bytes()
    statement = json.loads((data / "attestation.intoto.json").read_text())
    configuration = {item["name"] for item in statement["predicate"]["configuration"]}
    assert configuration == {f"run/{LOCKFILE_NAME}", "run/config.json"}
    assert (data / "run" / LOCKFILE_NAME).read_bytes() == (run / LOCKFILE_NAME).read_bytes()


# --- the viewer: an old attempt's image.json, a new trial's locked image ---------------


def _page(site_root: Path, lockfile: Lockfile, instance_id: str) -> str:
    [trial] = [t for t in lockfile.trials if t.key.instance_id == instance_id]
    label = trial_label(instance_id, trial.key.sample_index, trial.trial_id)
    return (site_root / trial_page(f"trials/{label}")).read_text(encoding="utf-8")


def test_the_viewer_shows_an_old_attempts_image_json(tmp_path):
    run = previous_run(tmp_path, "demo-run")
    site = view_run(run, n_resamples=200)
    lockfile = read_lockfile(run / LOCKFILE_NAME)
    page = _page(site.root, lockfile, "demo__calc-1")
    recorded = json.loads(next(run.glob("trials/demo__calc-1--*/attempt-1/image.json")).read_text())
    assert "<code>image.json</code>" in page
    assert recorded["layers"][0]["tag"] in page
    assert "the lockfile: the trial" not in page  # image.json is what the attempt kept


def test_a_new_trials_image_is_the_locked_one_it_ran_in(new_demo):
    assert not list(new_demo.glob("trials/*/attempt-*/image.json"))
    site = view_run(new_demo, n_resamples=200)
    lockfile = read_lockfile(new_demo / LOCKFILE_NAME)
    images = {image.key: image for image in lockfile.environment.images}
    keys = {t.key.instance_id: t.image_key for t in lockfile.trials}
    for instance_id in ("demo__calc-1", "demo__textkit-2"):
        page = _page(site.root, lockfile, instance_id)
        assert "the lockfile: the trial&#39;s locked image" in page
        # Its layer and every layer under it, by tag, image digest and key; no other's.
        key, shown = keys[instance_id], set()
        while key:
            image = images[key]
            assert f"tag: {image.tag}" in page and f"image digest: {image.image_digest}" in page
            shown.add(key)
            key = image.parent_key
        assert not [i for k, i in images.items() if k not in shown and f"key: {k}" in page]
