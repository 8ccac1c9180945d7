"""What a runtime is: where one attempt's sandbox lives, and what it can do.

The lifecycle, in the order evalrepro calls it:

1. ``check()``: the runtime is usable here (binaries, user namespaces); else UserError;
2. ``remove_leftovers(prefix)``: remove the sandboxes of an earlier, killed session;
3. ``attempt(spec)``, once per attempt, possibly from several threads or on another
   machine: it answers an attempt that must not run, and calls ``run(spec)`` for the
   others, which starts the supervisor in a sandbox of the spec's image, reads its stream
   within the spec's bounds, and returns an :class:`~evalrepro.runtimes.attempt.AttemptOutput`.
   Neither writes on the host: the recorder does;
4. ``close()``: remove whatever the runtime left running.

A runtime may also start interactive sandboxes (``sandbox(request)``, see
:mod:`evalrepro.runtimes.interactive`): where an agent works, one command at a time.

A runtime is opened from its environment config (``environment.kind``, a plugin of the
``evalrepro.runtimes`` group: see ``evalrepro.plugins``). Images come from a builder
(``evalrepro.build``), which fill the runtime's image store (``images``, an
:class:`~evalrepro.runtimes.store.ImageStore`): no module but the runtime's own calls its tool.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from evalrepro.errors import UserError
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.runtimes.attempt import OUTPUT_NAMES, AttemptOutput, AttemptSpec
from evalrepro.runtimes.interactive import Sandbox, SandboxError, SandboxRequest
from evalrepro.runtimes.store import ImageStore


class Runtime(ABC):
    kind: ClassVar[str]
    #: The store its sandboxes start from (None: a runtime that runs no image).
    images: ImageStore | None = None

    def image_store(self) -> ImageStore:
        """Its image store (what archives export from and load into); a UserError for a
        runtime that keeps no images."""
        if self.images is None:
            raise UserError(f"the {self.kind} runtime keeps no container images")
        return self.images

    def build_store(self) -> ImageStore | None:
        """The store builders build in: the runtime's own, unless it cannot build (then
        the runtime brings each image over before a sandbox starts from it)."""
        return self.images

    @abstractmethod
    def check(self) -> None: ...

    @abstractmethod
    def run(self, spec: AttemptSpec) -> AttemptOutput: ...

    def attempt(self, spec: AttemptSpec) -> AttemptOutput:
        """The attempt's output: :meth:`run`'s, or the answer for one that must not run.

        What an executor's worker calls, here or on another machine; it writes nothing."""
        if spec.image is None:
            error = spec.unavailable or "no image"
            return AttemptOutput(report=SupervisorReport(runtime=RuntimeFacts(error=error)))
        if spec.patch_problem is not None:
            # Empty and unsafe patches are the target's answer: scored, never run.
            return AttemptOutput()
        if spec.agent is not None:
            # The agent makes the patch first, in an interactive sandbox of this runtime:
            # that program is the run's (evalrepro.run.agent_phase.attempt), not the runtime's.
            raise ValueError("an agent's attempt runs through evalrepro.run.agent_phase.attempt")
        return self.checked(self.run(spec))

    def checked(self, output: AttemptOutput) -> AttemptOutput:
        """``output``, once its artifacts are the ones an attempt may return."""
        unknown = sorted(set(output.artifacts) - set(OUTPUT_NAMES))
        if unknown:
            raise ValueError(f"runtime {self.kind} returned artifacts it may not: {unknown}")
        return output

    def describe(self) -> dict[str, str]:
        """Facts about the runtime that a reader of the run needs (mode, versions)."""
        return {"kind": self.kind}

    def image_ids(self) -> dict[str, str]:
        """Every image the runtime's store holds by name: reference -> image Id."""
        return self.images.ids() if self.images is not None else {}

    def missing_images(self, images: Sequence[LockedImage]) -> list[LockedImage]:
        """The images (store images, tag ``localhost/...``) whose locked Id this runtime's
        store does not hold, under any name: what a node of a distributed run must load
        before it takes attempts. A runtime without a store needs none."""
        ids = set(self.image_ids().values())
        return [
            image
            for image in images
            if image.tag.startswith("localhost/") and image.image_digest not in ids
        ]

    def sandbox(self, request: SandboxRequest) -> Sandbox:
        """Start an interactive sandbox (:mod:`evalrepro.runtimes.interactive`)."""
        raise SandboxError(
            f"runtime {self.kind} has no interactive sandbox (an agent needs podman)"
        )

    def image_tree(self, request: SandboxRequest, path: str, *, limit: int) -> bytes:
        """The folder ``path`` of the request's image, untouched by any process, as a tar
        stream (the base an agent's working tree is compared with)."""
        raise SandboxError(f"runtime {self.kind} has no image store to copy a tree from")

    def remove_leftovers(self, prefix: str) -> list[str]:
        """Remove sandboxes named ``prefix...`` that a killed run left behind; their names.

        A run killed with SIGKILL cannot stop its sandboxes: they run on (a looping patch
        forever) until the next session in the same run directory removes them.
        """
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Remove anything left running; the default has nothing to do."""
