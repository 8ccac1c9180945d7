"""demo_polyglot's dataset is genuine: one small repo per language, built with the same
commits everywhere, whose patches apply at their base, and specs that share one base.

Without containers; the demo itself runs end to end in tests/test_languages.py, on the
base it shares with the real projects.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evalrepro.config.experiment import compose
from evalrepro.config.spec import base_of
from evalrepro.demo import DEMO_DIR
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.sources.demo_repos import build_repo, polyglot_names, repo_names

INSTANCES = [
    json.loads(line)
    for line in (DEMO_DIR / "polyglot" / "instances.jsonl").read_text().splitlines()
]


@pytest.fixture(scope="module")
def config():
    return compose(["+experiment=demo_polyglot"])


def test_there_is_one_instance_per_polyglot_repo_and_none_of_the_python_demo():
    assert sorted(i["repo"] for i in INSTANCES) == polyglot_names()
    assert len(polyglot_names()) >= 6
    assert not set(polyglot_names()) & set(repo_names())


@pytest.mark.parametrize("instance", INSTANCES, ids=lambda i: i["instance_id"])
def test_patches_apply_at_the_base_commit_built_here(tmp_path: Path, instance: dict):
    repo = tmp_path / "repo"
    commits = build_repo(instance["repo"], repo)
    assert list(commits.values())[-1] == instance["base_commit"]
    for patch in (instance["patch"], instance["test_patch"]):
        done = subprocess.run(
            ["git", "apply", "--check", "-"], cwd=repo, input=patch, text=True, capture_output=True
        )
        assert done.returncode == 0, done.stderr
    assert instance["FAIL_TO_PASS"], "a demo instance has a test its gold patch fixes"


def test_every_spec_shares_one_base_and_names_a_native_parser(config):
    dataset = config.dataset
    specs = [dataset.specs[repo]["1.0"] for repo in polyglot_names()]
    assert len({base_of(spec, config.environment.base.suite) for spec in specs}) == 1
    assert all(get_parser(spec.parser).family == "native" for spec in specs)
    assert dataset.test_ids == "native"
