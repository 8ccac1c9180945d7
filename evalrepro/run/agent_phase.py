"""An agent target's attempt: the agent makes the patch, then the tests run with it.

On the machine that runs the attempt (a worker, or this process), in order:

1. the base tree is copied out of the instance's image, untouched by any process;
2. an interactive sandbox of that image is started (network off, the environment's
   limits), its repository is cut back to the base commit (``PREPARE``: no later
   commit, ref, tag or reflog entry, no copy of the history elsewhere), the problem
   statement is written to ``/tmp/evalrepro/problem.md``, and the adapter drives the
   agent within the wall-time budget;
3. the harness stops every process of the sandbox (the agent's end: what it started and
   left running, detached or not, writes nothing after it), copies the agent's working
   tree out of the stopped sandbox, removes it, and takes the diff itself
   (``evalrepro.run.worktree``: never through the repository's git, which the agent
   controlled);
4. a patch that the checks pass is then run exactly as a saved patch is, in a fresh
   sandbox of the same image, under the supervisor.

What comes back is one :class:`~evalrepro.runtimes.attempt.AttemptOutput`: the evaluation's
output (none when the agent left nothing to test), the agent's end
(:class:`~evalrepro.records.agent.AgentOutcome`), the diff, and what the agent printed.
A sandbox that fails is an infrastructure error of the agent phase (the job re-runs the
agent); one in the evaluation is retried with the recorded patch, the agent not re-run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from evalrepro import plugins
from evalrepro.agents import PROBLEM_PATH, AgentEnd, AgentRunner
from evalrepro.digest import sha256_bytes
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.testspec import ResolvedProtection
from evalrepro.rules.patchcheck import check_patch
from evalrepro.run.worktree import TreeError, harness_diff
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.base import Runtime
from evalrepro.runtimes.egress import (
    FORWARDER,
    PROXY_ENV,
    START_FORWARDER,
    EgressProxy,
    allowed_addresses,
)
from evalrepro.runtimes.interactive import SandboxError, SandboxRequest, TooLarge
from evalrepro.sandbox.infra import TEST_PATH
from evalrepro.sandbox.watchdog import _mem_available  # the watchdog's own reading

#: Seconds a sandbox may outlive its agent's wall-time budget before conmon stops it.
_SANDBOX_MARGIN = 600
#: Seconds between two looks at the machine's reserves while the agent works.
_WATCH_SECONDS = 0.5
#: Run as root in the agent's sandbox before the agent starts (nothing of the agent's has
#: run yet: the image's own git): no history after the base commit stays in reach (the
#: harness's copy of the history goes; every ref, tag and reflog entry of the repository
#: goes, and what only they reached is pruned), and the index is made to match the base
#: commit, so that the agent's `git status` and `git diff` start clean. No other git
#: repository is left anywhere on the image's filesystem.
PREPARE = r"""
set -eu
cd /testbed
g() { git -c safe.directory='*' -c gc.auto=0 "$@"; }
base=$(g rev-parse HEAD)
g update-ref --no-deref HEAD "$base"
g for-each-ref --format='%(refname)' | while read -r ref; do g update-ref -d "$ref"; done
g update-ref refs/heads/main "$base"
g symbolic-ref HEAD refs/heads/main
g reflog expire --expire=now --all
# Its own objects, only those the base reaches (they may live in the harness's copy).
g repack -a -d -q
rm -f .git/objects/info/alternates
g prune --expire=now
# Every other git repository in the image goes (the harness's bare copy of the history
# among them, wherever a builder put it): a folder with HEAD, objects/ and refs/.
find / -xdev \( -path /proc -o -path /sys -o -path /testbed/.git \) -prune -o \
  -type d -name objects -print 2>/dev/null | while read -r objects; do
  repo=$(dirname "$objects")
  if [ -e "$repo/HEAD" ] && [ -d "$repo/refs" ]; then rm -rf "$repo"; fi
done
g reset -q
owner=$(stat -c %u:%g /testbed)
chown -R "$owner" /testbed/.git
"""


def attempt(runtime: Runtime, spec: AttemptSpec) -> AttemptOutput:
    """An attempt's output, what an executor's worker calls, here or on another machine
    (it writes nothing): for an agent's attempt that runs, the agent's phase in a sandbox
    of the runtime, then the tests of the patch it left; else the runtime's own."""
    if spec.agent is None or spec.image is None or spec.patch_problem is not None:
        return runtime.attempt(spec)
    return runtime.checked(attempt_with_agent(runtime, spec))


