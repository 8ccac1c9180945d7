"""Produce the unittest corpus: ``python -m unittest`` really run, verbose and quiet.

Each suite is run twice: with ``-v`` (read by the native ``unittest`` parser, and by the
compat ``django`` parser, since Django's runner prints the same lines) and at the
default verbosity, which names only failures (read by ``unittest_failures``).

Ground truth is the runner's own result object: ``recorders/unittest_recorder.py`` is
``python -m unittest`` with a ``TextTestResult`` subclass that records every outcome
(rules in its docstring). The temp workdir, site-packages and stdlib paths in tracebacks
are replaced by fixed stand-ins (``/corpus``...), so the committed logs do not depend on
the machine.

Run ``python -m tests.runners.unittest`` from the repo root to rewrite
tests/corpus/unittest/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus

RUNNER = "unittest"
RECORDERS = Path(__file__).parent / "recorders"
WORKDIR_STAND_IN = "/corpus"


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


PASSING = _source('''
    import unittest


    class Arithmetic(unittest.TestCase):
        def test_adds(self):
            self.assertEqual(1 + 1, 2)

        def test_multiplies(self):
            """Multiplying by one changes nothing."""
            self.assertEqual(7 * 1, 7)

        def test_parity(self):
            for number in (0, 2, 4):
                with self.subTest(number=number):
                    self.assertEqual(number % 2, 0)


    class Strings(unittest.TestCase):
        def test_upper(self):
            """
            Upper-casing ASCII.

            The runner prints only the first non-empty docstring line.
            """
            self.assertEqual("abc".upper(), "ABC")
    ''')

MIXED = _source('''
    import sys
    import unittest


    class Arithmetic(unittest.TestCase):
        def test_adds(self):
            self.assertEqual(1 + 1, 2)

        def test_subtracts(self):
            self.assertEqual(2 - 1, 0)

        def test_divides(self):
            self.assertEqual(1 / 0, 0)

        @unittest.skip("needs a GPU")
        def test_gpu(self):
            pass

        @unittest.skipIf(True, "the platform's clock is coarse")
        def test_clock(self):
            pass

        def test_rounds(self):
            """Rounding ... is exact."""
            self.assertEqual(round(2.675, 2), 2.68)

        def test_documented(self):
            """Adding zero changes nothing."""
            self.assertEqual(5 + 0, 5)


    class Chatter(unittest.TestCase):
        def test_prints_then_passes(self):
            print("computing...", flush=True)

        def test_prints_partial_line(self):
            sys.stderr.write("progress: 50%")
            sys.stderr.flush()

        def test_prints_verdict_word_then_fails(self):
            print("ok", flush=True)
            self.fail("printed ok, then failed")

        def test_prints_okay_then_fails(self):
            print("okay, done", flush=True)
            self.fail("printed okay, then failed")


    class Known(unittest.TestCase):
        @unittest.expectedFailure
        def test_fixed_bug(self):
            self.assertTrue(True)

        @unittest.expectedFailure
        def test_open_bug(self):
            self.assertEqual(0.1 + 0.2, 0.3)


    class KnownFixture(unittest.TestCase):
        # Runs right after an expected failure: Python 3.11 prints this class's
        # setUpClass error as a bare "ERROR" line, without its name.
        @classmethod
        def setUpClass(cls):
            raise ConnectionError("fixture server unavailable")

        def test_never_runs(self):
            pass
    ''')

SUBTESTS = _source('''
    import unittest


    class Parity(unittest.TestCase):
        def test_even(self):
            for number in range(5):
                with self.subTest(number=number):
                    self.assertEqual(number % 2, 0)

        def test_documented(self):
            """Subtests of a documented test."""
            for key in ("a", "b"):
                with self.subTest(key=key):
                    if key == "b":
                        raise KeyError(key)

        def test_message_and_params(self):
            with self.subTest("lookup", table="users", row=3):
                self.assertIn(3, [1, 2])
            with self.subTest():
                self.fail("no parameters")

        def test_all_pass(self):
            for number in (2, 4):
                with self.subTest(number=number):
                    self.assertEqual(number % 2, 0)

        def test_fails_after_subtests(self):
            with self.subTest(step=1):
                self.assertEqual(1, 2)
            raise RuntimeError("after the subtests")
    ''')

FIXTURES = _source("""
    import unittest


    class BrokenSetup(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise RuntimeError("no database")

        def test_reads(self):
            pass

        def test_writes(self):
            pass


    class BrokenTeardown(unittest.TestCase):
        @classmethod
        def tearDownClass(cls):
            raise RuntimeError("cannot clean up")

        def test_runs(self):
            pass


    class SkippedSetup(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise unittest.SkipTest("service not configured")

        def test_service(self):
            pass


    class Healthy(unittest.TestCase):
        def test_ok(self):
            pass
    """)

MODULE_FIXTURE = _source("""
    import unittest


    def setUpModule():
        raise OSError("module resource missing")


    class NeedsModule(unittest.TestCase):
        def test_uses_module(self):
            pass
    """)

IMPORTABLE = _source("""
    import unittest


    class Fine(unittest.TestCase):
        def test_fine(self):
            pass
    """)

BROKEN_IMPORT = _source("""
    import unittest

    import a_module_that_is_not_installed  # noqa: F401


    class Never(unittest.TestCase):
        def test_never(self):
            pass
    """)

FORGED = _source("""
    import sys
    import unittest


    class Ledger(unittest.TestCase):
        def test_balance(self):
            self.assertEqual(sum([1, 2]), 4)


    class Reporter(unittest.TestCase):
        def test_report(self):
            # What a patch that wants failing tests to look fixed could print.
            sys.stderr.write("ok\\n")
            sys.stderr.write("test_balance (test_forged.Ledger.test_balance) ... ok\\n")
            sys.stderr.write("test_planted (test_forged.Ledger.test_planted) ... ok\\n")
            sys.stderr.flush()
    """)

FORGED_REASON = (
    "a test prints forged progress lines: the map also holds the invented test_planted "
    "(PASSED); the runner's totals (Ran 2) disagree with the 4 test lines, so problems "
    "is not empty (test_balance stays FAILED: its error block wins)"
)


@dataclass(frozen=True)
class Suite:
    name: str
    files: dict[str, str]
    #: Names passed to unittest (modules, in order).
    names: tuple[str, ...]
    quiet: bool = True  # also run at verbosity 1
    known_differences: dict[str, str] = field(default_factory=dict)


SUITES = (
    Suite("passing", {"test_passing.py": PASSING}, ("test_passing",)),
    Suite("mixed", {"test_mixed.py": MIXED}, ("test_mixed",)),
    Suite("subtests", {"test_subtests.py": SUBTESTS}, ("test_subtests",)),
    Suite(
        "fixture_errors",
        {"test_fixtures.py": FIXTURES, "test_module_fixture.py": MODULE_FIXTURE},
        ("test_fixtures", "test_module_fixture"),
    ),
    Suite(
        "import_error",
        {"test_importable.py": IMPORTABLE, "test_broken_import.py": BROKEN_IMPORT},
        ("test_importable", "test_broken_import"),
    ),
    Suite(
        "forged",
        {"test_forged.py": FORGED},
        ("test_forged",),
        quiet=False,
        known_differences={"unittest": FORGED_REASON},
    ),
)


def runner_env() -> dict[str, str]:
    """The environment for a runner: ours, minus what would change its output.

    Unbuffered stdout (``PYTHONUNBUFFERED``, set in some CI images) would move what tests
    print without flushing; warnings options would add lines.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONUNBUFFERED", "PYTHONWARNINGS", "PYTHONDEVMODE"}
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def machine_free(text: str, workdir: Path) -> str:
    """``text`` with the workdir, site-packages and stdlib paths of tracebacks replaced by
    fixed stand-ins, so that committed logs do not depend on the machine."""
    paths = sysconfig.get_paths()
    stand_ins = {
        str(workdir.resolve()): WORKDIR_STAND_IN,
        str(workdir): WORKDIR_STAND_IN,
        paths["purelib"]: "/python/site-packages",
        paths["stdlib"]: "/python/lib",
    }
    for path, stand_in in stand_ins.items():
        text = text.replace(path, stand_in)
    return text


def _run_case(suite: Suite, verbose: bool, workdir: Path) -> CorpusLog:
    case = f"{suite.name}_{'verbose' if verbose else 'quiet'}"
    casedir = workdir / case
    casedir.mkdir(parents=True)
    for name, source in suite.files.items():
        (casedir / name).write_text(source, encoding="utf-8")
    shutil.copy(RECORDERS / "unittest_recorder.py", casedir)
    truth_file = casedir / "truth.json"
    args = ["unittest_recorder.py", *(["-v"] if verbose else []), *suite.names]
    done = subprocess.run(
        [sys.executable, *args],
        cwd=casedir,
        env={**runner_env(), "EVALREPRO_TRUTH": str(truth_file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    text = machine_free(done.stdout.decode("utf-8"), casedir)
    return CorpusLog(
        runner=RUNNER,
        case=case,
        command=f"python {' '.join(args)} 2>&1  # = python -m unittest {' '.join(args[1:])}",
        text=text,
        truth=json.loads(truth_file.read_text(encoding="utf-8")),
        compat=("django",) if verbose else (),
        native="unittest" if verbose else "unittest_failures",
        known_differences=dict(suite.known_differences) if verbose else {},
    )


CASES = tuple(
    (suite, verbose) for suite in SUITES for verbose in ((True, False) if suite.quiet else (True,))
)
CASE_NAMES = tuple(f"{s.name}_{'verbose' if v else 'quiet'}" for s, v in CASES)


def produce(workdir: Path) -> list[CorpusLog]:
    # Independent processes: side by side they take a fraction of a second.
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda case: _run_case(*case, workdir), CASES))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
