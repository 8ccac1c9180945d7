"""Load and save a ledger as CSV with a ``date,amount,description`` header."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

from ledger.model import Entry, Ledger

HEADER = "date,amount,description"


def load(path: str | Path) -> Ledger:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != HEADER:
        raise ValueError(f"{path}: expected header {HEADER!r}")
    entries = []
    for line in lines[1:]:
        if not line.strip():
            continue
        day, amount, description = line.split(",")
        entries.append(Entry(dt.date.fromisoformat(day), Decimal(float(amount)), description))
    return Ledger(entries)


def save(ledger: Ledger, path: str | Path) -> None:
    rows = [HEADER]
    rows += [f"{e.day.isoformat()},{e.amount},{e.description}" for e in ledger.entries]
    Path(path).write_text("\n".join(rows) + "\n", encoding="utf-8")
