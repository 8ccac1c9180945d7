"""Usage: what producing a patch cost (an agent's tokens and money)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Usage(BaseModel):
    """What producing a patch cost, when the target reports it (an agent's tokens and
    money); evalrepro only adds it up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
