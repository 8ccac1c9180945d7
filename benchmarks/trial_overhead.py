"""Harness overhead per trial, and the demo's wall time cold and warm.

    .venv/bin/python benchmarks/trial_overhead.py [--repeat 20] [--cold] [--canaries]

Overhead = wall time of a full trial whose test command does nothing (patch apply,
eval script, container, log, observation, score, artifacts with digests, result files)
minus a bare ``podman run --rm --network none IMAGE true``; medians over ``--repeat`` runs of each.
``--cold`` also times the demo from an empty image store and cache (it removes every
``localhost/evalrepro-*`` image of this user first), then warm (nothing to build).
``--canaries`` also times, alternating, trials with the canaries and twins on and off
(``dataset.protection.canaries``): the no-op trial (drawing and placing them, none run)
and calc-1's gold trial with its real test command (they run too); medians side by side.
Run it as the user who runs evalrepro (rootless); results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console

from evalrepro.cache import default_cache_dir
from evalrepro.config.executor import SerialExecutorConfig
from evalrepro.config.experiment import compose
from evalrepro.config.spec import RepoSpec
from evalrepro.pipeline import run_experiment
from evalrepro.plan.plan import build_plan
from evalrepro.records.supervision import SupervisorReport
from evalrepro.run.backend import Backend
from evalrepro.run.executors import run_trials


def noop_config(*, noop: bool = True, canaries: bool = True):
    config = compose(["+experiment=demo"])
    specs = {repo: dict(versions) for repo, versions in config.dataset.specs.items()}
    spec = specs["demo/calc"]["1.0"]
    if noop:
        specs["demo/calc"]["1.0"] = RepoSpec(
            **{**spec.model_dump(), "test_cmd": "true", "test_directives": []}
        )
    protection = config.dataset.protection.model_copy(update={"canaries": canaries})
    dataset = config.dataset.model_copy(update={"specs": specs, "protection": protection})
    return config.model_copy(update={"dataset": dataset})


def median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def overhead(repeat: int, cache: Path) -> None:
    config = noop_config()
    backend = Backend.open(config.environment, cache)
    backend.check()
    plan = build_plan(config, backend.builder, cache)
    planned = next(p for p in plan.trials if p.sample.repo == "demo/calc")
    image = planned.image.image.tag
    env = {**os.environ, "CONTAINERS_CONF": backend.runtime.env["CONTAINERS_CONF"]}
    bare = median_seconds(
        lambda: subprocess.run(
            ["podman", "run", "--rm", "--network", "none", image, "true"],
            env=env,
            check=True,
            capture_output=True,
        ),
        repeat,
    )
    with tempfile.TemporaryDirectory() as scratch:
        environment = config.environment.model_copy(update={"timeout": 60})
        counter = iter(range(10**6))

        def one_trial() -> None:
            trial = planned.trial.model_copy(update={"trial_id": f"bench-{next(counter)}"})
            (result,) = run_trials(
                [dataclasses.replace(planned, trial=trial)],
                runtime=backend.runtime,
                run_dir=Path(scratch),
                environment=environment,
                executor=SerialExecutorConfig(max_attempts=1),
            )
            # A no-op test command prints no results (the score is invalid); what is
            # measured is that the whole attempt ran, without an infrastructure error.
            assert result.attempts[0].observation.infrastructure_error is None, result.score

        trial = median_seconds(one_trial, repeat)
    print(f"bare `podman run --rm IMAGE true`:   {bare * 1000:.0f} ms (median of {repeat})")
    print(f"full no-op trial:                 {trial * 1000:.0f} ms (median of {repeat})")
    print(f"harness overhead per trial:       {(trial - bare) * 1000:.0f} ms")


def canaries_on_and_off(repeat: int, cache: Path) -> None:
    """Trials with the canaries and twins on and off, alternating (so that the machine's
    load falls on both alike): the no-op trial and calc-1's gold trial."""
    for noop in (True, False):
        trials = {}
        for canaries in (True, False):
            config = noop_config(noop=noop, canaries=canaries)
            backend = Backend.open(config.environment, cache)
            plan = build_plan(config, backend.builder, cache)
            planned = next(p for p in plan.trials if p.sample.instance_id == "demo__calc-1")
            trials[canaries] = (config, backend, planned)
        times: dict[bool, list[float]] = {True: [], False: []}
        # The supervisor's own clock (supervisor.json): the reset (where canaries are
        # placed) and the tests (where they run), far less noisy than a trial's wall time.
        phases: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        placed: dict[bool, int] = {}
        with tempfile.TemporaryDirectory() as scratch:
            counter = iter(range(10**6))
            for _ in range(repeat):
                for canaries, (config, backend, planned) in trials.items():
                    trial = planned.trial.model_copy(update={"trial_id": f"bench-{next(counter)}"})
                    started = time.perf_counter()
                    (result,) = run_trials(
                        [dataclasses.replace(planned, trial=trial)],
                        runtime=backend.runtime,
                        run_dir=Path(scratch),
                        environment=config.environment.model_copy(update={"timeout": 60}),
                        executor=SerialExecutorConfig(max_attempts=1),
                    )
                    times[canaries].append(time.perf_counter() - started)
                    observation = result.attempts[0].observation
                    assert observation.infrastructure_error is None, result.score
                    if not noop:
                        assert str(result.score.outcome) == "resolved", result.score.detail
                    placed[canaries] = len(observation.canaries)
                    (found,) = [
                        f
                        for f in Path(scratch).rglob("supervisor.json")
                        if trial.trial_id in str(f)
                    ]
                    report = SupervisorReport.model_validate_json(found.read_bytes())
                    assert report.reset is not None and report.tests is not None
                    phases[canaries].append((report.reset.seconds, report.tests.seconds))
        on, off = (statistics.median(times[c]) for c in (True, False))
        label = "no-op trial (`true`)" if noop else "calc-1 gold trial (pytest)"
        print(
            f"{label:28} canaries and twins on: {on * 1000:.0f} ms ({placed[True]} placed), "
            f"off: {off * 1000:.0f} ms; difference {(on - off) * 1000:+.0f} ms "
            f"(medians of {repeat}; on {min(times[True]) * 1000:.0f}-"
            f"{max(times[True]) * 1000:.0f}, off {min(times[False]) * 1000:.0f}-"
            f"{max(times[False]) * 1000:.0f})"
        )
        for canaries in (True, False):
            reset = statistics.median(r for r, _ in phases[canaries]) * 1000
            tests = statistics.median(t for _, t in phases[canaries]) * 1000
            print(
                f"{'':28} {'on ' if canaries else 'off'}: the supervisor's reset {reset:.0f} ms, "
                f"tests {tests:.0f} ms (medians)"
            )


