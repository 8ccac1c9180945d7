"""Worker scaling: the demo, warm, with 1 and 2 workers, and where the rest of the time goes.

    EVALREPRO_USER=pintest scripts/as-rootless-user \\
        .venv/bin/python benchmarks/worker_scaling.py [--repeat 3] [--workers 1 2] [--test-work N]
        [--layer-rounds 2] [--source DIR ...]

Each run is one ``evalrepro run +experiment=demo executor.max_workers=W`` process in a
new run directory (images warm: one run first builds whatever is missing), its wall time
as a user sees it; the workers alternate run by run, so a busy machine slows each alike.
From each run's records: the time before the first trial starts (imports, config, repos,
plan, image check, lockfile), the trials (first attempt's start to the last one's end)
and the tail (results, SWE-bench layout, report). Speedup = median wall(1) / wall(W).

``--test-work N``: every instance's test command first computes sum(i*i for i in
range(N)) in the container's Python, a test-bound run (the images stay the same: the
test command is no image input). The pre-trial phase is also timed step by step, in a
process of its own, with the same functions ``run`` calls.

Then the builds (``--layer-rounds`` rounds, workers alternating): the demo's instance
layers made new by an install command no layer had before, planned with 1 and with 2
workers (``build_plan``: the builder builds independent layers at once), the new images
removed after each round; the plan's time, and the sum of the layers' own build times.

``--locked``: each run is ``evalrepro run --lockfile`` of a lockfile made once per worker
count (``evalrepro lock``): the plan takes the lockfile's pins, resolving nothing.

``--source DIR`` runs the code of another checkout (``PYTHONPATH=DIR``); given twice
(``--source /tmp/before --source .``) the two alternate run by run: a before/after table.
Run it as the user who runs evalrepro (rootless); results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from evalrepro.build.images import ImageChain
from evalrepro.cache import default_cache_dir
from evalrepro.config.experiment import compose
from evalrepro.plan.lockfile import build_lockfile
from evalrepro.plan.plan import build_plan
from evalrepro.records.trial import read_trial_result
from evalrepro.run.backend import Backend

EVALREPRO = str(Path(sys.executable).parent / "evalrepro")
SPECS = {"demo/calc": "pytest", "demo/textkit": "pytest", "demo/ledger": "unittest"}


def overrides(args: argparse.Namespace) -> list[str]:
    """The demo, with each test command doing ``--test-work`` first."""
    if not args.test_work:
        return ["+experiment=demo"]
    burn = f'python -c "sum(i * i for i in range({args.test_work}))" && '
    commands = {
        "demo/calc": "pytest -rA -v -p no:cacheprovider",
        "demo/textkit": "pytest -rA -v -p no:cacheprovider",
        "demo/ledger": "python -m unittest -v",
    }
    return [
        "+experiment=demo",
        *(f"dataset.specs[{repo}][1.0].test_cmd={burn}{cmd}" for repo, cmd in commands.items()),
    ]


def lockfile(args: argparse.Namespace, workers: int, root: Path, env: dict[str, str]) -> Path:
    """``evalrepro lock`` of the demo at ``workers`` (a lockfile carries its config)."""
    output = Path(tempfile.mkdtemp(dir=root)) / "demo.lock.json"
    command = [EVALREPRO, "lock", *overrides(args), f"executor.max_workers={workers}"]
    subprocess.run([*command, "--output", str(output)], check=True, capture_output=True, env=env)
    return output


def one_run(
    args: argparse.Namespace,
    workers: int,
    root: Path,
    env: dict[str, str],
    locked: Path | None = None,
) -> dict[str, float]:
    run_dir = Path(tempfile.mkdtemp(dir=root)) / "run"
    if locked is None:
        command = [EVALREPRO, "run", *overrides(args), f"executor.max_workers={workers}"]
    else:
        command = [EVALREPRO, "run", "--lockfile", str(locked)]
    command += ["--run-dir", str(run_dir)]
    began = datetime.now(UTC)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    ended = datetime.now(UTC)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    attempts = [
        attempt
        for path in (run_dir / "trials").glob("*/result.json")
        for attempt in read_trial_result(path).attempts
    ]
    first = min(a.started_at for a in attempts)
    last = max(a.finished_at for a in attempts)
    return {
        "wall": wall,
        "before": (first - began).total_seconds(),
        "trials": (last - first).total_seconds(),
        "after": (ended - last).total_seconds(),
        "busy": sum((a.finished_at - a.started_at).total_seconds() for a in attempts),
    }


def pre_trial_steps(args: argparse.Namespace) -> None:
    """The steps before the first trial, timed in this process (imports done already)."""
    code = "import time; t = time.perf_counter(); import evalrepro.pipeline, evalrepro.cli; "
    code += "print(time.perf_counter() - t)"
    imports = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tempfile.gettempdir(),  # not the checkout first on sys.path: PYTHONPATH's code
        capture_output=True,
        text=True,
        check=True,
    )
    steps = {"imports (evalrepro.cli, evalrepro.pipeline)": float(imports.stdout)}
    started = time.perf_counter()
    config = compose(overrides(args))
    steps["compose the config (Hydra)"] = time.perf_counter() - started
    cache = default_cache_dir()
    started = time.perf_counter()
    backend = Backend.open(config.environment, cache)
    backend.check()
    steps["open and check the backend (podman)"] = time.perf_counter() - started
    started = time.perf_counter()
    plan = build_plan(config, backend.builder, cache)
    steps["plan: repos, specs, image check and pins (build_plan)"] = time.perf_counter() - started
    started = time.perf_counter()
    build_lockfile(config, plan)
    steps["lockfile"] = time.perf_counter() - started
    backend.close()
    for name, seconds in steps.items():
        print(f"    {name:58} {seconds:6.2f} s")


def layer_builds(args: argparse.Namespace) -> None:
    """One round: the demo's instance layers built new with each worker count; JSON."""
    cache = default_cache_dir()
    times = {}
    for workers in args.workers:
        token = f"evalrepro-bench-{uuid.uuid4().hex[:12]}"
        installs = [f"dataset.specs[{repo}][1.0].install=echo {token}" for repo in SPECS]
        config = compose([*overrides(args), f"executor.max_workers={workers}", *installs])
        backend = Backend.open(config.environment, cache)
        backend.check()
        started = time.perf_counter()
        plan = build_plan(config, backend.builder, cache)
        seconds = time.perf_counter() - started
        tops = {i.layers[-1].tag: i.layers[-1] for i in plan.images if isinstance(i, ImageChain)}
        assert all(layer.built for layer in tops.values())
        times[workers] = (seconds, sum(t.build_seconds for t in tops.values()), len(tops))
        backend.runtime.podman("rmi", *tops)  # type: ignore[attr-defined]
        backend.close()
    print(json.dumps(times))


