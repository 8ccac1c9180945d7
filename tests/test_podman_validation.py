"""``evalrepro validate`` in real podman, on a small project made to be awkward: a dataset
with no test lists at all gets them derived, and each kind of broken instance gets its own
verdict: flaky tests (random on purpose), a gold patch that breaks another test, a test
patch that catches nothing, an environment that cannot import the package, a test that
fails only after another test ran (found by re-running it alone). The derived
real-project lists are checked in tests/test_podman_realdata.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.records.validation import ValidationReport
from evalrepro.sources.commits import Signature, commit_directory, init_repository
from evalrepro.validation.dataset import report_path
from tests.podman_support import needs_podman
from tests.realdata import PACKAGES, TEST_CMD, Edit, diff
from tests.test_podman_realdata import evalrepro

pytestmark = needs_podman

AUTHOR = Signature("dataset author", "author@example.invalid", 1_700_000_000)
BASE = {
    "quirk/__init__.py": "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n",
    "tests/test_quirk.py": "from quirk import add, double\n\n\n"
    "def test_double():\n    assert double(2) == 4\n",
}
FIX = Edit("quirk/__init__.py", "return a - b", "return a + b")
TEST_ADD = Edit(
    "tests/test_quirk.py",
    "def test_double():",
    "def test_add():\n    assert add(2, 3) == 5\n\n\ndef test_double():",
)
#: Two tests that fail half the time each, independently, in every run.
COINS = Edit(
    "tests/test_coin.py",
    None,
    "import random\n\n\ndef test_coin_one():\n    assert random.random() < 0.5\n\n\n"
    "def test_coin_two():\n    assert random.random() < 0.5\n",
)
#: The second test fails whenever the first ran before it in the same process: in every
#: run, on both sides; alone it passes.
ORDER = Edit(
    "tests/test_order.py",
    None,
    "_state = []\n\n\ndef test_a_leaves_state():\n    _state.append(1)\n\n\n"
    "def test_b_needs_none():\n    assert _state == []\n",
)
ID = "tests/test_quirk.py::"


@pytest.fixture(scope="module")
def quirks(tmp_path_factory) -> Path:
    """The project's repository and a config tree whose dataset declares no lists."""
    root = tmp_path_factory.mktemp("quirks")
    git_dir = init_repository(root / "repo.git", bare=True)
    tree = root / "tree"
    for path, text in BASE.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    base = commit_directory(tree, git_dir, signature=AUTHOR, message="quirk", branch="main")
    broken = root / "broken"
    shutil.copytree(tree, broken)
    init = broken / "quirk/__init__.py"
    init.write_text("import a_module_nobody_installed\n\n" + init.read_text())
    broken_base = commit_directory(
        broken, git_dir, signature=AUTHOR, message="needs a module", parent=base, branch="broken"
    )

    def instance(
        name: str, test_patch: tuple, gold: tuple, commit: str = base, version: str = "1.0"
    ) -> dict:
        where = broken if commit == broken_base else tree
        return {
            "instance_id": f"quirk__{name}",
            "repo": "example/quirk",
            "base_commit": commit,
            "patch": diff(where, gold),
            "test_patch": diff(where, test_patch),
            "version": version,
        }

    instances = [
        instance("valid", (TEST_ADD,), (FIX,)),
        instance("flaky", (TEST_ADD, COINS), (FIX,)),
        instance("breaks", (TEST_ADD,), (FIX, Edit("quirk/__init__.py", "x * 2", "x * 3"))),
        instance(
            "nothing",
            (
                Edit(
                    "tests/test_quirk.py",
                    "def test_double():",
                    "def test_zero():\n    assert double(0) == 0\n\n\ndef test_double():",
                ),
            ),
            (FIX,),
        ),
        instance("env", (TEST_ADD,), (FIX,), commit=broken_base),
        instance("order", (TEST_ADD, ORDER), (FIX,)),
        # Its spec's test command is no command at all: bash exits 127.
        instance("nocommand", (TEST_ADD,), (FIX,), version="2.0"),
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
        "specs": {"example/quirk": {"1.0": spec, "2.0": spec | {"test_cmd": "nosuch-test-runner"}}},
    }
    (conf / "dataset" / "quirks.yaml").write_text(json.dumps(dataset) + "\n")
    return root


def validate(
    quirks: Path, where: Path, instances: list[str], repeats: int, *extra: str
) -> ValidationReport:
    where.mkdir(parents=True, exist_ok=True)
    output = where / "quirks.jsonl"
    selected = "dataset.instance_ids=[" + ",".join(f"quirk__{i}" for i in instances) + "]"
    evalrepro(
        "validate", "+dataset=quirks", selected, f"validation.repeats={repeats}", *extra,
        "--config-dir", str(quirks / "conf"), "--runs", str(where / "runs"),
        "--output", str(output), "--html", str(where / "validation.html"), cwd=where,
    )  # fmt: skip
    return ValidationReport.model_validate_json(report_path(output).read_text())


