"""The run's author as adversary (docs/threat-model.md, "Inputs and the author").

An author who drops a failing trial and rewrites the lockfile, the results, the reports,
every digest and the signature consistently has made a run that every check of its own
records passes; what still names the trial is the plan the lockfile's own config and
dataset give. An author who edits the lockfile's settings (an executor's scheduler
address) cannot make a reproducer's attempts run elsewhere.

The runs are model_a on the demo with the fake backend (tests/fake_backend.py): the
records are what is at stake, not a sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.pipeline import PlanMismatch, run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.publish.bundle import _write, write_bundle
from evalrepro.publish.bundle_verify import UNSIGNED_NOTE, check_bundle
from evalrepro.publish.reproduce import reproduce
from evalrepro.publish.verify import check_run
from evalrepro.records.bundle import ReportSettings
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.trial import trial_label
from evalrepro.report.results import rebuild_results
from evalrepro.run.rundir import RunDirectory
from evalrepro.run.sessions import SESSIONS_NAME
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario
from tests.test_bundle import ssh_key


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"), width=120)


@pytest.fixture(scope="module")
def samples():
    config = compose(["+experiment=model_a"])
    return {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}


@pytest.fixture(scope="module")
def honest_run(samples, tmp_path_factory) -> Path:
    """model_a's run: the gold patches resolve, the others fail."""
    root = tmp_path_factory.mktemp("honest")
    run_experiment(
        compose(["+experiment=model_a"]),
        quiet(),
        run_dir=root / "model_a",
        cache_dir=root / "cache",
        backend=fake_backend(gold_scenario(samples)),
    )
    return root / "model_a"


def rewrite_lockfile(run_dir: Path, edit, *, run_json: bool = True) -> None:
    """The lockfile edited, every digest it holds recomputed, and (``run_json``) the
    digest run.json recorded of it too: what an author who has read this code does."""
    path = run_dir / LOCKFILE_NAME
    data = json.loads(path.read_text())
    edit(data)
    data["config_digest"] = sha256_json(data["config"])
    data["target"]["digest"] = sha256_json(data["target"]["predictions"])
    Lockfile.model_validate(data).write(path)
    if run_json:
        sessions = json.loads((run_dir / SESSIONS_NAME).read_text())
        sessions["lockfile_sha256"] = sha256_bytes(path.read_bytes())
        (run_dir / SESSIONS_NAME).write_text(json.dumps(sessions))


def trim(honest: Path, into: Path, *, run_json: bool = True) -> tuple[str, str]:
    """A copy of ``honest`` without one failing trial, rewritten consistently: lockfile
    (trial and prediction), digests, results.json, SWE-bench's layout, run.json. Returns
    the dropped trial's instance id and folder label."""
    shutil.copytree(honest, into)
    results = json.loads((into / "results.json").read_text())
    dropped = next(line for line in results["trials"] if line["outcome"] == "unresolved")
    instance_id = dropped["instance_id"]

    def drop(data: dict) -> None:
        data["trials"] = [t for t in data["trials"] if t["trial_id"] != dropped["trial_id"]]
        data["target"]["predictions"] = [
            p for p in data["target"]["predictions"] if p["instance_id"] != instance_id
        ]

    rewrite_lockfile(into, drop, run_json=run_json)
    label = trial_label(instance_id, dropped["sample_index"], dropped["trial_id"])
    shutil.rmtree(into / "trials" / label)
    directory = RunDirectory(into)
    lockfile = read_lockfile(directory.lockfile_path)
    done = {
        trial_id: result
        for trial_id, result in directory.survey(lockfile).results.items()
        if trial_id != dropped["trial_id"]
    }
    directory.write_results(rebuild_results(directory, lockfile, done))
    shutil.rmtree(into / "swebench")
    directory.write_swebench_layout(lockfile, done)
    return instance_id, label


def author_bundle(run_dir: Path, output: Path, key: Path) -> None:
    """The bundle an author makes of a run the bundler would refuse: the bundler's own
    writer, without its verify, signed with the author's key."""
    from evalrepro.publish.signing import load_signer

    lockfile = read_lockfile(run_dir / LOCKFILE_NAME)
    with tempfile.TemporaryDirectory(dir=output.parent) as tmp:
        _write(
            run_dir,
            Path(tmp) / run_dir.name,
            output,
            lockfile,
            ReportSettings(),
            with_images=False,
            with_inputs=False,
            sign_key=key,
            signer=load_signer(key),
            cache_dir=None,
        )


def plan_problems(problems) -> list[str]:
    return [p.detail for p in problems if p.kind == "plan"]