def demo_wall_time(cache: Path, label: str) -> None:
    console = Console(file=io.StringIO())
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        run_experiment(
            compose(["+experiment=demo"]), console, run_dir=Path(scratch) / "run", cache_dir=cache
        )
        print(f"demo (12 gold trials), {label}: {time.perf_counter() - started:.1f} s")


def remove_evalrepro_images() -> None:
    listed = subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ours = [name for name in listed if name.startswith("localhost/evalrepro-")]
    if ours:
        subprocess.run(["podman", "rmi", "--force", *ours], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cold", action="store_true", help="also time the demo from nothing")
    parser.add_argument(
        "--canaries", action="store_true", help="also time trials with canaries on and off"
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
        f"{'rootless' if os.geteuid() else 'root'} podman"
    )
    cache = default_cache_dir()
    if args.cold:
        remove_evalrepro_images()
        cold_cache = Path(tempfile.mkdtemp(prefix="evalrepro-cold-"))
        demo_wall_time(cold_cache, "cold (empty store and cache, rootfs built by mmdebstrap)")
        demo_wall_time(cold_cache, "warm (nothing to build)")
        cache = cold_cache
    overhead(args.repeat, cache)
    if args.canaries:
        canaries_on_and_off(args.repeat, cache)


if __name__ == "__main__":
    main()
