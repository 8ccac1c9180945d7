"""Build: how a trial's image comes to exist (``environment.builder.kind``).

Each kind is a plugin of the ``evalrepro.builders`` group: its config model names the
builder class, imported only when a run opens it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalrepro import plugins
from evalrepro.build.base import Builder
from evalrepro.errors import UserError

if TYPE_CHECKING:  # a builder fills a runtime's store; it imports no runtime
    from evalrepro.runtimes.base import Runtime


def open_builder(config: object, runtime: Runtime, cache_dir: Path, concurrency: int) -> Builder:
    """The builder of an environment config (``config.builder``), for ``runtime``'s store.

    ``concurrency``: independent layers built at once (the executor's)."""
    settings = config.builder  # type: ignore[attr-defined]
    builder_class: type[Builder] = plugins.implementation(settings)
    if runtime.kind not in builder_class.runtimes:
        raise UserError(
            f"environment.builder: '{settings.kind}' cannot build images for the "
            f"'{runtime.kind}' runtime"
        )
    return builder_class(config, runtime, cache_dir, concurrency=concurrency)
