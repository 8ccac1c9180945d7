"""Where a warm run's time goes: each attempt's timeline, and a profile of the host.

    .venv/bin/python benchmarks/trial_timeline.py [--repeat 3] [--environment docker]
        [--profile N] [--experiment demo] [overrides ...]

Runs ``evalrepro run +experiment=demo`` in this process (``--repeat`` times, a new run
directory each; a first run, not counted, builds what is missing) and times, for every
attempt, on the host's monotonic clock: the host's work before the runtime starts its
container (the spec, the inputs written), the runtime's process started, each event of
the supervisor's stream as it arrives (``start``: the container is up and the
supervisor's Python runs; then ``patch``, ``protect``, ``reset``, ``guard``,
``tests_started``, ``tests_finished``, ``fresh``, ``rerun``, ``done``), the runtime's
process ended (the container removed), and the attempt recorded (observed, scored,
written). Medians per step over every attempt; then the run's own steps: before the
first attempt, the attempts' span, after the last.

``--profile N``: cProfile of the host, every thread (the main thread and each
executor thread that drives trials), the N most expensive functions by their own time
and by cumulative time. The instruments wrap methods of this process only: nothing of
evalrepro is changed. Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from evalrepro import cli
from evalrepro.run.execute import TrialJob
from evalrepro.run.executors.base import Executor
from evalrepro.runtimes.podman import PodmanRuntime
from evalrepro.runtimes.supervision import StreamReader

_local = threading.local()
#: One dict per attempt: step name -> monotonic time.
TIMELINES: list[dict[str, float]] = []
PROFILES: list[cProfile.Profile] = []
MARKS: dict[str, float] = {}


def instrument(profile: bool) -> None:
    next_spec, record, run = TrialJob.next_spec, TrialJob.record, PodmanRuntime.run
    event, drive, popen = StreamReader._event, Executor.drive, PodmanRuntime._run

    def timed_next_spec(self: TrialJob):  # type: ignore[no-untyped-def]
        began = time.monotonic()
        spec = next_spec(self)
        if spec is not None:
            _local.timeline = {"begin": began, "spec": time.monotonic()}
            TIMELINES.append(_local.timeline)
        return spec

    def timed_run(self: PodmanRuntime, spec):  # type: ignore[no-untyped-def]
        _local.timeline["runtime"] = time.monotonic()
        output = run(self, spec)
        _local.timeline["returned"] = time.monotonic()
        return output

    def timed_popen(self: PodmanRuntime, spec, inputs):  # type: ignore[no-untyped-def]
        _local.timeline["inputs"] = time.monotonic()
        return popen(self, spec, inputs)

    def timed_event(self: StreamReader, found):  # type: ignore[no-untyped-def]
        _local.timeline.setdefault(found.event, time.monotonic())
        return event(self, found)

    def timed_record(self: TrialJob, spec, output, started_at, lease=None):  # type: ignore[no-untyped-def]
        attempt = record(self, spec, output, started_at, lease)
        _local.timeline["recorded"] = time.monotonic()
        return attempt

    def profiled_drive(self: Executor, job, events):  # type: ignore[no-untyped-def]
        if not profile:
            return drive(self, job, events)
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            return drive(self, job, events)
        finally:
            profiler.disable()
            PROFILES.append(profiler)

    TrialJob.next_spec = timed_next_spec  # type: ignore[method-assign]
    TrialJob.record = timed_record  # type: ignore[method-assign]
    PodmanRuntime.run = timed_run  # type: ignore[method-assign]
    PodmanRuntime._run = timed_popen  # type: ignore[method-assign]
    StreamReader._event = timed_event  # type: ignore[method-assign]
    Executor.drive = profiled_drive  # type: ignore[method-assign]


STEPS = [
    ("spec and inputs recorded (host)", "begin", "spec"),
    ("runtime: before its run (docker: the image check)", "spec", "runtime"),
    ("runtime: the attempt's input folder", "runtime", "inputs"),
    ("container up, supervisor started (start event)", "inputs", "start"),
    ("patch applied", "start", "patch"),
    ("protect", "patch", "protect"),
    ("reset", "protect", "reset"),
    ("guard", "reset", "guard"),
    ("tests started (hide, state saved)", "guard", "tests_started"),
    ("tests", "tests_started", "tests_finished"),
    ("fresh runs", "tests_finished", "fresh"),
    ("re-runs", "fresh", "rerun"),
    ("last event (done)", "_last", "done"),
    ("container ended and removed", "done", "returned"),
    ("observed, scored, written (host)", "returned", "recorded"),
]


def report(walls: list[float]) -> None:
    print(f"{len(TIMELINES)} attempts; medians (ms), with the range:")
    for name, start, end in STEPS:
        values = []
        for timeline in TIMELINES:
            if start == "_last":
                before = [
                    t for k, t in timeline.items() if k not in ("done", "returned", "recorded")
                ]
                begin = max(before) if before else None
            else:
                begin = timeline.get(start)
            if begin is not None and end in timeline:
                values.append((timeline[end] - begin) * 1000)
        if values:
            print(
                f"  {name:52} {statistics.median(values):7.0f} "
                f"({min(values):.0f}-{max(values):.0f})"
            )
    whole = [(t["recorded"] - t["begin"]) * 1000 for t in TIMELINES if "recorded" in t]
    print(f"  {'whole attempt':52} {statistics.median(whole):7.0f}")
    print(f"runs: {', '.join(f'{w:.2f}' for w in walls)} s")
    for key in ("before", "trials", "after"):
        values = MARKS.get(key)
        if values:
            print(f"  {key}: {values}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--experiment", default="demo")
    parser.add_argument("--environment", default=None)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    command = ["run", f"+experiment={args.experiment}", *args.overrides]
    if args.environment:
        command.append(f"environment={args.environment}")
    root = Path(tempfile.mkdtemp(prefix="trial-timeline-"))
    # The first run builds what is missing and imports everything: not counted.
    if cli.main([*command, "--run-dir", str(root / "warmup")]) != 0:
        raise SystemExit("the warm-up run failed")
    instrument(args.profile > 0)
    walls = []
    main_profile = cProfile.Profile()
    spans: dict[str, list[float]] = defaultdict(list)
    for index in range(args.repeat):
        first = len(TIMELINES)
        began = time.monotonic()
        if args.profile:
            main_profile.enable()
        code = cli.main([*command, "--run-dir", str(root / f"run-{index}")])
        if args.profile:
            main_profile.disable()
        ended = time.monotonic()
        if code != 0:
            raise SystemExit(f"run {index} failed")
        walls.append(ended - began)
        mine = TIMELINES[first:]
        spans["before"].append(min(t["begin"] for t in mine) - began)
        spans["trials"].append(max(t["recorded"] for t in mine) - min(t["begin"] for t in mine))
        spans["after"].append(ended - max(t["recorded"] for t in mine))
    for key, values in spans.items():
        MARKS[key] = round(statistics.median(values), 3)  # type: ignore[assignment]
    shutil.rmtree(root, ignore_errors=True)
    report(walls)
    if args.profile:
        stats = pstats.Stats(main_profile)
        for profiler in PROFILES:
            stats.add(profiler)
        for order in ("tottime", "cumulative"):
            print(f"--- host profile, every thread, by {order} ---")
            stats.sort_stats(order).print_stats(args.profile)


if __name__ == "__main__":
    main()
