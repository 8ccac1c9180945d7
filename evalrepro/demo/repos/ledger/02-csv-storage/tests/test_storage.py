import datetime as dt
import tempfile
import unittest
from pathlib import Path

from ledger import Ledger, load, save

D = dt.date


class StorageTest(unittest.TestCase):
    def setUp(self):
        directory = tempfile.TemporaryDirectory()
        self.addCleanup(directory.cleanup)
        self.path = Path(directory.name) / "ledger.csv"

    def write(self, text):
        self.path.write_text(text, encoding="utf-8")

    def test_save_format(self):
        ledger = Ledger()
        ledger.add(D(2024, 1, 1), "10.00", "Salary")
        save(ledger, self.path)
        self.assertEqual(
            self.path.read_text(encoding="utf-8"),
            "date,amount,description\n2024-01-01,10.00,Salary\n",
        )

    def test_roundtrip(self):
        ledger = Ledger()
        ledger.add(D(2024, 1, 1), "12.5", "Books")
        ledger.add(D(2024, 1, 2), "-3.25", "Coffee")
        save(ledger, self.path)
        self.assertEqual(load(self.path).entries, ledger.entries)

    def test_load_skips_blank_lines(self):
        self.write("date,amount,description\n2024-01-02,5,Coffee\n\n")
        self.assertEqual(len(load(self.path).entries), 1)

    def test_missing_header_is_an_error(self):
        self.write("2024-01-02,5,Coffee\n")
        with self.assertRaisesRegex(ValueError, "expected header"):
            load(self.path)


if __name__ == "__main__":
    unittest.main()
