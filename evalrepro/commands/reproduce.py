"""``evalrepro reproduce``: run a bundle's trials again and say, trial by trial, whether
they agree (exit 1: some disagree; 4: not reproducible here, nothing ran)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from evalrepro.commands._arguments import (
    cache_argument,
    json_argument,
    run_dir_argument,
    seed_argument,
)
from evalrepro.commands._common import (
    EXIT_CHECK_FAILED,
    EXIT_NOT_REPRODUCIBLE,
    EXIT_OK,
    make_console,
)

if TYPE_CHECKING:
    from evalrepro.config.experiment import ExecutorConfig


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    reproduce = subparsers.add_parser(
        "reproduce",
        help="run a bundle's trials again; say trial by trial whether they agree",
        description="Verify the bundle, load its images (or rebuild them from the lockfile's "
        "pins; a digest that differs stops it, naming the input), run all trials or a seeded "
        "sample, and compare outcome, resolution and every test's status with the bundle. A "
        "test that disagrees is classified: harness change, flaky, environment drift. Exit "
        "0: all agree; 1: some disagree; 2: a user error; 4: not reproducible here (nothing "
        "ran).",
    )
    reproduce.add_argument("bundle", type=Path, metavar="BUNDLE")
    reproduce.add_argument(
        "--sample", type=int, metavar="N", help="a random sample of N trials (default: all)"
    )
    seed_argument(reproduce, "the sample's seed")
    reproduce.add_argument(
        "--reruns",
        type=int,
        default=2,
        metavar="K",
        help="run a disagreeing trial K more times to tell flaky from drift (default 2)",
    )
    reproduce.add_argument(
        "--executor",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="where the attempts run, as executor settings (kind=dask address=tcp://...; "
        "repeat the flag): the reproducer's, never the bundle's (default: kind=local)",
    )
    run_dir_argument(reproduce, "default: runs/reproduce-<run>-<time>")
    json_argument(reproduce, "print the Reproduction record")
    cache_argument(reproduce)
    return reproduce


def main(args: argparse.Namespace) -> int:
    from evalrepro.cache import default_cache_dir
    from evalrepro.pipeline import PlanMismatch
    from evalrepro.publish.reproduce import print_reproduction, reproduce

    console = make_console()
    executor = _executor(args.executor)
    try:
        reproduction = reproduce(
            args.bundle,
            console,
            run_dir=args.run_dir,
            cache_dir=args.cache_dir or default_cache_dir(),
            sample=args.sample,
            seed=args.seed,
            reruns=args.reruns,
            executor=executor,
        )
    except PlanMismatch as mismatch:
        for difference in mismatch.differences:
            console.print(Text(f"  {difference.kind}: {difference.detail}"), highlight=False)
        console.print(
            "[bold red]not reproducible here[/]: the plan made here is not the bundle's "
            "(an image or a locked input differs); nothing ran"
        )
        if any(d.kind == "images" for d in mismatch.differences):
            console.print(
                "an image differs: each line says which input; with the same inputs, a bundle "
                "made --with-images brings the author's images, or build as the author did "
                "(the same podman version and storage driver, or environment.builder=nix, "
                "whose bytes do not depend on them)"
            )
        return EXIT_NOT_REPRODUCIBLE
    if args.json:
        print(reproduction.model_dump_json(indent=2))
    else:
        print_reproduction(console, reproduction)
    return EXIT_OK if reproduction.agreeing == len(reproduction.trials) else EXIT_CHECK_FAILED


def _executor(settings: list[str]) -> ExecutorConfig:
    """``--executor KEY=VALUE ...`` as an executor config (values read as YAML scalars)."""
    import yaml
    from pydantic import TypeAdapter, ValidationError

    from evalrepro.config.experiment import ExecutorConfig as Executors
    from evalrepro.errors import UserError, validation_message

    raw: dict[str, object] = {"kind": "local"}
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key:
            raise UserError(f"--executor {setting}: expected KEY=VALUE (kind=dask)")
        raw[key] = yaml.safe_load(value) if value else ""
    try:
        return TypeAdapter(Executors).validate_python(raw)
    except ValidationError as error:
        raise UserError(f"--executor: {validation_message(error)}") from None
