"""``scripts/setup`` as a normal user without sudo, once root has set the machine up: it
asks for nothing that needs root. What only the Nix builder needs and is not done (the
user in ``nix-users``, the nix-daemon) is a note naming the root command; a system
package that is missing stops it with one line.

The script runs for real (bash), in a copy of the checkout whose ``scripts/setup-user``
records that it ran, with a PATH that has no sudo and stubs for what asks the system:
``id`` (a user "alice", uid 1000), ``dpkg-query`` (which packages are installed),
``pgrep`` (whether a nix-daemon runs) and ``usermod``, ``apt-get`` (which record a call:
none may happen). (The machine check, as a throwaway user on a machine root had set up:
the report of this change.)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STUBS = {
    "id": """#!/bin/bash
case "$1" in
  -u) if [ $# -eq 1 ]; then echo 1000; else [[ " $USERS " == *" $2 "* ]]; fi ;;
  -un) echo alice ;;
  -nG) [[ " $NIX_USERS " == *" $2 "* ]] && echo "$2 nix-users" || echo "$2" ;;
  *) exit 2 ;;
esac
""",
    "dpkg-query": """#!/bin/bash
pkg="${@: -1}"
[[ " $MISSING " == *" $pkg "* ]] && exit 1
printf 'install ok installed'
""",
    "pgrep": '#!/bin/bash\n[ "$DAEMON" = running ]\n',
    "usermod": '#!/bin/bash\necho "usermod $*" >> "$CALLS"\n',
    "apt-get": '#!/bin/bash\necho "apt-get $*" >> "$CALLS"\n',
}
TOOLS = ("bash", "cat", "dirname", "grep", "tr", "env", "tee")


@pytest.fixture
def checkout(tmp_path) -> Path:
    copy = tmp_path / "evalrepro"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup", copy / "scripts" / "setup")
    for name in ("setup-user", "nix-daemon-start"):
        stub = copy / "scripts" / name
        stub.write_text(f'#!/bin/bash\necho "{name}" >> "$CALLS"\n')
        stub.chmod(0o755)
    return copy


def setup(checkout: Path, tmp_path: Path, **state: str) -> tuple[subprocess.CompletedProcess, list]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in STUBS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        if not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    calls = tmp_path / "calls"
    calls.write_text("")
    env = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "CALLS": str(calls),
        "USERS": "evalrepro alice",
        "NIX_USERS": "evalrepro alice",
        "MISSING": "",
        "DAEMON": "running",
        **state,
    }
    done = subprocess.run(
        [str(bin_dir / "bash"), str(checkout / "scripts" / "setup")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return done, calls.read_text().splitlines()


def test_a_user_without_sudo_runs_setup_once_root_has(checkout, tmp_path):
    done, calls = setup(checkout, tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == ["setup-user"]  # nothing asked of root: only the user's own part
    assert "note" not in done.stderr


def test_what_only_the_nix_builder_needs_is_a_note_naming_the_root_command(checkout, tmp_path):
    done, calls = setup(checkout, tmp_path, NIX_USERS="evalrepro", DAEMON="stopped")
    assert done.returncode == 0, done.stderr
    assert calls == ["setup-user"]
    assert "needs root, for the nix builder only): usermod -a -G nix-users alice" in done.stderr
    assert "needs root, for the nix builder only): scripts/nix-daemon-start" in done.stderr


def test_a_missing_system_package_stops_it_with_one_line(checkout, tmp_path):
    done, calls = setup(checkout, tmp_path, MISSING="podman")
    assert done.returncode != 0 and calls == []
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("scripts/setup: needs root (no sudo here): apt-get update")
    assert "run scripts/setup as root first" in line


def test_setup_user_without_sub_ids_and_sudo_names_what_root_runs(checkout, tmp_path):
    """Rootless podman needs the user's sub-ids; without sudo the user's part says which
    command root runs, in one line, instead of failing on a missing sudo."""
    setup(checkout, tmp_path)  # makes the stubs
    for name in ("setup-user", "free-subids"):
        shutil.copy2(ROOT / "scripts" / name, checkout / "scripts" / name)
    bin_dir = tmp_path / "bin"
    held = tmp_path / "subuid"
    held.write_text("bob:100000:65536\ncarol:165536:65536\n")
    env = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "USERS": "alice",
        "EVALREPRO_SUBID_FILES": str(held),
    }
    done = subprocess.run(
        [str(bin_dir / "bash"), str(checkout / "scripts" / "setup-user")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "scripts/setup-user: alice has no subordinate ids in /etc/subuid and /etc/subgid; as "
        "root run: usermod --add-subuids 231072-296607 --add-subgids 231072-296607 alice"
    )


def test_sub_ids_are_given_from_a_range_no_other_user_holds(tmp_path):
    """Two users whose sub-ids overlap can reach each other's container files: a new range
    starts after the highest one in use in either file, and never below useradd's 100000."""

    def free(*contents: str) -> str:
        files = []
        for number, text in enumerate(contents):
            path = tmp_path / f"ids{number}"
            path.write_text(text)
            files.append(str(path))
        done = subprocess.run(
            [str(ROOT / "scripts" / "free-subids")],
            env={"PATH": "/usr/bin:/bin", "EVALREPRO_SUBID_FILES": " ".join(files)},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    assert free("") == "100000-165535"
    # The highest end in either file, whatever the order; lines that are not ranges skipped.
    assert free("a:300000:65536\nb:100000:65536\n", "# comment\nc:165536:1000\n") == (
        "365536-431071"
    )
    assert free("a:100000:65536\n", "a:500000:10\n") == "500010-565545"
    assert free("broken line\nx:y:z\n") == "100000-165535"
