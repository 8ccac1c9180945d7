"""What a command costs before it does anything: whole-process wall time and peak memory.

    .venv/bin/python benchmarks/startup.py [--repeat 10] [--source DIR ...]

Each row is a fresh process, timed from spawn to exit (median of ``--repeat``), with its
peak resident memory (``ru_maxrss`` of that process, median) and which of scipy it loaded
(one more run under ``python -X importtime``: ``stats``, ``special`` or nothing):

* ``python -c pass`` (the interpreter alone), ``import evalrepro.pipeline`` / ``.verify`` /
  ``.cli``: the imports every command pays;
* ``evalrepro --help``, ``evalrepro parsers``;
* ``evalrepro grade`` of one trial's log (instance from the demo dataset);
* ``evalrepro verify RUN`` of a 12-trial demo run (built here by the real pipeline with
  the tests' fake backend, ``tests/fake_backend.py``: no containers);
* ``evalrepro report RUN`` of that run (Wilson intervals: this one needs scipy.special).

``--source DIR`` runs the commands from another copy of the code (``PYTHONPATH=DIR``), e.g.
``git archive HEAD | tar -x -C /tmp/before``; given twice (``--source /tmp/before --source
.``) the two alternate run by run, so a busy machine slows both alike: a before/after
table. Results go in docs/performance.md.
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

PYTHON = sys.executable
EVALREPRO = str(Path(sys.executable).parent / "evalrepro")


def demo_run(root: Path) -> None:
    """A finished 12-trial demo run directory, made without containers, in ``root/run``;
    prints the instances file, one trial's instance id and its log.

    Run in a process of its own (``--setup``): a child inherits its parent's peak RSS at
    fork, so the process that measures must stay small.
    """
    from rich.console import Console

    from evalrepro.config.experiment import compose
    from evalrepro.pipeline import run_experiment
    from evalrepro.sample import load_samples
    from tests.fake_backend import fake_backend, gold_scenario, trial_dirs

    config = compose(["+experiment=demo"])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    run_dir = root / "run"
    with open(os.devnull, "w") as devnull:
        run_experiment(
            config,
            Console(file=devnull),
            run_dir=run_dir,
            cache_dir=root / "cache",
            backend=fake_backend(gold_scenario(samples)),
        )
    trial = trial_dirs(run_dir)[0]
    print(config.dataset.instances)
    print(trial.name.split("--s", 1)[0])
    print(trial / "attempt-1" / "test_output.txt")


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process running ``argv``."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    error = process.stderr.read() if process.stderr else b""
    if process.returncode not in (0, 3):  # report: 3 is a failed gate, not a crash
        raise SystemExit(f"{' '.join(argv)}: exit {process.returncode}\n{error.decode()}")
    return elapsed, usage.ru_maxrss


def loads_scipy(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """What of scipy the process imports (one run under ``-X importtime``)."""
    if argv[0] == EVALREPRO:
        argv = [PYTHON, "-m", "evalrepro", *argv[1:]]
    traced = [argv[0], "-X", "importtime", *argv[1:]]
    done = subprocess.run(traced, env=env, cwd=cwd, capture_output=True, text=True)
    modules = [line.split("|")[-1].strip() for line in done.stderr.splitlines()]
    # By prefix: a package imported through scipy's lazy __getattr__ is not logged itself.
    loaded = (
        name for name in ("stats", "special") if any(m.startswith(f"scipy.{name}") for m in modules)
    )
    return next(loaded, "no")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--source",
        type=Path,
        action="append",
        help="run the code of this checkout instead (repeat it for columns side by side; "
        "'.' is this checkout)",
    )
    parser.add_argument("--setup", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup is not None:
        demo_run(args.setup)
        return
    sources: list[Path | None] = args.source or [None]
    envs = []
    for source in sources:
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = str(source.resolve())
        envs.append(env)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        setup = [PYTHON, __file__, "--setup", str(root)]
        printed = subprocess.run(setup, check=True, capture_output=True, text=True).stdout
        instances, instance_id, log = printed.split()
        run_dir = root / "run"
        commands = {
            "python -c pass": [PYTHON, "-c", "pass"],
            "import evalrepro.pipeline": [PYTHON, "-c", "import evalrepro.pipeline"],
            "import evalrepro.publish.verify": [PYTHON, "-c", "import evalrepro.publish.verify"],
            "import evalrepro.cli": [PYTHON, "-c", "import evalrepro.cli"],
            "evalrepro --help": [EVALREPRO, "--help"],
            "evalrepro parsers": [EVALREPRO, "parsers"],
            "evalrepro grade (one log)": [
                EVALREPRO,
                "grade",
                "--instance",
                instances,
                "--instance-id",
                instance_id,
                "--parser",
                "pytest_full",
                "--log",
                log,
            ],
            "evalrepro verify RUN (12 trials)": [EVALREPRO, "verify", str(run_dir)],
            "evalrepro report RUN (12 trials)": [EVALREPRO, "report", str(run_dir)],
        }
        print(f"medians of {args.repeat} processes; the sources' runs alternate")
        for i, source in enumerate(sources):
            print(f"  [{i}] {source or 'this checkout'}")
        header = "".join(f" | [{i}] {'wall':>7} {'peak RSS':>9}   scipy" for i in range(len(envs)))
        print(f"{'command':34}{header}")
        for name, argv in commands.items():
            for env in envs:
                measure(argv, env, root)  # warm the page cache and __pycache__
            runs: list[list[tuple[float, int]]] = [[] for _ in envs]
            for _ in range(args.repeat):
                for env, times in zip(envs, runs, strict=True):
                    times.append(measure(argv, env, root))
            row = f"{name:34}"
            for env, times in zip(envs, runs, strict=True):
                wall = statistics.median(t for t, _ in times)
                rss = statistics.median(m for _, m in times) / 1024
                scipy = loads_scipy(argv, env, root)
                row += f" |     {wall * 1000:4.0f} ms {rss:5.0f} MiB {scipy:>7}"
            print(row, flush=True)


if __name__ == "__main__":
    main()
