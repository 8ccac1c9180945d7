"""Files from elsewhere (another harness's logs folder): read as regular files only, never
through a link, never past a size cap, so that a FIFO, a device or a huge file there
cannot hang or exhaust the reader."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from evalrepro.errors import UserError


class NotRegular(Exception):
    """What :func:`open_regular` found is not a regular file (a FIFO, a device, a folder)."""


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading as a regular file: never through a symbolic link, and
    without blocking on a FIFO. OSError when it cannot be opened; :class:`NotRegular` when
    it is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise NotRegular(path)
    return handle


def read_regular_file(path: Path, limit: int, what: str = "file") -> bytes:
    """``path``'s bytes: a regular file, not a symbolic link, at most ``limit`` bytes."""
    try:
        handle = open_regular(path)
    except OSError as error:
        raise UserError(f"{path}: cannot read the {what} ({error.strerror})") from None
    except NotRegular:
        raise UserError(f"{path}: the {what} is not a regular file") from None
    with handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UserError(f"{path}: the {what} is larger than {limit >> 20} MiB, not read")
    return data
