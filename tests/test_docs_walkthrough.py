"""The "Evaluate your own dataset" walkthrough (docs/your-own-dataset.md) works as written.

Its ``# step`` blocks run, in order, as one bash script in a new folder, with this
checkout's evalrepro on PATH (what the walkthrough's ``. .venv/bin/activate`` gives): a
project in a local git repo and one from an sdist fetched with pip, both resolved by
their gold patches in real podman.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.podman_support import cache_dir, needs_podman

pytestmark = needs_podman

WALKTHROUGH = Path(__file__).resolve().parent.parent / "docs" / "your-own-dataset.md"


def walkthrough_steps() -> list[str]:
    return re.findall(r"```sh\n(# step \d+:.*?)```", WALKTHROUGH.read_text(), re.S)


def test_the_walkthrough_has_its_steps_in_order():
    numbers = [int(re.match(r"# step (\d+):", step)[1]) for step in walkthrough_steps()]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 7


def test_the_walkthrough_runs_as_written(tmp_path):
    # -e -u, not pipefail: an interactive shell, as a reader has, does not fail a pipe
    # whose first command (pytest with a failing test) exits non-zero.
    script = "set -eu\n" + "\n".join(walkthrough_steps())
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "EVALREPRO_CACHE": str(cache_dir()),
    }
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for run, resolved in (("mathx", 1), ("both", 2), ("validated", 2)):
        results = json.loads((tmp_path / "runs" / run / "results.json").read_text())
        assert (results["planned"], results["resolved"]) == (resolved, resolved), results
    six = json.loads((tmp_path / "conf" / "data" / "instances.jsonl").read_text().splitlines()[1])
    assert six["FAIL_TO_PASS"] == ["test_six.py::test_version_info"]
    assert len(six["PASS_TO_PASS"]) > 100
    # Validation of the same instances without lists derives the lists written by hand.
    conf = tmp_path / "conf" / "data"
    declared = [json.loads(line) for line in (conf / "instances.jsonl").read_text().splitlines()]
    derived = [json.loads(line) for line in (conf / "validated.jsonl").read_text().splitlines()]
    assert [(d["FAIL_TO_PASS"], sorted(d["PASS_TO_PASS"])) for d in derived] == [
        (d["FAIL_TO_PASS"], sorted(d["PASS_TO_PASS"])) for d in declared
    ]
