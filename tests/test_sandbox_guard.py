"""The exit guard, in real Python processes with a real pipe at the guard's descriptor.

What is guaranteed (``evalrepro/sandbox/guard.py``): a process that imports the guard
with ``EVALREPRO_GUARD`` naming its descriptor and that descriptor's inode

* writes ``S <pid> <ppid>`` at once and, when Python shuts down normally,
  ``X <pid> {"replaced": [...], "redirected": ...}``; a process that leaves by
  ``os._exit`` writes no ``X`` line, and a forked child never writes one for it;
* lists in ``replaced`` the framework and runtime functions (``unittest``, ``sys``...)
  that code under the testbed replaced, with that code's file; never code of a
  framework's own directory, nor generated code without a file;
* says ``redirected`` when its stdout or stderr is no longer what it started with;
* writes nothing at all when the variable names another pipe (a wrong inode).

The supervisor's ``GuardRecords`` reads these very lines into the runner's exit.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
import time
import unittest
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalrepro.sandbox import SANDBOX_DIR
from evalrepro.sandbox.exitguard import GUARD_FD, GuardRecords

PRELUDE = f"import sys; sys.path.insert(0, {str(SANDBOX_DIR)!r}); import guard\n"


@dataclass(frozen=True)
class Guarded:
    """What one guarded child did: its pid, exit status, stderr and guard lines."""

    pid: int
    returncode: int
    stderr: bytes
    lines: list[bytes]

    def exits(self) -> list[tuple[int, dict]]:
        found = []
        for line in self.lines:
            if line.startswith(b"X "):
                _, pid, payload = line.split(b" ", 2)
                found.append((int(pid), json.loads(payload)))
        return found


def _read_until_eof(fd: int, seconds: float = 30.0) -> bytes:
    chunks = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    raise AssertionError("a process still holds the guard pipe open")


def run_guarded(
    code: str, testbed: Path, *, inode: int | None = None, env: dict | None = None
) -> Guarded:
    """Run ``code`` after importing the guard, with a pipe at fd GUARD_FD."""
    read_end, write_end = os.pipe()
    try:
        os.fstat(GUARD_FD)
    except OSError:
        pass
    else:
        pytest.skip(f"fd {GUARD_FD} is already in use in this process")
    os.dup2(write_end, GUARD_FD)
    os.close(write_end)
    try:
        spec_inode = os.fstat(GUARD_FD).st_ino if inode is None else inode
        child_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "EVALREPRO_GUARD": f"{GUARD_FD}:{spec_inode}:{testbed}",
            **(env or {}),
        }
        process = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", PRELUDE + textwrap.dedent(code)],
            cwd=testbed,
            env=child_env,
            pass_fds=(GUARD_FD,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(GUARD_FD)
    try:
        _, stderr = process.communicate(timeout=60)
        data = _read_until_eof(read_end)
    finally:
        os.close(read_end)
    lines = [line for line in data.split(b"\n") if line]
    return Guarded(process.pid, process.returncode, stderr, lines)


@pytest.fixture
def testbed(tmp_path: Path) -> Path:
    root = tmp_path / "testbed"
    root.mkdir()
    return root


def test_a_normal_exit_writes_the_start_then_the_exit_line(testbed):
    result = run_guarded("print('hello')", testbed)
    assert result.returncode == 0, result.stderr
    assert result.lines[0] == b"S %d %d" % (result.pid, os.getpid())
    assert result.exits() == [(result.pid, {"replaced": [], "redirected": False})]
    assert len(result.lines) == 2


def test_a_normal_exit_reads_as_a_clean_runner(testbed):
    result = run_guarded("import sys; sys.exit(3)", testbed)
    assert result.returncode == 3
    guard = GuardRecords()
    guard.feed(b"".join(line + b"\n" for line in result.lines))
    assert guard.runner_exit(result.pid) == ("clean", "")


def test_an_uncaught_exception_is_still_a_normal_shutdown(testbed):
    result = run_guarded("raise RuntimeError('boom')", testbed)
    assert result.returncode == 1
    assert [pid for pid, _ in result.exits()] == [result.pid]


def test_os_exit_writes_only_the_start_line(testbed):
    result = run_guarded("import os; print('1 passed'); os._exit(0)", testbed)
    assert result.returncode == 0
    assert result.lines == [b"S %d %d" % (result.pid, os.getpid())]
    guard = GuardRecords()
    guard.feed(b"".join(line + b"\n" for line in result.lines))
    assert guard.runner_exit(result.pid)[0] == "abnormal"


def test_a_fatal_signal_writes_only_the_start_line(testbed):
    result = run_guarded("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", testbed)
    assert result.returncode == -9
    assert result.exits() == []


EVIL = """\
import sys
import unittest


def assertEqual(self, first, second, msg=None):
    return None


def leave(code=0):
    raise SystemExit(0)


