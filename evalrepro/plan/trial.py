"""What a plan is made of: each planned trial and the plan, apart from the code that makes
them from the config (``evalrepro.plan.plan``). The stages after planning (running,
reporting) take these and never the config they were made from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalrepro.build.images import ImageChain
from evalrepro.grade.parsers import LogParser
from evalrepro.records.image import BuildFailure, ImageRecord
from evalrepro.records.testspec import TestSpec
from evalrepro.records.trial import Trial
from evalrepro.rules.patchcheck import PatchCheck, patch_bytes
from evalrepro.sample import Sample
from evalrepro.targets.base import Prediction


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial
    sample: Sample
    spec: TestSpec
    parser: LogParser
    prediction: Prediction
    image: ImageChain | BuildFailure
    #: The patch's checks, made once, when the trial is planned.
    check: PatchCheck
    #: The bytes of the spec's ``outside_files`` by path, read from the cache and checked
    #: against their digests: where the trial's canaries go besides the test patch's files.
    outside: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.trial.label

    @property
    def image_ref(self) -> ImageRecord | None:
        """The image the trial runs in (None: it could not be built)."""
        return self.image.image if isinstance(self.image, ImageChain) else None

    @property
    def unavailable(self) -> str | None:
        """Why there is no image, when there is none."""
        if isinstance(self.image, BuildFailure):
            return f"image {self.image.layer} layer: {self.image.reason}"
        return None

    @property
    def patch(self) -> bytes:
        return patch_bytes(self.prediction.model_patch)

    @property
    def patch_known(self) -> bool:
        return self.prediction.patch_known

    @property
    def test_patch(self) -> bytes:
        return patch_bytes(self.sample.test_patch)


@dataclass(frozen=True)
class Plan:
    target_id: str
    trials: list[PlannedTrial]
    #: The kind of the builder that made (or found) the images.
    builder: str = ""

    @property
    def images(self) -> list[ImageChain | BuildFailure]:
        return [planned.image for planned in self.trials]
