"""Agent adapters: how each kind of agent is driven in its sandbox (``target.adapter``).

An adapter's config model (``evalrepro.targets.agent``) names its implementation, an
:class:`AgentRunner` imported only when an attempt runs it. A runner gets the started
sandbox, the target and the task, and returns how the agent ended; the harness (not the
runner) then takes the diff of what the agent left (``evalrepro.run.agent_phase``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from evalrepro.records.agent import AgentStatus, Budget
from evalrepro.records.usage import Usage
from evalrepro.runtimes.interactive import Sandbox
from evalrepro.targets.agent import AgentTarget

#: Where the problem statement is, in every agent's sandbox.
PROBLEM_PATH = "/tmp/evalrepro/problem.md"


@dataclass
class AgentEnd:
    """How an agent stopped, as its runner saw it (the diff is the harness's)."""

    status: AgentStatus
    detail: str = ""
    budget: Budget | None = None
    steps: int = 0
    exit_code: int | None = None
    usage: Usage | None = None
    version: str = ""
    #: What the agent printed (the attempt's ``agent_log.txt``), or its trajectory as
    #: JSON (``trajectory.json``, when ``trajectory``).
    log: bytes = b""
    trajectory: bool = False
    notes: list[str] = field(default_factory=list)


class AgentRunner(ABC):
    kind: str

    @abstractmethod
    def run(self, sandbox: Sandbox, target: AgentTarget, problem: str, deadline: float) -> AgentEnd:
        """Drive the agent in ``sandbox`` until it stops or ``deadline`` (monotonic)."""
