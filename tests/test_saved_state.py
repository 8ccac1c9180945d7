"""What runs is what was verified, and each lone run starts from the same state
(``evalrepro/sandbox/tree.py``), on real files:

* ``SavedState`` keeps every folder the test user may write as it was when the tests
  started, and ``restore`` puts back whatever a run changed since (new files and folders
  go, rewritten and deleted ones come back with their content, mode, owner and times, a
  folder replaced by a link is a folder again, a folder's mode is put back), never
  writes through a link the run planted, and leaves the supervisor's own folders alone;
* compiled bytecode (``*.pyc``, ``*.pyo``, anything in ``__pycache__``) is test
  infrastructure whatever the dataset's patterns say, and stands for its source;
* what a run changed is checked in ``__pycache__`` too: bytecode of a test file or of
  test infrastructure written during the run is a change to it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalrepro.sandbox.infra import bytecode_source, is_bytecode, protected_reason
from evalrepro.sandbox.phases import Trial
from evalrepro.sandbox.protocol import Stream
from evalrepro.sandbox.tree import SavedState, snapshot


def contents(root: Path) -> dict[str, tuple]:
    """Kind, mode, owner, mtime and content (or link target) of every entry."""
    found = {}
    for rel in snapshot(str(root)):
        full = root / rel
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            data: bytes | str = os.readlink(full)
        elif stat.S_ISREG(st.st_mode):
            data = full.read_bytes()
        else:
            data = b""
        mtime = None if stat.S_ISDIR(st.st_mode) else st.st_mtime_ns
        found[rel] = (stat.S_IFMT(st.st_mode), st.st_mode, st.st_uid, st.st_gid, mtime, data)
    return found


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository and a /tmp of the test user's, and the store, root's."""
    testbed, scratch, store = tmp_path / "testbed", tmp_path / "tmp", tmp_path / "store"
    (testbed / "pkg" / "sub").mkdir(parents=True)
    (testbed / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (testbed / "pkg" / "sub" / "deep.py").write_text("DEEP = 1\n")
    (testbed / "run.sh").write_text("#!/bin/sh\n")
    (testbed / "run.sh").chmod(0o755)
    (testbed / "link").symlink_to("pkg/mod.py")
    scratch.mkdir()
    (scratch / "kept").write_text("from the image\n")
    store.mkdir(mode=0o700)
    return testbed, scratch, store


def test_a_restore_puts_back_everything_a_run_changed(roots, tmp_path):
    testbed, scratch, store = roots
    outside = tmp_path / "outside"
    outside.mkdir()
    before = {testbed: contents(testbed), scratch: contents(scratch)}
    state = SavedState([str(testbed), str(scratch)], str(store), [])

    (testbed / "pkg" / "mod.py").write_text("VALUE = 2\n")  # rewritten
    (testbed / "run.sh").chmod(0o644)  # its mode
    (testbed / "pkg" / "__pycache__").mkdir()  # bytecode for the next process
    (testbed / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00" * 16)
    os.rename(testbed / "pkg" / "sub", tmp_path / "moved")  # a folder gone
    (testbed / "pkg" / "sub").symlink_to(outside)  # and a link in its place
    (testbed / "pkg").chmod(0o700)
    (testbed / "link").unlink()
    (scratch / "marker").write_text("state for the re-run\n")  # a marker
    (scratch / "kept").write_text("changed\n")

    assert state.restore() > 0
    assert {testbed: contents(testbed), scratch: contents(scratch)} == before
    assert list(outside.iterdir()) == []  # nothing written through the planted link
    # Nothing left to put back: the next restore is free.
    assert state.restore() == 0


def test_a_second_run_is_put_back_as_the_first_was(roots):
    testbed, scratch, store = roots
    before = contents(testbed)
    state = SavedState([str(testbed), str(scratch)], str(store), [])
    for attempt in range(2):
        (testbed / "pkg" / "mod.py").write_text(f"VALUE = {attempt + 10}\n")
        (testbed / "new.py").write_text("x = 1\n")
        assert state.restore() == 2
        assert contents(testbed) == before


def test_the_supervisors_own_folders_are_neither_saved_nor_put_back(roots):
    testbed, scratch, store = roots
    private = scratch / "evalrepro-supervisor-x"
    private.mkdir()
    state = SavedState([str(testbed), str(scratch)], str(store), [str(private)])
    (private / "index").write_text("the supervisor's\n")
    assert state.restore() == 0
    assert (private / "index").read_text() == "the supervisor's\n"
    assert not (store / "1" / private.name).exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="owners are kept by root only")
def test_owners_are_kept(roots):
    testbed, _, store = roots
    os.chown(testbed / "pkg" / "mod.py", 1000, 1000)
    state = SavedState([str(testbed)], str(store), [])
    (testbed / "pkg" / "mod.py").unlink()
    state.restore()
    assert os.stat(testbed / "pkg" / "mod.py").st_uid == 1000


# --- bytecode ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("calc/__pycache__/evaluator.cpython-311.pyc", "calc/evaluator.py"),
        ("calc/__pycache__/evaluator.cpython-311.opt-1.pyc", "calc/evaluator.py"),
        ("tests/__pycache__/test_eval.cpython-311-pytest-7.4.0.pyc", "tests/test_eval.py"),
        ("calc/evaluator.pyc", "calc/evaluator.py"),
        ("__pycache__/conftest.cpython-311.pyc", "conftest.py"),
        ("conftest.pyo", "conftest.py"),
        ("calc/evaluator.py", None),
        ("calc/__pycache__", None),
    ],
)
def test_bytecode_stands_for_its_source(path, source):
    assert bytecode_source(path) == source
    assert is_bytecode(path) == (source is not None or path.endswith("__pycache__"))


