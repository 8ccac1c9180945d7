"""A user's own dataset is config only: a local git repo or a pinned archive, in podman."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tarfile

import pytest

from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from tests.podman_support import needs_podman, run_demo

pytestmark = needs_podman

BUGGY = "def clamp(x, lo, hi):\n    return max(lo, x)\n"
FIXED = "def clamp(x, lo, hi):\n    return min(hi, max(lo, x))\n"
OLD_TESTS = "from mathx import clamp\n\n\ndef test_low():\n    assert clamp(-1, 0, 5) == 0\n"
NEW_TESTS = OLD_TESTS + "\n\ndef test_high():\n    assert clamp(9, 0, 5) == 5\n"


def git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def diff(repo, path, new_text):
    old = (repo / path).read_text()
    (repo / path).write_text(new_text)
    patch = git(repo, "diff")
    (repo / path).write_text(old)
    return patch


@pytest.fixture
def user_repo(tmp_path):
    repo = tmp_path / "mathx"
    (repo / "tests").mkdir(parents=True)
    (repo / "mathx.py").write_text(BUGGY)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_mathx.py").write_text(OLD_TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "initial")
    instance = {
        "instance_id": "me__mathx-1",
        "repo": "me/mathx",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "patch": diff(repo, "mathx.py", FIXED),
        "test_patch": diff(repo, "tests/test_mathx.py", NEW_TESTS),
        "FAIL_TO_PASS": ["tests/test_mathx.py::test_high"],
        "PASS_TO_PASS": ["tests/test_mathx.py::test_low"],
        "version": "1",
    }
    (tmp_path / "instances.jsonl").write_text(json.dumps(instance) + "\n")
    return tmp_path, repo


def write_configs(root, source_yaml, packages='["pytest==8.3.4"]'):
    conf = root / "conf"
    (conf / "dataset").mkdir(parents=True, exist_ok=True)
    (conf / "experiment").mkdir(exist_ok=True)
    (conf / "dataset" / "mine.yaml").write_text(
        f"name: mine\ninstances: {root / 'instances.jsonl'}\ntest_ids: native\n"
        f"repos:\n  me/mathx: {source_yaml}\n"
        "specs:\n  me/mathx:\n    '1':\n"
        f"      packages: {packages}\n"
        "      test_cmd: pytest -rA -v -p no:cacheprovider\n      parser: pytest_full\n"
    )
    (conf / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /dataset: mine\nname: mine\n"
        "environment:\n  timeout: 60\n"
    )
    return conf


def test_a_local_git_repo_is_evaluated_from_config_alone(user_repo):
    root, repo = user_repo
    conf = write_configs(root, f"{{kind: local, path: 'file://{repo}'}}")
    results, _ = run_demo(compose(["+experiment=mine"], config_dir=conf), root / "run")
    assert (results.resolved, results.planned) == (1, 1)


def test_a_source_archive_is_checked_against_its_pinned_sha256(user_repo):
    root, repo = user_repo
    archive = root / "mathx.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(repo, arcname="mathx")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    conf = write_configs(root, f"{{kind: archive, path: '{archive}', sha256: '{digest}'}}")
    results, _ = run_demo(compose(["+experiment=mine"], config_dir=conf), root / "run")
    assert results.resolved == 1

    wrong = write_configs(root, f"{{kind: archive, path: '{archive}', sha256: '{'0' * 64}'}}")
    with pytest.raises(UserError, match=r"has sha256 .* the dataset pins 0000"):
        run_demo(compose(["+experiment=mine"], config_dir=wrong), root / "run2")


def test_an_image_that_cannot_be_built_makes_its_trials_infrastructure_errors(user_repo):
    root, repo = user_repo
    conf = write_configs(root, f"{{kind: local, path: '{repo}'}}", packages='["pytest==0.0.0.404"]')
    results, text = run_demo(compose(["+experiment=mine"], config_dir=conf), root / "run")
    assert (results.invalid, results.planned) == (1, 1)
    assert results.trials[0].reason == "infrastructure_error"
    # The pin cannot be resolved: named, before any build.
    assert "env layer failed" in text and "cannot resolve the wheels of pytest==0.0.0.404" in text
