"""A warm demo run against the bare podman runs of its trials' images (issue 23's measure).

    EVALREPRO_USER=evalrepro scripts/as-rootless-user \\
        .venv/bin/python benchmarks/warm_demo.py [--repeat 5] [--experiment demo]
        [--source DIR ...] [--environment docker]

One round is one ``evalrepro run +experiment=demo`` process in a new run directory (images
warm: a first run builds whatever is missing and is not counted), its wall time as a user
sees it, then the same trials' images each started once by ``podman run --rm --network
none IMAGE true`` in a row: what the trials cannot do without. The two alternate round by
round, so a busy machine slows each alike; the ratio of the medians is the harness's
multiple of bare podman. ``--source DIR`` runs another checkout's code (``PYTHONPATH=DIR``);
given twice, the sources alternate too: a before/after table. Run it as the user who runs
evalrepro; results go in docs/performance.md. ``--environment docker`` runs the demo with
``environment=docker`` (as root) and the bare runs with ``docker run``.
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
from pathlib import Path

EVALREPRO = str(Path(sys.executable).parent / "evalrepro")


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def run_demo(
    experiment: str, run_dir: Path, source: str | None, environment: str | None = None
) -> float:
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    chosen = [f"environment={environment}"] if environment else []
    return timed(
        [EVALREPRO, "run", f"+experiment={experiment}", *chosen, "--run-dir", str(run_dir)], env
    )


def trial_images(run_dir: Path) -> list[str]:
    """The image Id each planned trial runs, in plan order (one per trial, repeats kept)."""
    lock = json.loads((run_dir / "lockfile.lock.json").read_text())
    return [trial["key"]["image_digest"].removeprefix("sha256:") for trial in lock["trials"]]


def bare_runs(images: list[str], tool: str = "podman") -> float:
    # podman with evalrepro's settings (root podman's defaults do not work on these hosts).
    env = {"CONTAINERS_CONF": str(Path(__file__).parents[1] / "backends/podman/containers.conf")}
    start = time.perf_counter()
    for image in images:
        subprocess.run(
            [tool, "run", "--rm", "--network", "none", image, "true"],
            check=True,
            capture_output=True,
            env={**env, **os.environ},
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--experiment", default="demo")
    parser.add_argument("--source", action="append", default=[])
    parser.add_argument("--environment", choices=["podman", "docker"], default=None)
    args = parser.parse_args()
    sources: list[str | None] = list(args.source) or [None]

    root = Path(tempfile.mkdtemp(prefix="warm-demo-"))
    warmup = root / "warmup"
    # Builds (and, for docker, brings over) what is missing; not counted.
    run_demo(args.experiment, warmup, sources[0], args.environment)
    images = trial_images(warmup)

    walls: dict[str | None, list[float]] = {source: [] for source in sources}
    bare: list[float] = []
    for round_index in range(args.repeat):
        for source_index, source in enumerate(sources):
            run_dir = root / f"run-{round_index}-{source_index}"
            walls[source].append(run_demo(args.experiment, run_dir, source, args.environment))
        bare.append(bare_runs(images, args.environment or "podman"))

    bare_median = statistics.median(bare)
    tool = args.environment or "podman"
    print(
        f"{len(images)} bare `{tool} run --rm --network none IMAGE true`: "
        f"{min(bare):.2f}-{max(bare):.2f} s (median {bare_median:.2f} s)"
    )
    for source, values in walls.items():
        median = statistics.median(values)
        print(
            f"`evalrepro run +experiment={args.experiment}`, warm ({source or 'this checkout'}): "
            f"{min(values):.2f}-{max(values):.2f} s (median {median:.2f} s): "
            f"{median / bare_median:.2f}x bare {tool} ({args.repeat} rounds)"
        )
    subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    main()
