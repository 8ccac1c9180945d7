"""Builders, registered by ``environment.builder.kind``: how a trial's image is made."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from evalrepro.builders.base import Builder
from evalrepro.environment import EnvironmentConfig
from evalrepro.errors import UserError
from evalrepro.runtimes.base import Runtime

B = TypeVar("B", bound=type[Builder])
_BUILDERS: dict[str, Callable[[EnvironmentConfig, Runtime, Path], Builder]] = {}


def register_builder(cls: B) -> B:
    _BUILDERS[cls.kind] = cls  # type: ignore[assignment]
    return cls


def get_builder(config: EnvironmentConfig, runtime: Runtime, cache_dir: Path) -> Builder:
    # Imported here so that a builder's module loads only when it is used.
    from evalrepro.builders import containerfile, image, nix  # noqa: F401

    kind = config.builder.kind  # type: ignore[union-attr]
    if kind not in _BUILDERS:
        raise UserError(f"environment.builder: no builder '{kind}' (known: {', '.join(_BUILDERS)})")
    builder_class = _BUILDERS[kind]
    if runtime.kind not in getattr(builder_class, "runtimes", ()):
        raise UserError(
            f"environment.builder: '{kind}' cannot build images for the '{runtime.kind}' runtime"
        )
    return builder_class(config, runtime, cache_dir)
