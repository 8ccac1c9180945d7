"""Files from elsewhere (another harness's logs folder): read as regular files only, never
through a link, never past a size cap, so that a FIFO, a device or a huge file there
cannot hang or exhaust the reader."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from evalrepro.errors import UserError


def read_regular_file(path: Path, limit: int, what: str = "file") -> bytes:
    """``path``'s bytes: a regular file, not a symbolic link, at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise UserError(f"{path}: cannot read the {what} ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UserError(f"{path}: the {what} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UserError(f"{path}: the {what} is larger than {limit >> 20} MiB, not read")
    return data
