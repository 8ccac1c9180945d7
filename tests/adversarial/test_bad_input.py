"""Bad input gets one line and exit code 2, never a traceback; nothing recorded is lost.

Malformed YAML, a ``--run-dir`` that is a file, a lockfile edited after it was written
(its digests no longer match) or of an unknown schema, a full disk. (Patches of any bytes,
lone surrogates included, are in ``attacks.py``: they are scored, not refused.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.podman_support import cache_dir

ROOT = Path(__file__).resolve().parents[2]
COMMITTED_LOCKFILE = ROOT / "lockfiles" / "demo.lock.json"


def evalrepro(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "EVALREPRO_CACHE": str(cache_dir())},
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalrepro: error: "), done.stderr
    return lines[0]


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "broken.yaml").write_text("name: x\n  bad: [unclosed\n")
    message = one_line_error(evalrepro("config", "--config-dir", tmp_path, "+experiment=broken"))
    assert "not valid YAML" in message and "broken.yaml:2:" in message


def test_a_run_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    message = one_line_error(
        evalrepro("run", "+experiment=demo", "--run-dir", tmp_path / "notes.txt")
    )
    assert "is not a directory" in message
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def _edited_lockfile(tmp_path: Path, edit) -> Path:
    data = json.loads(COMMITTED_LOCKFILE.read_text())
    edit(data)
    path = tmp_path / "edited.lock.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def test_a_lockfile_whose_config_no_longer_matches_its_digest_is_refused(tmp_path):
    def raise_the_timeout(data):
        data["config"]["environment"]["timeout"] = 9999

    edited = _edited_lockfile(tmp_path, raise_the_timeout)
    message = one_line_error(evalrepro("run", "--lockfile", edited, "--run-dir", tmp_path / "r"))
    assert "edited or corrupt lockfile: config_digest" in message
    assert not (tmp_path / "r").exists()


def test_a_lockfile_of_an_unknown_schema_is_refused(tmp_path):
    edited = _edited_lockfile(tmp_path, lambda data: data.update(schema_version=99))
    message = one_line_error(evalrepro("run", "--lockfile", edited))
    assert "schema version 99" in message


def test_a_full_disk_is_one_line_and_keeps_what_was_written(tmp_path):
    # A filesystem of 4 KiB in a mount namespace of our own (no root needed).
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(COMMITTED_LOCKFILE, run / "lockfile.lock.json")
    small = tmp_path / "small"
    small.mkdir()
    script = (
        f"mount -t tmpfs -o size=4k tmpfs {small} && "
        f"{sys.executable} -m evalrepro report {run} --html {small}/page.html"
    )
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 2) and "unshare" in done.stderr:
        pytest.skip(f"no user mount namespaces here: {done.stderr.strip()}")
    message = one_line_error(done)
    assert "No space left on device" in message and "page.html" in message
    assert (run / "lockfile.lock.json").read_bytes() == COMMITTED_LOCKFILE.read_bytes()


@pytest.mark.podman
@pytest.mark.xdist_group("podman")
@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root: a tmpfs run directory (scripts/test)")
def test_as_root_a_disk_that_fills_up_mid_run_stops_it_cleanly_and_the_run_resumes(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    run = disk / "run"
    python = sys.executable
    # 300 KiB holds the lockfile and a few trials' artifacts, not all twelve.
    script = (
        f"mount -t tmpfs -o size=300k tmpfs {disk} && "
        f"{python} -m evalrepro run +experiment=model_a environment.timeout=10 "
        f"--run-dir {run} > {tmp_path}/first.out 2> {tmp_path}/first.err; "
        f"echo $? > {tmp_path}/first.rc; "
        f"mount -o remount,size=64m {disk} && "
        f"{python} -m evalrepro run +experiment=model_a environment.timeout=10 "
        f"--run-dir {run} > {tmp_path}/second.out 2>&1; echo $? > {tmp_path}/second.rc; "
        f"ls {run}/trials | wc -l > {tmp_path}/trials.count"
    )
    subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        check=True,
        env={**os.environ, "EVALREPRO_CACHE": str(cache_dir())},
    )
    first = (tmp_path / "first.err").read_text()
    assert (tmp_path / "first.rc").read_text().strip() == "2", first
    assert "Traceback" not in first and "No space left on device" in first
    second = (tmp_path / "second.out").read_text()
    assert "resuming" in second, second
    assert (tmp_path / "second.rc").read_text().strip() == "0", second
    assert (tmp_path / "trials.count").read_text().strip() == "12"
