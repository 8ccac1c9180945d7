"""A hostile gold patch under ``evalrepro validate``, in real podman: the gold patch of a
dataset's instance is an adversary too (a dataset can come from anyone). One that fixes
nothing and replaces pytest's ``Function.runtest`` with the built-in ``int`` makes every
test pass after it, the instance's new test included; the after run's must-fail canary
passes too, so its score is ``runner_tampered`` and validation trusts nothing it
reported: the instance is ``run_untrusted``, named so in the report, and is not written
into the validated dataset. It settles the instance: no more runs are made of it. An
honest instance beside it validates as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrepro.sources.commits import commit_directory, init_repository
from tests.adversarial.attacks import RUNTEST_BUILTIN
from tests.podman_support import needs_podman
from tests.realdata import PACKAGES, TEST_CMD, Edit, diff
from tests.test_podman_validation import AUTHOR, BASE, FIX, ID, TEST_ADD, validate

pytestmark = needs_podman

#: Fixes nothing: `add` still subtracts. Every test reports PASSED after it.
HOSTILE = Edit(
    "quirk/__init__.py", "def double(x):", RUNTEST_BUILTIN.lstrip() + "\n\ndef double(x):"
)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    git_dir = init_repository(root / "repo.git", bare=True)
    tree = root / "tree"
    for path, text in BASE.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    base = commit_directory(tree, git_dir, signature=AUTHOR, message="quirk", branch="main")
    instances = [
        {
            "instance_id": f"quirk__{name}",
            "repo": "example/quirk",
            "base_commit": base,
            "patch": diff(tree, gold),
            "test_patch": diff(tree, (TEST_ADD,)),
            "version": "1.0",
        }
        for name, gold in (("valid", (FIX,)), ("hostile", (HOSTILE,)))
    ]
    conf = root / "conf"
    for folder in ("dataset", "data"):
        (conf / folder).mkdir(parents=True)
    (conf / "data" / "quirks.jsonl").write_text("".join(json.dumps(i) + "\n" for i in instances))
    spec = {"packages": PACKAGES, "test_cmd": TEST_CMD, "parser": "pytest_full"}
    dataset = {
        "name": "quirks",
        "instances": "data/quirks.jsonl",
        "test_ids": "native",
        "repos": {"example/quirk": {"kind": "local", "path": "../repo.git"}},
        "specs": {"example/quirk": {"1.0": spec}},
    }
    (conf / "dataset" / "quirks.yaml").write_text(json.dumps(dataset) + "\n")
    return root


def test_a_gold_patch_that_tampers_with_the_runner_is_not_validated(hostile, tmp_path):
    report = validate(hostile, tmp_path, ["valid", "hostile"], 2)
    found = {i.instance_id.removeprefix("quirk__"): i for i in report.instances}
    bad = found["hostile"]
    assert bad.verdict == "run_untrusted", bad
    assert bad.detail.startswith("after the gold patch, run 1: runner_tampered: canary "), bad
    assert bad.fail_to_pass == [] and bad.pass_to_pass == []
    # The tampered run settles it: one run of each side, and the report says why.
    assert bad.bound is not None
    assert (bad.bound.runs_before, bad.bound.runs_after, bad.bound.planned) == (1, 1, 2)
    assert bad.bound.stopped.startswith("after 1 run(s) of each side: run_untrusted whatever")
    # The honest instance beside it: every planned run, and its lists.
    good = found["valid"]
    assert (good.verdict, good.fail_to_pass) == ("valid", [f"{ID}test_add"])
    assert good.bound is not None
    assert (good.bound.runs_before, good.bound.runs_after, good.bound.stopped) == (2, 2, "")
    assert good.bound.miss_probability == pytest.approx(0.7**2)
    # Only the honest instance is in the validated dataset.
    written = [json.loads(line) for line in (tmp_path / "quirks.jsonl").read_text().splitlines()]
    assert [row["instance_id"] for row in written] == ["quirk__valid"]
