"""A warm demo run against the bare runs of its trials' images, on each runtime (issue 38).

    scripts/docker-daemon-start   # as root, for the docker runtime
    .venv/bin/python benchmarks/warm_demo.py [--repeat 5] [--runtime rootless root docker]
        [--user NAME] [--experiment demo] [--source DIR ...]

One round, on one runtime, is one ``evalrepro run +experiment=demo`` process in a new run
directory (images warm: a first run builds, or brings into docker's store, whatever is
missing and is not counted), its wall time as a user sees it, then the same trials'
images each started once by ``RUNTIME run --rm --network none IMAGE true`` in a row:
what the trials cannot do without. Rounds alternate between the runtimes (and, given
``--source`` twice, between the sources: a before/after table), so a busy machine slows
each alike; per runtime, the ratio of the medians is the harness's multiple of its own
bare runs. From each run's records, the time before the first attempt starts, the
attempts' span and the time after the last one ends (medians).

The runtimes: ``rootless`` (podman as ``--user``, default ``$EVALREPRO_USER`` or
``evalrepro``, from that user's copy of the checkout, which ``scripts/as-rootless-user``
makes: run it once first), ``root`` (root's podman) and ``docker`` (``environment=docker``,
root's daemon: ``scripts/docker-daemon-start``). As root all three are measured by
default; as another user, rootless only (this user's own podman). ``--source DIR`` runs
that checkout's code (``PYTHONPATH=DIR``; for rootless the user must be able to read
it). Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
RUNTIMES = ("rootless", "root", "docker")


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(command)}: exit {done.returncode}\n{done.stderr}")
    return time.perf_counter() - start


def run_demo(
    experiment: str, run_dir: Path, source: str | None, environment: str | None
) -> dict[str, float]:
    """One ``evalrepro run`` process: its wall time, and from its records the time
    before the first attempt, the attempts' span and the time after the last."""
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    chosen = [f"environment={environment}"] if environment else []
    evalrepro = str(Path(sys.executable).parent / "evalrepro")
    began = datetime.now(UTC)
    wall = timed(
        [evalrepro, "run", f"+experiment={experiment}", *chosen, "--run-dir", str(run_dir)], env
    )
    ended = datetime.now(UTC)
    attempts = [
        attempt
        for path in (run_dir / "trials").glob("*/result.json")
        for attempt in json.loads(path.read_text())["attempts"]
    ]
    first = min(datetime.fromisoformat(a["started_at"]) for a in attempts)
    last = max(datetime.fromisoformat(a["finished_at"]) for a in attempts)
    return {
        "wall": wall,
        "before": (first - began).total_seconds(),
        "trials": (last - first).total_seconds(),
        "after": (ended - last).total_seconds(),
    }


def trial_images(run_dir: Path) -> list[str]:
    """The image Id each planned trial runs, in plan order (one per trial, repeats kept)."""
    lock = json.loads((run_dir / "lockfile.lock.json").read_text())
    return [trial["key"]["image_digest"].removeprefix("sha256:") for trial in lock["trials"]]


def bare_runs(images: list[str], tool: str) -> float:
    # podman with evalrepro's settings (root podman's defaults do not work on these hosts).
    env = {**os.environ, "CONTAINERS_CONF": str(CHECKOUT / "backends/podman/containers.conf")}
    start = time.perf_counter()
    for image in images:
        subprocess.run(
            [tool, "run", "--rm", "--network", "none", image, "true"],
            check=True,
            capture_output=True,
            env=env,
        )
    return time.perf_counter() - start


def one_part(args: argparse.Namespace) -> None:
    """In the process of the runtime's user: the warm-up (the images, as JSON) or one
    round (each source's run, then the bare runs, as JSON)."""
    environment = "docker" if args.runtime == "docker" else None
    tool = "docker" if args.runtime == "docker" else "podman"
    root = Path(args.scratch)
    sources: list[str | None] = list(args.source) or [None]
    if args.part == "warmup":
        # Builds (and, for docker, brings over) what is missing; not counted.
        run_demo(args.experiment, root / "warmup", sources[0], environment)
        print(json.dumps(trial_images(root / "warmup")))
        return
    images = trial_images(root / "warmup")
    runs = [
        run_demo(args.experiment, root / f"run-{args.round}-{i}", source, environment)
        for i, source in enumerate(sources)
    ]
    print(json.dumps({"runs": runs, "bare": bare_runs(images, tool)}))


