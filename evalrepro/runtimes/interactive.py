"""Interactive sandboxes: a container an agent works in, one command at a time.

Where an attempt's sandbox runs one program to its end under the supervisor, an
interactive sandbox lives across many commands (inspect_ai's sandbox is the shape):

1. :meth:`~evalrepro.runtimes.base.Runtime.sandbox` starts one from an image (by tag,
   checked against its locked Id) with the environment's limits and a network policy
   (``none`` unless the request says otherwise);
2. :meth:`Sandbox.exec` runs a command with a timeout and bounded output; a command that
   runs past its timeout is killed with its process group, and the result says so;
3. :meth:`Sandbox.read_file` / :meth:`Sandbox.write_file` move bounded bytes in and out;
4. :meth:`Sandbox.end` stops every process in it and keeps its files: from then on
   nothing writes there, so what is read after is one moment's state (the agent's end);
5. :meth:`Sandbox.export_tree` streams a folder out as a tar, bounded (what the harness
   takes a diff from: the container's files, never its git);
6. :meth:`Sandbox.stop` removes it with everything still running in it (also on exit of
   a ``with`` block, and when evalrepro dies: a backstop timeout stops it).

Nothing in the sandbox can write on the host: no volume is mounted (for ``model_only``,
one folder read-only, holding the egress proxy's socket: ``evalrepro.runtimes.egress``), and
what comes out (output, files, trees) is read within the caller's bounds. What goes in
goes through :meth:`Sandbox.exec`'s stdin or :meth:`Sandbox.write_file` (a ``command``
agent's program folder: a tar extracted by root, ``agents/command.py``). Nor does it
learn the host's names: its ``/etc/hosts`` and ``/etc/resolv.conf`` are the harness's,
not copies of the host's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.errors import UserError

#: Network policies: no network at all, or only the model endpoints a target names.
NetworkPolicy = Literal["none", "model_only"]


class SandboxRequest(BaseModel):
    """What an interactive sandbox is started with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The container's name (a run's prefix, so that leftovers are found and removed).
    name: str = Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,200}$")
    #: The image, by the tag it is stored under, and the Id the lockfile pins.
    image_tag: str
    image_digest: str
    #: The folder commands start in.
    workdir: str = "/testbed"
    #: The user commands run as (None: the image's; evalrepro's images have ``tester``,
    #: who owns the repository and cannot read root's copy of its history).
    user: str | None = None
    #: ``none``: no network at all. ``model_only``: still none, and the host folder
    #: ``egress`` (an :mod:`evalrepro.runtimes.egress` proxy's socket) mounted read-only.
    network: NetworkPolicy = "none"
    egress: str | None = None
    #: Environment variables of every command (no secrets: they show in process lists).
    env: dict[str, str] = {}
    #: Seconds the sandbox may live at most: the backstop if its owner dies.
    lifetime: int = Field(default=3600, ge=10)


class ExecResult(BaseModel):
    """One command's end, as the host saw it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The command's exit status (None: killed at its timeout, or never started).
    exit_code: int | None
    #: Its stdout and stderr together, decoded as UTF-8 with replacement, bounded.
    output: str
    #: Bytes of output not kept (beyond the bound).
    dropped: int = 0
    timed_out: bool = False
    seconds: float


class SandboxError(UserError):
    """The sandbox could not be started, or did not answer (an infrastructure error)."""


class TooLarge(SandboxError):
    """What was to come out of the sandbox is over its bound (the content's fault)."""


class Sandbox(ABC):
    """A running interactive sandbox; see the module docstring for its lifecycle."""

    request: SandboxRequest

    @abstractmethod
    def exec(
        self,
        command: str,
        *,
        timeout: float,
        output_limit: int = 1 << 20,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes = b"",
        user: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in ``cwd`` (default: the workdir), as ``user``
        (default: the request's)."""

    @abstractmethod
    def read_file(self, path: str, *, limit: int = 1 << 20) -> bytes:
        """The file's bytes; more than ``limit`` of them is a :class:`SandboxError`."""

    @abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` (its folder is made)."""

    @abstractmethod
    def export_tree(self, path: str, *, limit: int) -> bytes:
        """The folder ``path`` as a tar stream; more than ``limit`` bytes of it is a
        :class:`SandboxError`."""

    def processes(self) -> int | None:
        """How many processes run in the sandbox now, as the host counts them (None: the
        runtime cannot tell)."""
        return None

    def end(self) -> int:
        """Stop every process in the sandbox (killed, by the kernel's PID namespace, not
        by a program of the sandbox's), keep its files for :meth:`export_tree`; the
        number of processes that were still running then, besides the sandbox's own
        (what the agent left behind). A sandbox that cannot be ended this way is a
        :class:`SandboxError`: its tree is never read live."""
        raise SandboxError(f"{type(self).__name__} cannot stop its processes and keep its files")

    @abstractmethod
    def stop(self) -> None:
        """Remove the sandbox and everything running in it (again: nothing happens)."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
