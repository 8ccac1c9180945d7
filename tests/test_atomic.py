"""Atomic writes of several files at once (``evalrepro.atomic.write_all``), on real files.

What is guaranteed:

* every file gets exactly its bytes, replacing what was there, with the mode a plain
  ``open`` would give it (the umask's), and no temporary file stays behind;
* the files are named in the order given: when one cannot be named, those before it are
  there and it and those after it are not (no half-written or temporary file either);
* a file that cannot be written at all stops the whole batch before any is named, with an
  error that names a path of the batch.
"""

from __future__ import annotations

import pytest

from evalrepro import atomic


def _listing(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_every_file_is_written_whole_with_its_mode(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "old.txt").write_bytes(b"old and longer than the new bytes\n")
    files = [
        (tmp_path / "a" / "old.txt", b"new\n"),
        (tmp_path / "b" / "deeper" / "made.bin", bytes(range(256)) * 1000),
        (tmp_path / "a" / "empty", b""),
    ]
    atomic.write_all(files)
    for path, data in files:
        assert path.read_bytes() == data
        # The mode the umask the module read at import gives (0o022 under pytest).
        assert path.stat().st_mode & 0o777 == 0o666 & ~atomic._UMASK
    assert _listing(tmp_path) == ["a", "a/empty", "a/old.txt", "b", "b/deeper", "b/deeper/made.bin"]


def test_files_are_named_in_order_and_none_after_one_that_cannot_be(tmp_path):
    # A folder that is not empty cannot be replaced by a file: the second fails.
    (tmp_path / "second" / "inside").mkdir(parents=True)
    files = [
        (tmp_path / "first", b"1"),
        (tmp_path / "second", b"2"),
        (tmp_path / "third", b"3"),
    ]
    with pytest.raises(OSError):
        atomic.write_all(files)
    assert (tmp_path / "first").read_bytes() == b"1"
    assert (tmp_path / "second").is_dir()
    assert _listing(tmp_path) == ["first", "second", "second/inside"]


def test_a_file_that_cannot_be_written_stops_the_batch_before_any_is_named(tmp_path):
    (tmp_path / "blocker").write_bytes(b"a file where a folder should be")
    files = [(tmp_path / "kept", b"x"), (tmp_path / "blocker" / "inner", b"y")]
    with pytest.raises(OSError) as error:
        atomic.write_all(files)
    assert "blocker" in str(error.value)
    assert _listing(tmp_path) == ["blocker"]


def test_nothing_to_write_writes_nothing(tmp_path):
    atomic.write_all([])
    assert _listing(tmp_path) == []
