"""Target: what produces the patches under evaluation.

Each kind is a pydantic config selected by ``kind`` (a discriminated union) with one
method, ``patches(samples)``, that yields a :class:`Prediction` per instance and sample:

* ``gold``: the dataset's own ``patch`` field (a sanity check of the environment);
* ``predictions``: a SWE-bench predictions file (JSONL, a JSON list, or a JSON object
  keyed by instance_id) with ``instance_id``, ``model_name_or_path``, ``model_patch``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError, validation_message
from evalrepro.files import read_regular_file
from evalrepro.jsonfile import read_records
from evalrepro.patchcheck import patch_bytes
from evalrepro.sample import Sample


class Usage(BaseModel):
    """What producing a patch cost, when the target reports it (an agent's tokens and
    money); evalrepro only adds it up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


class Prediction(BaseModel):
    """One patch to evaluate: an instance, and which of the target's samples it is."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str = Field(min_length=1)
    model_name_or_path: str = Field(min_length=1)
    #: None or "" is an empty patch: evaluated, and scored as such, never dropped.
    model_patch: str | None
    sample_index: int = Field(default=0, ge=0)
    #: Optional ``usage`` of a predictions line: tokens and cost of producing the patch.
    usage: Usage | None = None

    @property
    def patch_digest(self) -> str:
        return sha256_bytes(patch_bytes(self.model_patch))


class _TargetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Patches per instance (k agent runs give k samples); pass@k needs k > 1.
    samples: int = Field(default=1, ge=1)
    #: Instances (or samples) the target gave no patch for: ``error`` refuses to plan;
    #: ``empty`` plans them as empty patches (scored unresolved: the denominator is the
    #: dataset); ``skip`` leaves them out of the plan (SWE-bench's "incomplete": the
    #: denominator is what was submitted). The choice changes what a rate means.
    missing: Literal["error", "empty", "skip"] = "error"


class GoldTarget(_TargetBase):
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


class PredictionsTarget(_TargetBase):
    kind: Literal["predictions"] = "predictions"
    #: Defaults to the model_name_or_path of the file (which must then be unique).
    name: str | None = None
    #: The predictions file: SWE-bench JSONL (instance_id, model_name_or_path, model_patch[,
    #: sample_index]), JSON, or a JSON object keyed by instance id.
    path: Path

    def patches(self, samples: list[Sample]) -> list[Prediction]:
        return load_predictions(self.path, samples, samples_per_instance=self.samples)


#: Largest patch.diff read from a logs folder.
_MAX_PATCH_BYTES = 64 << 20


class LogsTarget(_TargetBase):
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
                )
            )
        return predictions


TargetConfig = Annotated[GoldTarget | PredictionsTarget | LogsTarget, Field(discriminator="kind")]


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
    records = list(read_records(path))
    if len(records) == 1 and records[0][0] == str(path) and _keyed_by_id(records[0][1]):
        for instance_id, raw in records[0][1].items():
            item = {"instance_id": instance_id, **raw} if isinstance(raw, dict) else raw
            yield f"{path}[{instance_id!r}]", item
        return
    yield from records


def _keyed_by_id(data: object) -> bool:
    return (
        isinstance(data, dict)
        and "model_patch" not in data
        and all(isinstance(value, dict) for value in data.values())
    )
