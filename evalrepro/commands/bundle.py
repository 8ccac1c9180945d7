"""``evalrepro bundle``: write a run as one archive a reviewer verifies offline and
reproduces."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from evalrepro.commands._arguments import cache_argument, output_argument, run_argument
from evalrepro.commands._common import EXIT_OK, make_console


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    bundle = subparsers.add_parser(
        "bundle",
        help="write a run as one archive a reviewer verifies offline and reproduces",
        description="A deterministic .tar.gz holding a BagIt bag: the run directory, its "
        "reports and trial viewer, the dataset and predictions files, an RO-Crate (Process "
        "Run Crate), an in-toto Test Result statement and a README for a reviewer without "
        "evalrepro. The run must pass `verify RUN`.",
    )
    run_argument(bundle)
    output_argument(bundle, metavar="FILE", help="default: RUN_DIR.bundle.tar.gz", short=True)
    bundle.add_argument(
        "--with-images",
        action="store_true",
        help="add the images (OCI layout): a reviewer then needs no builder",
    )
    bundle.add_argument(
        "--with-inputs",
        action="store_true",
        help="add every pinned build input (.debs, wheels): the images rebuild offline",
    )
    bundle.add_argument(
        "--sign",
        type=Path,
        metavar="KEY",
        help="sign the manifests with this SSH private key (ssh-keygen -Y sign), and the "
        "in-toto statement with it as a DSSE envelope",
    )
    cache_argument(bundle)
    return bundle


def main(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import write_bundle

    run = Path(args.run)
    output = args.output or run.resolve().with_name(run.resolve().name + ".bundle.tar.gz")
    summary = write_bundle(
        run,
        output,
        with_images=args.with_images,
        with_inputs=args.with_inputs,
        sign_key=args.sign,
        cache_dir=args.cache_dir,
    )
    extras = [
        "signed" if summary.signed else "",
        "with images" if summary.images else "",
        f"{summary.inputs} inputs",
        f"{summary.deduplicated} duplicate files stored once" if summary.deduplicated else "",
    ]
    make_console().print(
        Text(
            f"bundle: {summary.path} ({_size(summary.bytes)}, {summary.files} files; "
            + ", ".join(e for e in extras if e)
            + ")"
        ),
        highlight=False,
    )
    return EXIT_OK


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count} B"
