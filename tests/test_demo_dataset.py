"""The demo dataset is genuine, and every demo trial ends as tests/demo_expectations.py says.

Runs locally, without containers, through :mod:`tests.demo_harness` (a stand-in for the
eval script: apply, reset test files, apply the test patch, run, parse, grade).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrepro.config.protection import TestProtection
from evalrepro.demo import INSTANCES_PATH, PREDICTIONS_DIR
from evalrepro.plan.testspec import resolve_protection
from evalrepro.rules.patchcheck import check_patch
from evalrepro.sources.demo_repos import build_repo, repo_names
from tests import demo_harness as harness
from tests.demo_expectations import (
    DOES_NOT_APPLY,
    EDITS_TEST_FILES,
    EXPECTED,
    FORGES_OUTPUT,
    SUSPECT,
    TIMES_OUT,
    USES_NETWORK,
)

TARGETS = ("model_a", "model_b")
#: Trials a parser still grades wrongly (another component's bug, tracked here so that the
#: fix shows up): (target, instance_id) -> why.
LOOP_TIMEOUT = 3
INSTANCES: list[dict] = [
    json.loads(line) for line in INSTANCES_PATH.read_text(encoding="utf-8").splitlines()
]
PREDICTIONS: dict[str, list[dict]] = {
    target: [
        json.loads(line)
        for line in (PREDICTIONS_DIR / f"{target}.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for target in TARGETS
}
PATCHES = {
    (target, record["instance_id"]): record["model_patch"]
    for target, records in PREDICTIONS.items()
    for record in records
}
TRIALS = [(target, instance) for target in TARGETS for instance in INSTANCES]


@pytest.fixture(scope="session")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return harness.build_all(tmp_path_factory.mktemp("demo_repos"))


def _id(instance: dict) -> str:
    return instance["instance_id"]


# --- the files -------------------------------------------------------------------------


def test_instance_ids_are_unique_and_name_their_repo() -> None:
    ids = [instance["instance_id"] for instance in INSTANCES]
    assert len(ids) == len(set(ids)) >= 12
    for instance in INSTANCES:
        name = instance["repo"].removeprefix("demo/")
        assert instance["instance_id"].startswith(f"demo__{name}-")
    assert {instance["repo"] for instance in INSTANCES} == {f"demo/{n}" for n in repo_names()}


def test_instances_have_the_swebench_fields() -> None:
    fields = {
        "instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement",
        "hints_text", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "created_at",
    }  # fmt: skip
    for instance in INSTANCES:
        assert set(instance) == fields
        assert instance["version"] == "1.0"
        assert instance["FAIL_TO_PASS"] and isinstance(instance["PASS_TO_PASS"], list)
        assert not set(instance["FAIL_TO_PASS"]) & set(instance["PASS_TO_PASS"])
        assert instance["patch"].startswith("diff --git ")
        assert instance["test_patch"].startswith("diff --git ")
        # The gold patch stays out of the test files, the test patch out of the code.
        code, tests = (
            harness.touched_files(instance["patch"]),
            harness.touched_files(instance["test_patch"]),
        )
        assert all(path.startswith("tests/") for path in tests)
        assert not any(path.startswith("tests/") for path in code)


def test_each_model_predicts_every_instance_once() -> None:
    for target, records in PREDICTIONS.items():
        assert [r["instance_id"] for r in records] == [_id(i) for i in INSTANCES]
        assert {r["model_name_or_path"] for r in records} == {target}


def test_expectations_cover_every_trial_and_gold_resolves_all() -> None:
    ids = [_id(instance) for instance in INSTANCES]
    assert set(EXPECTED) == {(t, i) for t in ("gold", *TARGETS) for i in ids}
    assert set(EXPECTED.values()) <= {"resolved", "unresolved", "invalid"}
    assert all(EXPECTED["gold", i] == "resolved" for i in ids)


def test_model_a_beats_model_b_with_discordant_pairs_both_ways() -> None:
    won = {t: {i for (u, i), s in EXPECTED.items() if u == t and s == "resolved"} for t in TARGETS}
    assert len(won["model_a"]) > len(won["model_b"])
    assert won["model_a"] - won["model_b"] and won["model_b"] - won["model_a"]


# --- the repos -------------------------------------------------------------------------


def test_build_repo_gives_the_same_shas_on_every_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = {name: build_repo(name, tmp_path / "a" / name) for name in repo_names()}
    # A second build under a hostile user config and environment.
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text(
        "[core]\n\tautocrlf = true\n\thooksPath = /nonexistent\n[commit]\n\tgpgSign = true\n"
        "[user]\n\tname = Someone Else\n\temail = else@example.com\n"
    )
    (home / ".config" / "git" / "ignore").write_text("*.py\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2001-01-01T00:00:00")
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")
    second = {name: build_repo(name, tmp_path / "b" / name) for name in repo_names()}
    assert first == second
    for shas in first.values():
        assert next(iter(shas)) == "initial" and len(shas) >= 3
        assert all(len(sha) == 40 for sha in shas.values())
    bases = {instance["base_commit"] for instance in INSTANCES}
    assert bases <= {sha for shas in first.values() for sha in shas.values()}


def test_build_repo_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        build_repo("calc", tmp_path)


# --- the instances ---------------------------------------------------------------------


@pytest.mark.parametrize("instance", INSTANCES, ids=_id)
def test_gold_patch_fixes_a_real_bug(
    repos: dict[str, Path], instance: dict, tmp_path: Path
) -> None:
    f2p, p2p = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
    repo = harness.checkout(repos, instance, tmp_path / "before")
    harness.reset_and_apply_test_patch(repo, instance)
    before = harness.run_tests(repo, instance)
    # F2P and P2P together are exactly the tests that ran.
    assert set(before.truth) == set(f2p) | set(p2p)
    parsed = harness.parse(instance, before)
    assert not parsed.problems
    assert all(parsed.statuses[t] not in harness.PASSING for t in f2p)
    assert all(parsed.statuses[t] in harness.PASSING for t in p2p)
    assert before.exit_code != 0

    after = harness.run_trial(repos, instance, instance["patch"], tmp_path / "gold")
    assert after.outcome == EXPECTED["gold", _id(instance)] == "resolved"
    assert after.run is not None and after.run.exit_code == 0


# --- the predictions -------------------------------------------------------------------


@pytest.mark.parametrize(("target", "instance"), TRIALS, ids=[f"{t}-{_id(i)}" for t, i in TRIALS])
def test_prediction_ends_as_expected(
    repos: dict[str, Path], target: str, instance: dict, tmp_path: Path
) -> None:
    key = (target, _id(instance))
    patch = PATCHES[key]
    repo = harness.checkout(repos, instance, tmp_path / "check")
    applies = (
        bool(patch) and harness.git(repo, "apply", "--check", "-", stdin=patch).returncode == 0
    )
    assert applies == (bool(patch) and key not in DOES_NOT_APPLY)
    if key in USES_NETWORK:
        assert "urlopen(" in patch
    timeout = LOOP_TIMEOUT if key in TIMES_OUT else harness.TEST_TIMEOUT

    trial = harness.run_trial(repos, instance, patch, tmp_path, timeout)

    # The stand-in has no patch checks: for a suspect patch it shows what the tests
    # alone say (they fail it); the harness scores it invalid by policy.
    assert trial.outcome == ("unresolved" if key in SUSPECT else EXPECTED[key])
    if key in SUSPECT:
        assert EXPECTED[key] == "invalid"
        check = check_patch(patch.encode(), resolve_protection(TestProtection(), ["tests/x.py"]))
        assert SUSPECT[key] in {finding.rule for finding in check.suspects}
    assert trial.applied == (bool(patch) and key not in DOES_NOT_APPLY)
    assert (trial.run is None) == (key in TIMES_OUT or not trial.applied)
    if key in FORGES_OUTPUT:
        # The forgery is real: the line is in the log, after the runner's own totals,
        # while the runner recorded a failure for that test.
        assert trial.run is not None
        forged = FORGES_OUTPUT[key]
        assert forged in trial.run.log
        assert trial.run.log.rindex(forged) > trial.run.log.rindex(" in 0.")
        assert any(trial.run.truth[t] == "FAILED" for t in instance["FAIL_TO_PASS"])


@pytest.mark.parametrize("key", sorted(EDITS_TEST_FILES), ids="-".join)
def test_test_file_edits_would_cheat_without_the_reset(
    repos: dict[str, Path], key: tuple[str, str], tmp_path: Path
) -> None:
    instance = next(i for i in INSTANCES if _id(i) == key[1])
    patch = PATCHES[key]
    edited = set(harness.touched_files(patch)) & set(harness.touched_files(instance["test_patch"]))
    assert edited
    # Skipping the reset, the test patch still applies on top and the cheat works.
    repo = harness.checkout(repos, instance, tmp_path / "repo")
    assert harness.apply_model_patch(repo, patch)
    assert harness.git(repo, "apply", "-", stdin=instance["test_patch"]).returncode == 0
    run = harness.run_tests(repo, instance)
    assert harness.grade(harness.parse(instance, run), instance) == "resolved"
    assert EXPECTED[key] == "unresolved"
