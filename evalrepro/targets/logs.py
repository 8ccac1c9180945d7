"""The patches of a logs folder another harness wrote (``evalrepro regrade``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evalrepro.files import read_regular_file
from evalrepro.sample import Sample
from evalrepro.targets.base import Prediction, Target

#: Largest patch.diff read from a logs folder.
_MAX_PATCH_BYTES = 64 << 20


class LogsTarget(Target):
    """The patches of a logs folder another harness wrote (``evalrepro regrade``):
    ``path/<instance_id>/patch.diff``, where it kept one."""

    kind: Literal["logs"] = "logs"
    #: The model whose logs these are (SWE-bench's ``<model>`` folder).
    name: str
    #: The logs folder: ``<instance_id>/test_output.txt`` (+ ``patch.diff``).
    path: Path

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        predictions = []
        for sample in samples:
            patch_file = self.path / sample.instance_id / "patch.diff"
            patch = (
                read_regular_file(patch_file, _MAX_PATCH_BYTES, "patch").decode(
                    "utf-8", "surrogateescape"
                )
                if patch_file.exists() or patch_file.is_symlink()
                else None
            )
            predictions.append(
                Prediction(
                    instance_id=sample.instance_id,
                    model_name_or_path=self.name,
                    model_patch=patch,
                    patch_known=patch is not None,
                )
            )
        return predictions

    def target_id(self, predictions: list[Prediction]) -> str:
        return self.name
