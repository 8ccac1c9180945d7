"""What twins cost the host: drawing a trial's canaries with and without them.

With them: the twins and the canaries shaped like the run's tests; without: the canaries
appended to one file (what ``draw_canaries`` falls back to).

    .venv/bin/python benchmarks/twins.py [--repeat 20]

Per trial the host draws the canaries once (``draw_canaries``, in ``TrialJob``); twins
add parsing the test patch's hunks and transforming the tests they show. Timed over the
demo's 12 instances, and over a synthetic test patch that adds one file of 1,000 tests
(100 of them FAIL_TO_PASS), the size of a large SWE-bench test patch and beyond. The
supervisor's part (inserting the twins' text after the lines it checks by hash) is a
few microseconds per twin. Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

from evalrepro import PACKAGE_DIR
from evalrepro.config.protection import TestProtection
from evalrepro.grade import canary
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.plan import testspec
from evalrepro.plan.outside import find_outside, outside_bytes, store_of
from evalrepro.sample import load_samples
from evalrepro.sources.demo_repos import build_repo


def spec_of(sample, parser: str):
    command = "pytest -rA" if parser == "pytest_full" else "python -m unittest -v"
    repo = testspec.RepoSpec(test_cmd=command, parser=parser, test_directives="test_patch")
    return testspec.compile_test_spec(
        sample, repo, parser=parser, fail_only=False, protection=TestProtection()
    )


def synthetic(sample, tests: int, failing: int):
    lines = ["import pytest\n", "\n", "from calc import evaluate\n"]
    for index in range(tests):
        lines += ["\n", "\n", f"def test_case_number_{index}():\n"]
        lines += [f'    assert evaluate("{index} + 1") == {index + 1}.0\n']
    patch = (
        "diff --git a/tests/test_big.py b/tests/test_big.py\nnew file mode 100644\n"
        "index 0000000..1111111\n--- /dev/null\n+++ b/tests/test_big.py\n"
        f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}" for line in lines)
    )
    names = [f"tests/test_big.py::test_case_number_{i}" for i in range(tests)]
    return sample.model_copy(
        update={
            "test_patch": patch,
            "fail_to_pass": names[:failing],
            "pass_to_pass": names[failing:],
        }
    )


def median_ms(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    samples = load_samples(PACKAGE_DIR / "demo" / "instances.jsonl")
    cases = []
    for sample in samples:
        name = "unittest" if "ledger" in sample.instance_id else "pytest_full"
        cases.append((sample.instance_id, sample, name))
    big = synthetic(samples[0], 1000, 100)
    cases.append(("synthetic: 1,000 tests, 100 FAIL_TO_PASS", big, "pytest_full"))
    print(f"{'instance':44} {'appended':>10} {'twins':>10} {'twins made':>10} {'shaped':>7}")
    for label, sample, name in cases:
        spec = spec_of(sample, name)
        runner = get_parser(name)

        def draw(sample=sample, spec=spec, runner=runner) -> list:
            return canary.draw_canaries(spec, runner, sample, random.Random(1))

        with_twins = median_ms(draw, args.repeat)
        made = sum(1 for c in draw() if c.twin_of)
        shaped = sum(1 for c in draw() if c.beside)
        # Without twins and shaped canaries: the appended canaries alone (round two's).
        with mock.patch.object(canary, "make_canaries", lambda *a, **k: ([], [])):
            without = median_ms(draw, args.repeat)
        print(f"{label:44} {without:8.2f}ms {with_twins:8.2f}ms {made:10} {shaped:7}")
    outside(samples[0], args.repeat)


def outside(sample, repeat: int) -> None:
    """Test files the command runs outside the test patch (``evalrepro.plan.outside``):
    finding them at plan time, and drawing a trial's canaries with and without them."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        build_repo("calc", root / "calc")
        names = ["test_numbers_and_operators", "test_positions"]
        sample = sample.model_copy(
            update={
                "pass_to_pass": sample.pass_to_pass
                + [f"tests/test_tokenizer.py::{n}" for n in names]
            }
        )
        repo = testspec.RepoSpec(
            test_cmd="pytest -rA", parser="pytest_full", test_directives=["tests"]
        )
        spec = testspec.compile_test_spec(
            sample, repo, parser="pytest_full", fail_only=False, protection=TestProtection()
        )
        store = store_of(root / "cache")
        found = median_ms(lambda: find_outside(root / "calc" / ".git", spec, store), repeat)
        kept, _ = find_outside(root / "calc" / ".git", spec, store)
        spec = spec.model_copy(update={"outside_files": kept})
        data = outside_bytes(spec, store)
        runner = get_parser("pytest_full")
        # A large file outside the test patch: 1,000 PASS_TO_PASS tests.
        lines = ["from calc import evaluate\n"]
        for index in range(1000):
            lines += ["\n", "\n", f"def test_case_number_{index}():\n"]
            lines += [f'    assert evaluate("{index} + 1") == {index + 1}.0\n']
        big = {"tests/test_big.py": "".join(lines).encode()}
        big_sample = sample.model_copy(
            update={
                "pass_to_pass": sample.pass_to_pass
                + [f"tests/test_big.py::test_case_number_{i}" for i in range(1000)]
            }
        )
        print()
        print(f"outside files of demo__calc-1 (directive tests): found in {found:.2f}ms")
        print(f"{'draw':44} {'without':>10} {'with':>10} {'in them':>10}")
        for label, case, extra in (
            ("demo__calc-1 + tests/test_tokenizer.py", sample, data),
            ("demo__calc-1 + a file of 1,000 tests", big_sample, big),
        ):

            def draw(case=case, extra=extra, spec=spec) -> list:
                return canary.draw_canaries(spec, runner, case, random.Random(1), outside=extra)

            with_them = median_ms(draw, repeat)
            placed = sum(1 for c in draw() if c.file in extra)
            without = median_ms(
                lambda case=case, spec=spec: canary.draw_canaries(
                    spec, runner, case, random.Random(1)
                ),
                repeat,
            )
            print(f"{label:44} {without:8.2f}ms {with_them:8.2f}ms {placed:10}")


if __name__ == "__main__":
    main()
