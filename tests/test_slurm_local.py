"""scripts/slurm-local: the tests' Slurm cluster lives in its own folder and stops only its
own daemons. On a real Slurm host, the machine's slurmd, slurmctld and munged (here: a
copy of ``sleep`` under each name, which a stop by name would kill) keep running, and its
/etc/slurm/slurm.conf is never written. Runs as root (scripts/test's root pass)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm-local"
SYSTEM_FILES = [Path("/etc/slurm/slurm.conf"), Path("/etc/munge/munge.key")]

pytestmark = [
    pytest.mark.as_root,
    pytest.mark.skipif(os.geteuid() != 0, reason="daemons as root: scripts/test's root pass"),
    pytest.mark.skipif(shutil.which("slurmd") is None, reason="no slurm-wlm (scripts/setup)"),
]


@pytest.fixture
def cluster_dir() -> Iterator[Path]:
    # Not under pytest's tmp_path (0700 root): munged runs as munge and reads its key there.
    folder = Path(tempfile.mkdtemp(prefix="evalrepro-slurm-test-"))
    folder.chmod(0o755)
    try:
        yield folder / "cluster"
    finally:
        slurm_local("stop", folder / "cluster", check=False)
        shutil.rmtree(folder, ignore_errors=True)


def slurm_local(command: str, folder: Path, *, check: bool = True) -> str:
    done = subprocess.run(
        [SCRIPT, command],
        capture_output=True,
        text=True,
        env={**os.environ, "EVALREPRO_SLURM_DIR": str(folder)},
        timeout=300,
    )
    assert done.returncode == 0 or not check, done.stderr
    return done.stdout


def as_daemon(folder: Path, name: str) -> subprocess.Popen[bytes]:
    """A process whose name is ``name``, as a system's daemon's is."""
    program = folder / name
    shutil.copy("/bin/sleep", program)
    return subprocess.Popen([program, "600"])


def snapshot() -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.exists() else None for path in SYSTEM_FILES}


def pid(path: Path) -> int:
    return int(path.read_text().strip())


def test_start_and_stop_leave_the_machine_s_slurm_and_munge_alone(cluster_dir, tmp_path):
    system = [as_daemon(tmp_path, name) for name in ("slurmd", "slurmctld", "munged")]
    before = snapshot()
    try:
        slurm_local("start", cluster_dir)
        assert snapshot() == before
        conf = slurm_local("conf", cluster_dir).strip()
        assert conf == str(cluster_dir / "slurm.conf")
        nodes = subprocess.run(
            ["sinfo", "-h", "-o", "%T %N"],
            capture_output=True,
            text=True,
            env={**os.environ, "SLURM_CONF": conf},
            check=True,
        )
        assert nodes.stdout.split()[:1] == ["idle"]
        ours = [
            pid(cluster_dir / "slurmd.pid"),
            pid(cluster_dir / "slurmctld.pid"),
            pid(cluster_dir / "munge" / "munged.pid"),
        ]
        assert all(Path(f"/proc/{p}").exists() for p in ours)
        # Started again while up: nothing changes.
        slurm_local("start", cluster_dir)
        assert pid(cluster_dir / "slurmd.pid") == ours[0]

        slurm_local("stop", cluster_dir)
        assert [p for p in ours if Path(f"/proc/{p}").exists()] == []
        assert [daemon.poll() for daemon in system] == [None, None, None]
        assert snapshot() == before
    finally:
        for daemon in system:
            daemon.kill()
            daemon.wait()
