"""An agent as an adversary of the harness, in real podman (root and rootless): the rows
"Agents" of docs/threat-model.md, each tested here.

- **One snapshot.** What the agent left running keeps writing after its command exits;
  its patch is the sandbox's tree once every process of the sandbox has stopped
  (prevented), and the harness says how many it stopped (detected, in the agent's log).
- **The process limit.** A fork bomb, with the machine under load, ends at the limit,
  held by the kernel in both modes (root: the cgroup; rootless: the ``nproc`` ulimit in
  the sandbox's own user namespace), and the watcher gives the reason.
- **No host names.** The sandbox's ``/etc/hosts`` and ``/etc/resolv.conf`` hold neither
  the host's names nor its address nor its resolver.
- **A huge diff** is refused before it is built whole, in bounded time.
"""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import tarfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build.images import ImageChain
from evalrepro.pipeline import plan_and_lock
from evalrepro.records.trial import read_trial_result
from evalrepro.run.worktree import DIFF_SECONDS, TreeError, harness_diff
from evalrepro.runtimes.interactive import SandboxRequest
from evalrepro.sample import load_samples
from evalrepro.targets.agent import AgentBudgets, AgentTarget, CommandAgent
from tests.podman_support import cache_dir, demo_config, needs_podman, run_demo

pytestmark = needs_podman

#: Rootless here (as scripts/test runs the suite), and as root in its root pass.
both_modes = pytest.mark.parametrize(
    "mode",
    [
        "here",
        pytest.param(
            "root",
            marks=[
                pytest.mark.root_podman,
                pytest.mark.skipif(os.geteuid() != 0, reason="root podman: the root pass"),
            ],
        ),
    ],
)

INSTANCE = "demo__calc-1"


@pytest.fixture(scope="module")
def opened():
    """The podman runtime (a process limit of 64) and the demo's calc-1 image (built
    once, cached)."""
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]", "environment.limits.pids=64")
    backend, plan, _ = plan_and_lock(config, Console(file=io.StringIO()), cache_dir())
    (planned,) = plan.trials
    assert isinstance(planned.image, ImageChain)
    yield backend.runtime, planned.image.image
    backend.close()


def request(image) -> SandboxRequest:
    return SandboxRequest(
        name=f"evalrepro-test-agents-{uuid.uuid4().hex[:12]}",
        image_tag=image.tag,
        image_digest=image.image_digest,
        user="tester",
    )


def gold_patch() -> str:
    config = demo_config("demo")
    (sample,) = [
        s for s in load_samples(Path(config.dataset.instances)) if s.instance_id == INSTANCE
    ]
    return sample.patch


def agent_run(tmp_path: Path, name: str, command: str, *overrides: str, **target: object):
    """One trial of calc-1 by a command agent (the gold patch in ``$FIX``); its result
    and its attempt's folder."""
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]", *overrides)
    adapter = CommandAgent(command=command, env={"FIX": gold_patch()})
    agent = AgentTarget(name=name, adapter=adapter, **target)
    run_dir = tmp_path / name
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    (folder,) = (run_dir / "trials").glob("*/attempt-1")
    return read_trial_result(path), folder


