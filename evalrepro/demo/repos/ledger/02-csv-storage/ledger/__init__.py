"""A tiny ledger of dated amounts, stored as CSV."""

from ledger.model import Entry, Ledger
from ledger.storage import load, save

__all__ = ["Entry", "Ledger", "load", "save"]
