"""Reading files of records (JSON, JSONL, Parquet), with a location for every record.

Parquet is the format SWE-bench's datasets are published in (a Hugging Face dataset's
``data/*.parquet``); it needs ``pyarrow`` (``pip install 'evalrepro[parquet]'``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalrepro.errors import UserError

#: The deepest nesting of arrays and objects an input may have: records are a few levels
#: deep; a deeper one is refused in one line (200,000 nested arrays would otherwise be a
#: RecursionError from the parser, or from whatever walks the value later).
MAX_DEPTH = 100
#: The largest file of records read (a dataset, a predictions file): SWE-bench's full
#: test split is well under 1 GiB as JSON.
MAX_FILE_BYTES = 4 << 30


def loads(text: str | bytes, where: str) -> Any:
    """One JSON value, or one UserError line naming ``where`` (invalid, or nested deeper
    than :data:`MAX_DEPTH`)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{where}: invalid JSON ({error.msg})") from None
    except RecursionError:
        raise UserError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels") from None
    if _depth(value) > MAX_DEPTH:
        raise UserError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _depth(value: Any) -> int:
    """How deeply ``value`` nests arrays and objects (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, raw record) pairs; location is ``file:line`` or ``file[index]``. A JSONL
    file is read a line at a time, so a huge one is not held whole."""
    if path.suffix == ".parquet":
        yield from _parquet_records(path)
        return
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise UserError(
                f"{path}: {size >> 20} MiB, larger than {MAX_FILE_BYTES >> 20} MiB: not read"
            )
        head = handle.read(4096).lstrip()
        handle.seek(0)
        if path.suffix == ".jsonl" or (head and head[:1] not in b"[{"):
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                yield where, loads(_text(line, where), where)
            return
        data = _whole(path, handle.read())
    if isinstance(data, dict):
        yield str(path), data
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield f"{path}[{index}]", item
    else:
        raise UserError(f"{path}: expected a JSON list or object, got {type(data).__name__}")


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{where}: cannot read ({error})") from None


def _whole(path: Path, data: bytes) -> Any:
    try:
        value = json.loads(_text(data, str(path)))
    except json.JSONDecodeError as error:
        raise UserError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    except RecursionError:
        raise UserError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels") from None
    if _depth(value) > MAX_DEPTH:
        raise UserError(f"{path}: JSON nested deeper than {MAX_DEPTH} levels")
    return value


def _parquet_records(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise UserError(
            f"{path}: reading Parquet needs pyarrow: pip install 'evalrepro[parquet]'"
        ) from None
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        table = parquet.read_table(path)
    except Exception as error:  # pyarrow's own errors: a corrupt or foreign file
        raise UserError(f"{path}: not a readable Parquet file ({error})") from None
    for index, row in enumerate(table.to_pylist()):
        yield f"{path}[row {index}]", row
