"""Runtimes, registered by environment ``kind``: where a trial's sandbox runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from evalrepro.environment import EnvironmentConfig
from evalrepro.errors import UserError
from evalrepro.runtimes.base import Runtime

R = TypeVar("R", bound=type[Runtime])
_RUNTIMES: dict[str, Callable[[EnvironmentConfig, Path], Runtime]] = {}


def register_runtime(cls: R) -> R:
    _RUNTIMES[cls.kind] = cls  # type: ignore[assignment]
    return cls


def get_runtime(config: EnvironmentConfig, cache_dir: Path) -> Runtime:
    # Imported here so that a runtime's module loads only when it is used.
    import evalrepro.runtimes.podman  # noqa: F401

    if config.kind not in _RUNTIMES:
        raise UserError(
            f"environment kind '{config.kind}' runs no trials (it describes logs another "
            "harness wrote: see evalrepro regrade)"
        )
    return _RUNTIMES[config.kind](config, cache_dir)
