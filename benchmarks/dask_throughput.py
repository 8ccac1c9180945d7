"""The Dask executor against the local one, both with 2 workers, in real podman: the
demo as it is and test-bound, whole process.

    .venv/bin/python benchmarks/dask_throughput.py [--repeat 3] [--test-work 30000000]

Each run is one ``evalrepro run`` process in a new run directory (images warm: one run of
each first), its wall time as a user sees it, the two executors alternating run by run:
``executor=local executor.max_workers=2`` and ``executor=dask executor.workers=2`` (a
LocalCluster started by the run, inside the measured time). Test-bound: every test
command first computes ``sum(i*i for i in range(N))`` (as benchmarks/worker_scaling.py
does). Throughput ratio = median wall(local) / median wall(dask); the goal is at least
0.95. ``--before DIR``: also the evalrepro package in DIR (``git archive REV evalrepro |
tar -x -C DIR``) in the same rounds, a change measured against what it changed under the
same load. Run it as the user who runs evalrepro; results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVALREPRO = str(Path(sys.executable).parent / "evalrepro")
EXECUTORS = {
    "local": ["executor=local", "executor.max_workers=2"],
    "dask": ["executor=dask", "executor.workers=2"],
}
COMMANDS = {
    "demo/calc": "pytest -rA -v -p no:cacheprovider",
    "demo/textkit": "pytest -rA -v -p no:cacheprovider",
    "demo/ledger": "python -m unittest -v",
}


def overrides(test_work: int) -> list[str]:
    if not test_work:
        return ["+experiment=demo"]
    burn = f'python -c "sum(i * i for i in range({test_work}))" && '
    return [
        "+experiment=demo",
        *(f"dataset.specs[{repo}][1.0].test_cmd={burn}{cmd}" for repo, cmd in COMMANDS.items()),
    ]


def one_run(executor: str, test_work: int, root: Path, code: Path | None = None) -> float:
    run_dir = Path(tempfile.mkdtemp(dir=root)) / "run"
    command = [EVALREPRO, "run", *overrides(test_work), *EXECUTORS[executor]]
    env = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
    started = time.perf_counter()
    subprocess.run([*command, "--run-dir", str(run_dir)], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--test-work", type=int, nargs="+", default=[0, 30_000_000])
    parser.add_argument("--before", type=Path, default=None)
    args = parser.parse_args()
    runs: dict[str, tuple[str, Path | None]] = {name: (name, None) for name in EXECUTORS}
    if args.before is not None:
        runs.update({f"{name} before": (name, args.before) for name in EXECUTORS})
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for work in args.test_work:
            for executor in EXECUTORS:
                one_run(executor, work, root)  # warm: images for this test spec
            walls: dict[str, list[float]] = {label: [] for label in runs}
            for _ in range(args.repeat):
                for label, (executor, code) in runs.items():
                    walls[label].append(one_run(executor, work, root, code))
                    print(f"  {label}: {walls[label][-1]:.1f} s", flush=True)
            medians = {label: statistics.median(found) for label, found in walls.items()}
            what = f"test work {work}" if work else "demo as is"
            for suffix in ("", " before") if args.before is not None else ("",):
                local, dask = medians[f"local{suffix}"], medians[f"dask{suffix}"]
                print(
                    f"{what}{suffix}: local {local:.1f} s, dask {dask:.1f} s (medians of "
                    f"{args.repeat}); dask throughput {local / dask:.2f} of local",
                    flush=True,
                )


if __name__ == "__main__":
    main()