unittest.TestCase.assertEqual = assertEqual
sys.exit = leave
"""


def test_framework_and_runtime_functions_replaced_from_the_testbed_are_listed(testbed):
    (testbed / "evil.py").write_text(EVIL)
    result = run_guarded(f"sys.path.insert(0, {str(testbed)!r}); import evil", testbed)
    assert result.returncode == 0, result.stderr
    [(pid, facts)] = result.exits()
    evil = os.path.realpath(testbed / "evil.py")
    assert pid == result.pid
    assert facts["redirected"] is False
    assert sorted(facts["replaced"], key=lambda item: item["target"]) == [
        {"target": "sys.exit", "file": evil},
        {"target": "unittest.case.TestCase.assertEqual", "file": evil},
    ]


def test_a_callable_object_of_a_testbed_class_is_listed_by_its_call(testbed):
    (testbed / "sneaky.py").write_text(
        "import builtins\n\n"
        "class Printer:\n"
        "    def __call__(self, *args, **kwargs):\n"
        "        return None\n\n"
        "builtins.print = Printer()\n"
    )
    result = run_guarded(f"sys.path.insert(0, {str(testbed)!r}); import sneaky", testbed)
    [(_, facts)] = result.exits()
    assert facts["replaced"] == [
        {"target": "builtins.print", "file": os.path.realpath(testbed / "sneaky.py")}
    ]


def test_replacements_from_outside_the_testbed_are_not_listed(testbed, tmp_path):
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    (elsewhere / "evil.py").write_text(EVIL)
    result = run_guarded(f"sys.path.insert(0, {str(elsewhere)!r}); import evil", testbed)
    [(_, facts)] = result.exits()
    assert facts["replaced"] == []


def test_a_framework_that_is_the_repository_itself_is_not_listed_as_replacing_itself(testbed):
    package = testbed / "pluggy"
    package.mkdir()
    (package / "__init__.py").write_text("def hook():\n    return 1\n\nclass Manager:\n    pass\n")
    result = run_guarded(f"sys.path.insert(0, {str(testbed)!r}); import pluggy", testbed)
    assert result.returncode == 0, result.stderr
    [(_, facts)] = result.exits()
    assert facts["replaced"] == []


def test_generated_code_without_a_file_is_not_listed_even_from_the_testbed(testbed):
    # "<generated>" resolved against the working directory (the testbed) would look like
    # a file of the repository: code named "<...>" lives in no file.
    code = """
        namespace = {}
        exec(compile("def leave(code=0):\\n    raise SystemExit(0)\\n", "<generated>", "exec"),
             namespace)
        sys.exit = namespace["leave"]
    """
    result = run_guarded(code, testbed)
    [(_, facts)] = result.exits()
    assert facts["replaced"] == []


def test_stdout_and_stderr_sent_to_dev_null_are_reported_as_redirected(testbed):
    code = """
        import os
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
    """
    result = run_guarded(code, testbed)
    assert result.returncode == 0
    [(pid, facts)] = result.exits()
    assert (pid, facts["redirected"]) == (result.pid, True)
    guard = GuardRecords()
    guard.feed(b"".join(line + b"\n" for line in result.lines))
    assert guard.runner_exit(result.pid)[0] == "abnormal"


def test_only_stderr_redirected_is_still_redirected(testbed):
    code = "import os; os.dup2(os.open(os.devnull, os.O_WRONLY), 2)"
    [(_, facts)] = run_guarded(code, testbed).exits()
    assert facts["redirected"] is True


def test_a_wrong_inode_makes_the_guard_write_nothing(testbed):
    result = run_guarded("print('hello')", testbed, inode=1)
    assert result.returncode == 0, result.stderr
    assert result.lines == []


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "1017",
        "1017:notanumber:/testbed",
        "not:a:spec",
        "1016:1:/testbed",
    ],
)
def test_a_missing_or_malformed_variable_makes_the_guard_write_nothing(testbed, spec):
    result = run_guarded("print('hello')", testbed, env={"EVALREPRO_GUARD": spec})
    assert result.returncode == 0, result.stderr
    assert result.lines == []


def test_a_forked_child_does_not_write_an_exit_line_for_the_parent(testbed):
    code = """
        import os
        child = os.fork()
        if child == 0:
            sys.exit(0)  # a normal shutdown of the forked child: its atexit hooks run
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    """
    result = run_guarded(code, testbed)
    assert result.returncode == 0, result.stderr
    assert [line.split(b" ")[0] for line in result.lines] == [b"S", b"X"]
    assert [pid for pid, _ in result.exits()] == [result.pid]


def test_at_most_twenty_replacements_are_listed(testbed):
    names = [name for name in dir(unittest.TestCase) if name.startswith("assert")][:30]
    assert len(names) == 30
    (testbed / "many.py").write_text(
        "import unittest\n\n"
        "def fake(self, *args, **kwargs):\n"
        "    return None\n\n"
        f"for name in {names!r}:\n"
        "    setattr(unittest.TestCase, name, fake)\n"
    )
    result = run_guarded(f"sys.path.insert(0, {str(testbed)!r}); import many", testbed)
    [(_, facts)] = result.exits()
    assert len(facts["replaced"]) == 20
    assert {item["file"] for item in facts["replaced"]} == {os.path.realpath(testbed / "many.py")}
