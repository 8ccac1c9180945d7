"""The mini_swe_agent adapter's loop: the real mini-swe-agent package (in its own Python
environment), litellm and evalrepro's replay server, with the commands run in a local
folder instead of a container (the container side is tests/test_agent_mini_swe_agent.py).

What is specified here is the harness's part: the budgets it counts and enforces, how each
end of the loop is named, the trajectory it writes from what passed through it, and that
a key reaches the model's process and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from evalrepro.agents.mini_swe_agent import MiniSweAgentRunner
from evalrepro.agents.replay import Recording, ReplayServer
from evalrepro.config.agents import AgentModel, MiniSweAgent, Pricing
from evalrepro.records.trajectory import Trajectory
from evalrepro.runtimes.interactive import ExecResult, Sandbox, SandboxRequest
from evalrepro.targets.agent import AgentBudgets, AgentTarget

PROBLEM = "The greeting is wrong: hello.txt should say hello, world."
SUBMIT = {"content": "Done.", "command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}
FIX = {"content": "Fixing the greeting.", "command": "printf 'hello, world\\n' > hello.txt"}
LOOK = {"content": "Looking.", "command": "cat hello.txt"}


class FolderSandbox(Sandbox):
    """Commands in a local folder (the loop's test double of a container)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.request = SandboxRequest(
            name="local", image_tag="local", image_digest="sha256:0", workdir=str(folder)
        )
        self.commands: list[str] = []

    def exec(
        self, command, *, timeout, output_limit=1 << 20, cwd=None, env=None, stdin=b"", user=None
    ):
        self.commands.append(command)
        started = time.monotonic()
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=cwd or self.folder,
                capture_output=True,
                timeout=timeout,
                env={"PATH": "/usr/bin:/bin", **(env or {})},
            )
        except subprocess.TimeoutExpired:
            return ExecResult(exit_code=None, output="", timed_out=True, seconds=timeout)
        output = (done.stdout + done.stderr).decode(errors="replace")
        return ExecResult(
            exit_code=done.returncode,
            output=output[:output_limit],
            dropped=max(0, len(output) - output_limit),
            seconds=round(time.monotonic() - started, 3),
        )

    def read_file(self, path, *, limit=1 << 20):
        raise NotImplementedError

    def write_file(self, path, data):
        raise NotImplementedError

    def export_tree(self, path, *, limit):
        raise NotImplementedError

    def stop(self):
        pass


