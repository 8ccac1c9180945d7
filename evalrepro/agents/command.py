"""The ``command`` adapter: any agent CLI, installed into the sandbox and run inside it.

The install script runs first, as root in ``/``; then the command, as the target's user
in the repository, with the problem statement in ``$EVALREPRO_PROBLEM`` (a file) and
``$EVALREPRO_PROBLEM_TEXT``, the target's ``env``, and each of its ``secrets`` taken from
the host's environment by name. Both share the wall-time budget; what they print (bounded)
is the attempt's ``agent_log.txt``. A command is one step.

A ``program`` folder is copied in first, before the install script: read again from
the host (its digest must still be the locked one), extracted as root at ``program.at``,
made root's with no write bit, then copied back out and hashed again: what the agent
runs is what was locked. ``$EVALREPRO_AGENT_PROGRAM`` names it, for the install script
and the command.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from evalrepro.agents import PROBLEM_PATH, AgentEnd, AgentRunner
from evalrepro.config.program import (
    MAX_BYTES,
    PROGRAM_ENV,
    AgentProgram,
    ProgramError,
    read_program,
    tar_digest,
)
from evalrepro.runtimes.interactive import ExecResult, Sandbox, SandboxError
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
        program_env = {}
        if adapter.program is not None:
            bring_program(sandbox, adapter.program, deadline)
            program_env = {PROGRAM_ENV: adapter.program.at}
        if adapter.install.strip():
            result = sandbox.exec(
                adapter.install,
                timeout=max(1.0, deadline - time.monotonic()),
                output_limit=target.max_log_bytes,
                cwd="/",
                user="root",
                env=program_env or None,
            )
            step("install", result)
            if result.timed_out:
                return _out_of_time(end, target, "during the install script")
            if result.exit_code != 0:
                return end("agent_error", f"the install script exited {result.exit_code}")
        env = {
            **adapter.env,
            **program_env,
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


#: Run as root, the tar on stdin: the program's folder, root's and read-only.
_EXTRACT = """
set -eu
at={at}
if [ -e "$at" ] || [ -L "$at" ]; then echo "$at exists in the image" >&2; exit 3; fi
mkdir -p -- "$at"
tar -x -f - -C "$at"
chown -R -h 0:0 -- "$at"
chmod -R a-w -- "$at"
"""


def bring_program(sandbox: Sandbox, program: AgentProgram, deadline: float) -> None:
    """Copy the program folder into the sandbox and check the copy against the locked
    digest. A folder changed since it was locked, or a copy that is not the folder, is
    a :class:`SandboxError` (the run's, not the agent's)."""
    try:
        digest, tar = read_program(Path(program.source))
    except ProgramError as error:
        raise SandboxError(str(error)) from None
    if digest != program.digest:
        raise SandboxError(
            f"agent program {program.source} changed since it was locked "
            f"(sha256 {program.digest[:12]}, now {digest[:12]})"
        )
    done = sandbox.exec(
        _EXTRACT.format(at=shlex.quote(program.at)),
        timeout=max(1.0, min(600.0, deadline - time.monotonic())),
        cwd="/",
        user="root",
        stdin=tar,
    )
    if done.exit_code != 0:
        last = (done.output.strip().splitlines() or ["no output"])[-1][:300]
        raise SandboxError(f"cannot copy the agent program to {program.at}: {last}")
    copied, problems = tar_digest(sandbox.export_tree(program.at, limit=2 * MAX_BYTES))
    if copied != program.digest or problems:
        raise SandboxError(
            f"the agent program copied to {program.at} is not the locked one"
            + (f": {'; '.join(problems[:3])}" if problems else f" (sha256 {copied[:12]})")
        )


def _out_of_time(end, target: AgentTarget, where: str) -> AgentEnd:  # type: ignore[no-untyped-def]
    detail = f"wall time: {target.budgets.wall_seconds} s" + (f" ({where})" if where else "")
    return end("budget_exhausted", detail, budget="wall_time")
