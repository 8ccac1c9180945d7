"""The pipeline without containers: plan, lock, execute, resume, verify and report, on the
demo experiment, with the fake builder and runtime of ``tests/fake_backend.py``.

Only the sandbox is fake (its test output is scripted per instance); the plan, the
lockfile, grading, the run directory, resume, verify and the reports are the real code.
These run in seconds; the same paths with real podman are tests/test_podman_demo.py and
tests/test_rundir.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from evalrepro.pipeline import lock_experiment, run_experiment
from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.publish.verify import check_run, compare
from evalrepro.sample import load_samples
from tests.fake_backend import Tests, fake_backend, gold_scenario, trial_dirs


class Interrupted(Exception):
    pass


@pytest.fixture(scope="module")
def config():
    return compose(["+experiment=demo"])


@pytest.fixture(scope="module")
def scenario(config):
    return gold_scenario({s.instance_id: s for s in load_samples(Path(config.dataset.instances))})


def quiet() -> Console:
    return Console(file=open("/dev/null", "w"), width=120)


def run(config, scenario, run_dir: Path, tmp_path: Path, **kwargs):
    backend = kwargs.pop("backend", None) or fake_backend(scenario)
    outcome = run_experiment(
        config, quiet(), run_dir=run_dir, cache_dir=tmp_path / "cache", backend=backend, **kwargs
    )
    return outcome, backend


def test_the_gold_run_resolves_every_instance_and_verifies(config, scenario, tmp_path):
    outcome, backend = run(config, scenario, tmp_path / "run", tmp_path)
    assert outcome.results.planned == 12 and outcome.results.resolved == 12
    assert outcome.report.gate_passed
    assert len(backend.runtime.ran) == 12
    check = check_run(tmp_path / "run")
    assert check.problems == [], check.problems


def test_a_patch_that_fixes_nothing_is_unresolved_by_the_real_grading(config, tmp_path):
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    broken = gold_scenario(samples)

    def scenario(instance_id: str, patch: str) -> Tests:
        if instance_id == "demo__ledger-2":
            return broken(instance_id, patch + "x")  # not the gold patch: F2P fail
        return broken(instance_id, patch)

    outcome, _ = run(config, scenario, tmp_path / "run", tmp_path)
    assert outcome.results.resolved == 11
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "demo__ledger-2" in json.dumps(results)


def test_an_interrupted_run_resumes_with_only_the_missing_trials(config, scenario, tmp_path):
    backend = fake_backend(scenario)
    started: list[str] = []

    def stop_after_five(label: str) -> None:
        started.append(label)
        if len(started) > 5:
            raise Interrupted(label)

    backend.runtime.before = stop_after_five
    config1 = config.model_copy(
        update={"environment": config.environment.model_copy(update={"max_workers": 1})}
    )
    with pytest.raises(Interrupted):
        run(config1, scenario, tmp_path / "run", tmp_path, backend=backend)
    done_first = {p.name for p in trial_dirs(tmp_path / "run") if (p / "result.json").exists()}
    assert len(done_first) == 5

    outcome, second = run(config, scenario, tmp_path / "run", tmp_path)
    assert outcome.results.planned == 12 and outcome.results.resolved == 12
    # Only the seven that had not finished ran again.
    assert len(second.runtime.ran) == 7 and not done_first & set(second.runtime.ran)
    assert check_run(tmp_path / "run").problems == []


def test_lock_is_deterministic_and_a_second_lock_keeps_the_pins(config, scenario, tmp_path):
    first = lock_experiment(
        config,
        quiet(),
        output=tmp_path / "a.lock.json",
        cache_dir=tmp_path / "c1",
        backend=fake_backend(scenario),
    )
    second = lock_experiment(
        config,
        quiet(),
        output=tmp_path / "b.lock.json",
        cache_dir=tmp_path / "c2",
        backend=fake_backend(scenario),
    )
    assert (tmp_path / "a.lock.json").read_bytes() == (tmp_path / "b.lock.json").read_bytes()
    assert differences(first, second) == []
    assert len(first.trials) == 12 and first.environment.builder == "fake"
    # Every image record is the builder's own, with its inputs, and is in the store.
    assert all(image.inputs for image in first.environment.images)
    backend = fake_backend(scenario)
    records = [image.record() for image in first.environment.images]
    assert len(backend.builder.missing(records)) == len(records)
    lock_experiment(
        config,
        quiet(),
        output=tmp_path / "a.lock.json",
        cache_dir=tmp_path / "c1",
        backend=backend,
    )
    assert backend.builder.missing(records) == []


def test_a_run_of_a_lockfile_refuses_a_plan_that_moved(config, scenario, tmp_path):
    lockfile = lock_experiment(
        config,
        quiet(),
        output=tmp_path / "a.lock.json",
        cache_dir=tmp_path / "c",
        backend=fake_backend(scenario),
    )
    moved = config.model_copy(
        update={"environment": config.environment.model_copy(update={"timeout": 99})}
    )
    with pytest.raises(UserError, match=r"no longer matches the lockfile.*timeout"):
        run(moved, scenario, tmp_path / "run", tmp_path, locked=lockfile)


def test_verify_of_two_gold_runs_finds_them_comparable(config, scenario, tmp_path):
    run(config, scenario, tmp_path / "one", tmp_path)
    run(config, scenario, tmp_path / "two", tmp_path)
    comparison = compare(tmp_path / "one", tmp_path / "two", same_target=True)
    assert comparison.differences == []
    assert read_lockfile(tmp_path / "one").trials == read_lockfile(tmp_path / "two").trials


def test_an_edited_result_is_caught_by_verify(config, scenario, tmp_path):
    run(config, scenario, tmp_path / "run", tmp_path)
    result = next(p / "result.json" for p in trial_dirs(tmp_path / "run"))
    data = json.loads(result.read_text())
    data["score"]["outcome"] = "unresolved"
    result.write_text(json.dumps(data))
    problems = check_run(tmp_path / "run").problems
    assert problems and any(result.parent.name in str(p) for p in problems)
