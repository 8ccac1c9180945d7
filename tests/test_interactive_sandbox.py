"""The interactive sandbox in real podman: started from an image by its locked Id, one
command at a time with a timeout and bounded output, files in and out, no network, and
gone with everything in it when stopped. The harness's diff of what an agent leaves is
taken from the container's files, against the image's own tree, never through its git.
"""

from __future__ import annotations

import io
import socket
import subprocess
import threading
import uuid

import pytest
from rich.console import Console

from evalrepro.build.images import ImageChain
from evalrepro.pipeline import plan_and_lock
from evalrepro.run.worktree import harness_diff
from evalrepro.runtimes.interactive import SandboxError, SandboxRequest
from tests.podman_support import cache_dir, demo_config, needs_podman

pytestmark = needs_podman


@pytest.fixture(scope="module")
def opened():
    """The podman runtime and the demo's calc-1 image (built once, cached)."""
    config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]")
    console = Console(file=io.StringIO())
    backend, plan, _ = plan_and_lock(config, console, cache_dir())
    (planned,) = {p.sample.instance_id: p for p in plan.trials}.values()
    assert isinstance(planned.image, ImageChain)
    yield backend.runtime, planned.image.image
    backend.close()


def request(image, **changes) -> SandboxRequest:
    name = f"evalrepro-test-sandbox-{uuid.uuid4().hex[:12]}"
    return SandboxRequest(
        name=name, image_tag=image.tag, image_digest=image.image_digest, **changes
    )


def containers(prefix: str) -> list[str]:
    listed = subprocess.run(
        ["podman", "ps", "--all", "--format", "{{.Names}}"], capture_output=True, text=True
    )
    return [name for name in listed.stdout.split() if name.startswith(prefix)]


def test_a_command_runs_in_the_repository_at_the_base_commit(opened):
    runtime, image = opened
    with runtime.sandbox(request(image)) as sandbox:
        done = sandbox.exec("pwd; ls calc; echo to-stderr >&2; exit 3", timeout=30)
    assert done.exit_code == 3 and not done.timed_out
    assert done.output.splitlines()[0] == "/testbed"
    assert "evaluator.py" in done.output and "to-stderr" in done.output


def test_commands_run_as_the_user_the_request_names(opened):
    runtime, image = opened
    with runtime.sandbox(request(image, user="tester")) as sandbox:
        done = sandbox.exec("id -un; git rev-parse --is-inside-work-tree", timeout=30)
    # The repository's owner: git works there (root's git refuses a repository it
    # does not own).
    assert done.output.split() == ["tester", "true"], done.output


def test_a_command_past_its_timeout_is_killed_and_says_so(opened):
    runtime, image = opened
    with runtime.sandbox(request(image)) as sandbox:
        done = sandbox.exec("echo started; sleep 60", timeout=1)
        assert done.timed_out and done.exit_code is None
        assert done.output.strip() == "started"
        assert done.seconds < 60  # killed at its timeout, not ended by its own sleep
        # The sandbox goes on: the next command runs.
        assert sandbox.exec("echo next", timeout=10).output.strip() == "next"


def test_output_is_bounded_and_the_rest_counted(opened):
    runtime, image = opened
    with runtime.sandbox(request(image)) as sandbox:
        done = sandbox.exec("head -c 3000000 /dev/zero | tr '\\0' x", timeout=30, output_limit=1000)
    assert done.output == "x" * 1000
    assert done.dropped == 3_000_000 - 1000


def test_files_go_in_and_come_out_within_a_bound(opened):
    runtime, image = opened
    with runtime.sandbox(request(image)) as sandbox:
        sandbox.write_file("/tmp/deep/folder/data.bin", bytes(range(256)))
        assert sandbox.read_file("/tmp/deep/folder/data.bin") == bytes(range(256))
        with pytest.raises(SandboxError, match="over 100 bytes"):
            sandbox.read_file("/tmp/deep/folder/data.bin", limit=100)
        with pytest.raises(SandboxError, match="cannot read /nonexistent"):
            sandbox.read_file("/nonexistent")


def test_the_network_is_off(opened):
    runtime, image = opened
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    probe = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "    print('reached')\n"
        "except OSError as error:\n"
        "    print('unreachable', error)\n"
    )
    try:
        with runtime.sandbox(request(image)) as sandbox:
            sandbox.write_file("/tmp/probe.py", probe.encode())
            done = sandbox.exec("python3 /tmp/probe.py; ls /sys/class/net", timeout=30)
    finally:
        server.close()
    assert "unreachable" in done.output
    assert done.output.split()[-1] == "lo"  # the only interface
    assert accepted == []


def test_stop_removes_the_sandbox_and_what_outlived_its_commands(opened):
    runtime, image = opened
    sandbox = runtime.sandbox(request(image))
    sandbox.exec("setsid sleep 1000 > /dev/null 2>&1 < /dev/null &", timeout=10)
    assert containers(sandbox.request.name) == [sandbox.request.name]
    sandbox.stop()
    sandbox.stop()  # again: nothing happens
    assert containers(sandbox.request.name) == []


def test_an_image_that_is_not_the_locked_one_is_refused(opened):
    runtime, image = opened
    wrong = request(image).model_copy(update={"image_digest": "sha256:" + "0" * 64})
    # The sandbox runs the locked Id, never what the tag points at now.
    with pytest.raises(SandboxError, match="the store holds no image sha256:0000"):
        runtime.sandbox(wrong)
    assert containers(wrong.name) == []


def test_the_harness_diff_of_what_an_agent_leaves_ignores_its_git(opened, tmp_path):
    runtime, image = opened
    base = runtime.image_tree(request(image), "/testbed", limit=64 << 20)
    agent = (
        "set -e\n"
        "sed -i 's/return/return  /' calc/evaluator.py\n"
        "printf 'NEW = 1\\n' > calc/new_module.py\n"
        "printf '\\000\\001' > calc/blob.bin && head -c 510 /dev/urandom >> calc/blob.bin\n"
        # What a naive `git diff` in this repository would obey (and run):
        "git config --file .git/config diff.external /tmp/evil.sh\n"
        "git config --file .git/config core.fsmonitor /tmp/evil.sh\n"
        "mkdir -p .git/info && printf '* -diff\\n' > .git/info/attributes\n"
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > /tmp/evil.sh && chmod +x /tmp/evil.sh\n"
    )
    with runtime.sandbox(request(image)) as sandbox:
        assert sandbox.exec(agent, timeout=60).exit_code == 0
        work = sandbox.export_tree("/testbed", limit=64 << 20)
        blob = sandbox.read_file("/testbed/calc/blob.bin")
        evaluator = sandbox.read_file("/testbed/calc/evaluator.py")
    patch = harness_diff(base, work, limit=1 << 20)
    assert b".git" not in patch.replace(b".gitignore", b"")
    assert b"GIT binary patch" in patch
    # The patch gives the agent's files on the image's own base tree.
    repo = tmp_path / "base"
    repo.mkdir()
    subprocess.run(["tar", "-xf", "-", "-C", str(repo)], input=base, check=True)
    (tmp_path / "patch.diff").write_bytes(patch)
    subprocess.run(
        ["git", "apply", "--directory=testbed", str(tmp_path / "patch.diff")],
        cwd=repo,
        check=True,
        env={"PATH": "/usr/bin:/bin", "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    assert (repo / "testbed/calc/blob.bin").read_bytes() == blob
    assert (repo / "testbed/calc/evaluator.py").read_bytes() == evaluator
    assert (repo / "testbed/calc/new_module.py").read_text() == "NEW = 1\n"
