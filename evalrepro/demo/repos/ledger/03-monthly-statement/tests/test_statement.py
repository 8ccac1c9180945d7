import datetime as dt
import unittest
from decimal import Decimal

from ledger import Ledger, month_bounds

D = dt.date


class StatementTest(unittest.TestCase):
    def setUp(self):
        self.ledger = Ledger()
        self.ledger.add(D(2024, 1, 31), "100")
        self.ledger.add(D(2024, 2, 1), "-10")
        self.ledger.add(D(2024, 2, 29), "-5")
        self.ledger.add(D(2024, 3, 1), "-1")

    def test_month_bounds_of_a_leap_february(self):
        self.assertEqual(month_bounds(2024, 2), (D(2024, 2, 1), D(2024, 2, 29)))

    def test_opening_and_closing_balance(self):
        statement = self.ledger.statement(2024, 2)
        self.assertEqual(statement.opening, Decimal("100"))
        self.assertEqual(statement.closing, Decimal("85"))
        self.assertEqual(len(statement.entries), 2)

    def test_month_without_entries(self):
        statement = self.ledger.statement(2024, 4)
        self.assertEqual(statement.entries, ())
        self.assertEqual(statement.closing, Decimal("84"))


if __name__ == "__main__":
    unittest.main()
