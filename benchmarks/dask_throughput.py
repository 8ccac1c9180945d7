"""The Dask executor against the local one, both with 2 workers, in real podman: the
demo as it is and test-bound, whole process.

    .venv/bin/python benchmarks/dask_throughput.py [--repeat 3] [--test-work 30000000]

Each run is one ``evalrepro run`` process in a new run directory (images warm: one run of
each first), its wall time as a user sees it, the two executors alternating run by run:
``executor=local executor.max_workers=2`` and ``executor=dask executor.workers=2`` (a
LocalCluster started by the run, inside the measured time). Test-bound: every test
command first computes ``sum(i*i for i in range(N))`` (as benchmarks/worker_scaling.py
does). Throughput ratio = median wall(local) / median wall(dask); the goal is at least
0.95. ``--before DIR``: also the evalrepro package in DIR (``git archive REV evalrepro
conf backends pyproject.toml | tar -x -C DIR``: the package, its configs, files and kinds)
in the same rounds, a change measured against what it changed under the same load. Run
it as the user who runs evalrepro; results go in docs/performance.md.

Beside each wall time, the run's CPU time (user and system): of the ``evalrepro`` process
and everything it started, the sandboxes included. This process is their subreaper, so
that what leaves its parent (Dask's fork server and its workers, podman's conmon) is
still waited for, and counted, here. Load changes CPU time much less than wall time: on
a shared machine it is the figure to compare. The load average at each run is printed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
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


def one_run(
    executor: str, test_work: int, root: Path, code: Path | None = None
) -> tuple[float, float]:
    """The run's wall time and CPU time (its process tree's, sandboxes included)."""
    run_dir = Path(tempfile.mkdtemp(dir=root)) / "run"
    command = [EVALREPRO, "run", *overrides(test_work), *EXECUTORS[executor]]
    env = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
    before = _children_cpu()
    started = time.perf_counter()
    subprocess.run([*command, "--run-dir", str(run_dir)], check=True, capture_output=True, env=env)
    wall = time.perf_counter() - started
    _reap_orphans()
    return wall, _children_cpu() - before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_orphans(within: float = 10.0) -> None:
    """Wait for the run's orphans (ours as subreaper) to end, for at most ``within`` s (a
    process that lives on, as rootless podman's pause process, is left)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)


def _become_subreaper() -> None:
    PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--test-work", type=int, nargs="+", default=[0, 30_000_000])
    parser.add_argument("--before", type=Path, default=None)
    args = parser.parse_args()
    runs: dict[str, tuple[str, Path | None]] = {name: (name, None) for name in EXECUTORS}
    if args.before is not None:
        runs.update({f"{name} before": (name, args.before) for name in EXECUTORS})
    _become_subreaper()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for work in args.test_work:
            for executor in EXECUTORS:
                one_run(executor, work, root)  # warm: images for this test spec
            walls: dict[str, list[float]] = {label: [] for label in runs}
            cpus: dict[str, list[float]] = {label: [] for label in runs}
            for _ in range(args.repeat):
                for label, (executor, code) in runs.items():
                    load = os.getloadavg()[0]
                    wall, cpu = one_run(executor, work, root, code)
                    walls[label].append(wall)
                    cpus[label].append(cpu)
                    print(f"  {label}: {wall:.1f} s, CPU {cpu:.1f} s (load {load:.1f})", flush=True)
            wall = {label: statistics.median(found) for label, found in walls.items()}
            cpu = {label: statistics.median(found) for label, found in cpus.items()}
            what = f"test work {work}" if work else "demo as is"
            for suffix in ("", " before") if args.before is not None else ("",):
                local, dask = f"local{suffix}", f"dask{suffix}"
                print(
                    f"{what}{suffix}: local {wall[local]:.1f} s (CPU {cpu[local]:.1f} s), dask "
                    f"{wall[dask]:.1f} s (CPU {cpu[dask]:.1f} s), medians of {args.repeat}; "
                    f"dask throughput {wall[local] / wall[dask]:.2f} of local, CPU "
                    f"{cpu[dask] / cpu[local]:.2f}x local's",
                    flush=True,
                )


if __name__ == "__main__":
    main()