def test_a_dataset_without_lists_is_refused_for_evaluation_in_one_line(quirks, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", "run", "+experiment=demo", "dataset=quirks",
         "--config-dir", str(quirks / "conf")],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "declare no FAIL_TO_PASS / PASS_TO_PASS" in line and "evalrepro validate" in line


def test_each_broken_instance_gets_the_verdict_that_says_why(quirks, tmp_path):
    report = validate(quirks, tmp_path, ["valid", "breaks", "nothing", "env"], repeats=1)
    found = {i.instance_id.removeprefix("quirk__"): i for i in report.instances}
    assert {name: i.verdict for name, i in found.items()} == {
        "valid": "valid",
        "breaks": "gold_breaks_tests",
        "nothing": "no_fail_to_pass",
        "env": "tests_not_run",
    }
    assert found["valid"].fail_to_pass == [f"{ID}test_add"]
    assert found["valid"].pass_to_pass == [f"{ID}test_double"]
    assert found["breaks"].pass_to_fail == [f"{ID}test_double"]
    assert "no test passed" in found["env"].detail
    # Only what can be resolved is in the validated dataset, with its derived lists.
    (written,) = [json.loads(line) for line in (tmp_path / "quirks.jsonl").read_text().splitlines()]
    assert written["instance_id"] == "quirk__valid"
    assert (written["FAIL_TO_PASS"], written["FLAKY"]) == ([f"{ID}test_add"], [])


def test_a_test_command_that_cannot_start_is_said_not_to_have_run(quirks, tmp_path):
    # Not a log to parse: the command did not run, and the report says why.
    report = validate(quirks, tmp_path, ["nocommand"], repeats=1)
    (found,) = report.instances
    assert found.verdict == "tests_not_run"
    assert found.detail == (
        "before the gold patch, run 1: the test command did not run: exit status 127, "
        "the shell found no such command"
    )
    assert found.bound is not None and found.bound.runs_before == 1


def test_tests_made_flaky_on_purpose_are_found_and_left_out_of_the_lists(quirks, tmp_path):
    # Each coin test passes with probability 1/2 in every run: with 5 runs a side, one is
    # missed only if all 10 of its runs agree (2 * 2**-10 per side pair, about 1 in 256
    # for one coin); both are missed about once in 65536.
    report = validate(quirks, tmp_path, ["flaky"], repeats=5)
    (found,) = report.instances
    coins = {"tests/test_coin.py::test_coin_one", "tests/test_coin.py::test_coin_two"}
    assert found.verdict == "flaky_tests", found.detail
    assert found.flaky and set(found.flaky) <= coins
    assert found.fail_to_pass == [f"{ID}test_add"]
    assert not coins & {*found.fail_to_pass, *found.pass_to_pass}
    counts = {t.test: (t.before_passed, t.after_passed) for t in found.transitions}
    assert all(0 < sum(counts[test]) < 10 for test in found.flaky)
    page = (tmp_path / "validation.html").read_text()
    assert '<section id="flaky">' in page and found.flaky[0] in page


def test_a_test_that_fails_only_after_another_ran_is_found_by_rerunning_it_alone(quirks, tmp_path):
    # The order is the same in every repeat: without re-runs the test is FAIL_TO_FAIL.
    plain = validate(quirks, tmp_path / "plain", ["order"], repeats=1)
    (found,) = plain.instances
    victim = "tests/test_order.py::test_b_needs_none"
    assert victim in found.fail_to_fail and found.verdict == "valid"
    rerun = validate(quirks, tmp_path / "rerun", ["order"], 1, "environment.rerun_failed=1")
    (found,) = rerun.instances
    assert (found.verdict, found.flaky) == ("flaky_tests", [victim])
    (transition,) = [t for t in found.transitions if t.test == victim]
    assert (transition.before_passed, transition.after_passed) == (0, 0)
    assert transition.passed_alone == 2  # one run of each side
    # A test that fails alone too stays what it was.
    assert found.fail_to_pass == [f"{ID}test_add"]
    assert "tests/test_order.py::test_a_leaves_state" in found.pass_to_pass


def test_on_dask_workers_validation_gives_the_same_verdicts_and_lists(quirks, tmp_path):
    # The re-runs too: on a worker, the runtime there picks the failing tests from the log.
    instances, extra = ["valid", "order"], "environment.rerun_failed=1"
    found = {}
    for executor in ("local", "dask"):
        report = validate(quirks, tmp_path / executor, instances, 1, extra, f"executor={executor}")
        found[executor] = [
            (i.instance_id, i.verdict, i.fail_to_pass, i.pass_to_pass, i.flaky)
            for i in report.instances
        ]
    assert found["dask"] == found["local"]
    assert [verdict for _, verdict, *_ in found["dask"]] == ["valid", "flaky_tests"]
