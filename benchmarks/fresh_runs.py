"""What fresh runs cost: the demo's 12 gold trials with ``dataset.protection.fresh_runs``
off and on, warm.

    .venv/bin/python benchmarks/fresh_runs.py [--fresh 3] [--repeat 3]

Each configuration is run once to warm its images (a protection change is a new test
spec), then ``--repeat`` times; medians of the whole run's wall time, per trial, and the
fresh runs' own seconds as the supervisor timed them (``supervisor.json``). Run it as the
user who runs evalrepro; results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from evalrepro.cache import default_cache_dir
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment


def timed_demo(overrides: list[str], event: str, cache: Path) -> tuple[float, int, list[float]]:
    """Wall seconds of one demo run, its attempts, and the seconds of each run alone that
    the supervisor reported in its ``event`` ("fresh" or "rerun")."""
    config = compose(["+experiment=demo", *overrides])
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = Path(scratch) / "run"
        started = time.perf_counter()
        run_experiment(config, Console(file=io.StringIO()), run_dir=run_dir, cache_dir=cache)
        wall = time.perf_counter() - started
        alone = []
        reports = list(run_dir.glob("trials/*/attempt-*/supervisor.json"))
        for path in reports:
            report = json.loads(path.read_text())
            alone += [run["seconds"] for run in (report.get(event) or {}).get("runs", [])]
        return wall, len(reports), alone


def one_run(fresh: int, cache: Path) -> tuple[float, int, list[float]]:
    """Wall seconds, trials, and each fresh run's seconds."""
    return timed_demo([f"dataset.protection.fresh_runs={fresh}"], "fresh", cache)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {'rootless' if os.geteuid() else 'root'} podman")
    cache = default_cache_dir()
    for fresh in (0, args.fresh):
        one_run(fresh, cache)  # images for this test spec
        walls, lone = [], []
        trials = 0
        for _ in range(args.repeat):
            wall, trials, seconds = one_run(fresh, cache)
            walls.append(wall)
            lone += seconds
        wall = statistics.median(walls)
        line = f"fresh_runs={fresh}: demo {wall:.1f} s, {wall / trials * 1000:.0f} ms per trial"
        if lone:
            per_trial = len(lone) / (args.repeat * trials)
            line += (
                f"; {per_trial:.1f} fresh runs per trial, "
                f"median {statistics.median(lone) * 1000:.0f} ms each (supervisor's timing)"
            )
        print(line)


if __name__ == "__main__":
    main()
