"""``evalrepro run``: config -> plan -> execute -> report, into a run directory.

Run directory (default ``runs/<experiment>-<UTC time>/``)::

    config.json            the validated, composed config
    plan.json              every trial with its id components and image chain
    trials/<label>/        one per trial: attempt-N/ (artifacts + Attempt record),
                           result.json (the TrialResult: the source of truth)
    results.json           the aggregate, rebuilt from the trial results
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from evalrepro import atomic
from evalrepro.backends import get_backend
from evalrepro.backends.base import Backend, BuildFailure, ImageChain
from evalrepro.config import ExperimentConfig
from evalrepro.execute import Executor
from evalrepro.plan import Plan, build_plan
from evalrepro.progress import TrialProgress
from evalrepro.report import RunResults, aggregate, print_results


def default_cache_dir() -> Path:
    if os.environ.get("EVALREPRO_CACHE"):
        return Path(os.environ["EVALREPRO_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "evalrepro"


def run_experiment(
    config: ExperimentConfig, console: Console, *, run_dir: Path | None, cache_dir: Path
) -> RunResults:
    backend = get_backend(config.environment, cache_dir)
    backend.check()
    console.print(f"[bold]{config.name}[/]: resolving the plan and its images ...")
    plan = build_plan(config, backend, cache_dir)
    _print_images(console, plan)

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    # Absolute: podman mounts the attempt files by path.
    run_dir = (run_dir or config.run.output_dir / f"{config.name}-{stamp}").resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic.write_text(run_dir / "config.json", config.model_dump_json(indent=2) + "\n")
    record = {"backend": backend.describe(), **_plan_record(plan)}
    atomic.write_text(run_dir / "plan.json", json.dumps(record, indent=2) + "\n")
    _write_image_artifacts(run_dir, plan, backend)

    executor = Executor(
        backend,
        run_dir,
        timeout=config.environment.timeout,
        max_attempts=config.environment.max_attempts,
        max_workers=config.environment.max_workers,
    )
    try:
        with TrialProgress(console, len(plan.trials)) as progress:
            results = executor.run(plan.trials, progress)
    finally:
        backend.close()
    summary = aggregate(config.name, plan.target_id, results)
    atomic.write_text(run_dir / "results.json", summary.model_dump_json(indent=2) + "\n")
    print_results(console, summary)
    console.print(f"run directory: {run_dir}")
    return summary


def _write_image_artifacts(run_dir: Path, plan: Plan, backend: Backend) -> None:
    """Each base image's installed packages (name=version), beside the run's results."""
    for image in plan.images:
        if not isinstance(image, ImageChain):
            continue
        base = image.layers[0]
        manifest = backend.package_manifest(base)
        target = run_dir / "images" / f"{base.tag.rsplit(':', 1)[1]}.packages.txt"
        if manifest is not None and not target.exists():
            atomic.write_bytes(target, manifest.read_bytes())


def _plan_record(plan: Plan) -> dict:
    return {
        "target_id": plan.target_id,
        "trials": [
            {
                "label": planned.label,
                "trial_id": planned.trial.trial_id,
                "key": planned.trial.key.model_dump(mode="json"),
                "image": planned.image.model_dump(mode="json"),
            }
            for planned in plan.trials
        ],
    }


def _print_images(console: Console, plan: Plan) -> None:
    layers: dict[str, tuple[str, bool]] = {}
    failures: dict[str, BuildFailure] = {}
    for image in plan.images:
        if isinstance(image, ImageChain):
            for record in image.layers:
                layers[record.key] = (record.layer, record.built)
        else:
            failures[image.key] = image
    built = sum(1 for _, was_built in layers.values() if was_built)
    console.print(
        f"images: {len(layers)} layers, {built} built now, {len(layers) - built} reused"
        + (f"; [red]{len(failures)} failed[/]" if failures else "")
    )
    for failure in failures.values():
        console.print(
            f"  [red]{failure.layer} layer failed[/]: {failure.reason}"
            + (f" (log: {failure.build_log})" if failure.build_log else ""),
            highlight=False,
        )
