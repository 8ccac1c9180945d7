"""What a runtime is: where one attempt's sandbox runs.

The lifecycle, in the order evalrepro calls it:

1. ``check()``: the runtime is usable here (binaries, user namespaces); else UserError;
2. ``remove_leftovers(prefix)``: remove the sandboxes of an earlier, killed session;
3. ``run(request)``, once per attempt, possibly from several threads at once: start the
   supervisor in a sandbox of the image, read its stream, return its report and how
   each limit was enforced;
4. ``close()``: remove whatever the runtime left running.

Images come from a builder (``evalrepro.builders``), which may use the runtime's own
image store (podman's, for the builders that exist).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from evalrepro.supervision import SupervisorReport


@dataclass(frozen=True)
class AttemptRequest:
    """One sandbox run: ``attempt_dir`` holds program.json, patch.diff and test.patch.

    The runtime writes ``test_output.txt`` (from the supervisor's stream) and
    ``runtime.log`` (its own diagnostics) there.
    """

    image_tag: str
    attempt_dir: Path
    name: str
    #: Seconds the tests may run (the supervisor enforces it; the host has a backstop).
    timeout: float
    #: Bytes of test output the supervisor lets through (bounds the host's reading).
    output_limit: int


@dataclass(frozen=True)
class AttemptRun:
    """What the runtime reports about one sandbox run."""

    report: SupervisorReport
    #: Each limit and how (or whether) this runtime enforced it.
    limits: dict[str, str]


class Runtime(ABC):
    kind: ClassVar[str]

    @abstractmethod
    def check(self) -> None: ...

    @abstractmethod
    def run(self, request: AttemptRequest) -> AttemptRun: ...

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
