"""Sample: one task instance, in SWE-bench's format, and the loader for datasets of them.

A dataset file is a JSON list, a single JSON object, or JSONL. FAIL_TO_PASS and
PASS_TO_PASS may be lists or JSON-encoded strings (SWE-bench ships strings). Fields we
do not know (hints_text, created_at, image, ...) are kept. The instance digest covers
the fields that define the experiment (``DEFINING_FIELDS``); the lockfile also keeps
every field's own digest, so that a difference names the field.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrepro.digest import sha256_json
from evalrepro.errors import UserError, validation_message
from evalrepro.jsonfile import read_records
from evalrepro.text import InstanceId


class Family(StrEnum):
    """The parser family a dataset's FAIL_TO_PASS / PASS_TO_PASS ids come from (its
    parsers are in ``evalrepro.grade.parsers``): SWE-bench's own, quirks included, or
    the native ones that get every test id right."""

    SWEBENCH = "swebench"
    NATIVE = "native"


#: The fields of an instance that define the experiment: what the harness reads (repo,
#: commits, patches, test lists, version, parser, eval type) and what a model is shown
#: (problem statement, hints). Other fields a dataset carries (created_at, a path on its
#: author's machine, ...) are kept and digested one by one in the lockfile, but two
#: runs that differ only there measured the same thing.
DEFINING_FIELDS = frozenset(
    {
        "instance_id",
        "repo",
        "base_commit",
        "patch",
        "test_patch",
        "FAIL_TO_PASS",
        "PASS_TO_PASS",
        "version",
        "problem_statement",
        "hints_text",
        "environment_setup_commit",
        "log_parser",
        "eval_type",
    }
)


class Sample(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    instance_id: InstanceId
    repo: str = Field(min_length=1)
    base_commit: str = Field(min_length=1)
    test_patch: str
    #: The test lists; an instance without them can be validated (``evalrepro validate``
    #: derives them), not evaluated.
    fail_to_pass: list[str] = Field(default_factory=list, alias="FAIL_TO_PASS")
    pass_to_pass: list[str] = Field(default_factory=list, alias="PASS_TO_PASS")
    #: The gold patch (the ``gold`` target evaluates it).
    patch: str = ""
    version: str = ""
    problem_statement: str = ""
    #: Log parser name; None means "take it from the dataset's spec for repo/version".
    parser: str | None = Field(default=None, alias="log_parser")
    #: swebench 5's ``eval_type``: ``fail_only`` for runners that print only failures.
    eval_type: Literal["pass_and_fail", "fail_only"] | None = None

    @field_validator("fail_to_pass", "pass_to_pass", mode="before")
    @classmethod
    def _decode_json_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"is a string but not a JSON list ({error.msg})") from None
            except RecursionError:
                raise ValueError("is a string of JSON nested too deeply") from None
        return value

    @field_validator("parser", mode="before")
    @classmethod
    def _strip_swebench_prefix(cls, value: Any) -> Any:
        # swebench 5 datasets name parsers by function: parse_log_pytest -> pytest
        if isinstance(value, str) and value.startswith("parse_log_"):
            return value.removeprefix("parse_log_")
        return value or None

    @property
    def declares_lists(self) -> bool:
        """Whether the instance came with both FAIL_TO_PASS and PASS_TO_PASS."""
        return {"fail_to_pass", "pass_to_pass"} <= self.model_fields_set

    @property
    def fail_only(self) -> bool:
        return self.eval_type == "fail_only"

    def digest(self) -> str:
        """sha256 over the canonical JSON of the defining fields, in SWE-bench names."""
        record = self.model_dump(mode="json", by_alias=True)
        return sha256_json({k: v for k, v in record.items() if k in DEFINING_FIELDS})

    def field_digests(self) -> dict[str, str]:
        """Every field's own digest (sha256 over its canonical JSON), defining or not."""
        record = self.model_dump(mode="json", by_alias=True)
        return {name: sha256_json(value) for name, value in sorted(record.items())}


def load_samples(path: Path) -> list[Sample]:
    """Load a dataset; duplicate instance ids and malformed records name their line."""
    samples: list[Sample] = []
    seen: dict[str, str] = {}
    for where, raw in read_records(path):
        if not isinstance(raw, dict):
            raise UserError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        try:
            sample = Sample.model_validate(raw)
        except ValidationError as error:
            raise UserError(f"{where}: {validation_message(error, model=Sample)}") from None
        if sample.instance_id in seen:
            raise UserError(
                f"{where}: duplicate instance_id '{sample.instance_id}' "
                f"(first at {seen[sample.instance_id]})"
            )
        seen[sample.instance_id] = where
        samples.append(sample)
    if not samples:
        raise UserError(f"{path}: no instances")
    return samples