def part_command(args: argparse.Namespace, runtime: str, part: str, scratch: Path) -> list[str]:
    """This script's ``--part`` for ``runtime``, as the user who runs it."""
    inner = ["--part", part, "--runtime", runtime, "--scratch", str(scratch)]
    inner += ["--experiment", args.experiment, "--round", str(args.round)]
    for source in args.source:
        inner += ["--source", source]
    if runtime != "rootless" or os.geteuid() != 0:
        return [sys.executable, __file__, *inner]
    # As the user, from their copy of the checkout (scripts/as-rootless-user), in a login
    # shell: their HOME, cache and podman store.
    copy = Path(pwd.getpwnam(args.user).pw_dir) / "evalrepro"
    line = shlex.join([".venv/bin/python", "benchmarks/warm_demo.py", *inner])
    return ["runuser", "-l", args.user, "-c", f"cd {shlex.quote(str(copy))} && {line}"]


def run_part(args: argparse.Namespace, runtime: str, part: str, scratch: Path) -> object:
    done = subprocess.run(
        part_command(args, runtime, part, scratch), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{runtime} {part}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f} s (median {statistics.median(values):.2f} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--experiment", default="demo")
    parser.add_argument("--source", action="append", default=[])
    parser.add_argument(
        "--runtime",
        nargs="+",
        choices=RUNTIMES,
        default=list(RUNTIMES) if os.geteuid() == 0 else ["rootless"],
    )
    parser.add_argument("--user", default=os.environ.get("EVALREPRO_USER", "evalrepro"))
    parser.add_argument("--part", choices=["warmup", "round"], help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.source = [str(Path(source).resolve()) for source in args.source]
    if args.part is not None:
        args.runtime = args.runtime[0] if isinstance(args.runtime, list) else args.runtime
        one_part(args)
        return
    if os.geteuid() != 0 and args.runtime != ["rootless"]:
        raise SystemExit("root podman and docker are measured as root")

    base = Path(tempfile.mkdtemp(prefix="warm-demo-"))
    base.chmod(0o755)
    scratch = {}
    for runtime in args.runtime:
        scratch[runtime] = base / runtime
        scratch[runtime].mkdir()
        if runtime == "rootless" and os.geteuid() == 0:
            os.chown(scratch[runtime], pwd.getpwnam(args.user).pw_uid, -1)
    images = {
        runtime: run_part(args, runtime, "warmup", scratch[runtime]) for runtime in args.runtime
    }
    sources = args.source or ["this checkout"]
    results: dict[str, list[dict]] = {runtime: [] for runtime in args.runtime}
    for round_index in range(args.repeat):
        args.round = round_index
        for runtime in args.runtime:
            results[runtime].append(run_part(args, runtime, "round", scratch[runtime]))
    subprocess.run(["rm", "-rf", str(base)], check=False)

    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; "
        f"{args.repeat} alternating rounds"
    )
    for runtime in args.runtime:
        rounds = results[runtime]
        bare = [r["bare"] for r in rounds]
        tool = "docker" if runtime == "docker" else "podman"
        print(
            f"{runtime}: {len(images[runtime])} bare `{tool} run --rm --network none IMAGE "
            f"true`: {span(bare)}"
        )
        for i, source in enumerate(sources):
            runs = [r["runs"][i] for r in rounds]
            walls = [r["wall"] for r in runs]
            parts = ", ".join(
                f"{key} {statistics.median(r[key] for r in runs):.2f} s"
                for key in ("before", "trials", "after")
            )
            print(
                f"  `evalrepro run +experiment={args.experiment}`, warm ({source}): "
                f"{span(walls)}: {statistics.median(walls) / statistics.median(bare):.2f}x "
                f"bare ({parts})"
            )


if __name__ == "__main__":
    main()
