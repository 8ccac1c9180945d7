"""The one error type a user sees: a single line naming what was wrong and where."""

from typing import Any

from pydantic import ValidationError


class UserError(Exception):
    """Bad input from the user (a file, a flag, a config value).

    The CLI prints ``str(error)`` on one line and exits non-zero; no traceback.
    """

    def __init__(self, message: str) -> None:
        # Collapse newlines so the message always fits the one-line contract.
        super().__init__(" ".join(message.split()))


def validation_message(error: ValidationError, *, most: int = 3) -> str:
    """A pydantic error as ``field 'a.b': message; ...`` on one line."""
    problems = [_problem(detail) for detail in error.errors()]
    more = f"; and {len(problems) - most} more" if len(problems) > most else ""
    return "; ".join(problems[:most]) + more


#: The ``kind`` values of the config's discriminated unions. pydantic puts the chosen
#: kind into an error's location (``environment.podman.timeout``); users wrote no such key.
UNION_TAGS = frozenset(
    {"podman", "recorded", "gold", "predictions", "logs", "local", "archive", "remote", "demo"}
    | {"containerfile", "nix", "image"}  # builders
    | {"source", "sources"}  # a repo's sources: one, or a list of them
)
#: (model, field) pairs whose field name is also a kind's tag: always kept.
_FIELDS_NAMED_AS_TAGS = frozenset({("base", "archive"), ("nix", "archive")})
#: Fields whose keys are the user's own names.
_KEYED = frozenset({"repos", "instance_repos", "specs"})


def _problem(detail: Any) -> str:
    parts = list(detail["loc"])
    # A tag is dropped, unless it stands where a key of the user's does (a repo named demo)
    # or is a field that shares a tag's name (the base image's ``archive``).
    parts = [
        part
        for index, part in enumerate(parts)
        if not (
            part in UNION_TAGS
            and index > 0
            and parts[index - 1] not in _KEYED
            and (parts[index - 1], part) not in _FIELDS_NAMED_AS_TAGS
        )
    ]
    where = ".".join(str(part) for part in parts) or "record"
    if detail["type"] == "missing":
        return f"missing field '{where}'"
    if detail["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    got = detail.get("input")
    shown = f" (got {got!r})" if isinstance(got, str | int | float) else ""
    return f"field '{where}': {detail['msg']}{shown}"
