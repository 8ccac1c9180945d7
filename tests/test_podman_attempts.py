"""Infrastructure failures are retried as attempts of the same trial; results are not."""

from __future__ import annotations

import dataclasses
import os

import pytest

from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.plan.plan import build_plan
from evalrepro.run.backend import Backend
from evalrepro.run.executors import run_trials
from tests.podman_support import cache_dir, demo_config, needs_podman

pytestmark = needs_podman


@pytest.fixture(scope="module")
def plan():
    config = demo_config("model_b")
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    return backend.runtime, build_plan(config, backend.builder, cache_dir())


def execute(runtime, run_dir, trials, max_attempts=3):
    """The planned trials run by the local executor, as ``evalrepro run`` runs them."""
    environment = demo_config("model_b").environment.model_copy(update={"timeout": 30})
    return run_trials(
        trials,
        runtime=runtime,
        run_dir=run_dir,
        environment=environment,
        executor=LocalExecutorConfig(max_workers=2, max_attempts=max_attempts),
    )


def with_missing_image(planned):
    chain = planned.image
    # Trials run the locked Id: an image gone from the store has neither its tag nor its Id.
    gone = chain.layers[-1].model_copy(
        update={"tag": "localhost/evalrepro-instance:gone", "image_digest": "sha256:" + "0" * 64}
    )
    return dataclasses.replace(
        planned, image=chain.model_copy(update={"layers": [*chain.layers[:-1], gone]})
    )


def test_a_missing_image_is_an_infrastructure_error_retried_up_to_max_attempts(plan, tmp_path):
    backend, planned_trials = plan
    broken = with_missing_image(planned_trials.trials[2])
    (result,) = execute(backend, tmp_path, [broken])
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert result.attempts[0].reason == "planned"
    assert all("infrastructure error" in a.reason for a in result.attempts[1:])
    assert "podman" in result.attempts[0].observation.infrastructure_error
    assert result.score.outcome == "invalid"
    assert result.score.reason == "infrastructure_error"
    # The same trial, every attempt: retries never change what is being measured.
    assert {a.trial_id for a in result.attempts} == {broken.trial.trial_id}


def test_rejected_patches_and_failing_tests_are_never_retried(plan, tmp_path):
    backend, planned_trials = plan
    by_id = {p.sample.instance_id: p for p in planned_trials.trials}
    chosen = [by_id["demo__textkit-4"], by_id["demo__calc-4"], by_id["demo__calc-2"]]
    results = execute(backend, tmp_path, chosen)
    assert [(r.score.reason, len(r.attempts)) for r in results] == [
        ("patch_rejected", 1),
        ("tests_failed", 1),
        ("patch_empty", 1),  # the empty patch: scored, never run
    ]


def test_the_planned_trial_count_is_the_dataset_times_samples(plan):
    _, planned_trials = plan
    assert len(planned_trials.trials) == 12
    assert len({p.trial.trial_id for p in planned_trials.trials}) == 12


@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_as_root_cgroup_limits_are_enforced_and_gold_resolves(tmp_path):
    from tests.podman_support import run_demo

    results, _ = run_demo(demo_config("demo"), tmp_path)
    assert results.resolved == 12
    from evalrepro.records.trial import read_trial_result

    result = read_trial_result(next((tmp_path / "trials").glob("*/result.json")))
    assert result.limits["memory"].startswith("cgroup")
