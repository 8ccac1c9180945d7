"""A bundle's README.txt: for a reviewer who has no evalrepro, what the bundle holds and
how to check it with plain tools (bagit.py, sha256sum, ssh-keygen).

It is presentation: every fact in it is read from the bundle's records (its index, the
run's report, the lockfile) and from the signing key's fingerprint. The commands in it
are run by a test on a real bundle (tests/test_bundle.py), as written here.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from evalrepro.publish.signing import NAMESPACE

if TYPE_CHECKING:
    from evalrepro.publish.signing import SigningKey
    from evalrepro.records.bundle import BundleIndex
    from evalrepro.records.lockfile import Lockfile
    from evalrepro.records.report import RunReport

#: The placeholder in the signature command for the signer's name, as the author
#: published it in their allowed-signers line.
PRINCIPAL = "AUTHOR"
_WIDTH = 88


def readme_text(
    bag: str,
    index: BundleIndex,
    lockfile: Lockfile,
    report: RunReport,
    signing: SigningKey | None,
) -> str:
    """The README of the bag named ``bag``, from its records."""
    metrics = report.metrics
    gate = "passes" if report.gate_passed else "does not pass"
    summary = (
        f"Target {index.target_id}: {metrics.planned} trials on {lockfile.dataset.name}, "
        f"{metrics.resolved} resolved, {metrics.unresolved} unresolved, "
        f"{metrics.invalid} invalid, {metrics.missing} missing. The gate "
        f"{report.gate_name} {gate}. Made by evalrepro {index.evalrepro_version}. The "
        "run's lockfile, which names every input by digest, has sha256 "
        f"{index.lockfile_sha256.removeprefix('sha256:')}."
    )
    lines = [
        f"evalrepro result bundle: {index.experiment}",
        "",
        *textwrap.wrap(summary, _WIDTH, break_long_words=False),
        "",
        f"This folder ({bag}/) is a BagIt bag (RFC 8493). What it holds:",
        "",
    ]
    roles = {item.role for item in index.inputs}
    entries = [
        ("bagit.txt, bag-info.txt", "the bag's declaration and description"),
        ("manifest-sha256.txt", "the sha256 of every file under data/"),
        ("tagmanifest-sha256.txt", "the sha256 of the manifest and the files above"),
    ]
    if signing is not None:
        entries.append(("tagmanifest-sha256.txt.sig", "the author's SSH signature of it"))
    entries += [
        ("data/README.txt", "this file"),
        (
            f"data/{index.run}/",
            "the run directory as evalrepro wrote it: lockfile.lock.json (the plan), "
            "trials/ (each trial's patch, test log and result), results.json",
        ),
        ("data/reports/", "report.json, report.md, report.html: the run's report"),
        ("data/view/index.html", "the trial viewer: open it in a browser"),
        ("data/inputs/", _inputs(roles)),
    ]
    if "build" in roles:
        entries.append(("data/build-inputs/", "the pinned build inputs, by their pin's digest"))
    entries += [(f"data/{archive}", "the run's container images") for archive in index.images]
    entries += [
        ("data/bundle.json", "the index: each input, and how the reports were made"),
        (
            "data/attestation.intoto.json",
            "an in-toto Statement (Test Result): every other file under data/ by sha256, "
            "and the trials that passed and failed",
        ),
    ]
    if index.envelope is not None:
        entries.append(
            (f"data/{index.envelope}", "the Statement in a DSSE envelope, signed by the author")
        )
    entries.append(("data/ro-crate-metadata.json", "RO-Crate metadata (Process Run Crate)"))
    width = max(len(name) for name, _ in entries) + 2
    for name, what in entries:
        lines += textwrap.wrap(
            what,
            _WIDTH,
            initial_indent=f"  {name.ljust(width)}",
            subsequent_indent=" " * (width + 2),
            break_long_words=False,
        )
    lines += [
        "",
        f"How to check it without evalrepro, from inside {bag}/:",
        "",
        "  Every file against the manifests (BagIt's tool: pip install bagit):",
        "    $ bagit.py --validate .",
        "  The same with coreutils' sha256sum:",
        "    $ sha256sum --check --quiet manifest-sha256.txt",
        "    $ sha256sum --check --quiet tagmanifest-sha256.txt",
    ]
    if signing is None:
        lines += ["  The bundle is not signed."]
    else:
        lines += [
            f"  The author's signature: the bundle is signed by the {signing.kind} key",
            f"  {signing.fingerprint}. Put the line the author published",
            f'  ({PRINCIPAL} namespaces="{NAMESPACE}" {signing.kind} AAAA...) in a file',
            f"  allowed_signers, then, with {PRINCIPAL} the name it starts with:",
            f"    $ ssh-keygen -Y verify -f allowed_signers -I {PRINCIPAL} -n {NAMESPACE} "
            "-s tagmanifest-sha256.txt.sig < tagmanifest-sha256.txt",
            "  The tag manifest holds the manifest's sha256, which holds every file's: the",
            "  signature covers every byte under data/. The DSSE envelope is signed by the same",
            "  key; in-toto's tools (securesystemslib) verify it.",
        ]
    lines += [
        "",
        "These show that the files are the ones the author bundled. That the numbers follow",
        "from the logs and the logs from the plan is what `evalrepro verify` checks (it",
        "re-grades every log and makes the reports again), and `evalrepro reproduce` runs",
        "the trials again.",
        f"Report settings: {index.reports.confidence:.0%} intervals, "
        f"{index.reports.n_resamples} resamples, seed {index.reports.seed}.",
        "",
    ]
    return "\n".join(lines)


def _inputs(roles: set[str]) -> str:
    named = [
        what
        for role, what in (("dataset", "dataset"), ("predictions", "predictions"))
        if role in roles
    ]
    if len(named) == 1:
        return f"the {named[0]} file, under its sha256"
    return f"the {' and '.join(named)} files, each under its sha256"
