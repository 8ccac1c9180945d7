"""Which config fields are a trial's identity: declared on the config models, read here.

Each config model may declare ``identity: ClassVar[dict[str, str]]``, field name -> how
the field counts (a field it does not name is a setting, compared as it is):

* ``none``: not what a trial measures (the experiment's name, where runs go, how many
  attempts run at once, how images are built);
* ``digest``: compared through what it produced (the instances by digest, a repo source
  through base commits and image digests, the target through its patches' digests);
* ``test_spec``: a setting that shapes an instance's TestSpec, named as a ``test_spec``
  difference beside the TestSpec digests it changes.

A new field is identity (a compared setting) unless its model says otherwise where the
field is defined. :func:`settings` flattens a config (raw data: a lockfile's, which need
not validate here) to its compared settings, by walking the models beside the data;
:func:`environment_digest` is the one digest of an environment's identity.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from evalrepro.digest import sha256_json

How = Literal["setting", "none", "digest", "test_spec"]


def settings(model: type[BaseModel], data: Any) -> dict[str, tuple[How, Any]]:
    """``data`` (a config of ``model``) as ``{"a.b.c": (how, leaf)}``, leaving out what is
    not identity; lists are leaves, and so is any value no model describes."""
    flat: dict[str, tuple[How, Any]] = {}
    _walk(model, data, "", "setting", flat)
    return flat


def identity_part(model: type[BaseModel], data: Any) -> Any:
    """``data`` without the fields its models declare ``none`` (recursively)."""
    if not isinstance(data, dict):
        return data
    declared = _declared(model)
    kept = {}
    for key, value in data.items():
        if declared.get(key) == "none":
            continue
        sub = _model_of(model, key, value)
        kept[key] = identity_part(sub, value) if sub is not None else value
    return kept


def environment_digest(environment: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of an environment config's identity (its data, as a
    lockfile holds it, without what its models declare ``none``)."""
    from evalrepro.config.experiment import ExperimentConfig

    model = _model_of(ExperimentConfig, "environment", environment)
    return sha256_json(identity_part(model, environment) if model else environment)


def _walk(model: type[BaseModel] | None, data: Any, prefix: str, how: How, flat: dict) -> None:
    if not isinstance(data, dict) or not data:
        flat[prefix] = (how, data)
        return
    declared = _declared(model) if model is not None else {}
    for key, value in data.items():
        field_how: How = declared.get(key, how)  # type: ignore[assignment]
        if field_how in ("none", "digest"):
            continue
        sub = _model_of(model, key, value) if model is not None else None
        _walk(sub, value, f"{prefix}.{key}" if prefix else key, field_how, flat)


def _declared(model: type[BaseModel]) -> dict[str, str]:
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        found.update(getattr(klass, "identity", None) or {})
    return found


def _model_of(model: type[BaseModel], key: str, value: Any) -> type[BaseModel] | None:
    """The model that describes ``value``, the field ``key`` of ``model`` (a union's member
    by the value's ``kind``; a dict's value model for every key of a mapping field)."""
    field = model.model_fields.get(key)
    if field is None:
        return None
    return _model_in(field.annotation, value)


def _model_in(annotation: Any, value: Any) -> type[BaseModel] | None:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _model_in(get_args(annotation)[0], value)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(annotation) if isinstance(m, type)]
        models = [m for m in members if issubclass(m, BaseModel)]
        if len(models) == 1:
            return models[0]
        kind = value.get("kind") if isinstance(value, dict) else None
        for member in models:
            field = member.model_fields.get("kind")
            if field is not None and field.default == kind:
                return member
    return None
