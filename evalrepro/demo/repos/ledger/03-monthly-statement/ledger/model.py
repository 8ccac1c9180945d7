"""Ledger entries, balances and monthly statements."""

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


@dataclass(frozen=True)
class Statement:
    first: dt.date
    last: dt.date
    opening: Decimal
    entries: tuple[Entry, ...]

    @property
    def closing(self) -> Decimal:
        return self.opening + sum((e.amount for e in self.entries), Decimal(0))


def month_bounds(year: int, month: int) -> tuple[dt.date, dt.date]:
    """The first and the last day of a month."""
    first = dt.date(year, month, 1)
    last = dt.date(year, month + 1, 1) - dt.timedelta(days=1)
    return first, last


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

    def statement(self, year: int, month: int) -> Statement:
        """The entries of one month, with the balance before and after them."""
        first, last = month_bounds(year, month)
        opening = sum((e.amount for e in self.entries if e.day < first), Decimal(0))
        inside = tuple(e for e in self.entries if first <= e.day <= last)
        return Statement(first, last, opening, inside)
