"""A tiny ledger of dated amounts, stored as CSV."""

from ledger.model import Entry, Ledger, Statement, month_bounds
from ledger.storage import load, save

__all__ = ["Entry", "Ledger", "Statement", "load", "month_bounds", "save"]
