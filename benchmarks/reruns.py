"""What re-runs of failing tests cost: the demo with model_b's patches (most trials fail
some test) with ``environment.rerun_failed`` off and on, warm.

    .venv/bin/python benchmarks/reruns.py [--reruns 2] [--repeat 3]

Each configuration is run once to warm its images, then ``--repeat`` times; medians of
the whole run's wall time, per trial, and the re-runs' own seconds as the supervisor
timed them (``supervisor.json``). Run it as the user who runs evalrepro; results go in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

# Run as a script: this folder is on sys.path, and the demo's timing is fresh_runs's.
from fresh_runs import timed_demo

from evalrepro.cache import default_cache_dir


def one_run(reruns: int, cache: Path) -> tuple[float, int, list[float]]:
    """Wall seconds, trials, and each re-run's seconds."""
    return timed_demo(["target=model_b", f"environment.rerun_failed={reruns}"], "rerun", cache)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {'rootless' if os.geteuid() else 'root'} podman")
    cache = default_cache_dir()
    for reruns in (0, args.reruns):
        one_run(reruns, cache)  # warm
        walls, alone = [], []
        trials = 0
        for _ in range(args.repeat):
            wall, trials, seconds = one_run(reruns, cache)
            walls.append(wall)
            alone += seconds
        wall = statistics.median(walls)
        line = f"rerun_failed={reruns}: {wall:.1f} s, {wall / trials * 1000:.0f} ms per trial"
        if alone:
            per_trial = len(alone) / (args.repeat * trials)
            line += (
                f"; {per_trial:.1f} runs alone per trial, "
                f"median {statistics.median(alone) * 1000:.0f} ms each (supervisor's timing)"
            )
        print(line)


if __name__ == "__main__":
    main()
