"""Saved patches as targets:

* ``gold``: the dataset's own ``patch`` field (a sanity check of the environment);
* ``predictions``: a SWE-bench predictions file (JSONL, a JSON list, or a JSON object
  keyed by instance_id) with ``instance_id``, ``model_name_or_path``, ``model_patch``.

What defines such a target's answer in a trial is its patch: the trial key holds the
patch's sha256.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from evalrepro.errors import UserError, validation_message
from evalrepro.jsonfile import read_records
from evalrepro.sample import Sample
from evalrepro.targets.base import Prediction, Target


class GoldTarget(Target):
    kind: Literal["gold"] = "gold"
    #: The target id in trial ids and reports.
    name: str = "gold"

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        if self.samples != 1:
            raise UserError("target.samples: the gold target has exactly one sample")
        return [
            Prediction(instance_id=s.instance_id, model_name_or_path="gold", model_patch=s.patch)
            for s in samples
        ]

    def target_id(self, predictions: list[Prediction]) -> str:
        return "gold"


class PredictionsTarget(Target):
    kind: Literal["predictions"] = "predictions"
    #: Defaults to the model_name_or_path of the file (which must then be unique).
    name: str | None = None
    #: The predictions file: SWE-bench JSONL (instance_id, model_name_or_path, model_patch[,
    #: sample_index]), JSON, or a JSON object keyed by instance id.
    path: Path

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        return load_predictions(self.path, samples, samples_per_instance=self.samples)

    def target_id(self, predictions: list[Prediction]) -> str:
        if self.name:
            return self.name
        names = sorted({p.model_name_or_path for p in predictions})
        if len(names) != 1:
            raise UserError(
                f"target: predictions name {len(names)} models ({', '.join(names[:3])}); "
                "set target.name"
            )
        return names[0]


def load_predictions(
    path: Path, samples: list[Sample], *, samples_per_instance: int = 1
) -> list[Prediction]:
    """Read a predictions file and check it against the dataset.

    An instance may appear up to ``samples_per_instance`` times; its sample index is
    the ``sample_index`` field when given, else the order of appearance. Every error
    names the line (or index) of the offending record.
    """
    known = {s.instance_id for s in samples}
    predictions: list[Prediction] = []
    seen: dict[tuple[str, int], str] = {}
    count: dict[str, int] = {}
    for where, raw in _prediction_records(path):
        if not isinstance(raw, dict):
            raise UserError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        if "model_patch" not in raw:
            raise UserError(f"{where}: missing field 'model_patch'")
        raw = {"sample_index": count.get(str(raw.get("instance_id")), 0), **raw}
        try:
            prediction = Prediction.model_validate(raw)
        except ValidationError as error:
            raise UserError(f"{where}: {validation_message(error, model=Prediction)}") from None
        if prediction.instance_id not in known:
            raise UserError(f"{where}: prediction for unknown instance '{prediction.instance_id}'")
        key = (prediction.instance_id, prediction.sample_index)
        if key in seen:
            raise UserError(
                f"{where}: duplicate prediction for '{prediction.instance_id}' sample "
                f"{prediction.sample_index} (first at {seen[key]})"
            )
        if prediction.sample_index >= samples_per_instance:
            raise UserError(
                f"{where}: sample {prediction.sample_index} of '{prediction.instance_id}' "
                f"but the target declares samples: {samples_per_instance}"
            )
        seen[key] = where
        count[prediction.instance_id] = count.get(prediction.instance_id, 0) + 1
        predictions.append(prediction)
    if not predictions:
        raise UserError(f"{path}: no predictions")
    return predictions


def _prediction_records(path: Path):
    """Records of a predictions file; a JSON object keyed by instance_id is unfolded."""
    for where, raw in read_records(path):
        # A whole-file object (its location is the file alone) keyed by instance id.
        if where == str(path) and _keyed_by_id(raw):
            for instance_id, item in raw.items():
                record = {"instance_id": instance_id, **item} if isinstance(item, dict) else item
                yield f"{path}[{instance_id!r}]", record
            return
        yield where, raw


def _keyed_by_id(data: object) -> bool:
    return (
        isinstance(data, dict)
        and "model_patch" not in data
        and all(isinstance(value, dict) for value in data.values())
    )
