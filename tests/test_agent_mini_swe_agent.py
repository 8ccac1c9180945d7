"""The mini_swe_agent adapter end to end in real podman: the built-in ``demo_agent``
experiment (mini-swe-agent against evalrepro's replay server of recorded responses), each
command an exec in the instance's sandbox, each patch the harness's diff, graded exactly as
a saved patch is.
"""

from __future__ import annotations

import json

from evalrepro.publish.verify import check_run
from evalrepro.records.trajectory import Trajectory
from evalrepro.records.trial import read_trial_result
from evalrepro.report.view import view_run
from tests.podman_support import demo_config, needs_podman, run_demo

pytestmark = needs_podman


def test_the_agent_demo_resolves_some_instances_and_names_why_the_others_did_not(tmp_path):
    run_dir = tmp_path / "run"
    run_demo(demo_config("demo_agent"), run_dir)
    results = {
        r.instance_id: r for r in map(read_trial_result, (run_dir / "trials").glob("*/result.json"))
    }
    assert {i: (str(r.score.outcome), r.score.reason) for i, r in results.items()} == {
        "demo__calc-1": ("resolved", "tests_passed"),
        "demo__textkit-2": ("resolved", "tests_passed"),
        "demo__calc-4": ("unresolved", "tests_failed"),
        "demo__textkit-1": ("unresolved", "agent_budget_exhausted"),
        "demo__ledger-1": ("unresolved", "agent_no_diff"),
    }
    assert results["demo__textkit-1"].score.detail == "steps: 6"
    (folder,) = (run_dir / "trials").glob("demo__calc-1--*/attempt-1")
    outcome = json.loads((folder / "agent.json").read_text())
    assert (outcome["adapter"], outcome["adapter_version"], outcome["steps"]) == (
        "mini_swe_agent",
        "2.4.6",
        4,
    )
    trajectory = Trajectory.model_validate_json((folder / "trajectory.json").read_bytes())
    # The commands ran in the instance's image: its Python ran the fixed code.
    check = trajectory.steps[2].actions[0]
    assert (check.exit_code, check.output.strip()) == (0, "512.0")
    # The patch is the harness's diff of the working tree: the fix, and nothing else.
    patch = (folder / "patch.diff").read_text()
    assert patch.startswith("diff --git a/calc/evaluator.py") and patch.count("diff --git") == 1
    usage = results["demo__calc-1"].usage
    assert usage is not None and usage.input_tokens and usage.cost_usd
    assert check_run(run_dir).ok
    site = view_run(run_dir, n_resamples=200)
    (page,) = (site.root / "trials").glob("demo__calc-1--*.html")
    html = page.read_text()
    assert "<h3>Trajectory</h3>" in html and "grep -n &#39;def power&#39;" in html


def test_on_dask_workers_the_agent_runs_where_the_attempt_runs_with_the_same_trials(tmp_path):
    instances = "dataset.instance_ids=[demo__calc-1,demo__ledger-1]"
    runs = {}
    for executor in ("local", "dask"):
        run_dir = tmp_path / executor
        run_demo(demo_config("demo_agent", instances, f"executor={executor}"), run_dir)
        runs[executor] = {
            r.trial.trial_id: (r.instance_id, str(r.score.outcome), r.score.reason)
            for r in map(read_trial_result, (run_dir / "trials").glob("*/result.json"))
        }
        assert check_run(run_dir).ok
    assert runs["dask"] == runs["local"]
    assert sorted(runs["dask"].values()) == [
        ("demo__calc-1", "resolved", "tests_passed"),
        ("demo__ledger-1", "unresolved", "agent_no_diff"),
    ]
