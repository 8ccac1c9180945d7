"""Agent targets: the patch of each trial is made by an agent, in the trial's attempt.

``target.kind: agent``: at lock time there is no patch; every (instance, sample) is
planned with the agent's configuration as its identity (the trial key's
``target_digest``: the adapter and its settings, budgets, network policy, user; never a
secret's value). At run time the attempt's agent phase starts an interactive sandbox of
the instance's image (``evalrepro.runtimes.interactive``), runs the agent through its adapter
(``adapter.kind``, one config model each, naming its implementation), takes the diff of
what it left (``evalrepro.run.worktree``), and the tests then run with that patch as with
any saved patch, in a fresh sandbox (``evalrepro.run.agent_phase``).

Adapters (``evalrepro.config.agents``): ``command`` (an agent CLI run inside the sandbox:
an install script, then a command line) and ``mini_swe_agent`` (the mini-swe-agent
package drives the loop on the host; each of its commands is an ``exec`` in the sandbox).
How the agent's end is scored: docs/semantics.md ("Agents").
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalrepro.config.agents import CommandAgent, MiniSweAgent
from evalrepro.digest import sha256_json
from evalrepro.plugins import config_union
from evalrepro.sample import Sample
from evalrepro.targets.base import Prediction, Target


class AgentBudgets(BaseModel):
    """What an agent may spend on one trial; the first exhausted ends the agent phase."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Seconds of wall time for the whole agent phase (install included).
    wall_seconds: int = Field(default=1800, ge=1, le=7 * 24 * 3600)
    #: Model calls (or, for a command agent, nothing: it is one command).
    steps: int | None = Field(default=None, ge=1)
    #: Tokens, input and output together, for an agent that reports them.
    tokens: int | None = Field(default=None, ge=1)
    #: Money (US dollars), for an agent that reports it.
    cost_usd: float | None = Field(default=None, gt=0)


#: The adapters, by ``kind`` (entry-point group ``evalrepro.agents``).
AgentAdapter = config_union("agents")


class AgentTarget(Target):
    kind: Literal["agent"] = "agent"
    #: The target's name in trial ids and reports (the agent and model, say).
    name: str = Field(min_length=1)
    #: How the agent is driven (``kind``: ``command``, ``mini_swe_agent``).
    adapter: AgentAdapter  # type: ignore[valid-type]
    #: What the agent may spend on one trial.
    budgets: AgentBudgets = Field(default_factory=AgentBudgets)
    #: The sandbox's network: ``none`` at all, or ``model_only``: exactly the adapter's
    #: ``endpoints``, through evalrepro's proxy (a ``command`` agent; mini-swe-agent calls
    #: its model from the host and its sandbox has no network).
    network: Literal["none", "model_only"] = "none"
    #: The user the agent's commands run as (evalrepro's images: ``tester``, who owns the
    #: repository; None: the image's own user).
    user: str | None = "tester"
    #: Seconds a single command of the agent may run (an adapter that runs many).
    command_timeout: int = Field(default=600, ge=1)
    #: Bytes of the working tree the harness copies out, at most (as a tar).
    max_tree_bytes: int = Field(default=1 << 30, ge=1 << 20)
    #: Bytes of the diff the harness takes, at most.
    max_patch_bytes: int = Field(default=16 << 20, ge=1 << 10)
    #: Bytes of the agent's output kept in ``agent_log.txt``.
    max_log_bytes: int = Field(default=8 << 20, ge=1 << 10)

    #: An agent makes its patches while the run goes on.
    makes_patches: ClassVar[bool] = True

    @model_validator(mode="after")
    def _network(self) -> AgentTarget:
        if self.network == "model_only" and not getattr(self.adapter, "endpoints", None):
            raise ValueError(
                f"network model_only needs the endpoints the agent may reach "
                f"(adapter.endpoints); adapter {self.adapter.kind} has none"
            )
        return self

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        return [
            Prediction(
                instance_id=sample.instance_id,
                model_name_or_path=self.name,
                model_patch=None,
                sample_index=index,
                patch_known=False,
            )
            for sample in samples
            for index in range(self.samples)
        ]

    def target_id(self, predictions: list[Prediction]) -> str:
        return self.name

    def identity(self, prediction: Prediction) -> str:
        """sha256 over the canonical JSON of what defines the agent: everything here but
        how many samples there are and what a missing one means (which change the plan,
        not an answer), and what the adapter says is where the agent runs from, not what
        it is (an endpoint's address, a key's variable, a Python's path)."""
        exclude: dict[str, Any] = {"samples": True, "missing": True}
        if type(self.adapter).not_identity:
            exclude["adapter"] = type(self.adapter).not_identity
        data = self.model_dump(mode="json", exclude=exclude)
        for name in getattr(type(self.adapter), "identity_when_set", ()):
            if data["adapter"].get(name) is None:
                data["adapter"].pop(name, None)
        return sha256_json(data)


__all__ = ["AgentBudgets", "AgentTarget", "CommandAgent", "MiniSweAgent"]