def attempt_with_agent(runtime: Any, spec: AttemptSpec) -> AttemptOutput:
    """``runtime``: the :class:`~evalrepro.runtimes.base.Runtime` of the attempt."""
    assert spec.agent is not None and spec.image is not None
    recorded = spec.agent.recorded
    if recorded is not None:
        # An earlier run's agent phase, evaluated again without the agent.
        log = b"(the agent was not run again: its recorded phase is evaluated again)\n"
        done = AttemptOutput(
            agent=recorded.outcome, agent_patch=recorded.patch, artifacts={"agent_log.txt": log}
        )
        return _evaluate(runtime, spec, done)
    target = spec.agent.target
    runner: AgentRunner = plugins.implementation(target.adapter)()
    started = time.monotonic()
    request = SandboxRequest(
        name=f"{spec.sandbox_name}-agent",
        image_tag=spec.image.tag,
        image_digest=spec.image.digest,
        user=target.user,
        lifetime=target.budgets.wall_seconds + _SANDBOX_MARGIN,
        # The agent finds the programs the tests will run with (the env layer's first).
        env={"PATH": TEST_PATH},
    )
    end: AgentEnd | None = None
    patch: bytes | None = None
    try:
        base = runtime.image_tree(
            request.model_copy(update={"name": f"{spec.sandbox_name}-base"}),
            "/testbed",
            limit=target.max_tree_bytes,
        )
        with contextlib.ExitStack() as stack:
            if target.network == "model_only":
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="egress-")))
                endpoints = getattr(target.adapter, "endpoints", [])
                stack.enter_context(EgressProxy(folder, allowed_addresses(endpoints)))
                request = request.model_copy(
                    update={
                        "network": "model_only",
                        "egress": str(folder),
                        "env": {**request.env, **PROXY_ENV},
                    }
                )
            sandbox = stack.enter_context(runtime.sandbox(request))
            watch = stack.enter_context(_Reserves(runtime, sandbox, spec))
            prepared = sandbox.exec(PREPARE, timeout=600, user="root", cwd="/testbed")
            if prepared.exit_code != 0:
                last = (prepared.output.strip().splitlines() or ["no output"])[-1][:300]
                raise SandboxError(f"cannot prepare the repository for the agent: {last}")
            if target.network == "model_only":
                forwarder = sandbox.exec(
                    START_FORWARDER,
                    timeout=60,
                    user="root",
                    cwd="/",
                    env={"EVALREPRO_FORWARDER": FORWARDER},
                )
                if forwarder.exit_code != 0:
                    last = (forwarder.output.strip().splitlines() or ["no output"])[-1][:300]
                    raise SandboxError(f"cannot open the model_only path: {last}")
            sandbox.write_file(PROBLEM_PATH, spec.agent.problem_statement.encode())
            own = sandbox.processes() or 0  # the sandbox's own (init, its main process)
            deadline = started + target.budgets.wall_seconds
            end = runner.run(sandbox, target, spec.agent.problem_statement, deadline)
            # The agent's end: every process of its sandbox stopped, the files kept. What
            # is taken below is what the sandbox held then, written by nothing after.
            watch.last_look(sandbox)
            try:
                left = sandbox.end() - own
            except SandboxError:
                if not watch.tripped:
                    raise
                left = 0
            watch.close()
            if not getattr(sandbox, "capped", False):
                why = getattr(sandbox, "uncapped_reason", "this runtime has none")
                end.log += (
                    f"\n[evalrepro: no kernel cap on the agent's processes in this sandbox "
                    f"({why}); the watcher alone stops a fork bomb]\n"
                ).encode()
            if left > 0 and not watch.tripped:
                end.log += (
                    f"\n[evalrepro: {left} process(es) the agent left running were stopped "
                    "before its tree was taken]\n"
                ).encode()
            work = None
            if watch.tripped and watch.agent_to_blame:
                # Its sandbox is gone with what it left: nothing to take, its own failure.
                end.status, end.budget = "agent_error", None
                end.detail = f"the agent's sandbox was stopped: {watch.tripped}"
            elif watch.tripped:
                raise SandboxError(f"the agent's sandbox was stopped: {watch.tripped}")
            else:
                try:
                    work = sandbox.export_tree("/testbed", limit=target.max_tree_bytes)
                except TooLarge as error:
                    end = _refused(end, str(error))
        if work is not None:
            patch = harness_diff(base, work, limit=target.max_patch_bytes)
    except TreeError as error:
        assert end is not None  # the base tree is the image's: only the agent's fails
        end = _refused(end, str(error))
    except SandboxError as error:
        end = AgentEnd(status="infrastructure_error", detail=str(error)[:2000], log=b"")
    if end.status == "submitted" and patch == b"":
        end.status, end.detail = "no_diff", "the agent left the repository as it was"
    outcome = AgentOutcome(
        status=end.status,
        budget=end.budget,
        detail=end.detail,
        adapter=target.adapter.kind,
        adapter_version=end.version,
        steps=end.steps,
        seconds=round(time.monotonic() - started, 3),
        exit_code=end.exit_code,
        patch_digest=sha256_bytes(patch) if patch is not None else None,
        patch_bytes=len(patch or b""),
        usage=end.usage,
    )
    log_name = "trajectory.json" if end.trajectory else "agent_log.txt"
    done = AttemptOutput(agent=outcome, agent_patch=patch, artifacts={log_name: end.log})
    return _evaluate(runtime, spec, done)


