"""An agent's trajectory: each step's model reply, the commands it ran and what they
printed, with timing and tokens, as the harness saw them.

Written as the attempt's ``trajectory.json`` by the host, from what the adapter relayed:
every command went through the harness's sandbox, so its output and exit status here are
the sandbox's, not the agent's account of them. Texts are bounded (``MAX_TEXT``
characters each); a cut text says how much was left out.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.records.base import Record

#: Characters of one text (a reply, a command, an output) a trajectory keeps.
MAX_TEXT = 64 << 10


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    """``text``, cut to ``limit`` characters with a note of what was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[{len(text) - limit} more characters not kept]"


class Action(BaseModel):
    """One command of a step, run in the sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    #: Its exit status (None: killed at its timeout).
    exit_code: int | None
    output: str
    #: Bytes of output beyond the sandbox's bound, not kept (nor shown to the model).
    dropped: int = Field(default=0, ge=0)
    timed_out: bool = False
    seconds: float = Field(ge=0)


class Step(BaseModel):
    """One model call and the commands of its reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=1)
    #: The reply's text.
    content: str = ""
    actions: list[Action] = []
    #: Why the reply was not acted on (no usable tool call), when it was not.
    format_error: str = ""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    #: Seconds the model call took.
    model_seconds: float = Field(default=0.0, ge=0)


class Trajectory(Record):
    record: Literal["Trajectory"] = "Trajectory"
    schema_version: int = 1

    adapter: str
    adapter_version: str = ""
    #: The model's name, as the target names it.
    model: str = ""
    steps: list[Step] = []
    #: Steps left out to keep the file within its bound (from the middle: the first and
    #: the last are kept), with their indexes.
    steps_not_kept: list[int] = []
    #: How the agent's own loop ended (mini-swe-agent's exit status, say), as it said.
    exit_status: str = ""
