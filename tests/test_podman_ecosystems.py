"""An ecosystem's test infrastructure is protected in a real Go repository, in podman.

A tiny Go module whose tests check through a helper module that go.mod's replace line
points at (as a project points testify at a fork). Two instances on one base, run in
one experiment with the dataset's ``protection.ecosystems`` left ``auto`` (the
``gotest`` parser's: ``go``):

* ``calc-1``: the real fix: resolved (the toolchain and the test command work);
* ``calc-2``: no fix, a lenient copy of the helper module and go.mod's replace line
  pointed at it, so the failing test passes: go.mod is restored to the base before the
  tests run, the failing test fails again, and the trial is unresolved, with go.mod
  recorded as the test infrastructure it changed.

Without the ``go`` ecosystem (Python's patterns alone: ``ecosystems: []``) the second
patch resolves: go.mod is no pattern of Python's. That run is not repeated here (CI's
budget); the unit tests hold that the resolved patterns differ exactly so.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from evalrepro.config.experiment import compose
from evalrepro.records.trial import read_trial_result
from tests.podman_support import needs_podman, polyglot_debs, run_demo

pytestmark = needs_podman

GO_MOD = """module example.com/calc

go 1.19

require example.com/check v0.0.0

replace example.com/check => ./third_party/check
"""
CHECK = """package check

import "testing"

// Equal fails the test when got is not want.
func Equal(t *testing.T, got, want int) {
\tt.Helper()
\tif got != want {
\t\tt.Errorf("got %d, want %d", got, want)
\t}
}
"""
LENIENT = """package check

import "testing"

// Equal never fails.
func Equal(t *testing.T, got, want int) {}
"""
BUGGY = """package calc

// Clamp limits x to [lo, hi].
func Clamp(x, lo, hi int) int {
\tif x < lo {
\t\treturn lo
\t}
\treturn x
}
"""
FIXED = BUGGY.replace("\treturn x\n}", "\tif x > hi {\n\t\treturn hi\n\t}\n\treturn x\n}")
OLD_TESTS = """package calc

import (
\t"testing"

\t"example.com/check"
)

func TestLow(t *testing.T) { check.Equal(t, Clamp(-1, 0, 5), 0) }
"""
NEW_TESTS = OLD_TESTS + "\nfunc TestHigh(t *testing.T) { check.Equal(t, Clamp(9, 0, 5), 5) }\n"


def git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def diff(repo, files: dict[str, str]) -> str:
    """The git diff that writes ``files`` over the base (new files included)."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "--all")
    patch = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    return patch


@pytest.fixture
def go_dataset(tmp_path):
    repo = tmp_path / "calc"
    base = {
        "go.mod": GO_MOD,
        "third_party/check/go.mod": "module example.com/check\n\ngo 1.19\n",
        "third_party/check/check.go": CHECK,
        "calc.go": BUGGY,
        "calc_test.go": OLD_TESTS,
    }
    for name, text in base.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "initial")
    forged = diff(
        repo,
        {
            "go.mod": GO_MOD.replace("./third_party/check", "./third_party/lenient"),
            "third_party/lenient/go.mod": "module example.com/check\n\ngo 1.19\n",
            "third_party/lenient/check.go": LENIENT,
        },
    )
    common = {
        "repo": "me/calc",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "test_patch": diff(repo, {"calc_test.go": NEW_TESTS}),
        "FAIL_TO_PASS": ["TestHigh"],
        "PASS_TO_PASS": ["TestLow"],
        "version": "1",
    }
    instances = [
        {**common, "instance_id": "me__calc-1", "patch": diff(repo, {"calc.go": FIXED})},
        {**common, "instance_id": "me__calc-2", "patch": forged},
    ]
    (tmp_path / "instances.jsonl").write_text("".join(json.dumps(i) + "\n" for i in instances))
    conf = tmp_path / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "dataset" / "gocalc.yaml").write_text(
        f"name: gocalc\ninstances: {tmp_path / 'instances.jsonl'}\ntest_ids: swebench\n"
        f"repos:\n  me/calc: {{kind: local, path: '{repo}'}}\n"
        "specs:\n  me/calc:\n    '1':\n      packages: []\n"
        # The base the language tests build (golang-go among its toolchains).
        f"      debs: [{', '.join(polyglot_debs())}]\n"
        "      test_cmd: GOPROXY=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go test -v\n"
        "      test_directives: ['./...']\n      parser: gotest\n"
    )
    (conf / "experiment" / "gocalc.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /dataset: gocalc\nname: gocalc\n"
        "environment:\n  timeout: 120\n"
    )
    return tmp_path, conf


def test_a_go_mod_replace_line_that_forges_a_pass_is_restored(go_dataset):
    root, conf = go_dataset
    config = compose(["+experiment=gocalc"], config_dir=conf)
    started = time.monotonic()
    results, text = run_demo(config, root / "run")
    print(f"the go trials took {time.monotonic() - started:.1f} s")
    lines = {line.instance_id: (str(line.outcome), line.reason) for line in results.trials}
    assert lines == {
        "me__calc-1": ("resolved", "tests_passed"),
        "me__calc-2": ("unresolved", "tests_failed"),
    }, text
    protected = {
        result.instance_id: [
            (p.path, p.reason, p.action) for p in result.attempts[-1].observation.protected
        ]
        for result in map(read_trial_result, (root / "run" / "trials").glob("*/result.json"))
    }
    # The lenient module's own go.mod is a go.mod too: removed (it is not at the base).
    assert protected == {
        "me__calc-1": [],
        "me__calc-2": [
            ("go.mod", "matches go.mod", "restored"),
            ("third_party/lenient/go.mod", "matches go.mod", "restored"),
        ],
    }
