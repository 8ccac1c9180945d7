"""Plugins: the kinds of each pluggable part, found by entry point and imported lazily.

Each group is a Python entry-point group ``evalrepro.<group>``; an entry point names a
kind and the object that defines it (``module:attribute``). For builders, runtimes,
executors, targets and agent adapters that object is the kind's config model (a pydantic
model with a ``kind: Literal[...]`` field), which opens its implementation only when it
is used; for parsers, the module that registers them. evalrepro's own kinds are
declared the same way, in its ``pyproject.toml``, so a package that adds a kind edits
nothing here:

    [project.entry-points."evalrepro.executors"]
    mine = "my_package.executor:MyExecutorConfig"

A source tree that was never installed has no entry-point metadata; then the checkout's
own ``pyproject.toml`` is read instead (the same table).
"""

from __future__ import annotations

import importlib
import tomllib
from functools import cache
from importlib.metadata import entry_points
from typing import Annotated, Any, Literal, Union

from pydantic import Field

from evalrepro import PACKAGE_DIR
from evalrepro.errors import UserError

Group = Literal["builders", "runtimes", "executors", "targets", "parsers", "agents"]

#: What a kind of each group is called in messages.
_NOUN = {
    "builders": "builder",
    "runtimes": "environment",
    "executors": "executor",
    "targets": "target",
    "parsers": "parser module",
    "agents": "agent adapter",
}


@cache
def declared(group: Group) -> dict[str, str]:
    """Every kind of ``group``: name -> ``module:attribute``, in name order."""
    found = {point.name: point.value for point in entry_points(group=f"evalrepro.{group}")}
    ours = _own_declarations(group)
    # A checkout run from source may be installed with stale metadata: its own table wins
    # for evalrepro's kinds; other packages' kinds come from their metadata.
    return dict(sorted({**found, **ours}.items()))


def load(group: Group, name: str) -> Any:
    """The object that defines kind ``name`` of ``group``, imported now."""
    kinds = declared(group)
    if name not in kinds:
        raise UserError(
            f"unknown {_NOUN[group]} kind '{name}' (known: {', '.join(kinds) or 'none'})"
        )
    module, _, attribute = kinds[name].partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


def load_all(group: Group) -> list[Any]:
    """Every kind of ``group``, imported (to build a config union or list parsers)."""
    return [load(group, name) for name in declared(group)]


def _own_declarations(group: Group) -> dict[str, str]:
    pyproject = PACKAGE_DIR.parent / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    if data.get("project", {}).get("name") != "evalrepro":
        return {}
    return dict(data["project"].get("entry-points", {}).get(f"evalrepro.{group}", {}))


def config_union(group: Group) -> Any:
    """The config type of ``group``: its kinds' models, told apart by ``kind``."""
    models = tuple(load_all(group))
    if len(models) == 1:
        return models[0]
    return Annotated[Union[models], Field(discriminator="kind")]  # noqa: UP007


def implementation(config: Any) -> Any:
    """What a kind's config opens: its ``implementation`` (``module:attribute``), imported
    only now, so that a config never loads the code of kinds it does not use."""
    module, _, attribute = type(config).implementation.partition(":")
    return getattr(importlib.import_module(module), attribute)
