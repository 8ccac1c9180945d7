"""A tiny ledger of dated amounts."""

from ledger.model import Entry, Ledger

__all__ = ["Entry", "Ledger"]
