"""Produce the SymPy corpus: SymPy's own test runner really run, verbose.

SWE-bench runs ``bin/test -C --verbose <files>`` in a SymPy checkout: the legacy runner
``sympy.testing.runtests.test`` with the cache off. ``recorders/sympy_recorder.py``
calls that function the same way (``SYMPY_USE_CACHE=no``, ``verbose=True``) on test files
written under ``./sympy/corpus/tests/`` of the workdir, and records what its reporter
is told about each test: that is the ground truth (``<file>::<test>`` -> status).
There is no native SymPy parser; the truth shows what the compatible one misses.

Run ``python -m tests.runners.sympy`` from the repo root to rewrite tests/corpus/sympy/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus
from tests.runners.unittest import runner_env

RUNNER = "sympy"
RECORDERS = Path(__file__).parent / "recorders"
TEST_DIR = "sympy/corpus/tests"


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


ALGEBRA = _source("""
    from sympy import Rational, Symbol, expand
    from sympy.testing.pytest import XFAIL, raises, skip

    x = Symbol("x")


    def test_expand():
        assert expand((x + 1) ** 2) == x**2 + 2 * x + 1


    def test_rational_sum():
        assert Rational(1, 3) + Rational(1, 3) == Rational(1, 2)


    def test_raises_wrong_error():
        raise ValueError("an exception, not an assertion")


    def test_needs_gpu():
        skip("needs a GPU")


    @XFAIL
    def test_known_bug():
        assert Rational(1, 10) * 3 == Rational(3, 11)


    @XFAIL
    def test_fixed_bug():
        assert True


    def test_prints():
        print("expanding...")
        assert expand(x * (x + 1)) == x**2 + x


    def test_raises():
        raises(ZeroDivisionError, lambda: 1 / 0)
    """)

CALCULUS = _source("""
    from sympy import Symbol, diff, sin, cos

    x = Symbol("x")


    def test_derivative():
        assert diff(sin(x), x) == cos(x)


    def test_second_derivative():
        assert diff(sin(x), x, 2) == sin(x)
    """)

LONG_NAMES = _source("""
    def test_short():
        assert True


    def test_a_name_so_long_that_the_verdict_of_the_file_no_longer_fits_on_its_line():
        assert True
    """)

PASSING = _source("""
    from sympy import Symbol, factor

    x = Symbol("x")


    def test_factor():
        assert factor(x**2 - 1) == (x - 1) * (x + 1)


    def test_factor_constant():
        assert factor(4) == 4
    """)


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str]


CASES = (
    Case(
        "mixed",
        {"test_algebra.py": ALGEBRA, "test_calculus.py": CALCULUS, "test_long.py": LONG_NAMES},
    ),
    Case("passing", {"test_factor.py": PASSING}),
)
CASE_NAMES = tuple(case.name for case in CASES)


def _run_case(case: Case, workdir: Path) -> CorpusLog:
    casedir = workdir / case.name
    (casedir / TEST_DIR).mkdir(parents=True)
    for name, source in case.files.items():
        (casedir / TEST_DIR / name).write_text(source, encoding="utf-8")
    shutil.copy(RECORDERS / "sympy_recorder.py", casedir)
    truth_file = casedir / "truth.json"
    paths = [f"{TEST_DIR}/{name}" for name in case.files]
    env = {
        **runner_env(),
        "EVALREPRO_TRUTH": str(truth_file),
        "SYMPY_USE_CACHE": "no",  # bin/test -C
        "PYTHONHASHSEED": "1",  # a fixed seed keeps the runner in this process
    }
    done = subprocess.run(
        [sys.executable, "sympy_recorder.py", *paths],
        cwd=casedir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    return CorpusLog(
        runner=RUNNER,
        case=case.name,
        command=(
            f"SYMPY_USE_CACHE=no PYTHONHASHSEED=1 python sympy_recorder.py {' '.join(paths)}"
            f" 2>&1  # = bin/test -C --verbose {' '.join(paths)}"
        ),
        text=done.stdout.decode("utf-8"),
        truth=json.loads(truth_file.read_text(encoding="utf-8")),
        compat=("sympy",),
        native=None,
    )


def produce(workdir: Path) -> list[CorpusLog]:
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda case: _run_case(case, workdir), CASES))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
