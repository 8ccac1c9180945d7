"""Base class of every record evalrepro writes to disk, the registry of them, and the one
reader.

Each record carries ``record`` (its model's name, so a reader knows which model parses
it) and ``schema_version``, pinned per model by its default. A record of an older schema
version is upgraded on reading, step by step, by the model's own ``migrations`` (a
record nested in another is upgraded too: the hook is the model's validator); one of a
newer version than the code (a newer evalrepro's, or an edit) is refused with a message
that says so, and so is an older one that no migration reaches. Unknown fields are
rejected too, so that a typo never passes silently.

Every ``Record`` subclass with a ``record`` name registers itself (:func:`records`), so
that the list of what evalrepro persists, and in which schema version, is one table
(docs/reproducibility.md's "Records"). :func:`read_record` is how a file of one is read: a regular
file (never through a link), at most ``limit`` bytes, a JSON object naming that record
and its pinned schema version, then the model's own validation; anything else is one
:class:`RecordError` line naming the file.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evalrepro.errors import UserError, validation_message
from evalrepro.files import read_regular_file


class RecordError(UserError):
    """A record file that cannot be read as the record it should be."""


_REGISTRY: dict[str, type[Record]] = {}


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = 1

    #: The largest file of this record that :func:`read_record` reads by default.
    max_bytes: ClassVar[int] = 64 << 20
    #: Files written before records named themselves are read as this record.
    unnamed_ok: ClassVar[bool] = False
    #: version -> how a record of that version becomes one of the next (a function of the
    #: raw JSON object). A model that changes its shape bumps its pinned version and adds
    #: the step from the old one here, so that last release's files still read.
    migrations: ClassVar[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        name = cls.record_name()
        if name is None:
            return
        known = _REGISTRY.get(name)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise TypeError(f"two records named {name}: {known.__module__} and {cls.__module__}")
        _REGISTRY[name] = cls

    @classmethod
    def record_name(cls) -> str | None:
        field = cls.model_fields.get("record")
        return field.default if field is not None else None

    @classmethod
    def pinned_version(cls) -> int:
        return cls.model_fields["schema_version"].default

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "schema_version" not in data:
            return data
        version, pinned = data["schema_version"], cls.pinned_version()
        if not isinstance(version, int) or isinstance(version, bool) or version >= pinned:
            return data
        while version < pinned:
            step = cls.migrations.get(version)
            if step is None:
                raise ValueError(
                    f"{cls.__name__} schema version {version} has no migration to "
                    f"{version + 1} (this evalrepro reads {pinned})"
                )
            data = {**step(dict(data)), "schema_version": version + 1}
            version += 1
        return data

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


def unchanged(data: dict[str, Any]) -> dict[str, Any]:
    """A migration step whose new shape only adds optional fields: the old record reads as
    it is."""
    return data


R = TypeVar("R", bound=Record)


#: Every persisted record lives in a module of this package: ``records()`` imports them
#: all (record models are defined nowhere else; ``tests/test_layers.py`` checks that).
RECORDS_PACKAGE = Path(__file__).parent


def records() -> dict[str, type[Record]]:
    """Every record evalrepro writes, by name."""
    for path in sorted(RECORDS_PACKAGE.glob("*.py")):
        importlib.import_module(f"{__package__}.{path.stem}")
    # Records a test (or a plugin of another package) defines are not evalrepro's own.
    return {
        name: model
        for name, model in sorted(_REGISTRY.items())
        if model.__module__.startswith("evalrepro.")
    }


def read_record(path: Path, model: type[R], *, limit: int | None = None) -> R:
    """``path`` as a ``model`` record, or one RecordError line saying why not."""
    name = model.record_name() or model.__name__
    data = read_regular_file(path, limit or model.max_bytes, name)
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise RecordError(f"{path}: not a readable {name} record ({error})") from None
    return parse_record(raw, model, where=str(path))


def parse_record(raw: object, model: type[R], *, where: str) -> R:
    """An already-decoded JSON value as a ``model`` record (for records inside others)."""
    name = model.record_name() or model.__name__
    if not isinstance(raw, dict):
        raise RecordError(f"{where}: not a {name} record (a JSON {type(raw).__name__})")
    kind = raw.get("record", name if model.unnamed_ok else None)
    if kind is None:
        raise RecordError(f"{where}: not a {name} record (it names no record)")
    if kind != name:
        what = f"a {kind} record" if kind in _REGISTRY else f"an unknown record {kind!r}"
        raise RecordError(f"{where}: {what}, not a {name}")
    version, pinned = raw.get("schema_version", 1), model.pinned_version()
    if not isinstance(version, int) or isinstance(version, bool) or version > pinned:
        raise RecordError(
            f"{where}: {name} schema version {version!r}; this evalrepro reads version "
            f"{pinned} and older (written by a newer evalrepro, or edited)"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise RecordError(
            f"{where}: not a valid {name}: {validation_message(error, model=model)}"
        ) from None
