"""The trial supervisor: one attempt's phases, run where the code under test cannot reach.

It runs as the container's root, from the base image's own Python in isolated mode
(``python3 -I -S``), from a read-only mount outside the repo and the venv, with the
standard library only (Python 3.9 or later). The code under test only ever runs as the
unprivileged test user (who owns ``/testbed`` and can write nothing the supervisor
keeps), with a pipe for its output. Everything the host learns comes from one framed
stream on this process's own stdout (``protocol.py``).

It is the modules of this folder, one concept each; each imports only those above it:

    protocol.py   the stream to the host (frames, kinds, limits), names shown as text
    user.py       running as the test user
    infra.py      test infrastructure: which files collect, configure or run the tests
    tree.py       snapshots of the tree, the state the lone runs start from
    writes.py     the harness's git store, restores, the reset's writes, the canaries
    confine.py    no new user namespaces; what the tests may not see
    watchdog.py   the test processes' memory, tasks, disk, inodes; cgroup counters
    exitguard.py  the exit guard: installing it, reading its records
    testrun.py    one run of the test command (or of one test alone)
    phases.py     the phases of one attempt (``Trial``)
    supervisor.py this entry: the program read, the phases run, the stream ended

They reach the sandbox together, as one archive the host builds (``supervisor.pyz``,
``evalrepro/sandbox/__init__.py``), run as ``python3 -I -S /evalrepro/supervisor.pyz
/evalrepro/private/program.json``. The host imports ``protocol.py`` (``FRAME``, the kinds,
the names' rule) and ``infra.py`` (``protected_reason``: which files count as test
infrastructure), so that each is defined once.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

from .phases import Stop, Trial
from .protocol import PROGRAM, PROTOCOL, HarnessError, Stream

_PR_SET_CHILD_SUBREAPER = 36


def load_program(path: str) -> dict:
    with open(path, "rb") as handle:
        program = json.loads(handle.read(1 << 24))
    if program.get("record") != "TrialProgram" or program.get("schema_version") != PROGRAM:
        raise HarnessError(
            f"{path} is not a TrialProgram of schema {PROGRAM} (a harness version mismatch)"
        )
    return program


def main(argv: list[str]) -> int:
    # The stream gets a private descriptor; fd 1 then points at stderr, so nothing else
    # in this process (a library's print) can write into the stream.
    stream = Stream(os.dup(1))
    os.dup2(2, 1)
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    phase = "start"
    try:
        stream.event(
            "start",
            protocol=PROTOCOL,
            python=sys.version.split()[0],
            uid=os.geteuid(),
            pid=os.getpid(),
        )
        if os.geteuid() != 0:
            raise HarnessError("the supervisor must run as the container's root")
        phase = "load"
        program = load_program(argv[1])
        phase = "trial"
        Trial(program, stream, argv[1]).run()
    except Stop:
        pass
    except BrokenPipeError:
        return 1  # the host went away; nothing left to tell
    except BaseException as error:  # the harness's own failure: an infrastructure error
        detail = f"{type(error).__name__}: {error}"
        try:
            stream.event("error", phase=phase, detail=detail[:2000])
        except OSError:
            return 1
        if not isinstance(error, (HarnessError, OSError, subprocess.SubprocessError)):
            import traceback

            traceback.print_exc()
    try:
        stream.event("done")
    except OSError:
        return 1
    return 0
