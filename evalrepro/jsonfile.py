"""Reading files of records (JSON, JSONL, Parquet), with a location for every record.

Parquet is the format SWE-bench's datasets are published in (a Hugging Face dataset's
``data/*.parquet``); it needs ``pyarrow`` (``pip install 'evalrepro[parquet]'``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalrepro.errors import UserError


def read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, raw record) pairs; location is ``file:line`` or ``file[index]``."""
    if path.suffix == ".parquet":
        yield from _parquet_records(path)
        return
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read ({error})") from None
    stripped = text.lstrip()
    if path.suffix == ".jsonl" or (stripped and stripped[0] not in "[{"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield f"{path}:{number}", json.loads(line)
            except json.JSONDecodeError as error:
                raise UserError(f"{path}:{number}: invalid JSON ({error.msg})") from None
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    if isinstance(data, dict):
        yield str(path), data
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield f"{path}[{index}]", item
    else:
        raise UserError(f"{path}: expected a JSON list or object, got {type(data).__name__}")


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
