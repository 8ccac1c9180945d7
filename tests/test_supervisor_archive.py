"""How the supervisor's modules reach the sandbox, and what identifies them.

What is guaranteed (``evalrepro/sandbox/__init__.py``):

* the supervisor is the modules of ``SUPERVISOR_MODULES``; each imports only standard
  library modules and those before it in that order (so none is in a cycle), and every
  module of ``evalrepro/sandbox/`` is one of them or one of the host-side three
  (``__init__.py``, the exit guard, the plain driver);
* the archive the sandbox runs holds exactly the files the digest covers, byte for byte,
  and is the same bytes for the same files (the time, order and mode of its members are
  fixed);
* the digest of the sandbox's code in every eval script changes when any module shipped
  changes, or the exit guard does;
* run as the sandbox runs it (``python3 -I -S`` of the archive: no site, no PYTHON*
  variables, no script folder on the path), the archive imports all of its modules and
  speaks the stream protocol: a ``start`` event, an ``error`` for a program it cannot
  read, ``done``.
"""

from __future__ import annotations

import ast
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from evalrepro.rules.evalscript import sandbox_digest
from evalrepro.sandbox import (
    ARCHIVE_PACKAGE,
    GUARD,
    PLAIN_DRIVER,
    SANDBOX_DIR,
    SUPERVISOR_MODULES,
    shipped_supervisor,
    supervisor_archive,
    supervisor_files,
)
from evalrepro.sandbox.protocol import FRAME, KIND_EVENT, PROTOCOL


def sandbox_copy(tmp_path: Path, name: str = "sandbox") -> Path:
    copy = tmp_path / name
    shutil.copytree(SANDBOX_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_each_module_imports_only_the_standard_library_and_the_modules_before_it():
    stdlib = sys.stdlib_module_names
    for index, name in enumerate(SUPERVISOR_MODULES):
        tree = ast.parse((SANDBOX_DIR / name).read_text(encoding="utf-8"))
        before = {m.removesuffix(".py") for m in SUPERVISOR_MODULES[:index]}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and node.module in before, (
                    f"{name}:{node.lineno} imports .{node.module}"
                )
            elif isinstance(node, ast.ImportFrom):
                assert node.module.split(".")[0] in stdlib | {"__future__"}, (name, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in stdlib, (name, alias.name)


def test_every_module_of_the_folder_is_shipped_or_the_hosts():
    host_side = {"__init__.py", GUARD.name, PLAIN_DRIVER.name}
    found = {path.name for path in SANDBOX_DIR.glob("*.py")}
    assert found - host_side == set(SUPERVISOR_MODULES)


def test_the_archive_holds_exactly_the_digested_files_the_same_bytes_each_time(tmp_path):
    shipped = shipped_supervisor()
    with zipfile.ZipFile(io.BytesIO(shipped.archive)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    assert members == shipped.files
    assert set(members) == {
        "__main__.py",
        f"{ARCHIVE_PACKAGE}/__init__.py",
        *(f"{ARCHIVE_PACKAGE}/{name}" for name in SUPERVISOR_MODULES),
    }
    # Another copy, written at another time: the same archive, byte for byte.
    copy = sandbox_copy(tmp_path)
    for path in copy.iterdir():
        os.utime(path, (0, 0))
    assert supervisor_archive(supervisor_files(copy)) == shipped.archive


@pytest.mark.parametrize("name", [*SUPERVISOR_MODULES, GUARD.name])
def test_a_change_to_any_module_shipped_changes_the_eval_scripts_digest(tmp_path, name):
    unchanged = sandbox_digest(sandbox_copy(tmp_path, "as-is"))
    assert unchanged == sandbox_digest(SANDBOX_DIR)
    changed = sandbox_copy(tmp_path, "changed")
    with open(changed / name, "ab") as handle:
        handle.write(b"# one more line\n")
    assert sandbox_digest(changed) != unchanged


def _events(stream: bytes) -> list[dict]:
    events, position = [], 0
    while position < len(stream):
        kind, length = FRAME.unpack_from(stream, position)
        position += FRAME.size
        payload = stream[position : position + length]
        position += length
        if kind == KIND_EVENT:
            events.append(json.loads(payload))
    return events


def test_the_archive_runs_alone_under_python_I_S(tmp_path):
    """No evalrepro, no site folder, no script folder on the path: what the archive holds
    is all the supervisor has (the host's Python stands in for the image's)."""
    archive = tmp_path / "supervisor.pyz"
    archive.write_bytes(shipped_supervisor().archive)
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(archive), str(tmp_path / "no-program.json")],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    events = _events(done.stdout)
    assert [e["event"] for e in events] == ["start", "error", "done"], events
    assert events[0]["protocol"] == PROTOCOL
    # As root it got as far as reading the program; as another user it stops before.
    expected = "load" if os.geteuid() == 0 else "start"
    assert events[1]["phase"] == expected, events[1]


def test_the_host_loads_the_protocol_and_the_rules_it_shares_never_the_phases():
    # The host's modules that run, plan and record trials, each imported in a new process.
    host = (
        "evalrepro.cli",
        "evalrepro.pipeline",
        "evalrepro.run.execute",
        "evalrepro.run.agent_phase",
        "evalrepro.runtimes.podman",
        "evalrepro.runtimes.docker",
        "evalrepro.build.image",
    )
    code = (
        f"import json, sys; import {', '.join(host)}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('evalrepro.sandbox.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = {name.removeprefix("evalrepro.sandbox.") for name in json.loads(done.stdout)}
    # The stream's protocol, which files are test infrastructure (and the user type its
    # pytest reading takes), the watchdog's reading of the machine's memory.
    assert loaded <= {"protocol", "infra", "user", "watchdog"}, loaded
    assert "protocol" in loaded