def run_loop(tmp_path: Path, steps: list[dict], *, seconds: int = 120, **settings):
    """One agent loop against a replay of ``steps``; its end and the sandbox."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "hello.txt").write_text("hello\n")
    recording = tmp_path / "recording.json"
    recording.write_text(json.dumps({"conversations": [{"when": PROBLEM, "steps": steps}]}))
    model = settings.pop("model", {})
    adapter = MiniSweAgent(
        model=AgentModel(name="openai/replay", endpoint=f"replay:{recording}", **model),
        **settings.pop("adapter", {}),
    )
    target = AgentTarget(name="mini", adapter=adapter, **settings)
    sandbox = FolderSandbox(tmp_path / "repo")
    end = MiniSweAgentRunner().run(sandbox, target, PROBLEM, time.monotonic() + seconds)
    return end, sandbox


def trajectory(end) -> Trajectory:
    assert end.trajectory
    return Trajectory.model_validate_json(end.log)


def test_a_submitting_agent_ran_each_command_in_the_sandbox_and_its_trajectory_says_so(tmp_path):
    end, sandbox = run_loop(tmp_path, [LOOK, FIX, SUBMIT])
    assert (end.status, end.steps) == ("submitted", 3)
    assert sandbox.commands == [LOOK["command"], FIX["command"], SUBMIT["command"]]
    assert (tmp_path / "repo" / "hello.txt").read_text() == "hello, world\n"
    steps = trajectory(end).steps
    assert [s.content for s in steps] == ["Looking.", "Fixing the greeting.", "Done."]
    # What the sandbox returned is what the trajectory holds.
    assert steps[0].actions[0].output == "hello\n" and steps[0].actions[0].exit_code == 0
    assert end.version == "2.4.6" and end.usage is not None
    assert end.usage.input_tokens == sum(s.input_tokens for s in steps) > 0


def test_the_step_budget_stops_the_agent_before_its_next_model_call(tmp_path):
    end, sandbox = run_loop(
        tmp_path, [LOOK, LOOK, LOOK, FIX, SUBMIT], budgets=AgentBudgets(steps=2)
    )
    assert (end.status, end.budget, end.detail) == ("budget_exhausted", "steps", "steps: 2")
    assert end.steps == 2 and len(sandbox.commands) == 2


def test_the_token_budget_counts_what_the_endpoint_reported(tmp_path):
    steps = [{**LOOK, "prompt_tokens": 400, "completion_tokens": 100}] * 4 + [SUBMIT]
    end, _ = run_loop(tmp_path, steps, budgets=AgentBudgets(tokens=1200))
    # 500, 1000, 1500: the third call crosses the budget, and no fourth is made.
    assert (end.status, end.budget) == ("budget_exhausted", "tokens")
    assert end.steps == 3 and end.detail == "tokens: 1200 (1500 used)"


def test_the_cost_budget_prices_the_tokens_as_the_config_says(tmp_path):
    steps = [{**LOOK, "prompt_tokens": 1000, "completion_tokens": 0}] * 5 + [SUBMIT]
    end, _ = run_loop(
        tmp_path,
        steps,
        budgets=AgentBudgets(cost_usd=0.025),
        model={"pricing": Pricing(input_per_million=10.0, output_per_million=30.0)},
    )
    assert (end.status, end.budget, end.steps) == ("budget_exhausted", "cost", 3)
    assert end.usage is not None and end.usage.cost_usd == pytest.approx(0.03)
    assert [s.cost_usd for s in trajectory(end).steps] == pytest.approx([0.01] * 3)


def test_the_wall_time_budget_ends_the_agent_even_inside_a_command(tmp_path):
    slow = {"content": "Waiting.", "command": "sleep 60"}
    started = time.monotonic()
    end, _ = run_loop(tmp_path, [slow, SUBMIT], seconds=15, command_timeout=600)
    assert (end.status, end.budget) == ("budget_exhausted", "wall_time")
    assert time.monotonic() - started < 60  # not the command's own sleep 60


def test_replies_without_a_tool_call_end_as_the_agents_error(tmp_path):
    end, _ = run_loop(tmp_path, [{"content": "I will just talk."}] * 5)
    assert end.status == "agent_error" and "no usable tool call 3 times" in end.detail
    assert all(s.format_error for s in trajectory(end).steps)


def test_an_endpoint_that_cannot_be_reached_is_infrastructure_not_the_agent(tmp_path):
    target = AgentTarget(
        name="mini",
        adapter=MiniSweAgent(
            model=AgentModel(name="openai/x", endpoint="http://127.0.0.1:9/v1", retries=1)
        ),
    )
    (tmp_path / "repo").mkdir()
    end = MiniSweAgentRunner().run(
        FolderSandbox(tmp_path / "repo"), target, PROBLEM, time.monotonic() + 120
    )
    assert end.status == "infrastructure_error"
    assert end.detail.startswith("the model's endpoint failed")


def test_a_missing_key_is_named_and_no_model_is_called(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALREPRO_TEST_MODEL_KEY", raising=False)
    end, sandbox = run_loop(
        tmp_path, [FIX, SUBMIT], model={"api_key_env": "EVALREPRO_TEST_MODEL_KEY"}
    )
    assert (end.status, end.detail) == (
        "agent_error",
        "the model's key is not set here: EVALREPRO_TEST_MODEL_KEY",
    )
    assert sandbox.commands == []


def test_the_key_reaches_the_endpoint_and_nothing_the_harness_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALREPRO_TEST_MODEL_KEY", "sk-very-secret-4711")
    recording = Recording.model_validate(
        {"conversations": [{"when": PROBLEM, "steps": [FIX, SUBMIT]}]}
    )
    seen: list[str] = []
    with ReplayServer(recording) as server:
        handler = server._server.RequestHandlerClass
        answer = handler.do_POST

        def listening(self):
            seen.append(self.headers.get("Authorization", ""))
            answer(self)

        handler.do_POST = listening
        model = AgentModel(
            name="openai/replay", endpoint=server.url, api_key_env="EVALREPRO_TEST_MODEL_KEY"
        )
        target = AgentTarget(name="mini", adapter=MiniSweAgent(model=model))
        (tmp_path / "repo").mkdir()
        end = MiniSweAgentRunner().run(
            FolderSandbox(tmp_path / "repo"), target, PROBLEM, time.monotonic() + 120
        )
    assert end.status == "submitted"
    assert seen and all(value == "Bearer sk-very-secret-4711" for value in seen)
    assert b"sk-very-secret" not in end.log and "sk-very-secret" not in end.detail


def test_what_defines_the_model_is_the_identity_and_where_it_is_served_is_not():
    one = AgentTarget(
        name="mini", adapter=MiniSweAgent(model=AgentModel(name="openai/a", endpoint="http://x/v1"))
    )

    def changed(**update):
        adapter = one.adapter.model_copy(update=update)
        return one.model_copy(update={"adapter": adapter}).identity(None)  # type: ignore[arg-type]

    model = one.adapter.model
    assert changed(model=model.model_copy(update={"endpoint": "http://y/v1"})) == one.identity(
        None  # type: ignore[arg-type]
    )
    assert changed(model=model.model_copy(update={"api_key_env": "K"})) == one.identity(None)  # type: ignore[arg-type]
    assert changed(python="/opt/py/bin/python") == one.identity(None)  # type: ignore[arg-type]
    others = {
        changed(model=model.model_copy(update={"name": "openai/b"})),
        changed(model=model.model_copy(update={"parameters": {"temperature": 0.5}})),
        changed(instance_template="{{task}}"),
        changed(version="2.4.5"),
        one.identity(None),  # type: ignore[arg-type]
    }
    assert len(others) == 5


def test_a_trajectory_over_its_bound_keeps_its_first_and_last_steps_and_names_the_rest(tmp_path):
    loud = {"content": "Printing.", "command": "head -c 200000 /dev/zero | tr '\\0' x"}
    end, _ = run_loop(tmp_path, [loud] * 8 + [SUBMIT], max_log_bytes=4096)
    assert end.status == "submitted" and len(end.log) <= 4096
    kept = trajectory(end)
    assert kept.steps[0].index == 1 and kept.steps[-1].index == 9
    assert sorted([s.index for s in kept.steps] + kept.steps_not_kept) == list(range(1, 10))
