"""Shared pieces of the container tests: real podman, the demo experiments, one cache.

The image cache is shared by all container tests of a session (and, by default, with
the user's own evalrepro cache), so the three layers are built once. Container tests
run in one xdist group: two workers must not build the same image at once.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.cache import default_cache_dir
from evalrepro.config.experiment import ExperimentConfig, compose
from evalrepro.pipeline import run_experiment
from evalrepro.run.execute import container_prefix
from evalrepro.runtimes.podman import backend_files

needs_podman = [
    pytest.mark.podman,
    pytest.mark.xdist_group("podman"),
    pytest.mark.skipif(
        shutil.which("podman") is None and not os.environ.get("CI"),
        reason="podman is not installed (scripts/setup installs it; CI requires it)",
    ),
]


def polyglot_debs() -> list[str]:
    """demo_polyglot's Debian packages: every language's toolchain and the libraries of
    tests/languages' projects. The container tests that need a toolchain name all of them,
    so that they share one base image with the demo and the language tests (one build)."""
    from evalrepro.config.experiment import compose

    (spec,) = {
        str(s["1.0"].debs): s["1.0"]
        for s in compose(["+experiment=demo_polyglot"]).dataset.specs.values()
    }.values()
    return list(spec.debs)


def cache_dir() -> Path:
    return Path(os.environ.get("EVALREPRO_TEST_CACHE") or default_cache_dir())


def demo_config(experiment: str, *overrides: str) -> ExperimentConfig:
    # A short timeout keeps the demo's looping patch from holding the suite up.
    return compose([f"+experiment={experiment}", "environment.timeout=10", *overrides])


def run_demo(config: ExperimentConfig, run_dir: Path) -> tuple[object, str]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=False)
    results = run_experiment(config, console, run_dir=run_dir, cache_dir=cache_dir()).results
    return results, buffer.getvalue()


def sandboxes_left(run_dir: Path) -> list[str]:
    """The containers of a run directory's attempts (agent sandboxes included) that are
    still in podman's store, in any state: what the harness must have removed, with
    everything they held (files written, memory), when a trial ends."""
    env = {**os.environ, "CONTAINERS_CONF": str(backend_files() / "containers.conf")}
    listed = subprocess.run(
        ["podman", "ps", "--all", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    prefix = container_prefix(run_dir.resolve())
    return [name for name in listed.stdout.split() if name.startswith(prefix)]


def strays(run_dir: Path, uid: int) -> list[str]:
    """Processes of host ``uid`` that live in no container of another run: what this run
    directory's trials left behind. (Other tests' containers, running meanwhile under the
    same sub-uid, hold processes of that uid that are theirs, not this run's.)"""
    env = {**os.environ, "CONTAINERS_CONF": str(backend_files() / "containers.conf")}
    listed = subprocess.run(
        ["podman", "ps", "--format", "{{.Names}} {{.Pid}}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    prefix = container_prefix(run_dir.resolve())
    others = set()
    for line in listed.stdout.splitlines():
        name, _, pid = line.partition(" ")
        if not name.startswith(prefix):
            try:
                others.add(os.readlink(f"/proc/{pid.strip()}/ns/pid"))
            except (OSError, ValueError):
                continue  # not started yet, or gone meanwhile
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or entry.stat().st_uid != uid:
                continue
            if os.readlink(entry / "ns" / "pid") not in others:
                found.append(f"{entry.name} {(entry / 'comm').read_text().strip()}")
        except OSError:
            continue  # gone meanwhile
    return found


def processes_with(marker: bytes) -> list[str]:
    """Host processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found
