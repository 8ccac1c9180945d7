"""Agent adapters' config models: how each kind of agent is driven (``target.adapter``).

One model per kind, found by entry point in the group ``evalrepro.agents`` (a package
adds its own adapter as it adds an executor); each names its runner
(``evalrepro.agents.*``), imported only when an attempt runs it. What an adapter's model
holds is the agent's identity (the trial key's ``target_digest``), except the fields its
``not_identity`` names: where the agent runs from, never what it is.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrepro.config.program import AgentProgram

#: An endpoint that is evalrepro's replay server of a recording (``replay:PATH``), started
#: on 127.0.0.1 for each agent's loop: recorded responses, no model (tests and demos).
REPLAY = "replay:"
#: A model parameter's value (temperature, max_tokens, seed, ...): JSON scalars only.
Parameter = str | int | float | bool | None


class CommandAgent(BaseModel):
    """Any agent CLI, installed into the sandbox and run inside it (as terminal-bench's
    installed agents are): ``install`` first (as root, in ``/``), then ``command`` (as
    the target's user, in the repository). The problem statement is the file
    ``$EVALREPRO_PROBLEM`` (``/tmp/evalrepro/problem.md``) and the variable of that
    name's ``_TEXT``. ``program`` brings a folder of the host along: copied in before
    the install script, read-only and root's, at ``program.at`` (``$EVALREPRO_AGENT_PROGRAM``),
    its digest part of the agent's identity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["command"] = "command"
    #: A folder of the host with the agent's program (None: none). Its content's digest
    #: is identity, its place on the host is not.
    program: AgentProgram | None = None
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
    #: The model endpoints (http or https URLs) the agent may reach when the target's
    #: network is ``model_only``: their host and port, and nothing else. Where a model is
    #: served is not what the agent is: not part of the identity.
    endpoints: list[str] = []

    implementation: ClassVar[str] = "evalrepro.agents.command:CommandAgentRunner"
    not_identity: ClassVar[Any] = {"endpoints": True, "program": {"source"}}
    #: Fields that enter the identity only when set: a command agent without a program
    #: keeps the identity it had before the field existed.
    identity_when_set: ClassVar[frozenset[str]] = frozenset({"program"})

    @field_validator("endpoints")
    @classmethod
    def _urls(cls, endpoints: list[str]) -> list[str]:
        for url in endpoints:
            try:
                parts = urlsplit(url)
                parts.port  # noqa: B018  (a bad port raises here)
            except ValueError:
                raise ValueError(f"not a URL: {url!r}") from None
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"not an http(s) URL with a host: {url!r}")
        return endpoints


class Pricing(BaseModel):
    """What the model's tokens cost, in US dollars per million (for the cost budget and
    the record, where the endpoint does not say)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Dollars per million input (prompt) tokens.
    input_per_million: float = Field(ge=0)
    #: Dollars per million output (completion) tokens.
    output_per_million: float = Field(ge=0)


class AgentModel(BaseModel):
    """The language model an agent calls, through litellm, at any OpenAI-compatible
    endpoint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: litellm's model name, its provider first (``openai/NAME`` for any OpenAI-compatible
    #: endpoint).
    name: str = Field(min_length=1)
    #: The endpoint's base URL (``http://HOST:PORT/v1``; None: the provider's own;
    #: ``replay:PATH``: evalrepro's replay server of the recording at PATH, for tests and
    #: demos). Where a model is served is not what it is: not part of the identity.
    endpoint: str | None = None
    #: The name of the host environment variable that holds the API key (None: no key).
    #: Its value is passed to the agent's process only, never written anywhere.
    api_key_env: str | None = None
    #: Parameters of every call (temperature, max_tokens, seed, ...).
    parameters: dict[str, Parameter] = {}
    #: What the tokens cost (None: the cost litellm knows for the model, or none).
    pricing: Pricing | None = None
    #: Attempts of one call when the endpoint fails in a way that may pass (at least 1).
    retries: int = Field(default=3, ge=1, le=20)


#: evalrepro's own prompts for mini-swe-agent: the working tree is the submission (the
#: harness takes its diff), so the agent is not asked to write a patch file.
SYSTEM_TEMPLATE = """\
You are a helpful assistant that can interact with a computer shell to solve programming \
tasks. Every response of yours holds a short reasoning and at least one bash tool call.
"""
INSTANCE_TEMPLATE = """\
<pr_description>
{{task}}
</pr_description>

You are in the repository at {{cwd}} (the problem is also in {{problem_path}}). Change the \
non-test source files so that the problem above is fixed. Each command runs in a new \
shell: directory changes do not persist. Do not use interactive programs.

When you are done, run exactly this command, alone:

    echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT

What you leave in the working tree is your submission; do not commit it.
"""


class MiniSweAgent(BaseModel):
    """The ``mini-swe-agent`` package (PyPI) drives the loop on the host, in a Python
    environment of its own; every command it runs is an ``exec`` in the trial's sandbox,
    and its model is called through litellm."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["mini_swe_agent"] = "mini_swe_agent"
    #: The package's version (PyPI ``mini-swe-agent==VERSION``).
    version: str = Field(default="2.4.6", pattern=r"^[0-9][0-9A-Za-z.+-]*$")
    #: A Python that has that version installed (None: evalrepro makes an environment of
    #: its own for it, once, in its cache folder). Not part of the identity.
    python: str | None = None
    #: The language model it calls, and where.
    model: AgentModel
    #: The system message (Jinja2, as mini-swe-agent renders it).
    system_template: str = SYSTEM_TEMPLATE
    #: The first user message; ``{{task}}`` is the problem statement, ``{{cwd}}`` the
    #: repository, ``{{problem_path}}`` the file that holds the problem.
    instance_template: str = INSTANCE_TEMPLATE
    #: How a command's output is shown to the model (None: mini-swe-agent's default).
    observation_template: str | None = None
    #: What the model is told when its reply has no usable tool call (None: the default).
    format_error_template: str | None = None
    #: Replies in a row without a usable tool call before the agent stops (an error).
    max_format_errors: int = Field(default=3, ge=1)
    #: Bytes of one command's output the agent sees, at most.
    max_output_bytes: int = Field(default=1 << 20, ge=1 << 10)

    implementation: ClassVar[str] = "evalrepro.agents.mini_swe_agent:MiniSweAgentRunner"
    not_identity: ClassVar[Any] = {"python": True, "model": {"endpoint", "api_key_env"}}
