"""The agent phase of an attempt: what an agent target's agent did, as the harness saw it.

Written as the attempt's ``agent.json`` by the host, from what the runtime returned; the
patch the agent left is the attempt's ``patch.diff`` (the harness's diff of the working
tree, ``evalrepro.run.worktree``), and what it printed is ``agent_log.txt``. How each
status is scored: docs/semantics.md ("Agents").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalrepro.records.base import Record
from evalrepro.records.usage import Usage

#: How the agent phase ended:
#: ``submitted``: the agent stopped by itself and left a diff;
#: ``no_diff``: it stopped by itself and left the repository as it was;
#: ``agent_error``: it stopped with a failure of its own (a non-zero exit, an install
#: script that failed, a working tree the harness cannot take: too large, special files);
#: ``budget_exhausted``: a budget of the target's ran out first (``budget`` says which);
#: ``infrastructure_error``: the sandbox could not be started or did not answer (retried).
AgentStatus = Literal[
    "submitted", "no_diff", "agent_error", "budget_exhausted", "infrastructure_error"
]
#: The budgets an agent has.
Budget = Literal["wall_time", "steps", "tokens", "cost"]


class AgentOutcome(Record):
    record: Literal["AgentOutcome"] = "AgentOutcome"
    schema_version: int = 1

    status: AgentStatus
    #: Which budget ran out (``budget_exhausted``).
    budget: Budget | None = None
    #: One line for a reader: the exit code, the budget's value, the error.
    detail: str = ""
    #: The adapter that ran the agent, and its version where it has one.
    adapter: str
    adapter_version: str = ""
    #: Steps (model calls, or commands for a command agent) and wall time.
    steps: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0)
    #: The agent's exit code, for an agent that is a command.
    exit_code: int | None = None
    #: sha256 over the bytes of the diff the harness took (none when it took none).
    patch_digest: str | None = None
    patch_bytes: int = Field(default=0, ge=0)
    #: Tokens and cost, for an agent that reports them.
    usage: Usage | None = None
