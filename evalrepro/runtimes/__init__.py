"""Runtimes: where an attempt's sandbox lives (``environment.kind``), and the seam an
attempt crosses into it: its spec and output (``attempt``), the interactive sandbox
(``interactive``), the supervisor's channel read on the host (``supervision``), egress.

Each kind is a plugin of the ``evalrepro.runtimes`` group: its environment config model
names the runtime class, imported only when a run opens it.
"""

from __future__ import annotations

from pathlib import Path

from evalrepro import plugins
from evalrepro.runtimes.base import Runtime


def open_runtime(config: object, cache_dir: Path) -> Runtime:
    """The runtime of an environment config."""
    runtime_class: type[Runtime] = plugins.implementation(config)
    return runtime_class(config, cache_dir)
