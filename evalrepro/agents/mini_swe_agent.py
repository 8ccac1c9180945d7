"""The ``mini_swe_agent`` adapter: the real mini-swe-agent package drives the loop on the
host; every command it runs is an ``exec`` in the trial's sandbox.

The package runs in a Python environment of its own (``evalrepro.agents.venvs``), under
a driver (``mini_swe_agent_driver.py``) that speaks JSON lines with this process. The
harness keeps everything that decides the record:

- **commands** run through :meth:`Sandbox.exec` (network off, the target's user, the
  command timeout, output bounded); the driver sees what the sandbox returned;
- **budgets**: before each model call the driver asks; the harness answers from its own
  count (steps, tokens, cost) and ends the driver's process at the wall-time deadline;
- **the trajectory** (``trajectory.json``) is written from what passed through here,
  not from the package's account of it;
- **the patch** is the harness's diff of the working tree (the agent's "submission"
  text is not used), as for every agent.

The driver's process gets a clean environment: a temporary home, no variable of the
host's but ``PATH`` and the proxies, and the model's key (``model.api_key_env``) under a
name of the driver's own; it is never written anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from evalrepro.agents import PROBLEM_PATH, AgentEnd, AgentRunner
from evalrepro.agents.replay import Recording, ReplayServer
from evalrepro.agents.venvs import agent_python
from evalrepro.config.agents import REPLAY, MiniSweAgent
from evalrepro.errors import UserError
from evalrepro.records.agent import Budget
from evalrepro.records.trajectory import Action, Step, Trajectory, bounded
from evalrepro.records.usage import Usage
from evalrepro.runtimes.interactive import Sandbox
from evalrepro.targets.agent import AgentTarget

DRIVER = Path(__file__).with_name("mini_swe_agent_driver.py")
#: Bytes of one line from the driver, at most (a reply of the model's, as JSON).
_MAX_LINE = 16 << 20
#: Bytes of the driver's own stderr kept, for the detail of a failure.
_MAX_STDERR = 1 << 20
#: Variables of the host passed to the driver (it needs the network of the host to reach
#: the model, through the same proxies).
_PASSED = ("PATH", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY")
#: The environment of every command the agent runs (no pager waits for a key).
COMMAND_ENV = {"PAGER": "cat", "MANPAGER": "cat", "PIP_PROGRESS_BAR": "off", "TQDM_DISABLE": "1"}


class MiniSweAgentRunner(AgentRunner):
    kind = "mini_swe_agent"

    def run(self, sandbox: Sandbox, target: AgentTarget, problem: str, deadline: float) -> AgentEnd:
        adapter = target.adapter
        assert isinstance(adapter, MiniSweAgent)
        loop = _Loop(sandbox, target, adapter, deadline)
        key_name = adapter.model.api_key_env
        if key_name and key_name not in os.environ:
            return loop.end("agent_error", f"the model's key is not set here: {key_name}")
        python = Path(adapter.python) if adapter.python else None
        if python is None:
            python = agent_python("mini-swe-agent", adapter.version)
        key = os.environ.get(key_name) if key_name else None
        endpoint = adapter.model.endpoint or ""
        if not endpoint.startswith(REPLAY):
            return loop.drive(python, problem, key, endpoint or None)
        try:
            recording = Recording.read(Path(endpoint.removeprefix(REPLAY)))
        except UserError as error:
            return loop.end("agent_error", str(error))
        with ReplayServer(recording) as server:
            return loop.drive(python, problem, key, server.url)


class _Loop:
    """One agent's loop, as the harness drives and records it."""

    def __init__(
        self, sandbox: Sandbox, target: AgentTarget, adapter: MiniSweAgent, deadline: float
    ) -> None:
        self.sandbox = sandbox
        self.target = target
        self.adapter = adapter
        self.deadline = deadline
        self.steps: list[Step] = []
        self.actions: list[Action] = []
        self.version = ""
        self.exit_status = ""
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost: float | None = None
        self.out_of_time = False

    # -- the driver ----------------------------------------------------------------------

    def drive(self, python: Path, problem: str, key: str | None, endpoint: str | None) -> AgentEnd:
        with tempfile.TemporaryDirectory(prefix="evalrepro-mini-") as home:
            env = {name: os.environ[name] for name in _PASSED if name in os.environ}
            env.update(
                HOME=home,
                MSWEA_GLOBAL_CONFIG_DIR=home,
                MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=str(self.adapter.model.retries),
                NO_PROXY=",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1"])),
            )
            if key is not None:
                env["EVALREPRO_MODEL_API_KEY"] = key
            with open(Path(home) / "stderr", "w+b") as stderr:
                try:
                    process = subprocess.Popen(
                        [str(python), str(DRIVER)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=stderr,
                        env=env,
                        cwd=home,
                        start_new_session=True,
                    )
                except OSError as error:
                    return self.end("agent_error", f"cannot start {python}: {error.strerror}")
                timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self._expire)
                self._process = process
                timer.start()
                try:
                    ended = self._converse(process, problem, endpoint)
                finally:
                    timer.cancel()
                    if process.poll() is None:
                        process.kill()
                    process.wait()
                stderr.seek(0)
                tail = stderr.read(_MAX_STDERR).decode("utf-8", errors="replace")
        if self.out_of_time:
            return self.end("budget_exhausted", self._wall_detail(), budget="wall_time")
        if ended is None:
            return self.end(
                "agent_error",
                f"mini-swe-agent stopped without a word (exit {process.returncode}): {_last(tail)}",
            )
        return self._ended(ended)

    def _expire(self) -> None:
        self.out_of_time = True
        self._process.kill()

    def _converse(
        self, process: subprocess.Popen, problem: str, endpoint: str | None
    ) -> dict[str, Any] | None:
        """Answer the driver until it ends (its ``end`` message) or dies (None)."""
        assert process.stdin is not None and process.stdout is not None
        try:
            self._write(process, self._settings(problem, endpoint))
            while True:
                line = process.stdout.readline(_MAX_LINE)
                if not line:
                    return None
                if not line.endswith(b"\n"):
                    return {"exit_status": "Refused", "error": f"a line over {_MAX_LINE} bytes"}
                message = json.loads(line)
                kind = message.get("type")
                if kind == "end":
                    return message
                if kind == "hello":
                    self.version = str(message.get("version", ""))
                elif kind == "query":
                    self._write(process, self._may_call())
                elif kind == "step":
                    self._step(message)
                elif kind == "exec":
                    self._write(process, self._exec(message))
        except (BrokenPipeError, ValueError):
            return None

    @staticmethod
    def _write(process: subprocess.Popen, message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    def _settings(self, problem: str, endpoint: str | None) -> dict[str, Any]:
        adapter, model = self.adapter, self.adapter.model
        kwargs: dict[str, Any] = dict(model.parameters)
        if endpoint:
            kwargs["api_base"] = endpoint
        model_settings: dict[str, Any] = {
            "model_name": model.name,
            "model_kwargs": kwargs,
            "cost_tracking": "ignore_errors",
        }
        if adapter.observation_template is not None:
            model_settings["observation_template"] = adapter.observation_template
        if adapter.format_error_template is not None:
            model_settings["format_error_template"] = adapter.format_error_template
        return {
            "task": problem,
            "cwd": self.sandbox.request.workdir,
            "problem_path": PROBLEM_PATH,
            "model": model_settings,
            "agent": {
                "system_template": adapter.system_template,
                "instance_template": adapter.instance_template,
                # The budgets are the harness's (each query asks): the package's are off.
                "step_limit": 0,
                "cost_limit": 0,
                "max_consecutive_format_errors": adapter.max_format_errors,
            },
        }

    # -- budgets, steps and commands ------------------------------------------------------

    def _may_call(self) -> dict[str, Any]:
        budgets = self.target.budgets
        if budgets.steps is not None and len(self.steps) >= budgets.steps:
            return {"stop": "steps"}
        if budgets.tokens is not None and self.input_tokens + self.output_tokens >= budgets.tokens:
            return {"stop": "tokens"}
        if budgets.cost_usd is not None and (self.cost or 0.0) >= budgets.cost_usd:
            return {"stop": "cost"}
        return {}

    def _step(self, message: dict[str, Any]) -> None:
        self._close_step()
        tokens_in = _count(message.get("input_tokens"))
        tokens_out = _count(message.get("output_tokens"))
        self.input_tokens += tokens_in or 0
        self.output_tokens += tokens_out or 0
        cost = self._cost_of(tokens_in, tokens_out, message.get("cost"))
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        step = Step(
            index=len(self.steps) + 1,
            content=bounded(str(message.get("content", ""))),
            format_error=bounded(str(message.get("format_error", ""))),
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost,
            model_seconds=round(max(0.0, float(message.get("seconds") or 0.0)), 3),
        )
        self.steps.append(step)

    def _close_step(self) -> None:
        if self.steps and self.actions:
            self.steps[-1] = self.steps[-1].model_copy(update={"actions": self.actions})
        self.actions = []

    def _cost_of(self, tokens_in: int | None, tokens_out: int | None, said: Any) -> float | None:
        pricing = self.adapter.model.pricing
        if pricing is not None:
            return (
                (tokens_in or 0) * pricing.input_per_million
                + (tokens_out or 0) * pricing.output_per_million
            ) / 1e6
        if isinstance(said, int | float) and said > 0:
            return float(said)
        return None

    def _exec(self, message: dict[str, Any]) -> dict[str, Any]:
        command = str(message.get("command", ""))
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self._expire()
            return {"output": "", "returncode": -1, "exception_info": "out of time"}
        timeout = min(float(self.target.command_timeout), remaining)
        result = self.sandbox.exec(
            command,
            timeout=timeout,
            output_limit=self.adapter.max_output_bytes,
            env=COMMAND_ENV,
        )
        self.actions.append(
            Action(
                command=bounded(command),
                exit_code=result.exit_code,
                output=bounded(result.output),
                dropped=result.dropped,
                timed_out=result.timed_out,
                seconds=result.seconds,
            )
        )
        output = result.output
        if result.dropped:
            output += f"\n[{result.dropped} more bytes of output not shown]"
        if result.timed_out:
            return {
                "output": output,
                "returncode": -1,
                "exception_info": f"the command did not end in {timeout:g} s and was killed",
            }
        return {"output": output, "returncode": result.exit_code}

    # -- the end ---------------------------------------------------------------------------

    def _ended(self, message: dict[str, Any]) -> AgentEnd:
        status = str(message.get("exit_status", ""))
        self.exit_status = status
        if status == "Submitted":
            return self.end("submitted", "the agent submitted")
        if status == "LimitsExceeded" and message.get("budget") in ("steps", "tokens", "cost"):
            budget: Budget = message["budget"]
            return self.end("budget_exhausted", self._budget_detail(budget), budget=budget)
        if status == "RepeatedFormatError":
            return self.end(
                "agent_error",
                f"the model's replies had no usable tool call {self.adapter.max_format_errors} "
                "times in a row",
            )
        error = str(message.get("error", ""))[:500]
        if message.get("transient"):
            return self.end("infrastructure_error", f"the model's endpoint failed: {error}")
        return self.end("agent_error", f"mini-swe-agent stopped: {status}: {error}".rstrip(": "))

    def _budget_detail(self, budget: Budget) -> str:
        budgets = self.target.budgets
        if budget == "steps":
            return f"steps: {budgets.steps}"
        if budget == "tokens":
            used = self.input_tokens + self.output_tokens
            return f"tokens: {budgets.tokens} ({used} used)"
        return f"cost: ${budgets.cost_usd:g} (${self.cost or 0:.4f} spent)"

    def _wall_detail(self) -> str:
        return f"wall time: {self.target.budgets.wall_seconds} s"

    def end(self, status: str, detail: str, budget: Budget | None = None) -> AgentEnd:
        self._close_step()
        trajectory = Trajectory(
            adapter=self.adapter.kind,
            adapter_version=self.version or self.adapter.version,
            model=self.adapter.model.name,
            steps=self.steps,
            exit_status=self.exit_status,
        )
        log = _fitted(trajectory, self.target.max_log_bytes)
        usage = None
        if self.steps:
            usage = Usage(
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                cost_usd=round(self.cost, 6) if self.cost is not None else None,
            )
        return AgentEnd(
            status=status,  # type: ignore[arg-type]
            detail=detail,
            budget=budget,
            steps=len(self.steps),
            usage=usage,
            version=self.version or self.adapter.version,
            log=log,
            trajectory=True,
        )


def _fitted(trajectory: Trajectory, limit: int) -> bytes:
    """The trajectory as JSON within ``limit`` bytes: whole if it fits; else with each
    output cut short; else with steps from the middle left out (and named); at last with
    no step at all. Always a whole record."""
    log = trajectory.model_dump_json(indent=1).encode()
    if len(log) <= limit:
        return log
    steps = [
        step.model_copy(
            update={
                "actions": [
                    a.model_copy(update={"output": bounded(a.output, 256)}) for a in step.actions
                ]
            }
        )
        for step in trajectory.steps
    ]
    dropped: list[int] = []
    while True:
        short = trajectory.model_copy(update={"steps": steps, "steps_not_kept": dropped})
        log = short.model_dump_json().encode()
        if len(log) <= limit or not steps:
            return log
        dropped = sorted([*dropped, steps.pop(len(steps) // 2).index])


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _last(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"
