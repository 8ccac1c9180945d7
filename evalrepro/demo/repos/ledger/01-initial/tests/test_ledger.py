import datetime as dt
import unittest
from decimal import Decimal

from ledger import Ledger

D = dt.date


class LedgerTest(unittest.TestCase):
    def setUp(self):
        self.ledger = Ledger()
        self.ledger.add(D(2024, 1, 1), "100.00", "opening")
        self.ledger.add(D(2024, 1, 15), "-30.50", "groceries")
        self.ledger.add(D(2024, 2, 1), "-20.25", "phone")

    def test_add_parses_amounts_exactly(self):
        entry = self.ledger.add(D(2024, 3, 1), "0.10")
        self.assertEqual(str(entry.amount), "0.10")

    def test_entries_kept_in_date_order(self):
        self.ledger.add(D(2023, 12, 31), "5")
        self.assertEqual(self.ledger.entries[0].day, D(2023, 12, 31))

    def test_balance_of_all_entries(self):
        self.assertEqual(self.ledger.balance(), Decimal("49.25"))

    def test_balance_excludes_later_entries(self):
        self.assertEqual(self.ledger.balance(until=D(2024, 1, 31)), Decimal("69.50"))

    def test_empty_ledger_balance_is_zero(self):
        self.assertEqual(Ledger().balance(), Decimal(0))


if __name__ == "__main__":
    unittest.main()
