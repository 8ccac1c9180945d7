"""Executors: who schedules a run's attempts (``executor.kind``).

Each kind is a plugin of the ``evalrepro.executors`` group: its config model
(``evalrepro.config.executor``) names the executor class, imported only when a run
opens it. See :mod:`evalrepro.run.executors.base` for what an executor does.
"""

from __future__ import annotations

from evalrepro import plugins
from evalrepro.run.executors.base import Executor
from evalrepro.run.runtimes.base import Runtime


def open_executor(config: object, runtime: Runtime) -> Executor:
    executor_class: type[Executor] = plugins.implementation(config)
    return executor_class(config, runtime)
