"""What the Dask executor costs the submitter: scheduling plus recording per trial, and
its memory, from 1,000 to 10,000 trials.

    .venv/bin/python benchmarks/dask_scale.py [--trials 1000 10000] [--workers 2]
        [--repeat 3] [--profile DIR]

Each size is one run in a process of its own (its peak RSS is that run's): the demo's 12
instances with the gold patch as N/12 samples each (``target.samples``), in the fake
environment (no sandbox: every cost measured is the harness's own), with the local
executor and with ``executor=dask`` (a LocalCluster of ``--workers`` processes),
alternating run by run ``--repeat`` times (a loaded machine loads both alike); the
medians are reported. Reported: the run's wall time per trial, the submitting process's
CPU time per trial (with a LocalCluster its scheduler runs in that process too; user and
system apart: the system part is the kernel's, creating and fsync'ing files; and by
thread, from /proc: the main thread's recording, Dask's IO loop, the rest), and its peak
RSS. ``--profile DIR``: each run also sampled by py-spy (the ``profile`` extra;
every thread of the submitting process), a speedscope file per run in DIR. ``--before
DIR``: also the evalrepro package in DIR (``git archive REV evalrepro conf backends
pyproject.toml | tar -x -C DIR``: the package, its configs, files and kinds), in the same
rounds, so that a change is measured against what it changed under the same load.
Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import io, json, os, resource, sys, threading, time
from pathlib import Path
from rich.console import Console
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment

TICK = os.sysconf("SC_CLK_TCK")

def thread_cpu(seen, names, stop):
    # Each thread's CPU time by its name, from /proc every 0.5 s (a thread that ended
    # keeps its last figure): where the submitter's CPU goes, the main thread's recording
    # against Dask's IO loop (its scheduler, client and nannies) and the rest.
    while True:
        for thread in threading.enumerate():
            names[thread.native_id] = thread.name
        for tid in os.listdir("/proc/self/task"):
            try:
                fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            seen[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK
        if stop.wait(0.5):
            return

def by_name(seen, names):
    found = {}
    for tid, cpu in seen.items():
        name = names.get(tid, "other")
        name = name.split("-")[0] if name.startswith("ThreadPoolExecutor") else name
        found[name] = found.get(name, 0.0) + cpu
    return dict(sorted(found.items(), key=lambda item: -item[1]))

def main():
    predictions, samples, executor, workers, run_dir = sys.argv[1:6]
    overrides = ["+experiment=demo", "environment=fake", "target=model_a",
                 f"target.path={predictions}", f"target.samples={samples}",
                 "target.name=scale", f"executor={executor}"]
    overrides.append(f"executor.{'workers' if executor == 'dask' else 'max_workers'}={workers}")
    config = compose(overrides)
    seen, names, stop, once = {}, {}, threading.Event(), threading.Event()
    once.set()
    thread_cpu(seen, names, once)
    baseline = dict(seen)
    watcher = threading.Thread(target=thread_cpu, args=(seen, names, stop), name="watcher")
    watcher.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    outcome = run_experiment(config, Console(file=io.StringIO()), run_dir=Path(run_dir),
                             cache_dir=Path(run_dir).parent / "cache")
    wall = time.perf_counter() - started
    trials = outcome.results.trials
    after = resource.getrusage(resource.RUSAGE_SELF)
    stop.set()
    watcher.join()
    threads = by_name({t: c - baseline.get(t, 0.0) for t, c in seen.items()}, names)
    # Less the watcher's own (all of it user time, reading /proc).
    user = after.ru_utime - before.ru_utime - threads.pop("watcher", 0.0)
    system = after.ru_stime - before.ru_stime
    peak = after.ru_maxrss
    print(json.dumps({"trials": len(trials), "wall": wall, "cpu": user + system,
                      "user": user, "system": system, "peak_kib": peak, "threads": threads}))

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


def one_run(
    child: Path, path: Path, samples: int, label: str, args, run_dir: Path, code: Path | None
) -> dict:
    executor = label.split()[0]
    env = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
    command = [sys.executable, str(child), str(path), str(samples), executor, str(args.workers),
               str(run_dir)]  # fmt: skip
    if args.profile is not None:
        spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
        args.profile.mkdir(parents=True, exist_ok=True)
        out = args.profile / f"{run_dir.name}.speedscope.json"
        command = [spy, "record", "--format", "speedscope", "--threads", "--rate", "200",
                   "--output", str(out), "--", *command]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    # The child's facts are its last JSON line (py-spy says what it wrote after it).
    return json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument(
        "--only", nargs="+", default=None, help='the runs to make, e.g. "dask before"'
    )
    args = parser.parse_args()
    codes: dict[str, Path | None] = {"local": None, "dask": None}
    if args.before is not None:
        codes.update({"local before": args.before, "dask before": args.before})
    if args.only is not None:
        codes = {label: code for label, code in codes.items() if label in args.only}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        child = root / "child.py"
        child.write_text(CHILD)
        for trials in args.trials:
            samples = max(1, trials // 12)
            path = predictions(root, samples)
            runs: dict[str, list[dict]] = {label: [] for label in codes}
            for round_ in range(args.repeat):
                for label, code in codes.items():
                    run_dir = root / f"run-{label.replace(' ', '-')}-{samples}-{round_}"
                    facts = one_run(child, path, samples, label, args, run_dir, code)
                    shutil.rmtree(run_dir, ignore_errors=True)
                    runs[label].append(facts)
                    print(f"  round {round_ + 1} {label}: {_line(facts)}", flush=True)
                    print(f"    by thread: {_threads(facts)}", flush=True)
            cpu = {}
            for label, facts in runs.items():
                median = {
                    k: statistics.median(f[k] for f in facts) for k in facts[0] if k != "threads"
                }
                cpu[label] = median["cpu"] / median["trials"]
                print(f"{label:11} median of {len(facts)}: {_line(median)}")
            if "dask" in cpu and "local" in cpu:
                print(f"dask submitter CPU {cpu['dask'] / cpu['local']:.2f}x local's", flush=True)


def _threads(facts: dict) -> str:
    """The submitter's CPU per trial by thread (ms), the largest first."""
    trials = facts["trials"]
    return ", ".join(
        f"{name} {cpu / trials * 1000:.2f}" for name, cpu in facts.get("threads", {}).items()
    )


def _line(facts: dict) -> str:
    per = facts["wall"] / facts["trials"] * 1000
    split = ""
    if "system" in facts:  # the kernel's share: file creation, fsync, the sockets
        split = (
            f": user {facts['user'] / facts['trials'] * 1000:.2f}, system "
            f"{facts['system'] / facts['trials'] * 1000:.2f}"
        )
    return (
        f"{facts['trials']:6.0f} trials: {facts['wall']:.1f} s ({per:.2f} ms per trial, whole "
        f"run; submitter CPU {facts['cpu'] / facts['trials'] * 1000:.2f} ms per trial{split}), "
        f"peak RSS {facts['peak_kib'] / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
