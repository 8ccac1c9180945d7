"""The ``command`` adapter: any agent CLI, installed into the sandbox and run inside it.

The install script runs first, as root in ``/``; then the command, as the target's user
in the repository, with the problem statement in ``$EVALREPRO_PROBLEM`` (a file) and
``$EVALREPRO_PROBLEM_TEXT``, the target's ``env``, and each of its ``secrets`` taken from
the host's environment by name. Both share the wall-time budget; what they print (bounded)
is the attempt's ``agent_log.txt``. A command is one step.
"""

from __future__ import annotations

import os
import time

from evalrepro.agents import PROBLEM_PATH, AgentEnd, AgentRunner
from evalrepro.run.interactive import ExecResult, Sandbox
from evalrepro.targets.agent import AgentTarget, CommandAgent


class CommandAgentRunner(AgentRunner):
    kind = "command"

    def run(self, sandbox: Sandbox, target: AgentTarget, problem: str, deadline: float) -> AgentEnd:
        adapter = target.adapter
        assert isinstance(adapter, CommandAgent)
        log = bytearray()
        steps = 0

        def step(label: str, result: ExecResult) -> None:
            nonlocal steps
            steps += 1
            log.extend(f"$ {label} (exit {result.exit_code}, {result.seconds:.1f} s)\n".encode())
            log.extend(result.output.encode())
            if result.dropped:
                log.extend(f"\n[{result.dropped} more bytes not kept]\n".encode())

        def end(status: str, detail: str, **more: object) -> AgentEnd:
            kept = bytes(log[: target.max_log_bytes])
            return AgentEnd(
                status=status,  # type: ignore[arg-type]
                detail=detail,
                steps=steps,
                version=adapter.version,
                log=kept,
                **more,  # type: ignore[arg-type]
            )

        missing = [name for name in adapter.secrets if name not in os.environ]
        if missing:
            return end("agent_error", f"secrets not set here: {', '.join(missing)}")
        if adapter.install.strip():
            result = sandbox.exec(
                adapter.install,
                timeout=max(1.0, deadline - time.monotonic()),
                output_limit=target.max_log_bytes,
                cwd="/",
                user="root",
            )
            step("install", result)
            if result.timed_out:
                return _out_of_time(end, target, "during the install script")
            if result.exit_code != 0:
                return end("agent_error", f"the install script exited {result.exit_code}")
        env = {
            **adapter.env,
            "EVALREPRO_PROBLEM": PROBLEM_PATH,
            "EVALREPRO_PROBLEM_TEXT": problem,
            **{name: os.environ[name] for name in adapter.secrets},
        }
        result = sandbox.exec(
            adapter.command,
            timeout=max(1.0, deadline - time.monotonic()),
            output_limit=target.max_log_bytes,
            env=env,
        )
        step("agent", result)
        if result.timed_out:
            return _out_of_time(end, target, "")
        if result.exit_code != 0:
            return end(
                "agent_error", f"the agent exited {result.exit_code}", exit_code=result.exit_code
            )
        return end("submitted", "the agent exited 0", exit_code=0)


def _out_of_time(end, target: AgentTarget, where: str) -> AgentEnd:  # type: ignore[no-untyped-def]
    detail = f"wall time: {target.budgets.wall_seconds} s" + (f" ({where})" if where else "")
    return end("budget_exhausted", detail, budget="wall_time")
