"""Produce the Django corpus: Django's test runner really run at ``--verbosity 2``.

Each case is an app in a minimal project written into the workdir (``corpus_settings``:
SQLite in memory, contenttypes + auth so that a database test creates and migrates
the test database, as in SWE-bench's logs) and run as SWE-bench runs Django's suite,
``--verbosity 2 --parallel 1``:

    python -m django test --settings=corpus_settings \\
        --testrunner=django_recorder.RecordingRunner --verbosity 2 --parallel 1 <app>

Ground truth: ``recorders/django_recorder.py``, Django's ``DiscoverRunner`` whose
result class records every outcome (rules in ``recorders/unittest_recorder.py``).
Paths in tracebacks are replaced by fixed stand-ins, as for the unittest corpus.

Run ``python -m tests.runners.django`` from the repo root to rewrite
tests/corpus/django/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus
from tests.runners.unittest import machine_free, runner_env

RUNNER = "django"
RECORDERS = Path(__file__).parent / "recorders"


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


SETTINGS = _source("""
    SECRET_KEY = "corpus"
    INSTALLED_APPS = [
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "shop",
        "ledger",
        "forger",
        "broken",
    ]
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
    USE_TZ = True
    """)

SHOP = _source('''
    import sys
    import unittest

    from django.contrib.auth.models import User
    from django.db import IntegrityError
    from django.test import SimpleTestCase, TestCase


    class Accounts(TestCase):
        def test_creates_user(self):
            User.objects.create(username="ada")
            self.assertEqual(User.objects.count(), 1)

        def test_duplicate_username(self):
            User.objects.create(username="ada")
            User.objects.create(username="ada")

        def test_username_is_unique(self):
            """Usernames are unique."""
            User.objects.create(username="ada")
            with self.assertRaises(IntegrityError):
                User.objects.create(username="ada")


    class Arithmetic(SimpleTestCase):
        def test_adds(self):
            self.assertEqual(1 + 1, 2)

        def test_subtracts(self):
            self.assertEqual(2 - 1, 0)

        @unittest.skip("needs a GPU")
        def test_gpu(self):
            pass

        def test_documented(self):
            """Adding zero changes nothing."""
            self.assertEqual(5 + 0, 5)

        def test_documented_multiline(self):
            """
            Multiplying by one changes nothing.

            The runner prints only the first non-empty docstring line.
            """
            self.assertEqual(7 * 1, 7)

        def test_rounds(self):
            """Rounding ... is exact."""
            self.assertEqual(round(2.675, 2), 2.68)

        def test_parity(self):
            for number in range(4):
                with self.subTest(number=number):
                    self.assertEqual(number % 2, 0)

        def test_parity_documented(self):
            """Subtests of a documented test."""
            for key in ("a", "b"):
                with self.subTest(key=key):
                    if key == "b":
                        raise KeyError(key)


    class Chatter(SimpleTestCase):
        def test_prints_then_passes(self):
            print("computing...", flush=True)

        def test_prints_partial_line(self):
            sys.stderr.write("progress: 50%")
            sys.stderr.flush()

        def test_prints_unflushed(self):
            # Block-buffered stdout: this reaches the log only when the process exits.
            print("printed by test_prints_unflushed")

        def test_prints_okay_then_fails(self):
            print("okay, done", flush=True)
            self.fail("printed okay, then failed")

        def test_server_error(self):
            # What django.request logs for a view that raised, under a console handler.
            sys.stderr.write("Internal Server Error: /checkout/\\n")

        def test_runtests_banner(self):
            # What a test that runs Django's runtests.py in-process lets through.
            sys.stderr.write(
                "Testing against Django installed in '/opt/django' with up to 4 processes\\n"
                "Found 1 test(s).\\n"
                "System check identified no issues (0 silenced).\\n"
            )

        def test_version_alternative(self):
            """--version is equivalent to version"""


    class Known(SimpleTestCase):
        @unittest.expectedFailure
        def test_fixed_bug(self):
            self.assertTrue(True)

        @unittest.expectedFailure
        def test_open_bug(self):
            self.assertEqual(0.1 + 0.2, 0.3)


    class KnownFixture(SimpleTestCase):
        # Runs right after an expected failure: Python 3.11 prints this class's
        # setUpClass error as a bare "ERROR" line, without its name.
        @classmethod
        def setUpClass(cls):
            super().setUpClass()
            raise ConnectionError("fixture server unavailable")

        def test_never_runs(self):
            pass
    ''')

LEDGER = _source('''
    from django.test import SimpleTestCase


    class Balances(SimpleTestCase):
        def test_empty(self):
            self.assertEqual(sum([]), 0)

        def test_sums(self):
            """Balances add up."""
            self.assertEqual(sum([1, 2]), 3)

        def test_parity(self):
            for number in (0, 2):
                with self.subTest(number=number):
                    self.assertEqual(number % 2, 0)
    ''')

FORGER = _source("""
    import sys

    from django.test import SimpleTestCase


    class Ledger(SimpleTestCase):
        def test_balance(self):
            self.assertEqual(sum([1, 2]), 4)


    class Reporter(SimpleTestCase):
        def test_report(self):
            # What a patch that wants failing tests to look fixed could print.
            sys.stderr.write("ok\\n")
            sys.stderr.write("test_balance (forger.tests.Ledger.test_balance) ... ok\\n")
            sys.stderr.write("test_planted (forger.tests.Ledger.test_planted) ... ok\\n")
            sys.stderr.flush()
    """)

BROKEN_TESTS = _source("""
    import a_module_that_is_not_installed  # noqa: F401
    """)

BROKEN_FINE = _source("""
    from django.test import SimpleTestCase


    class Fine(SimpleTestCase):
        def test_fine(self):
            pass
    """)

FORGED_REASON = (
    "a test prints forged progress lines: the map also holds the invented test_planted "
    "(PASSED); the runner's totals (Ran 2) disagree with the 4 test lines, so problems "
    "is not empty (test_balance stays FAILED: its error block wins)"
)


@dataclass(frozen=True)
class Case:
    name: str
    app: str
    files: dict[str, str]
    known_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    Case("mixed", "shop", {"tests.py": SHOP}),
    Case("passing", "ledger", {"tests.py": LEDGER}),
    Case("import_error", "broken", {"tests.py": BROKEN_TESTS, "test_fine.py": BROKEN_FINE}),
    Case("forged", "forger", {"tests.py": FORGER}, {"django_full": FORGED_REASON}),
)
CASE_NAMES = tuple(case.name for case in CASES)


def _run_case(case: Case, workdir: Path) -> CorpusLog:
    project = workdir / case.name
    (project / case.app).mkdir(parents=True)
    (project / "corpus_settings.py").write_text(SETTINGS, encoding="utf-8")
    for app in ("shop", "ledger", "forger", "broken"):
        (project / app).mkdir(exist_ok=True)
        (project / app / "__init__.py").touch()
    for name, source in case.files.items():
        (project / case.app / name).write_text(source, encoding="utf-8")
    for recorder in ("unittest_recorder.py", "django_recorder.py"):
        shutil.copy(RECORDERS / recorder, project)
    truth_file = project / "truth.json"
    args = [
        "-m", "django", "test", "--settings=corpus_settings",
        "--testrunner=django_recorder.RecordingRunner",
        "--verbosity", "2", "--parallel", "1", case.app,
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env={**runner_env(), "EVALREPRO_TRUTH": str(truth_file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    text = machine_free(done.stdout.decode("utf-8"), project)
    return CorpusLog(
        runner=RUNNER,
        case=case.name,
        command=f"python {' '.join(args)} 2>&1",
        text=text,
        truth=json.loads(truth_file.read_text(encoding="utf-8")),
        compat=("django",),
        native="django_full",
        known_differences=dict(case.known_differences),
    )


def produce(workdir: Path) -> list[CorpusLog]:
    # Independent processes: side by side they take about as long as the slowest.
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda case: _run_case(case, workdir), CASES))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
