"""What the supervisor's inode count costs: its baseline walk before the tests start (on
every trial's critical path) and one watchdog slice while they run.

    .venv/bin/python benchmarks/inode_walk.py [--entries 10000 100000] [--repeat 5]

Builds a tree of empty files (100 per folder) for each size in a temporary folder and
times ``InodeCount`` (``evalrepro/sandbox/watchdog.py``) on it, as the supervisor
runs it: the constructor walks the whole tree once, each ``step`` reads one slice of at
most ``_INODE_SLICE`` entries. Medians over ``--repeat`` runs; results go in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from evalrepro.sandbox.watchdog import _INODE_SLICE, InodeCount


def tree(root: Path, entries: int) -> None:
    for index in range(entries):
        folder = root / f"d{index // 100:05d}"
        if index % 100 == 0:
            folder.mkdir()
        (folder / f"f{index % 100:02d}").touch()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"slice: {_INODE_SLICE} entries; cpu: {os.cpu_count()}")
    for entries in args.entries:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            tree(root, entries)
            baseline, slices = [], []
            for _ in range(args.repeat):
                started = time.perf_counter()
                count = InodeCount([str(root)])
                baseline.append(time.perf_counter() - started)
                count._next_pass = 0.0  # a pass is due: time one slice of it
                started = time.perf_counter()
                count.step()
                slices.append(time.perf_counter() - started)
            walk, one = statistics.median(baseline) * 1000, statistics.median(slices) * 1000
            print(f"{entries:>8} entries: baseline walk {walk:7.1f} ms, one slice {one:6.1f} ms")


if __name__ == "__main__":
    main()
