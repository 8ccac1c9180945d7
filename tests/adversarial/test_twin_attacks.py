"""The attacks that the canaries appended to one file missed (issue 35), run for real in
podman on their own: each is graded invalid (runner_tampered, a twin passed beside its
test), and the gold patch beside them still resolves. (The whole catalogue, these
included, is tests/adversarial/test_attacks.py's run.)
"""

from __future__ import annotations

import pytest

from evalrepro.config.experiment import compose
from evalrepro.records.trial import read_trial_result
from tests.adversarial.attacks import TWIN_ATTACKS, write_adversary
from tests.podman_support import needs_podman, run_demo

pytestmark = needs_podman


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("twin-attacks")
    adversary = write_adversary(tmp, TWIN_ATTACKS, every_instance=False)
    run_demo(compose(adversary.config()), tmp / "run")
    results = {}
    for path in (tmp / "run" / "trials").glob("*/result.json"):
        result = read_trial_result(path)
        results[(result.instance_id, result.sample_index)] = result
    return adversary, results


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
