"""The one error type a user sees: a single line naming what was wrong and where."""

from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Discriminator, Field, Tag, ValidationError
from pydantic.fields import FieldInfo


class UserError(Exception):
    """Bad input from the user (a file, a flag, a config value).

    The CLI prints ``str(error)`` on one line and exits non-zero; no traceback.
    """

    def __init__(self, message: str) -> None:
        # Collapse newlines so the message always fits the one-line contract.
        super().__init__(" ".join(message.split()))


def validation_message(error: ValidationError, *, most: int = 3, model: Any = None) -> str:
    """A pydantic error as ``field 'a.b': message; ...`` on one line. With ``model`` (what
    was validated), the kinds pydantic puts into a location (``environment.podman.timeout``
    for a discriminated union: no key the user wrote) are left out."""
    problems = [_problem(detail, model) for detail in error.errors()]
    more = f"; and {len(problems) - most} more" if len(problems) > most else ""
    return "; ".join(problems[:most]) + more


def _problem(detail: Any, model: Any) -> str:
    parts = list(detail["loc"]) if model is None else _as_written(list(detail["loc"]), model)
    where = ".".join(str(part) for part in parts) or "record"
    if detail["type"] == "missing":
        return f"missing field '{where}'"
    if detail["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    got = detail.get("input")
    if isinstance(got, str) and len(got) > 80:
        got = got[:60] + "..." + got[-10:]  # one line, however long the value
    shown = f" (got {got!r})" if isinstance(got, str | int | float) else ""
    return f"field '{where}': {detail['msg']}{shown}"


def _as_written(parts: list[Any], annotation: Any) -> list[Any]:
    """``parts`` without the union tags, found by walking the model along the location:
    a part is a tag exactly where the type there is a discriminated union."""
    written = []
    for part in parts:
        tags = _union_tags(annotation)
        if tags is not None and part in tags:
            annotation = tags[part]
            continue
        written.append(part)
        annotation = _child(annotation, part)
    return written


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    """The type inside any ``Annotated``, and the metadata around it."""
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        metadata += more
    return annotation, metadata


def _union_tags(annotation: Any) -> dict[Any, Any] | None:
    """Tag -> member type, if ``annotation`` is a discriminated union."""
    annotation, metadata = _strip(annotation)
    if get_origin(annotation) not in (Union, UnionType):
        return None
    members = get_args(annotation)
    if any(isinstance(m, Discriminator) for m in metadata):
        tags = {}
        for member in members:
            inner, around = _strip(member)
            # What the member's own Annotated holds besides its tag (a discriminator).
            kept = [m for m in around if not isinstance(m, Tag)]
            typed = Annotated[(inner, *kept)] if kept else inner
            tags.update({t.tag: typed for t in around if isinstance(t, Tag)})
        return tags
    field = next((m for m in metadata if isinstance(m, FieldInfo) and m.discriminator), None)
    if field is None or not isinstance(field.discriminator, str):
        return None
    name = field.discriminator
    return {m.model_fields[name].default: m for m in members if _is_model(m)}


def _child(annotation: Any, part: Any) -> Any:
    """The type at ``part`` inside ``annotation`` (a model's field, an item, a value)."""
    annotation, _ = _strip(annotation)
    if _is_model(annotation):
        field = annotation.model_fields.get(part)
        if field is None:
            return None
        if field.discriminator is not None:
            return Annotated[field.annotation, Field(discriminator=field.discriminator)]
        return (
            Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        )
    args = get_args(annotation)
    if get_origin(annotation) in (list, tuple, set, frozenset) and args:
        return args[0]
    if get_origin(annotation) is dict and len(args) == 2:
        return args[1]
    if get_origin(annotation) in (Union, UnionType):
        # Optional[X]: the one member that is not None.
        present = [a for a in args if a is not type(None)]
        return _child(present[0], part) if len(present) == 1 else None
    return None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
