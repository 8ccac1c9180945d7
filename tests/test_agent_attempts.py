"""An agent trial's attempts, on the fake environment (no sandbox: the agent phase's end
is given): which failure re-runs the agent, which re-evaluates the patch it made, and
what the trial records either way.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.records.trial import read_trial_result
from evalrepro.records.usage import Usage
from evalrepro.run import agent_phase
from evalrepro.runtimes.attempt import AttemptOutput
from evalrepro.sample import load_samples
from evalrepro.targets.agent import AgentTarget, CommandAgent

INSTANCE = "demo__calc-1"


def run(tmp_path: Path, phases: list[str], monkeypatch):
    """One trial by an agent whose attempts end as ``phases`` say, in order: ``agent``
    (the sandbox failed), ``eval`` (the agent submitted, the tests' sandbox failed),
    ``ok`` (submitted, then tested)."""
    config = compose(["+experiment=demo", "environment=fake", f"dataset.instance_ids=[{INSTANCE}]"])
    agent = AgentTarget(name="scripted", adapter=CommandAgent(command="true"))
    config = config.model_copy(update={"target": agent})
    (sample,) = [
        s for s in load_samples(Path(config.dataset.instances)) if s.instance_id == INSTANCE
    ]
    patch = sample.patch.encode()
    calls = []

    def scripted(runtime, spec):
        calls.append(spec)
        phase = phases[len(calls) - 1]
        usage = Usage(input_tokens=10 * len(calls), output_tokens=1, cost_usd=0.01)
        if phase == "agent":
            outcome = AgentOutcome(
                status="infrastructure_error", detail="podman died", adapter="command"
            )
            return AttemptOutput(agent=outcome)
        outcome = AgentOutcome(
            status="submitted", adapter="command", patch_bytes=len(patch), usage=usage
        )
        if phase == "eval":
            report = SupervisorReport(runtime=RuntimeFacts(error="the tests' sandbox died"))
            return AttemptOutput(agent=outcome, agent_patch=patch, report=report)
        tested = runtime.run(spec.model_copy(update={"patch": patch, "agent": None}))
        return tested.model_copy(update={"agent": outcome, "agent_patch": patch})

    monkeypatch.setattr(agent_phase, "attempt_with_agent", scripted)
    console = Console(file=io.StringIO())
    run_experiment(config, console, run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    (path,) = (tmp_path / "run" / "trials").glob("*/result.json")
    return read_trial_result(path), calls, patch


def test_a_sandbox_failure_in_the_agent_phase_runs_the_agent_again(tmp_path, monkeypatch):
    result, calls, _ = run(tmp_path, ["agent", "ok"], monkeypatch)
    assert [spec.agent is not None for spec in calls] == [True, True]
    assert [a.score.reason for a in result.attempts] == ["infrastructure_error", "tests_passed"]
    assert result.attempts[0].score.detail == "agent phase: podman died"
    assert str(result.score.outcome) == "resolved"


def test_a_sandbox_failure_in_the_tests_evaluates_the_agents_patch_again(tmp_path, monkeypatch):
    result, calls, patch = run(tmp_path, ["eval", "ok"], monkeypatch)
    # The second attempt is a saved patch's: the agent is not run again.
    assert calls[0].agent is not None and len(calls) == 1
    assert [a.score.reason for a in result.attempts] == ["infrastructure_error", "tests_passed"]
    assert "the patch the agent made in attempt 1 is evaluated again" in result.attempts[1].reason
    second = tmp_path / "run" / "trials" / result.trial.label / "attempt-2" / "patch.diff"
    assert second.read_bytes() == patch
    assert str(result.score.outcome) == "resolved"
    # What the agent spent is the trial's usage.
    assert result.usage == Usage(input_tokens=10, output_tokens=1, cost_usd=0.01)


def test_a_run_out_of_attempts_stays_invalid_and_counts(tmp_path, monkeypatch):
    result, _, _ = run(tmp_path, ["agent", "agent"], monkeypatch)
    assert [str(a.score.outcome) for a in result.attempts] == ["invalid", "invalid"]
    assert str(result.score.outcome) == "invalid"
