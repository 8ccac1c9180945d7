"""What the second runner costs: the demo's 12 gold trials with
``dataset.protection.second_runner`` off and on, warm.

    .venv/bin/python benchmarks/second_runner.py [--second 3] [--repeat 3]

Each configuration is run once to warm its images (a protection change is a new test
spec), then ``--repeat`` times; medians of the whole run's wall time, per trial, and the
plain driver's runs' own seconds as the supervisor timed them (``supervisor.json``: the
``fresh`` event's runs whose runner is ``plain``). Run it as the user who runs evalrepro;
results go in docs/performance.md.
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


def one_run(second: int, cache: Path) -> tuple[float, int, list[float], list[str]]:
    """Wall seconds, trials, each plain run's seconds, and each gold trial's outcome."""
    config = compose(["+experiment=demo", f"dataset.protection.second_runner={second}"])
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = Path(scratch) / "run"
        started = time.perf_counter()
        run_experiment(config, Console(file=io.StringIO()), run_dir=run_dir, cache_dir=cache)
        wall = time.perf_counter() - started
        plain, outcomes = [], []
        reports = list(run_dir.glob("trials/*/attempt-*/supervisor.json"))
        for path in reports:
            runs = (json.loads(path.read_text()).get("fresh") or {}).get("runs", [])
            plain += [run["seconds"] for run in runs if run.get("runner") == "plain"]
        for path in run_dir.glob("trials/*/result.json"):
            outcomes.append(json.loads(path.read_text())["score"]["outcome"])
        return wall, len(reports), plain, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--second", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {'rootless' if os.geteuid() else 'root'} podman")
    cache = default_cache_dir()
    for second in (0, args.second):
        one_run(second, cache)  # images for this test spec
        walls, plain = [], []
        trials = 0
        outcomes: set[str] = set()
        for _ in range(args.repeat):
            wall, trials, seconds, ended = one_run(second, cache)
            walls.append(wall)
            plain += seconds
            outcomes |= set(ended)
        wall = statistics.median(walls)
        line = (
            f"second_runner={second}: demo {wall:.1f} s, {wall / trials * 1000:.0f} ms per "
            f"trial, outcomes {sorted(outcomes)}"
        )
        if plain:
            per_trial = len(plain) / (args.repeat * trials)
            line += (
                f"; {per_trial:.1f} plain runs per trial, "
                f"median {statistics.median(plain) * 1000:.0f} ms each (supervisor's timing)"
            )
        print(line)


if __name__ == "__main__":
    main()