def _evaluate(runtime: Any, spec: AttemptSpec, done: AttemptOutput) -> AttemptOutput:
    """The tests, run with the agent's patch as with a saved one; ``done`` alone when the
    agent left nothing to test, or a patch the checks refuse."""
    outcome, patch = done.agent, done.agent_patch
    assert outcome is not None
    if outcome.status != "submitted" or patch is None or spec.program is None:
        return done
    protection = ResolvedProtection.model_validate(spec.program.protection)
    if check_patch(patch, protection).problem is not None:
        return done  # an unsafe patch is never run: the host's check scores it
    evaluated = runtime.run(spec.model_copy(update={"patch": patch, "agent": None}))
    return evaluated.model_copy(
        update={
            "agent": outcome,
            "agent_patch": patch,
            "artifacts": {**evaluated.artifacts, **done.artifacts},
        }
    )


class _Reserves:
    """Watches the machine while the agent works: a sandbox that leaves the filesystem of
    the containers less free space than ``disk_reserve``, or the machine less memory than
    ``memory_reserve``, is stopped at once (rootless podman has no cgroup to do it; the
    reserves are the environment's, as for the tests); whatever is to blame, the attempt
    is then an infrastructure error: the host comes first. A sandbox that runs more
    processes than the environment's ``pids`` (a fork bomb, counted by the host in the
    sandbox's PID namespace) is stopped too, and that is the agent's doing. The count is
    bounded by the kernel's cap (see ``podman_sandbox``), so the host's scan of ``/proc``
    keeps up under load; the watcher gives the reason, the kernel holds the line."""

    def __init__(self, runtime: Any, sandbox: Any, spec: AttemptSpec) -> None:
        limits = spec.program.limits if spec.program is not None else {}
        self.disk = limits.get("disk_reserve", 0)
        self.memory = limits.get("memory_reserve", 0)
        self.pids = limits.get("pids", 0)
        self.path = getattr(runtime, "graph_root", "") or "/"
        self.sandbox = sandbox
        self.tripped = ""
        self.agent_to_blame = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _Reserves:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def last_look(self, sandbox: Any) -> int | None:
        """One more look, the last before the sandbox's processes are stopped: a fork bomb
        whose first process has already returned is at the limit still (the kernel holds
        it there), and is caught here if the watcher's last scan was before it got
        there. The number of processes counted (None: not counted)."""
        running = sandbox.processes() if self.pids else None
        if not self.tripped and running is not None and running >= self.pids:
            self.tripped, self.agent_to_blame = _over_limit(running, self.pids), True
        return running

    def _watch(self) -> None:
        while not self._done.wait(_WATCH_SECONDS):
            problem = self._problem(self.sandbox.processes() if self.pids else None)
            if problem and not self._done.is_set():
                self.tripped = problem
                self.sandbox.stop()
                return

    def _problem(self, running: int | None) -> str:
        # The kernel holds the agent's processes at the limit (the nproc ulimit in the
        # sandbox's own user namespace; root mode's cgroup behind it), so it is reached,
        # never passed by more than the sandbox's own few: reaching it is the trip.
        if self.pids and running is not None and running >= self.pids:
            self.agent_to_blame = True
            return _over_limit(running, self.pids)
        try:
            fs = os.statvfs(self.path)
        except OSError:
            fs = None
        if fs is not None and fs.f_bavail * fs.f_frsize < self.disk:
            free = fs.f_bavail * fs.f_frsize
            return f"the filesystem has {free} bytes free, below the reserve of {self.disk}"
        available = _mem_available()
        if available is not None and available < self.memory:
            return (
                f"the machine has {available} bytes available, below the reserve of {self.memory}"
            )
        return ""


def _over_limit(running: int, pids: int) -> str:
    return f"{running} processes ran in it, at or over the limit of {pids}"


def _refused(end: AgentEnd, why: str) -> AgentEnd:
    """The agent's end when the harness cannot take what it left: its own failure."""
    if end.status == "submitted":
        end.status, end.detail = "agent_error", f"what it left cannot be taken: {why}"
    else:
        end.detail += f"; what it left cannot be taken: {why}"
    return end