def test_bytecode_is_test_infrastructure_whatever_the_patterns():
    protection = {"patterns": [], "test_dirs": []}
    for path in ("calc/__pycache__/evaluator.cpython-311.pyc", "calc/x.pyc", "a/__pycache__"):
        assert protected_reason(path, protection) == (
            "compiled bytecode (runs in place of its source)"
        )
    assert protected_reason("calc/evaluator.py", protection) is None
    assert protected_reason("calc/pycache.py", protection) is None


def test_bytecode_of_test_files_written_during_the_run_is_a_change_to_them(tmp_path):
    testbed = tmp_path / "testbed"
    (testbed / "tests").mkdir(parents=True)
    (testbed / "calc").mkdir()
    (testbed / "top_test.py").write_text("def test_x():\n    pass\n")
    program = {
        "testbed": str(testbed),
        "user": {"uid": os.getuid(), "gid": os.getgid(), "name": "u", "home": str(tmp_path)},
        "git_dir": str(tmp_path / "git"),
        "base_commit": "0" * 40,
        "protection": {"patterns": ["conftest.py"], "test_dirs": ["tests"]},
    }
    with open(os.devnull, "wb") as null:
        trial = Trial(program, Stream(null.fileno()))
        before = snapshot(str(testbed))
        test_files = [("top_test.py", "file", 0o644, b"")]
        for path in (
            "tests/__pycache__/test_eval.cpython-311-pytest-7.4.0.pyc",  # a test folder's
            "__pycache__/top_test.cpython-311.pyc",  # a test file's
            "__pycache__/conftest.cpython-311.pyc",  # test infrastructure's
            "calc/__pycache__/evaluator.cpython-311.pyc",  # library code's: not a finding
            "calc/__pycache__/conftest.py",  # a conftest in a __pycache__ folder
        ):
            (testbed / path).parent.mkdir(exist_ok=True)
            (testbed / path).write_bytes(b"\x00")
        found = trial.changed_while_running(test_files, before)
    found = [f for f in found if "a test file:" not in f]  # the test file's content
    assert found == [
        "__pycache__/conftest.cpython-311.pyc (bytecode of conftest.py)",
        "__pycache__/top_test.cpython-311.pyc (bytecode of top_test.py)",
        "calc/__pycache__/conftest.py (test infrastructure)",
        "tests/__pycache__/test_eval.cpython-311-pytest-7.4.0.pyc (bytecode of tests/test_eval.py)",
    ]
