"""What a runtime is: where one attempt's sandbox lives, and what it can do.

The lifecycle, in the order evalrepro calls it:

1. ``check()``: the runtime is usable here (binaries, user namespaces); else UserError;
2. ``remove_leftovers(prefix)``: remove the sandboxes of an earlier, killed session;
3. ``run(spec)``, once per attempt, possibly from several threads or on another machine:
   start the supervisor in a sandbox of the spec's image, read its stream within the
   spec's bounds, and return an :class:`~evalrepro.run.attempt.AttemptOutput`. It writes
   nothing on the host: the recorder does;
4. ``close()``: remove whatever the runtime left running.

A runtime is opened from its environment config (``environment.kind``, a plugin of the
``evalrepro.runtimes`` group: see ``evalrepro.plugins``). Images come from a builder
(``evalrepro.build``), which may use the runtime's own image store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from evalrepro.run.attempt import AttemptOutput, AttemptSpec


class Runtime(ABC):
    kind: ClassVar[str]

    @abstractmethod
    def check(self) -> None: ...

    @abstractmethod
    def run(self, spec: AttemptSpec) -> AttemptOutput: ...

    def describe(self) -> dict[str, str]:
        """Facts about the runtime that a reader of the run needs (mode, versions)."""
        return {"kind": self.kind}

    def image_ids(self) -> dict[str, str]:
        """Every image the runtime's store holds by name: reference -> image Id."""
        return {}

    def remove_leftovers(self, prefix: str) -> list[str]:
        """Remove sandboxes named ``prefix...`` that a killed run left behind; their names.

        A run killed with SIGKILL cannot stop its sandboxes: they run on (a looping patch
        forever) until the next session in the same run directory removes them.
        """
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Remove anything left running; the default has nothing to do."""
