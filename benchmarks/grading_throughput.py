"""Grading without containers: one big log in-process, and ``regrade`` of a SWE-bench-sized
logs tree in one process.

    .venv/bin/python benchmarks/grading_throughput.py [--logs 2294] [--big-tests 2030]
        [--repeat 5] [--regrade-repeat 3] [--keep DIR]

Synthetic logs, written to a temporary folder (or ``--keep DIR``), as swebench 5.0.2's
harness leaves them: the ``set -x`` trace of the eval script around ``pytest -rA -v``'s
output (per-test progress lines, a failure section per failed test, the short test
summary), between the ``>>>>> Start/End Test Output`` markers. Test ids are what real
suites print, parametrized ids with brackets, paths and dashes included. Instances are in
SWE-bench repos graded by the ``pytest`` and ``pytest_v2`` parsers; about a quarter have a
FAIL_TO_PASS test that still fails (unresolved), and each folder has a ``patch.diff``.

1. One log of ``--big-tests`` tests: ``observe`` + ``score`` in-process (median of
   ``--repeat``), against one ``evalrepro grade`` process of the same log.
2. ``regrade`` (``evalrepro/regrade.py``: one process grades every log, writes every
   trial's records and the run's aggregate) of ``--logs`` logs whose sizes follow a
   seeded mix (most 20-300 tests, some up to 2,500): in-process, then as one
   ``evalrepro regrade`` command, ``--regrade-repeat`` times each (median and best: a
   shared disk's fsyncs vary a lot). Of it: SWE-bench's layout alone, and the run
   report's SWE-bench fields (``report._swebench_fields``).

``PYTHONPATH=DIR`` runs the code of another checkout (for a before/after table).

Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import get_parser
from evalrepro.grade.score import score
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.regrade import regrade
from evalrepro.report.run_report import _swebench_fields
from evalrepro.run.rundir import RunDirectory
from evalrepro.sample import Sample

EVALREPRO = str(Path(sys.executable).parent / "evalrepro")
REPOS = {
    "pytest-dev/pytest": "testing/python",
    "pydata/xarray": "xarray/tests",
    "sphinx-doc/sphinx": "tests",
    "scikit-learn/scikit-learn": "sklearn/tests",
    "pylint-dev/astroid": "tests/unittest",
}
BASE = "0123456789abcdef0123456789abcdef01234567"
PATCH = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1 +1 @@\n-a\n+b\n"


def test_ids(rng: random.Random, directory: str, n: int) -> list[str]:
    """n distinct pytest node ids: plain, parametrized (brackets, paths, dashes), classes."""
    ids: list[str] = []
    module = 0
    while len(ids) < n:
        module += 1
        path = f"{directory}/test_mod{module:03d}.py"
        for t in range(rng.randint(5, 60)):
            kind = rng.random()
            if kind < 0.5:
                ids.append(f"{path}::test_case_{t}")
            elif kind < 0.7:
                ids.append(f"{path}::TestThing::test_method_{t}")
            elif kind < 0.85:
                ids.extend(f"{path}::test_param_{t}[{v}-{v * 2}]" for v in range(rng.randint(2, 8)))
            else:
                ids.extend(
                    f"{path}::test_path_{t}[/tmp/pytest-of-root/{v}/data-{v}.txt]"
                    for v in range(rng.randint(2, 5))
                )
    return ids[:n]


def eval_log(tests: list[str], failed: set[str]) -> str:
    """A swebench 5.0.2 test_output.txt of ``pytest -rA -v`` over ``tests``."""
    lines = [
        "+ source /opt/miniconda3/bin/activate",
        "+ conda activate testbed",
        "+ cd /testbed",
        "+ git status",
        "On branch main",
        f"+ git -c core.fileMode=false diff {BASE}",
        *PATCH.splitlines(),
        f"+ git checkout {BASE} {tests[0].split('::')[0]}",
        "Updated 0 paths from 8e3df54",
        "+ git apply -v -",
        "+ : '>>>>> Start Test Output'",
        "+ pytest -rA -v -p no:cacheprovider",
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.2, pytest-8.3.4, pluggy-1.5.0 -- /opt/python/bin/python",
        "rootdir: /testbed",
        f"collecting ... collected {len(tests)} items",
        "",
    ]
    for i, test in enumerate(tests, 1):
        status = "FAILED" if test in failed else "PASSED"
        lines.append(f"{test} {status}".ljust(73) + f" [{100 * i // len(tests):3d}%]")
    if failed:
        lines += ["", "=" * 35 + " FAILURES " + "=" * 35]
        for test in sorted(failed):
            name = test.split("::")[-1]
            lines += [
                f"{'_' * 20} {name} {'_' * 20}",
                "",
                "    def test():",
                ">       assert compute(2) == 5, 'expected 5 - got something else'",
                "E       AssertionError: expected 5 - got something else",
                "E       assert 4 == 5",
                "",
                f"{test.split('::')[0]}:14: AssertionError",
            ]
    lines.append("=" * 36 + " PASSES " + "=" * 36)
    lines.append("=" * 27 + " short test summary info " + "=" * 28)
    lines += [f"PASSED {t}" for t in tests if t not in failed]
    lines += [f"FAILED {t} - AssertionError: expected 5 - got so..." for t in tests if t in failed]
    passed = len(tests) - len(failed)
    lines += [
        f"{'=' * 20} {len(failed)} failed, {passed} passed in 12.34s {'=' * 20}",
        "+ SWEBENCH_TEST_EXIT_CODE=" + ("1" if failed else "0"),
        "+ : '>>>>> End Test Output'",
        f"+ git checkout {BASE} {tests[0].split('::')[0]}",
        "Updated 1 path from 8e3df54",
    ]
    return "\n".join(lines) + "\n"


def instance(rng: random.Random, number: int, n_tests: int) -> tuple[dict, str]:
    """(the dataset row, its log) of one synthetic instance."""
    repo = list(REPOS)[number % len(REPOS)]
    tests = test_ids(rng, REPOS[repo], n_tests)
    f2p = rng.sample(tests, min(len(tests), rng.randint(1, 4)))
    p2p = [t for t in tests if t not in set(f2p)]
    failed = {f2p[0]} if rng.random() < 0.25 else set()
    row = {
        "instance_id": f"{repo.split('/')[1]}__{repo.split('/')[1]}-{number}",
        "repo": repo,
        "base_commit": BASE,
        "version": "1.0",
        "patch": PATCH,
        "test_patch": "",
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
    }
    return row, eval_log(tests, failed)


def size_mix(rng: random.Random) -> int:
    draw = rng.random()
    if draw < 0.80:
        return rng.randint(20, 300)
    if draw < 0.95:
        return rng.randint(300, 1000)
    return rng.randint(1000, 2500)


def write_tree(root: Path, n_logs: int) -> tuple[Path, Path, int]:
    """(logs dir, dataset file, total tests) of n_logs synthetic instances."""
    rng = random.Random(0)
    logs = root / "logs" / "run_evaluation" / "synthetic" / "org__model"
    rows, total = [], 0
    for number in range(n_logs):
        n_tests = size_mix(rng)
        row, log = instance(rng, number, n_tests)
        folder = logs / row["instance_id"]
        folder.mkdir(parents=True)
        (folder / "test_output.txt").write_text(log)
        (folder / "patch.diff").write_text(PATCH)
        rows.append(row)
        total += n_tests
    dataset = root / "instances.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return logs, dataset, total


def median_time(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=2294)
    parser.add_argument("--big-tests", type=int, default=2030)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--regrade-repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the logs and runs here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)

        row, log = instance(random.Random(1), 0, args.big_tests)
        sample = Sample.model_validate(row)
        pytest_parser = get_parser("pytest")
        in_process = median_time(lambda: score(observe(log, sample, pytest_parser)), args.repeat)
        observation = observe(log, sample, pytest_parser)
        big = root / "big"
        big.mkdir(exist_ok=True)
        (big / "instance.json").write_text(json.dumps(row))
        (big / "test_output.txt").write_text(log)
        grade = [EVALREPRO, "grade", "--instance", str(big / "instance.json")]
        grade += ["--log", str(big / "test_output.txt"), "--json"]
        one_process = median_time(
            lambda: subprocess.run(grade, check=True, capture_output=True), args.repeat
        )
        print(
            f"one log of {len(observation.status_map)} tests "
            f"({len(log.encode()) / 1024:.0f} KiB, {score(observation).outcome}): "
            f"observe + score in-process {in_process * 1000:.1f} ms; "
            f"one `evalrepro grade` process {one_process * 1000:.0f} ms"
        )

        started = time.perf_counter()
        logs, dataset, total = write_tree(root / "tree", args.logs)
        size = sum(p.stat().st_size for p in logs.rglob("test_output.txt"))
        print(
            f"{args.logs} synthetic logs, {total} tests, {size / (1 << 20):.0f} MiB "
            f"(written in {time.perf_counter() - started:.1f} s)"
        )
        in_process, whole = [], []
        for i in range(args.regrade_repeat):
            started = time.perf_counter()
            summary = regrade(logs, dataset, run_dir=root / f"regraded-in-process-{i}")
            in_process.append(time.perf_counter() - started)
            command = [EVALREPRO, "regrade", str(logs), "--dataset", str(dataset)]
            command += ["--run-dir", str(root / f"regraded-command-{i}")]
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            whole.append(time.perf_counter() - started)
        fields = [f"regraded-in-process-{i}" for i in range(args.regrade_repeat)]
        directory = RunDirectory(root / fields[0])
        lockfile = read_lockfile(directory.lockfile_path)
        results = directory.survey(lockfile).results
        layout = median_time(
            lambda: directory.write_swebench_layout(lockfile, directory.survey(lockfile).results),
            args.repeat,
        )
        fields_time = median_time(lambda: _swebench_fields(lockfile, results), args.repeat)
        print(
            f"regrade of {summary.graded} logs ({summary.resolved} resolved), median / best of "
            f"{args.regrade_repeat}: in-process {statistics.median(in_process):.1f} / "
            f"{min(in_process):.1f} s; one `evalrepro regrade` process "
            f"{statistics.median(whole):.1f} / {min(whole):.1f} s"
        )
        print(
            f"of it: SWE-bench's layout of {summary.graded} instances (with the survey of the "
            f"run it reads) {layout:.2f} s; the run report's SWE-bench fields "
            f"(report._swebench_fields) {fields_time * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
