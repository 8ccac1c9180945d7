"""Reading JSON and JSONL files of records, with a location for every record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalrepro.errors import UserError


def read_records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, raw record) pairs; location is ``file:line`` or ``file[index]``."""
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
