"""What a target is: what produces the patch of each trial, and what defines it.

A target kind is a pydantic config model (``target.kind``, a plugin of the
``evalrepro.targets`` group) with two phases:

* at lock time, ``patches(samples)`` gives one :class:`Prediction` per planned
  (instance, sample) and ``identity(prediction)`` what defines the target's answer in
  that trial: the trial key holds it (``target_digest``), so two targets of one name with
  other patches (or, for an agent, another model, prompt or limit) never share a trial
  id;
* at run time the patch is there already for a saved patch. A target that makes its
  patch while the run goes on (an agent) gives predictions without one and makes it in
  the trial's attempt, in the sandbox of the instance's image, before the tests; its
  identity is then the digest of its configuration (model, prompt, limits, version), not
  of a patch nobody has yet. See docs/architecture.md.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.digest import sha256_bytes
from evalrepro.records.usage import Usage
from evalrepro.rules.patchcheck import patch_bytes
from evalrepro.sample import Sample
from evalrepro.text import InstanceId


class Prediction(BaseModel):
    """One patch to evaluate: an instance, and which of the target's samples it is."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: InstanceId
    model_name_or_path: str = Field(min_length=1)
    #: None or "" is an empty patch: evaluated, and scored as such, never dropped.
    model_patch: str | None
    sample_index: int = Field(default=0, ge=0)
    #: Optional ``usage`` of a predictions line: tokens and cost of producing the patch.
    usage: Usage | None = None
    #: False: the target has no patch to show for this trial (a foreign log's folder kept
    #: none): not an empty patch, which is the target's answer.
    patch_known: bool = True

    @property
    def patch_digest(self) -> str:
        return sha256_bytes(patch_bytes(self.model_patch))


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Patches per instance (k agent runs give k samples); pass@k needs k > 1.
    samples: int = Field(default=1, ge=1)
    #: Instances (or samples) the target gave no patch for: ``error`` refuses to plan;
    #: ``empty`` plans them as empty patches (scored unresolved: the denominator is the
    #: dataset); ``skip`` leaves them out of the plan (SWE-bench's "incomplete": the
    #: denominator is what was submitted). The choice changes what a rate means.
    missing: Literal["error", "empty", "skip"] = "error"

    #: The target's name in trial ids and reports.
    name: str | None = None

    #: Whether the instances must declare FAIL_TO_PASS / PASS_TO_PASS (validation derives
    #: them: it needs none).
    needs_test_lists: ClassVar[bool] = True

    @property
    def applies_patch(self) -> bool:
        """Whether the trials apply the target's patch (dataset validation's side before
        the gold patch applies none: the tests meet base + test patch)."""
        return True

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        """One prediction per instance and sample the target answers."""
        raise NotImplementedError

    def target_id(self, predictions: list[Prediction]) -> str:
        """The target's name in trial ids and reports."""
        return self.name or self.kind  # type: ignore[attr-defined]

    def identity(self, prediction: Prediction) -> str:
        """What defines the target's answer in the trial of ``prediction``: the patch's
        sha256 (over its bytes) for a saved patch."""
        return prediction.patch_digest