def test_a_run_trimmed_consistently_by_a_failing_trial_is_refused_naming_it(honest_run, tmp_path):
    assert check_run(honest_run).ok
    instance_id, _ = trim(honest_run, tmp_path / "model_a")
    check = check_run(tmp_path / "model_a")
    # Every record agrees with every other: only the plan names what is gone.
    assert {p.kind for p in check.problems} == {"plan"}, check.problems
    (line,) = plan_problems(check.problems)
    assert f"{instance_id} sample 0: in the plan its config and dataset give" in line
    assert check.planned == 11


def test_a_signed_bundle_of_a_trimmed_run_is_refused_by_verify_and_reproduce(
    honest_run, samples, tmp_path
):
    instance_id, _ = trim(honest_run, tmp_path / "model_a")
    key, allowed = ssh_key(tmp_path, "author")
    bundle = tmp_path / "model_a.bundle.tar.gz"
    author_bundle(tmp_path / "model_a", bundle, key)
    check = check_bundle(bundle, allowed_signers=allowed)
    assert check.signer == "author@example.org"  # the signature holds: it is the author's
    assert {p.kind for p in check.problems} == {"plan"}, check.problems
    assert any(f"{instance_id} sample 0" in line for line in plan_problems(check.problems))
    with pytest.raises(UserError, match=f"plan: .*{instance_id} sample 0"):
        reproduce(
            bundle,
            quiet(),
            run_dir=tmp_path / "again",
            cache_dir=tmp_path / "cache",
            backends=lambda: fake_backend(gold_scenario(samples)),
        )
    assert not (tmp_path / "again").exists()


def test_a_replan_that_differs_from_the_locked_trials_stops_a_reproduction(
    honest_run, samples, tmp_path
):
    # reproduce's own re-plan (run_experiment against the bundle's lockfile), past verify:
    # 12 trials planned here, 11 locked.
    trim(honest_run, tmp_path / "model_a")
    locked = read_lockfile(tmp_path / "model_a" / LOCKFILE_NAME)
    with pytest.raises(PlanMismatch) as raised:
        run_experiment(
            compose(["+experiment=model_a"]),
            quiet(),
            run_dir=tmp_path / "again",
            cache_dir=tmp_path / "cache",
            locked=locked,
            tolerate={"harness"},
            backend=fake_backend(gold_scenario(samples)),
        )
    (difference,) = [d for d in raised.value.differences if d.kind == "trials"]
    assert difference.detail.startswith("only in the second: ")


def test_a_lockfile_rewritten_after_the_first_session_is_named_by_run_json(
    honest_run, samples, tmp_path
):
    trim(honest_run, tmp_path / "model_a", run_json=False)
    check = check_run(tmp_path / "model_a")
    assert any(
        p.kind == "lockfile" and "at the run's first session (rewritten since?)" in p.detail
        for p in check.problems
    ), check.problems
    with pytest.raises(UserError, match=r"rewritten since.*refusing to resume"):
        run_experiment(
            compose(["+experiment=model_a"]),
            quiet(),
            run_dir=tmp_path / "model_a",
            cache_dir=tmp_path / "cache",
            backend=fake_backend(gold_scenario(samples)),
        )


def test_a_bundle_naming_a_dask_scheduler_is_reproduced_locally(honest_run, samples, tmp_path):
    run_dir = tmp_path / "model_a"
    shutil.copytree(honest_run, run_dir)
    # Nothing listens there: an attempt sent to it would never run.
    address = "tcp://127.0.0.1:9"
    rewrite_lockfile(
        run_dir, lambda data: data["config"].update(executor={"kind": "dask", "address": address})
    )
    assert check_run(run_dir).ok
    bundle = tmp_path / "model_a.bundle.tar.gz"
    write_bundle(run_dir, bundle)
    check = check_bundle(bundle)
    assert check.ok and UNSIGNED_NOTE in check.notes
    reproduction = reproduce(
        bundle,
        quiet(),
        run_dir=tmp_path / "again",
        cache_dir=tmp_path / "cache",
        backends=lambda: fake_backend(gold_scenario(samples)),
        reruns=0,
    )
    assert (reproduction.agreeing, len(reproduction.trials)) == (12, 12)
    for result in (tmp_path / "again" / "trials").glob("*/result.json"):
        assert all(a["lease"] is None for a in json.loads(result.read_text())["attempts"])


def test_the_reproducers_executor_is_its_command_lines(tmp_path, capsys):
    from evalrepro.cli import main
    from evalrepro.commands.reproduce import _executor

    assert _executor([]).kind == "local"
    chosen = _executor(["kind=dask", "address=tcp://scheduler.example:8786"])
    assert (chosen.kind, chosen.address) == ("dask", "tcp://scheduler.example:8786")
    assert main(["reproduce", str(tmp_path / "b.tar.gz"), "--executor", "kind"]) == 2
    assert "--executor kind: expected KEY=VALUE" in capsys.readouterr().err
