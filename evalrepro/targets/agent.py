"""Agent targets: the patch of each trial is made by an agent, in the trial's attempt.

``target.kind: agent``: at lock time there is no patch; every (instance, sample) is
planned with the agent's configuration as its identity (the trial key's
``target_digest``: the adapter and its settings, budgets, network policy, user; never a
secret's value). At run time the attempt's agent phase starts an interactive sandbox of
the instance's image (``evalrepro.run.interactive``), runs the agent through its adapter
(``adapter.kind``, one config model each, naming its implementation), takes the diff of
what it left (``evalrepro.run.worktree``), and the tests then run with that patch as with
any saved patch, in a fresh sandbox (``evalrepro.run.agent_phase``).

Adapters: ``command`` (an agent CLI run inside the sandbox: an install script, then a
command line). How the agent's end is scored: docs/semantics.md ("Agents").
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.config.sample import Sample
from evalrepro.digest import sha256_json
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


class CommandAgent(BaseModel):
    """Any agent CLI, installed into the sandbox and run inside it (as terminal-bench's
    installed agents are): ``install`` first (as root, in ``/``), then ``command`` (as
    the target's user, in the repository). The problem statement is the file
    ``$EVALREPRO_PROBLEM`` (``/tmp/evalrepro/problem.md``) and the variable of that
    name's ``_TEXT``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["command"] = "command"
    #: A shell script that installs the agent (empty: the image has it).
    install: str = ""
    #: The command line that runs the agent, with ``bash -c``.
    command: str = Field(min_length=1)
    #: Environment variables of the agent's commands (values are identity: no secrets).
    env: dict[str, str] = {}
    #: Names of host environment variables passed to the agent by name (keys): their
    #: values are never written anywhere, nor part of the identity.
    secrets: list[str] = []
    #: The agent's version, for the record and the identity.
    version: str = ""

    implementation: ClassVar[str] = "evalrepro.agents.command:CommandAgentRunner"


#: The adapters, by ``kind``.
AgentAdapter = Annotated[CommandAgent, Field(discriminator="kind")]


class AgentTarget(Target):
    kind: Literal["agent"] = "agent"
    #: The target's name in trial ids and reports (the agent and model, say).
    name: str = Field(min_length=1)
    #: How the agent is driven (``kind``: ``command``).
    adapter: AgentAdapter
    #: What the agent may spend on one trial.
    budgets: AgentBudgets = Field(default_factory=AgentBudgets)
    #: The sandbox's network: none at all.
    network: Literal["none"] = "none"
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
        not an answer)."""
        return sha256_json(self.model_dump(mode="json", exclude={"samples", "missing"}))
