"""Ledger entries and balances."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Entry:
    day: dt.date
    amount: Decimal
    description: str = ""


class Ledger:
    """Entries kept in date order (entries of one day in the order they were added)."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries: list[Entry] = sorted(entries, key=lambda entry: entry.day)

    def add(self, day: dt.date, amount: str | Decimal, description: str = "") -> Entry:
        """Record an amount; strings are parsed exactly, never through float."""
        entry = Entry(day, Decimal(amount), description)
        self.entries.append(entry)
        self.entries.sort(key=lambda entry: entry.day)
        return entry

    def balance(self, until: dt.date | None = None) -> Decimal:
        """Sum of the entries dated on or before ``until`` (of all entries if None)."""
        return sum(
            (e.amount for e in self.entries if until is None or e.day < until),
            Decimal(0),
        )
