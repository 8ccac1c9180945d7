"""Cold and warm builds of the demo's images with each builder, and their sizes per layer.

    .venv/bin/python benchmarks/image_builds.py [--builders containerfile nix] [--cold]

For each builder, ``evalrepro lock +experiment=demo environment.builder=KIND`` (every
image built or found, no trial) is timed:

* ``--cold``: first from an empty evalrepro cache and with none of the demo's images in
  podman (this user's ``localhost/evalrepro-*`` images are removed); Nix's store keeps
  what it built (its fixed-output inputs and derivations: a cold Nix store is
  ``nix-store --realise --check``'s time, which the Nix tests measure);
* warm: again, with everything there (the check that nothing needs building).

Then each distinct instance image's layers (``podman history``: size of each layer, top
first). Run it as the user who runs evalrepro (rootless); results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console

from evalrepro.cache import default_cache_dir
from evalrepro.config.experiment import compose
from evalrepro.pipeline import lock_experiment


def remove_images() -> None:
    names = subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ours = [n for n in names if n.startswith("localhost/evalrepro-")]
    if ours:
        subprocess.run(["podman", "rmi", "--force", *ours], capture_output=True, check=False)


def lock(builder: str, cache: Path, output: Path) -> tuple[float, object]:
    config = compose(["+experiment=demo", f"environment.builder={builder}"])
    console = Console(file=io.StringIO())
    started = time.perf_counter()
    lockfile = lock_experiment(config, console, output=output, cache_dir=cache, update=True)
    return time.perf_counter() - started, lockfile


def layer_sizes(tag: str) -> list[tuple[int, str]]:
    """(bytes, what made it) of each layer with content, top first."""
    done = subprocess.run(
        ["podman", "history", "--human=false", "--format", "json", tag],
        capture_output=True,
        text=True,
        check=True,
    )
    return [(row["size"], row["CreatedBy"][:60]) for row in json.loads(done.stdout) if row["size"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builders", nargs="+", default=["containerfile", "nix"])
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    for builder in args.builders:
        output = Path(tempfile.mkdtemp()) / "lock.json"
        if args.cold:
            remove_images()
            cache = Path(tempfile.mkdtemp(prefix="evalrepro-cold-"))
            seconds, _ = lock(builder, cache, output)
            print(f"{builder}: cold {seconds:.1f} s (empty cache {cache}, no images)")
        else:
            cache = default_cache_dir()
        seconds, lockfile = lock(builder, cache, output)
        print(f"{builder}: warm {seconds:.1f} s")
        tops = {t.image_key for t in lockfile.trials}  # type: ignore[attr-defined]
        for image in lockfile.environment.images:  # type: ignore[attr-defined]
            if image.key not in tops:
                continue
            rows = layer_sizes(image.tag)
            total = sum(size for size, _ in rows)
            listed = ", ".join(f"{size / 1e6:.2f} MB" for size, _ in rows)
            print(
                f"  {image.tag}: {total / 1e6:.1f} MB in {len(rows)} layers (top first: {listed})"
            )


if __name__ == "__main__":
    main()