def part(args: argparse.Namespace, name: str, env: dict[str, str]) -> str:
    """This script's ``--part NAME`` in a process of its own, with ``env``'s code."""
    command = [sys.executable, __file__, "--part", name, "--test-work", str(args.test_work)]
    command += ["--workers", *map(str, args.workers)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"--part {name}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--test-work", type=int, default=0, metavar="N")
    parser.add_argument("--layer-rounds", type=int, default=2, metavar="N")
    parser.add_argument(
        "--locked", action="store_true", help="run from a lockfile (`run --lockfile`): no resolves"
    )
    parser.add_argument(
        "--source",
        type=Path,
        action="append",
        help="run the code of this checkout (PYTHONPATH); repeated: side by side, alternating",
    )
    parser.add_argument("--part", choices=["steps", "layers"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part == "steps":
        pre_trial_steps(args)
        return
    if args.part == "layers":
        layer_builds(args)
        return
    sources: list[Path | None] = args.source or [None]
    envs = []
    for source in sources:
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = str(source.resolve())
        envs.append(env)
    print(
        f"{os.cpu_count()} cores, {'rootless' if os.geteuid() else 'root'} podman; "
        f"demo{f', test work {args.test_work}' if args.test_work else ''}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for env in envs:
            one_run(args, max(args.workers), root, env)  # builds what is missing: warm now
        locks = {
            (i, w): lockfile(args, w, root, env) if args.locked else None
            for i, env in enumerate(envs)
            for w in args.workers
        }
        runs: dict[tuple[int, int], list[dict[str, float]]] = {key: [] for key in locks}
        for _ in range(args.repeat):
            for i, env in enumerate(envs):
                for workers in args.workers:
                    run = one_run(args, workers, root, env, locks[i, workers])
                    runs[i, workers].append(run)
    for i, source in enumerate(sources):
        print(f"[{i}] {source or 'this checkout'}")
        how = "`evalrepro run --lockfile`" if args.locked else "`evalrepro run`"
        print(f"  medians of {args.repeat} runs (whole {how} processes):")
        print(f"  {'workers':>7} {'wall':>7} {'before':>7} {'trials':>7} {'after':>7} {'busy':>7}")
        medians = {
            w: {k: statistics.median(r[k] for r in runs[i, w]) for k in runs[i, w][0]}
            for w in args.workers
        }
        for workers, m in medians.items():
            print(
                f"  {workers:7d} {m['wall']:6.2f}s {m['before']:6.2f}s {m['trials']:6.2f}s "
                f"{m['after']:6.2f}s {m['busy']:6.2f}s"
            )
        one = medians[min(args.workers)]
        for workers, m in medians.items():
            if workers != min(args.workers):
                print(
                    f"  speedup {min(args.workers)} -> {workers} workers: whole run "
                    f"{one['wall'] / m['wall']:.2f}x, trials {one['trials'] / m['trials']:.2f}x"
                )
        print("  before the first trial, step by step (one process):")
        print(part(args, "steps", envs[i]), end="")
    if not args.layer_rounds:
        return
    rounds: list[list[dict[str, list[float]]]] = [[] for _ in envs]
    for _ in range(args.layer_rounds):
        for i, env in enumerate(envs):
            rounds[i].append(json.loads(part(args, "layers", env)))
    for i in range(len(sources)):
        print(f"[{i}] instance layers built new (medians of {args.layer_rounds} rounds):")
        for workers in args.workers:
            done = [r[str(workers)] for r in rounds[i]]
            print(
                f"  {workers} worker(s): {int(done[0][2])} layers, plan "
                f"{statistics.median(d[0] for d in done):.1f} s (their builds sum to "
                f"{statistics.median(d[1] for d in done):.1f} s)"
            )


if __name__ == "__main__":
    main()
