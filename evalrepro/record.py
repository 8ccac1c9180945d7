"""Base class of every record evalrepro writes to disk.

Each record carries ``record`` (its model's name, so a reader knows which model parses
it) and ``schema_version``, pinned per model by its default: a record of another schema
version (a newer evalrepro's, or an edit) is refused with a message that says so.
Unknown fields are rejected too, so that a typo never passes silently.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = 1

    @field_validator("schema_version")
    @classmethod
    def _pinned(cls, value: int, info: ValidationInfo) -> int:
        pinned = cls.model_fields["schema_version"].default
        if value != pinned:
            raise ValueError(
                f"{cls.__name__} schema version {value} is not {pinned}, the one this "
                "evalrepro reads"
            )
        return value
