"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Every file is written to a temporary name beside it, synced to the disk, then renamed:
once it has its name it is whole and durable. :func:`write_all` does that for several
files at once: their syncs run together (the disk commits concurrent fsyncs in one
journal commit), then the files are named in the order given.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

# mkstemp creates files 0600; a plain open() would honour the umask. Read it once, at
# import (os.umask can only be read by setting it, which is not thread-safe later).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.filename is None:  # a failed write names no file: name the one we wrote
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@cache
def _syncers() -> ThreadPoolExecutor:
    """The threads that sync the files of :func:`write_all` (fsync releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor  # here: most commands write alone

    return ThreadPoolExecutor(8, thread_name_prefix="evalrepro-fsync")


# A forked child (an executor's worker) has none of its parent's threads.
os.register_at_fork(after_in_child=_syncers.cache_clear)


@dataclass
class _Staged:
    """A file of :func:`write_all` on its way: its temporary name until it is renamed,
    its descriptor until it is closed."""

    path: Path
    tmp: str | None
    fd: int | None


def write_all(files: Sequence[tuple[Path, bytes]]) -> None:
    """Each ``(path, data)`` written as :func:`write_bytes` writes it (a temporary name,
    synced, then renamed), their syncs at once, then renamed in the order given: a
    file named later (a record naming the others) appears after those before it, and
    every file is durable before it is named. On a failure no file not yet named
    appears, and the error names the first of them."""
    staged: list[_Staged] = []
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append(_Staged(path, tmp, fd))
            os.fchmod(fd, 0o666 & ~_UMASK)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        if len(staged) == 1:
            os.fsync(fd)
        elif staged:
            for synced in [_syncers().submit(os.fsync, s.fd) for s in staged]:
                synced.result()
        for entry in staged:
            fd, entry.fd = entry.fd, None
            os.close(fd)
        for entry in staged:
            os.replace(entry.tmp, entry.path)
            entry.tmp = None
    except BaseException as error:
        for entry in staged:
            if entry.fd is not None:
                os.close(entry.fd)
            if entry.tmp is not None:
                Path(entry.tmp).unlink(missing_ok=True)
        if isinstance(error, OSError) and error.filename is None:
            # A failed write or sync names no file: name the first not written.
            first = next((e.path for e in staged if e.tmp is not None), None)
            if first is not None:
                raise OSError(error.errno, error.strerror, str(first)) from error
        raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


@contextmanager
def writer(path: Path) -> Iterator[BinaryIO]:
    """A handle to write ``path`` in a stream: it appears whole when the block ends,
    or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
