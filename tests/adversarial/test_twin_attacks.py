"""The attacks that the canaries appended to one file missed (issue 35), run for real in
podman on their own: each is graded invalid (runner_tampered, a twin passed beside its
test, or a canary shaped like its neighbour passed where it must fail), and the gold
patch beside them still resolves. (The whole catalogue, these included, is
tests/adversarial/test_attacks.py's run.)
"""

from __future__ import annotations

import pytest

from evalrepro.config.experiment import compose
from evalrepro.records.trial import read_trial_result
from tests.adversarial.attacks import SHAPED_ATTACKS, TWIN_ATTACKS, write_adversary
from tests.podman_support import needs_podman, run_demo

pytestmark = needs_podman


def _graded(tmp, attacks):
    adversary = write_adversary(tmp, attacks, every_instance=False)
    run_demo(compose(adversary.config()), tmp / "run")
    results = {}
    for path in (tmp / "run" / "trials").glob("*/result.json"):
        result = read_trial_result(path)
        results[(result.instance_id, result.sample_index)] = result
    return adversary, results


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return _graded(tmp_path_factory.mktemp("twin-attacks"), TWIN_ATTACKS)


@pytest.fixture(scope="module")
def graded_shaped(tmp_path_factory):
    return _graded(tmp_path_factory.mktemp("shaped-attacks"), SHAPED_ATTACKS)


@pytest.mark.parametrize("attack", TWIN_ATTACKS, ids=lambda a: a.name)
def test_each_attack_is_caught_by_a_twin(graded, attack):
    adversary, results = graded
    index = next(i for (iid, i), a in adversary.expected.items() if a is attack)
    score = results[(attack.instance, index)].score
    assert (str(score.outcome), score.reason) == attack.expect, score.detail
    assert "twin" in score.detail


def test_the_gold_patch_beside_them_still_resolves(graded):
    adversary, results = graded
    # (The experiment plans every demo instance; those no attack names have no patch.)
    attacked = {a.instance for a in TWIN_ATTACKS}
    gold = [results[(iid, adversary.samples - 1)] for iid in sorted(attacked)]
    assert [str(r.score.outcome) for r in gold] == ["resolved"] * len(attacked)


@pytest.mark.parametrize("attack", SHAPED_ATTACKS, ids=lambda a: a.name)
def test_each_forgery_that_spares_the_appended_canaries_trips_a_shaped_one(graded_shaped, attack):
    # calc-4 has no twin: what catches each is the must-fail canary placed after
    # test_division_by_zero, calling what it calls.
    adversary, results = graded_shaped
    index = next(i for (iid, i), a in adversary.expected.items() if a is attack)
    result = results[(attack.instance, index)]
    assert (str(result.score.outcome), result.score.reason) == attack.expect, result.score.detail
    tampered = [c for c in result.attempts[-1].observation.canaries if c.tampered]
    assert tampered and all(c.twin_of is None and c.expect == "fail" for c in tampered)


def test_the_gold_patch_beside_the_shaped_attacks_still_resolves(graded_shaped):
    adversary, results = graded_shaped
    gold = results[("demo__calc-4", adversary.samples - 1)]
    assert str(gold.score.outcome) == "resolved", gold.score.detail
    assert not [c for c in gold.attempts[-1].observation.canaries if c.tampered]
