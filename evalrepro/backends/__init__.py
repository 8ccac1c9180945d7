"""Execution backends, registered by environment ``kind``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from evalrepro.backends.base import Backend
from evalrepro.environment import EnvironmentConfig
from evalrepro.errors import UserError

B = TypeVar("B", bound=type[Backend])
_BACKENDS: dict[str, Callable[[EnvironmentConfig, Path], Backend]] = {}


def register_backend(cls: B) -> B:
    _BACKENDS[cls.kind] = cls  # type: ignore[assignment]
    return cls


def get_backend(config: EnvironmentConfig, cache_dir: Path) -> Backend:
    # Imported here so that a backend's module loads only when it is used.
    import evalrepro.backends.podman  # noqa: F401

    if config.kind not in _BACKENDS:
        raise UserError(
            f"environment kind '{config.kind}' runs no trials (it describes logs another "
            "harness wrote: see evalrepro regrade)"
        )
    return _BACKENDS[config.kind](config, cache_dir)
