"""A killed build leaves nothing running, and its staging is removed on the next start.

``podman build`` killed with its parent leaves the processes of its ``RUN`` step running
(measured here: they are orphaned, not killed). evalrepro runs every build under a
keeper (``evalrepro.runtimes.tether``) that stops the whole tree when evalrepro dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from evalrepro.config.experiment import builtin_config_dir
from evalrepro.run.backend import Backend
from tests.podman_support import cache_dir, demo_config, needs_podman

pytestmark = needs_podman


def _processes_with(token: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            command = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in command:
            found.append(int(name))
    return found


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _locked_by(pid: int, folders: set[Path]) -> set[Path]:
    """The folders whose ``.lock`` process ``pid`` holds (from the kernel's lock table)."""
    inodes = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[4] == str(pid):
            inodes.add(int(fields[5].rsplit(":", 1)[1]))
    held = set()
    for folder in folders:
        try:
            if (folder / ".lock").stat().st_ino in inodes:
                held.add(folder)
        except OSError:
            continue
    return held


def test_sigkill_during_a_build_stops_the_build_and_the_next_start_cleans_up(tmp_path):
    # A dataset whose calc instances install with a long sleep: the build is mid-RUN.
    token = f"evalrepro-slow-build-{uuid.uuid4().hex[:8]}"
    demo = (builtin_config_dir() / "dataset" / "demo.yaml").read_text()
    slow = demo.replace(
        "      test_cmd: pytest -rA -v -p no:cacheprovider\n",
        f'      install: "sleep 600 # {token}"\n'
        "      test_cmd: pytest -rA -v -p no:cacheprovider\n",
        1,
    )
    assert token in slow
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "slow.yaml").write_text(
        slow.replace("name: demo", "name: slow")
    )
    env = {**os.environ, "EVALREPRO_CACHE": str(cache_dir())}
    run = subprocess.Popen(
        [
            sys.executable, "-m", "evalrepro", "run", "--config-dir", str(tmp_path / "conf"),
            "+experiment=demo", "dataset=slow", "--run-dir", str(tmp_path / "run"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert _wait_for(lambda: _processes_with(f"sleep 600 # {token}"), 120), "no build"
        staging = cache_dir() / "staging"
        # Only this run's folders: tests on other workers build in the same cache.
        building = _locked_by(run.pid, set(staging.iterdir()))
        assert building
        run.send_signal(signal.SIGKILL)
        run.wait()
        # The keeper stops the build (SIGTERM, then SIGKILL after its grace period).
        assert _wait_for(lambda: not _processes_with(token), 40), _processes_with(token)

        # The next start of the backend removes the dead build's staging folders (a
        # backend started by a test on another worker may have been that next start).
        Backend.open(demo_config("demo").environment, cache_dir()).check()
        assert not building & set(staging.iterdir())
    finally:
        run.kill()
        for pid in _processes_with(token):
            os.kill(pid, signal.SIGKILL)


def test_the_cache_holds_only_the_users_own_files():
    # Builds run in user namespaces (mmdebstrap, podman build): what they leave in the
    # cache is the user's, never a sub-uid's that the user could not delete.
    owner = os.getuid()
    strays = [p for p in cache_dir().rglob("*") if p.lstat().st_uid != owner]
    assert strays == []
