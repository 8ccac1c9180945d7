"""Shared pieces of the Nix tests: the real nix-daemon, a second rootless user, the flake.

Nothing here is a stand-in: builds run in Nix's sandbox through the daemon (rootless) or
the local store (root), and images are loaded into the real podman.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evalrepro.build import nixstore

REPO = Path(__file__).resolve().parent.parent
LOCKFILE = REPO / "lockfiles" / "demo-nix.lock.json"
#: A rootless user of the root tests' own (not ``evalrepro``, whose podman store the
#: rootless suite uses at the same time).
ROOTLESS_USER = os.environ.get("EVALREPRO_NIX_TEST_USER", "nixtest")

needs_nix = [
    pytest.mark.podman,
    pytest.mark.xdist_group("nix"),
    pytest.mark.skipif(
        shutil.which("nix-build") is None and not os.environ.get("CI"),
        reason="Nix is not installed (scripts/setup installs it; CI requires it)",
    ),
]


def start_daemon() -> None:
    """As root, start the nix-daemon unless it answers; rootless, it must be running."""
    if os.geteuid() == 0:
        subprocess.run([str(REPO / "scripts" / "nix-daemon-start")], check=True)
    nixstore.check()


def rootless_user() -> str:
    """``ROOTLESS_USER``, made if missing: sub-ids, in nix-users, podman on overlay."""
    user = ROOTLESS_USER
    if subprocess.run(["id", "-u", user], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", user], check=True)
    if f"{user}:" not in Path("/etc/subuid").read_text():
        ids = "300000-365535"
        subprocess.run(["usermod", "--add-subuids", ids, "--add-subgids", ids, user], check=True)
    subprocess.run(["usermod", "-a", "-G", "nix-users", user], check=True)
    return user


def git_visible_copy(dest: Path) -> Path:
    """The checkout's files git would see (tracked and untracked, not ignored), as a new
    git repository with one commit: what a fresh clone's flake sees."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / os.fsdecode(name)
        if not source.is_file():  # deleted in the working tree
            continue
        target = dest / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    identity = ["-c", "user.name=evalrepro tests", "-c", "user.email=tests@evalrepro.invalid"]
    for args in (["init", "-q"], ["add", "-A"], [*identity, "commit", "-q", "-m", "clone"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return dest
