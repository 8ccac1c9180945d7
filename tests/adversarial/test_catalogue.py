"""The threat model's table of attack classes is the catalogue the adversarial tests run."""

from __future__ import annotations

from pathlib import Path

from evalrepro.grade.score import JUDGEMENT
from tests.adversarial.attacks import ATTACKS

README = (Path(__file__).resolve().parents[2] / "docs" / "threat-model.md").read_text()


def test_every_attack_is_in_the_readme_with_its_score():
    for attack in ATTACKS:
        outcome, reason = attack.expect
        row = f"| {attack.kind} | `{attack.name}` | {attack.what} | {outcome} (`{reason}`) |"
        assert row in README, f"docs/threat-model.md lacks: {row}"


def test_attack_names_are_unique_and_scores_are_real_reasons():
    assert len({a.name for a in ATTACKS}) == len(ATTACKS)
    reasons = {reason for reason, *_ in JUDGEMENT} | {"tests_passed", "tests_failed"}
    assert {a.expect[1] for a in ATTACKS} <= reasons


def test_only_the_controls_may_resolve():
    for attack in ATTACKS:
        assert (attack.expect[0] == "resolved") == (attack.kind == "control"), attack.name