def members(tar: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        return {
            m.name: archive.extractfile(m).read()  # type: ignore[union-attr]
            for m in archive
            if m.isreg()
        }


#: Leaves a writer behind and exits: the writer appends a line every 5 ms, forever.
WRITER = (
    "setsid nohup bash -c 'i=0; while :; do i=$((i+1)); echo $i >> /testbed/ticks.txt; "
    "sleep 0.005; done' >/dev/null 2>&1 & sleep 0.5; exit 0"
)


def test_the_tree_is_read_once_every_process_of_the_sandbox_has_stopped(opened):
    runtime, image = opened
    with runtime.sandbox(request(image)) as sandbox:
        own = sandbox.processes()
        assert sandbox.exec(WRITER, timeout=30).exit_code == 0
        # The writer outlived the command that started it.
        assert sandbox.processes() > own
        stopped = sandbox.end()
        assert stopped > own and sandbox.processes() == 0
        first = sandbox.export_tree("/testbed", limit=64 << 20)
        time.sleep(1.0)
        second = sandbox.export_tree("/testbed", limit=64 << 20)
    # Read twice, a second apart: the same bytes, nothing wrote in between.
    ticks = members(first)["testbed/ticks.txt"]
    assert len(ticks.split()) >= 2
    assert members(first) == members(second)


def test_the_process_cap_counts_this_sandbox_only(opened):
    runtime, image = opened
    with runtime.sandbox(request(image)) as one, runtime.sandbox(request(image)) as other:
        assert one.capped and other.capped
        seen = one.exec("grep 'Max processes' /proc/self/limits; id -un", timeout=30).output
        assert seen.split()[2:4] == ["64", "64"] and seen.split()[-1] == "tester", seen
        # One sandbox's user fills its cap with processes that stay...
        hoard = "for i in $(seq 100); do (setsid sleep 600 &); done 2>/dev/null; exit 0"
        one.exec(hoard, timeout=60)
        assert 64 <= one.processes() <= 64 + 8
        # ... and the same user in another sandbox still starts its own: the kernel
        # counts each sandbox's user namespace apart, not the host user's processes.
        done = other.exec("for i in $(seq 20); do sleep 1 & done; wait; echo forked", timeout=60)
        assert done.output.strip() == "forked", done.output


@both_modes
def test_an_agent_that_leaves_a_writer_is_evaluated_on_the_tree_at_its_end(tmp_path, mode):
    fix = 'printf "%s" "$FIX" | git apply && '
    result, folder = agent_run(tmp_path, "leaver", fix + WRITER)
    assert str(result.score.outcome) == "resolved", result.score
    log = (folder / "agent_log.txt").read_text()
    found = re.search(r"\[evalrepro: (\d+) process\(es\) the agent left running were stopped", log)
    assert found and int(found.group(1)) >= 1, log
    patch = (folder / "patch.diff").read_bytes()
    # The writer's file is in the patch as it was when the sandbox stopped: whole lines.
    assert b"ticks.txt" in patch
    added = [line for line in patch.splitlines() if line.startswith(b"+") and line[1:].isdigit()]
    assert [int(line[1:]) for line in added] == list(range(1, len(added) + 1))


@contextmanager
def load(processes: int = 2):
    """Processes that burn the host's CPUs while the test runs (the measured failure: a
    watcher whose scan of ``/proc`` falls behind a fork bomb on a loaded machine)."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(processes)
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


@both_modes
def test_a_fork_bomb_under_load_ends_at_the_limit_with_its_reason(tmp_path, mode):
    with load():
        result, folder = agent_run(
            tmp_path,
            "bomber",
            "bomb() { bomb | bomb & }; bomb; sleep 100",
            "environment.limits.pids=64",
            budgets=AgentBudgets(wall_seconds=90),
        )
    assert (str(result.score.outcome), result.score.reason) == ("unresolved", "agent_error")
    found = re.search(r"(\d+) processes ran in it, at or over the limit of 64", result.score.detail)
    assert found, result.score.detail
    # The kernel's cap was made (else the log says why, and only the watcher stood).
    log = (folder / "agent_log.txt").read_text(errors="replace")
    assert "no kernel cap" not in log, log[-2000:]
    # Held at the limit by the kernel: the agent's user at 64, the sandbox's own processes
    # (root's: the namespace's holder, the harness's execs, a few dozen on a loaded
    # machine) on top; never far past it as when only the watcher's scan stood in the way
    # (4,183 processes, measured, rootless).
    assert 64 <= int(found.group(1)) < 2 * 64
    (attempt,) = result.attempts  # its own doing: never retried
    # Ended at the limit, not at its wall time.
    assert (attempt.finished_at - attempt.started_at).total_seconds() < 90


@both_modes
def test_the_sandbox_knows_no_name_or_address_of_the_host(tmp_path, mode):
    names = {socket.gethostname(), socket.getfqdn(), "host.containers.internal"}
    addresses = {
        info[4][0]
        for name in (socket.gethostname(), socket.getfqdn())
        for info in socket.getaddrinfo(name, None)
    }
    resolvers = re.findall(r"^\s*nameserver\s+(\S+)", Path("/etc/resolv.conf").read_text(), re.M)
    command = (
        "echo HOSTS; cat /etc/hosts; echo RESOLV; cat /etc/resolv.conf; echo NAME; hostname; "
        "echo LOOKUP; getent hosts host.containers.internal $(cat /etc/hostname) || true"
    )
    _, folder = agent_run(tmp_path, "reader", command)
    log = (folder / "agent_log.txt").read_text()
    seen = log.split("HOSTS", 1)[1]
    for secret in sorted((names | addresses | set(resolvers)) - {"127.0.0.1", "::1", "localhost"}):
        assert secret not in seen, (secret, seen)
    assert "nameserver" not in seen.split("RESOLV", 1)[1].split("NAME", 1)[0]


def test_a_diff_over_its_bound_is_refused_before_git_builds_it():
    def tar(files: dict[str, bytes]) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for name, data in {"testbed/README.md": b"base\n", **files}.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    base = tar({})
    # 200 MB of new text: refused from the files' sizes, git never runs.
    line = b"x" * 99 + b"\n"
    started = time.monotonic()
    with pytest.raises(TreeError, match=r"diff is at least \d+ bytes, over the limit of 1048576"):
        harness_diff(base, tar({"testbed/big.txt": line * 2_000_000}), limit=1 << 20)
    refused_from_sizes = time.monotonic() - started
    # A same-size rewrite has no such bound: git's output is read as it comes and git is
    # killed at the first byte over the bound (many files: git writes as it goes).
    rewritten = {f"testbed/f{i}.txt": b"a\n" * 20_000 for i in range(200)}
    other = {name: b"b\n" * 20_000 for name in rewritten}
    started = time.monotonic()
    with pytest.raises(TreeError, match=r"diff is more than \d+ bytes, over the limit of 1048576"):
        harness_diff(tar(rewritten), tar(other), limit=1 << 20)
    cut_short = time.monotonic() - started
    # Bounded by the refusal (the messages above say which), never by the last-resort
    # bound on git's time that a rewrite of one large file in place would need.
    assert max(refused_from_sizes, cut_short) < DIFF_SECONDS, (refused_from_sizes, cut_short)
