"""What the Dask executor costs the submitter: scheduling plus recording per trial, and
its memory, from 1,000 to 10,000 trials.

    .venv/bin/python benchmarks/dask_scale.py [--trials 1000 10000] [--workers 2]

Each size is one run in a process of its own (its peak RSS is that run's): the demo's 12
instances with the gold patch as N/12 samples each (``target.samples``), in the fake
environment (no sandbox: every cost measured is the harness's own), once with the local
executor and once with ``executor=dask`` (a LocalCluster of ``--workers`` processes).
Reported: the run's wall time per trial, the submitting process's CPU time per trial
(with a LocalCluster its scheduler runs in that process too), and its peak RSS. Results
go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import io, json, resource, sys, time
from pathlib import Path
from rich.console import Console
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment

def main():
    predictions, samples, executor, workers, run_dir = sys.argv[1:6]
    overrides = ["+experiment=demo", "environment=fake", "target=model_a",
                 f"target.path={predictions}", f"target.samples={samples}",
                 "target.name=scale", f"executor={executor}"]
    overrides.append(f"executor.{'workers' if executor == 'dask' else 'max_workers'}={workers}")
    config = compose(overrides)
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    outcome = run_experiment(config, Console(file=io.StringIO()), run_dir=Path(run_dir),
                             cache_dir=Path(run_dir).parent / "cache")
    wall = time.perf_counter() - started
    trials = outcome.results.trials
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    peak = after.ru_maxrss
    print(json.dumps({"trials": len(trials), "wall": wall, "cpu": cpu, "peak_kib": peak}))

if __name__ == "__main__":
    main()
"""


def predictions(folder: Path, samples: int) -> Path:
    demo = Path(__file__).resolve().parents[1] / "evalrepro" / "demo" / "instances.jsonl"
    lines = []
    for line in demo.read_text().splitlines():
        record = json.loads(line)
        for index in range(samples):
            lines.append(
                json.dumps(
                    {
                        "instance_id": record["instance_id"],
                        "model_name_or_path": "scale",
                        "sample_index": index,
                        "model_patch": record["patch"],
                    }
                )
            )
    path = folder / f"predictions-{samples}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        child = root / "child.py"
        child.write_text(CHILD)
        for trials in args.trials:
            samples = max(1, trials // 12)
            path = predictions(root, samples)
            for executor in ("local", "dask"):
                run_dir = root / f"run-{executor}-{samples}"
                done = subprocess.run(
                    [
                        sys.executable,
                        str(child),
                        str(path),
                        str(samples),
                        executor,
                        str(args.workers),
                        str(run_dir),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                facts = json.loads(done.stdout.strip().splitlines()[-1])
                per = facts["wall"] / facts["trials"] * 1000
                print(
                    f"{executor:5} {facts['trials']:6} trials: {facts['wall']:.1f} s "
                    f"({per:.2f} ms per trial, whole run; submitter CPU "
                    f"{facts['cpu'] / facts['trials'] * 1000:.2f} ms per trial), peak RSS "
                    f"{facts['peak_kib'] / 1024:.0f} MiB"
                )


if __name__ == "__main__":
    main()
