"""The target of dataset validation (``evalrepro validate``): one side of an instance's
tests, repeated.

* ``side: before``: no model patch at all: the tests run on base + test patch (the eval
  script's patch step is ``none``, and the host refuses to give such a trial a patch);
* ``side: after``: the dataset's gold patch, as the ``gold`` target.

``samples`` is the number of repeats: each repeat is its own trial in a fresh sandbox. The
instances need no FAIL_TO_PASS / PASS_TO_PASS: validation derives them from what the
two sides' runs report (``evalrepro.validation``).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from evalrepro.sample import Sample
from evalrepro.targets.base import Prediction, Target


class ValidationTarget(Target):
    kind: Literal["validation"] = "validation"
    #: Which side of the gold patch the trials run on.
    side: Literal["before", "after"]

    needs_test_lists: ClassVar[bool] = False

    @property
    def applies_patch(self) -> bool:
        return self.side == "after"

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        return [
            Prediction(
                instance_id=sample.instance_id,
                model_name_or_path=self.target_id([]),
                model_patch=sample.patch if self.side == "after" else "",
                sample_index=index,
            )
            for sample in samples
            for index in range(self.samples)
        ]

    def target_id(self, predictions: list[Prediction]) -> str:
        return f"validation-{self.side}"
