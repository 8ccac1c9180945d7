"""``evalrepro verify``: are two experiments comparable (A B)? Does a run directory or a
bundle hold up (RUN)? Exit 1 when not."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from evalrepro.commands._arguments import json_argument
from evalrepro.commands._common import EXIT_CHECK_FAILED, EXIT_OK, make_console
from evalrepro.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    verify = subparsers.add_parser(
        "verify",
        help="are two experiments comparable? (A B); does a run directory hold up? (RUN)",
        description="With two lockfiles or run directories: exit 0 when they are comparable, "
        "1 otherwise, listing each difference by class. With one run directory: check its "
        "lockfile, results, artifact digests, aggregate and re-graded scores; exit 0 when all "
        "hold. With a bundle (archive or unpacked folder): all of that on the run inside, and "
        "its checksums, signature, RO-Crate, attestation and reports; offline, without podman "
        "or Nix.",
    )
    verify.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="A B (lockfiles or run directories), or RUN",
    )
    verify.add_argument(
        "--same-target",
        action="store_true",
        help="a reproduction check: the targets must match too (default: they may differ)",
    )
    verify.add_argument(
        "--allowed-signers",
        type=Path,
        metavar="FILE",
        help="a bundle must be signed by a key this file lists (ssh-keygen's ALLOWED SIGNERS): "
        "its manifests and its statement's DSSE envelope",
    )
    verify.add_argument(
        "--ro-crate-profiles",
        action="store_true",
        help="a bundle's RO-Crate is also validated against its profiles (SHACL: seconds, "
        "once per crate on this machine; by default every file's entry and digest is checked)",
    )
    json_argument(verify, "print one JSON object")
    return verify


def main(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from evalrepro.publish.bundle import is_bundle, run_directory
    from evalrepro.publish.verify import check_run, compare, print_comparison, print_run_check

    if len(args.paths) > 2:
        raise UserError(
            "verify takes two lockfiles, run directories or bundles, or one run or bundle"
        )
    if len(args.paths) == 1:
        if args.same_target:
            raise UserError("--same-target compares two lockfiles, run directories or bundles")
        if is_bundle(args.paths[0]):
            from evalrepro.cache import default_cache_dir
            from evalrepro.publish.bundle_verify import check_bundle, print_bundle_check

            bundle_check = check_bundle(
                args.paths[0],
                allowed_signers=args.allowed_signers,
                profiles=args.ro_crate_profiles,
                cache_dir=default_cache_dir(),
            )
            if args.json:
                print(json.dumps(bundle_check.payload(), indent=2))
            else:
                print_bundle_check(make_console(), bundle_check)
            return EXIT_OK if bundle_check.ok else EXIT_CHECK_FAILED
        if args.allowed_signers is not None:
            raise UserError("--allowed-signers checks a bundle's signature; this is a run")
        if args.ro_crate_profiles:
            raise UserError("--ro-crate-profiles checks a bundle's RO-Crate; this is a run")
        check = check_run(args.paths[0])
        if args.json:
            print(json.dumps(check.payload(), indent=2))
        else:
            print_run_check(make_console(), check)
        return 0 if check.ok else 1
    with ExitStack() as stack:
        first, second = (stack.enter_context(run_directory(path)) for path in args.paths)
        comparison = compare(first, second, same_target=args.same_target)
    # Named as given: a bundle's run was unpacked into a folder that is gone now.
    comparison = dataclasses.replace(comparison, first=args.paths[0], second=args.paths[1])
    if args.json:
        print(json.dumps(comparison.payload(), indent=2))
    else:
        print_comparison(make_console(), comparison)
    return 0 if comparison.comparable else 1
