"""The config reference: every field of an experiment config, from the models themselves.

The models document their fields with ``#:`` comments (as Sphinx reads them); this module
reads those comments from the source, so that ``evalrepro config --reference`` (Markdown,
committed as ``docs/config-reference.md``) and ``evalrepro config --schema`` (JSON
Schema, with each field's description) cannot drift from the code.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
import types
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from evalrepro.config.experiment import ExperimentConfig


@cache
def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """{field: its ``#:`` comment} for ``model`` and the models it inherits from."""
    docs: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        try:
            lines, _ = inspect.getsourcelines(klass)
        except (OSError, TypeError):
            continue
        source = textwrap.dedent("".join(lines))
        tree = ast.parse(source)
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        text = source.splitlines()
        for node in body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                comment = []
                line = node.lineno - 2
                while line >= 0 and text[line].strip().startswith("#:"):
                    comment.insert(0, text[line].strip().removeprefix("#:").strip())
                    line -= 1
                if comment:
                    docs[node.target.id] = " ".join(comment)
    return docs


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (a model, a union of models, Annotated[...])."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _container(annotation: Any) -> tuple[str, Any] | None:
    """("<key>", value type) for dict[str, X]; ("[]", X) for list[X]; else None."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return "<key>", args[1]
    if origin is list and args:
        return "[]", args[0]
    return None


def _type_name(annotation: Any) -> str:
    """A reader's name for a type: ``path``, ``list of str``, ``one of local, archive``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    members = _models(annotation)
    if len(members) > 1:
        kinds = [str(m.model_fields["kind"].default) for m in members if "kind" in m.model_fields]
        return "one of kind " + ", ".join(kinds)
    if origin is typing.Literal:
        return " or ".join(json.dumps(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        named = [_type_name(arg) for arg in args if arg is not type(None)]
        return " or ".join(named) + (" or null" if type(None) in args else "")
    if origin is dict:
        return f"mapping of {_type_name(args[1])}"
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "section"
        names = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
        return names.get(annotation.__name__, annotation.__name__.lower())
    return str(annotation).replace("typing.", "")


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        try:
            value = info.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return "(see below)"
    shown = json.dumps(value, default=str)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def rows(model: type[BaseModel] = ExperimentConfig, prefix: str = "") -> list[tuple[str, ...]]:
    """(key, type, default, description) for every field, depth first."""
    found: list[tuple[str, ...]] = []
    docs = field_docs(model)
    for name, info in model.model_fields.items():
        if name in ("record", "schema_version"):
            continue
        key = f"{prefix}{name}"
        annotation = info.annotation
        members = _models(annotation)
        path = key
        inner = _container(annotation)
        while inner is not None:  # dict[str, dict[str, Spec]]: one <key> per level
            path, value = f"{path}.{inner[0]}", inner[1]
            members = _models(value)
            inner = _container(value)
        if not members:
            path = key
        doc = docs.get(name, info.description or "")
        if not doc and name == "kind":
            doc = "Selects this kind."
        found.append((key, _type_name(annotation), _default(info), doc))
        key = path
        for member in members:
            kind = member.model_fields.get("kind")
            label = (
                f"{key} (kind: {kind.default})" if kind is not None and len(members) > 1 else key
            )
            found += rows(member, f"{label}.")
    return found


def reference() -> str:
    """The Markdown reference of every config field."""
    lines = [
        "# Config reference",
        "",
        "Every field of an experiment config (`evalrepro config +experiment=NAME` prints a",
        "composed one), generated from the models by `evalrepro config --reference`.",
        "`<key>` stands for a key of your choosing (a repo name, a version); a field under",
        "`(kind: x)` applies when `kind` is `x`.",
        "",
        "| key | type | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for key, kind, default, doc in rows():
        cells = [f"`{key}`", f"`{kind}`".replace("|", "\\|"), f"`{default}`", doc]
        lines.append("| " + " | ".join(cell.replace("\n", " ") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def json_schema() -> dict[str, Any]:
    """ExperimentConfig's JSON Schema, each property described by its ``#:`` comment."""
    schema = ExperimentConfig.model_json_schema()
    by_title: dict[str, type[BaseModel]] = {}

    def collect(model: type[BaseModel]) -> None:
        if model.__name__ in by_title:
            return
        by_title[model.__name__] = model
        for info in model.model_fields.values():
            inner = _container(info.annotation)
            for member in _models(inner[1] if inner else info.annotation):
                collect(member)

    collect(ExperimentConfig)
    for definition in [schema, *schema.get("$defs", {}).values()]:
        model = by_title.get(definition.get("title", ""))
        if model is None:
            continue
        docs = field_docs(model)
        for name, prop in definition.get("properties", {}).items():
            if name in docs and "description" not in prop:
                prop["description"] = docs[name]
    return schema


if __name__ == "__main__":
    # python -m evalrepro.config.reference > docs/config-reference.md
    print(reference(), end="")
