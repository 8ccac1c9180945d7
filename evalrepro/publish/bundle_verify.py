"""``evalrepro verify BUNDLE``: a bundle checked from its own bytes, offline.

Nothing here runs podman or Nix or reaches the network. Every problem is listed, one
line each, by the check that found it:

``checksum``     the bag: every payload file against the manifest, the manifests
                 against the tag manifest, no file the manifest does not list
``signature``    the tag manifest's SSH signature and the attestation's DSSE envelope,
                 against an allowed-signers file
``bundle``       the index (bundle.json): readable, its inputs where and what it says
``attestation``  the in-toto statement: every file a subject, by its sha256
``crate``        the RO-Crate metadata: valid (Process Run Crate, RO-Crate 1.3), and
                 every file it describes with its sha256
``lockfile``     the lockfile: its digests, and the digest the index recorded
``predictions``  the bundled predictions give the patches the lockfile locked
``report``       the reports and the trial viewer, made again from the trial results
and every check of ``verify RUN`` on the run inside (trials present, results, artifact
digests, the aggregate, each log re-graded with its parser and TestSpec).

An adversary who rewrites a file and its manifest line is caught by the checks that
read meaning (the artifact digests in a result, the aggregate, the re-grade, the
reports); one who rewrites everything consistently writes a different bundle, which
only a signature by a key the reviewer trusts tells apart.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from evalrepro import __version__
from evalrepro.console import Table
from evalrepro.digest import sha256_bytes, sha256_file, short_digest
from evalrepro.errors import UserError
from evalrepro.files import read_regular_file
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.publish.bundle import (
    ATTESTATION,
    BUILD_INPUTS,
    CRATE,
    ENVELOPE,
    IMAGES,
    INPUTS,
    SIGNATURE,
    SIGNED_FILE,
    OpenedBundle,
    bundle_report,
    open_bundle,
    payload_files,
    render_reports,
)
from evalrepro.publish.verify import Problem, RunCheck, check_run
from evalrepro.records.bundle import BundleIndex
from evalrepro.records.lockfile import Lockfile

_HEX = re.compile(r"[0-9a-f]{64}")
#: What ``verify`` says of a bundle without a signature.
UNSIGNED_NOTE = (
    "unsigned: these checks find an edit that breaks a digest or a meaning they re-derive; "
    "an edit with its digests recomputed (a gate threshold in the lockfile, say) cannot be "
    "told apart from the author's bundle without a signature (bundle --sign, verify "
    "--allowed-signers)"
)
#: The largest metadata file read (the crate and the statement list every file).
_MAX_METADATA = 256 << 20


@dataclass
class BundleCheck(RunCheck):
    """A run check (``run`` is the bundle) with the bundle's own: files, signer, notes."""

    files: int = 0
    #: Who signed it, when a signature was checked and holds.
    signer: str | None = None
    notes: list[str] = field(default_factory=list)
    #: Wall seconds of each check, in the order they ran.
    seconds: dict[str, float] = field(default_factory=dict)
    #: The problems grouped by what caused them (:func:`causes`).
    causes: list[Cause] = field(default_factory=list)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(time.perf_counter() - started, 3)

    @property
    def bundle(self) -> Path:
        return self.run

    def payload(self) -> dict:
        payload = super().payload()
        payload["bundle"] = str(payload.pop("run"))
        return {
            **payload,
            "files": self.files,
            "signer": self.signer,
            "notes": self.notes,
            "seconds": self.seconds,
            "causes": [
                {
                    "lead": cause.lead.model_dump() if cause.lead else None,
                    "files": cause.files,
                    "follow": [p.model_dump() for p in cause.follow],
                }
                for cause in self.causes
            ],
        }


def check_bundle(
    path: Path,
    *,
    allowed_signers: Path | None = None,
    profiles: bool = False,
    cache_dir: Path | None = None,
) -> BundleCheck:
    """Every problem of the bundle at ``path`` (an archive or an unpacked folder).

    ``profiles``: also validate the RO-Crate against its profiles (SHACL, seconds; kept in
    ``cache_dir`` by the crate's digest). Without it the crate is still checked to
    describe every file with its digest; a note says the profiles were not validated."""
    check = BundleCheck(run=path)
    places: list[Path] = []
    with check.timed("total"), open_bundle(path) as opened:
        places += [opened.data, opened.bag, opened.bag.parent]
        _check_all(check, opened, allowed_signers, profiles, cache_dir)
    _unplaced(check, places)
    check.causes = causes(check.problems)
    # Each cause leads the problems that follow from it, in the order the checks found them.
    check.problems = [p for cause in check.causes for p in cause.problems]
    return check


def _check_all(
    check: BundleCheck,
    opened: OpenedBundle,
    allowed_signers: Path | None,
    profiles: bool,
    cache_dir: Path | None,
) -> None:
    with check.timed("checksums"):
        _check_bag(check, opened)
    with check.timed("signature"):
        _check_signature(check, opened, allowed_signers)
    with check.timed("index"):
        digests = _payload_digests(opened)
        check.files = len(digests)
        index = _check_index(check, opened, digests)
    with check.timed("attestation"):
        _check_attestation(check, opened, digests)
        _check_envelope(check, opened, index, allowed_signers)
    with check.timed("ro-crate"):
        _check_crate(check, opened, digests, profiles=profiles, cache_dir=cache_dir)
    if not profiles:
        check.notes.append(
            "the RO-Crate describes every file with its digest; its profiles were not "
            "validated (pass --ro-crate-profiles)"
        )
    with check.timed("lockfile"):
        lockfile = _check_lockfile(check, opened, index)
    if lockfile is None:
        return
    paths = config_paths(opened, index)
    with check.timed("run"):
        run = check_run(opened.run, config_paths=paths, bundled=True)
    check.planned, check.checked, check.regraded = run.planned, run.checked, run.regraded
    for problem in run.problems:
        # check_run names files relative to the run: named here from the payload.
        first = problem.detail.split(":", 1)[0]
        inside = (opened.run / first).exists() or first.startswith(("trials/", "results"))
        check.add(problem.kind, f"run/{problem.detail}" if inside else problem.detail)
    with check.timed("predictions"):
        _check_predictions(check, lockfile, paths)
    if index is not None:
        with check.timed("reports"):
            _check_reports(check, opened, lockfile, index)


def _unplaced(check: BundleCheck, places: list[Path]) -> None:
    """No message names the folder the bundle was unpacked into (a temporary one, gone
    when verify ends): each names a file by its place in the bag or the payload."""
    for place in places:
        for i, problem in enumerate(check.problems):
            detail = problem.detail.replace(f"{place}/", "").replace(str(place), place.name)
            check.problems[i] = problem.model_copy(update={"detail": detail})
        check.notes = [n.replace(f"{place}/", "") for n in check.notes]


# --- root causes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cause:
    """One edit of the bundle and the problems that follow from it: the line that names
    it (a file changed, removed or added) leads. ``lead`` is None for the problems that
    follow from several causes together, or when no file-level cause is found."""

    lead: Problem | None
    #: The files of the edit (a trial folder's files, hard-linked copies), under data/
    files: list[str]
    follow: list[Problem]

    @property
    def problems(self) -> list[Problem]:
        return ([self.lead] if self.lead else []) + self.follow


#: The checks that compare each file with a digest the bundle recorded of it, the first
#: that found any is what tells which files were edited: the manifest before the
#: statement, the statement before the crate (an edit whose manifests were rewritten).
_RECORDS = ("checksum", "attestation", "crate")
_TRIAL = re.compile(r"^run/trials/([^/]+)/")
_PAIR = re.compile(r"sha256 ([0-9a-f]{12}) in the \w+, the file has ([0-9a-f]{12})")
_GONE = ("not in the bundle", "but no such file", "missing from the bundle")


def _subject(problem: Problem) -> str | None:
    """The payload file a file-level problem names, or None."""
    head = problem.detail.split(": ", 1)[0].removeprefix("configuration ")
    if problem.kind == "checksum":
        return head.removeprefix("data/") if head.startswith("data/") else None
    return head if problem.kind in _RECORDS and " " not in head else None


def causes(problems: list[Problem]) -> list[Cause]:
    """``problems`` grouped by the edit each follows from (a file changed, removed or
    added, as the first of the manifest, the statement and the crate that recorded it
    tells), each cause led by the line that names it. A problem that names an edited
    file, or its trial, follows from that edit; one that names none (an aggregate, a
    report) follows from the one edit when there is one, else from all together."""
    source = next(
        (kind for kind in _RECORDS if any(p.kind == kind and _subject(p) for p in problems)),
        None,
    )
    if source is None:
        return [Cause(lead=None, files=[], follow=list(problems))] if problems else []
    # One edit per file, but the files of one trial are one edit (a result edited to
    # match its log, a trial removed), and so are hard-linked copies (the same bytes
    # before and after: the swebench/ layout repeats each trial's log).
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    subjects: list[tuple[str, Problem]] = []
    for problem in problems:
        path = _subject(problem) if problem.kind == source else None
        if path is None:
            continue
        subjects.append((path, problem))
        trial, pair = _TRIAL.match(path), _PAIR.search(problem.detail)
        for key in (f"run/trials/{trial.group(1)}" if trial else None, pair and pair.group(0)):
            if key is not None:
                parent[root(key)] = root(path)
    edits: dict[str, list[str]] = {}
    leads: dict[str, Problem] = {}
    for path, problem in subjects:
        edits.setdefault(root(path), []).append(path)
        leads.setdefault(root(path), problem)
    named = {key: _names(key, paths) for key, paths in edits.items()}
    grouped: dict[str | None, list[Problem]] = {key: [] for key in edits}
    for problem in problems:
        owner = next((k for k in edits if any(n in problem.detail for n in named[k])), None)
        if owner is None and len(edits) == 1:
            owner = next(iter(edits))
        grouped.setdefault(owner, []).append(problem)
    found = []
    for key, paths in edits.items():
        lead = _lead(key, paths, grouped[key], leads[key])
        follow = [p for p in grouped[key] if p is not lead]
        found.append(Cause(lead=lead, files=sorted(paths), follow=follow))
    if grouped.get(None):
        found.append(Cause(lead=None, files=[], follow=grouped[None]))
    return found


def _names(key: str, paths: list[str]) -> list[str]:
    """What a problem that follows from an edit names: its files, and its trial."""
    labels = [m.group(1) for p in paths if (m := _TRIAL.match(p))]
    return sorted(set(paths) | set(labels))


def _lead(key: str, paths: list[str], grouped: list[Problem], first: Problem) -> Problem:
    """A removed trial is led by verify's own line for it; hard-linked copies by the
    copy the run's records name (the trial's, not swebench/'s): the one most named."""
    for problem in grouped:
        if problem.kind == "missing" and problem.detail.endswith("(no result.json)"):
            return problem
    if len(paths) > 1:
        count = {p: sum(p in q.detail for q in grouped) for p in paths}
        best = max(paths, key=lambda p: (count[p], -paths.index(p)))
        for problem in grouped:
            if problem.kind == first.kind and _subject(problem) == best:
                return problem
    return first


# --- the bag ---------------------------------------------------------------------------


def _check_bag(check: BundleCheck, opened: OpenedBundle) -> None:
    import bagit

    # bagit logs every file it checks; its errors come back as exceptions.
    logging.getLogger("bagit").setLevel(logging.CRITICAL)
    try:
        bag = bagit.Bag(str(opened.bag))
        # bagit stops at a failed Payload-Oxum (the payload's file count and size) before
        # it reads a checksum: without it, every file is checked, and one whose size
        # changed is named. The Oxum is checked alone after, should nothing else explain it.
        oxum = bag.info.pop("Payload-Oxum", None)
        bag.validate(processes=1)
        if oxum is not None:
            bag.info["Payload-Oxum"] = oxum
            bag.validate(processes=1, fast=True)
    except bagit.BagValidationError as error:
        for detail in sorted(error.details or [error], key=lambda d: str(getattr(d, "path", ""))):
            check.add("checksum", _bag_detail(detail))
    except bagit.BagError as error:
        check.add("checksum", f"not a valid bag: {error}")


def _bag_detail(detail: Exception) -> str:
    import bagit

    if isinstance(detail, bagit.ChecksumMismatch):
        return (
            f"{detail.path}: sha256 {str(detail.expected)[:12]} in the manifest, the file has "
            f"{str(detail.found)[:12]}"
        )
    if isinstance(detail, bagit.FileMissing):
        return f"{detail.path}: in the manifest, not in the bundle"
    if isinstance(detail, bagit.UnexpectedFile):
        return f"{detail.path}: in the bundle, not in the manifest (added?)"
    if str(detail).startswith("Payload-Oxum"):
        return f"bag-info.txt: {detail}"
    return str(detail)


def _check_signature(check: BundleCheck, opened: OpenedBundle, allowed: Path | None) -> None:
    if allowed is not None and not allowed.is_file():
        raise UserError(f"--allowed-signers {allowed}: no such file")
    signature = opened.bag / SIGNATURE
    if not signature.is_file():
        if allowed is not None:
            check.add("signature", "the bundle is not signed (no tagmanifest-sha256.txt.sig)")
        else:
            check.notes.append(UNSIGNED_NOTE)
        return
    if allowed is None:
        check.notes.append("signed; the signature was not checked (pass --allowed-signers)")
        return
    from evalrepro.publish.signing import verify

    signer, why = verify(opened.bag / SIGNED_FILE, signature, allowed)
    if why is not None:
        check.add("signature", f"{SIGNATURE}: {why}")
    check.signer = signer


# --- the payload's own records -----------------------------------------------------------


def _payload_digests(opened: OpenedBundle) -> dict[str, str]:
    return {
        relative: sha256_file(opened.data / relative).removeprefix("sha256:")
        for relative in payload_files(opened.data)
    }


def _check_index(
    check: BundleCheck, opened: OpenedBundle, digests: dict[str, str]
) -> BundleIndex | None:
    try:
        index = opened.index()
    except UserError as error:
        check.add("bundle", _relative(str(error), opened))
        return None
    listed = {item.path for item in index.inputs}
    for item in index.inputs:
        parts = item.path.split("/")
        if item.role == "build":
            placed = len(parts) == 2 and parts[0] == BUILD_INPUTS and _HEX.fullmatch(parts[1])
        else:
            placed = len(parts) == 3 and parts[:2] == [INPUTS, item.sha256]
            placed = placed and parts[2] not in ("", ".", "..")
        if not placed:
            check.add("bundle", f"{item.path}: not where its digest puts it ({item.source})")
        elif digests.get(item.path) is None:
            check.add("bundle", f"{item.path}: missing ({item.role} {item.source})")
        elif digests[item.path] != item.sha256:
            check.add("bundle", f"{item.path}: its bytes are not its name's sha256")
    for path in digests:
        if path.startswith((f"{INPUTS}/", f"{BUILD_INPUTS}/")) and path not in listed:
            check.add("bundle", f"{path}: an input the index does not list")
    for archive in index.images:
        if archive not in digests or not archive.startswith(f"{IMAGES}/"):
            check.add("bundle", f"{archive}: the images archive the index names is missing")
    return index


def _metadata(check: BundleCheck, opened: OpenedBundle, name: str, kind: str) -> object | None:
    try:
        return json.loads(read_regular_file(opened.data / name, _MAX_METADATA, name))
    except UserError as error:
        check.add(kind, _relative(str(error), opened))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        check.add(kind, f"{name}: not JSON ({error})")
    return None


def _check_attestation(check: BundleCheck, opened: OpenedBundle, digests: dict[str, str]) -> None:
    from evalrepro.publish.attestation import check_statement

    statement = _metadata(check, opened, ATTESTATION, "attestation")
    if statement is None:
        return
    for problem in check_statement(statement, digests):
        # The statement's own lines name their kind and full digests: shortened here.
        line = re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1", problem)
        check.add("attestation", line.removeprefix("attestation: "))


def _check_envelope(
    check: BundleCheck, opened: OpenedBundle, index: BundleIndex | None, allowed: Path | None
) -> None:
    """The statement's DSSE envelope: present when the index says the bundle was signed,
    around the bundle's statement byte for byte, and (with ``allowed``) signed by a key
    the allowed-signers file lists."""
    import base64
    import binascii

    from evalrepro.publish.signing import PAYLOAD_TYPE, verify_envelope

    named = index.envelope if index is not None else None
    if not (opened.data / ENVELOPE).is_file():
        if named is not None:
            check.add("signature", f"{named}: the signed attestation the index names is missing")
        elif allowed is not None and (opened.bag / SIGNATURE).is_file():
            check.notes.append("the attestation has no DSSE envelope (a bundle of schema 1)")
        return
    envelope = _metadata(check, opened, ENVELOPE, "attestation")
    if envelope is None:
        return
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        check.add("attestation", f"{ENVELOPE}: not a DSSE envelope of an in-toto statement")
        return
    try:
        payload = base64.b64decode(str(envelope.get("payload", "")), validate=True)
    except (binascii.Error, ValueError):
        check.add("attestation", f"{ENVELOPE}: its payload is not base64")
        return
    if payload != (opened.data / ATTESTATION).read_bytes():
        check.add("attestation", f"{ENVELOPE}: the statement it signs is not {ATTESTATION}")
    if allowed is None:
        check.notes.append(
            f"the attestation is signed ({ENVELOPE}); not checked (pass --allowed-signers)"
        )
        return
    signer, why = verify_envelope(envelope, allowed)
    if why is not None:
        check.add("signature", f"{ENVELOPE}: {why}")
    elif check.signer is not None and signer != check.signer:
        check.add(
            "signature",
            f"{ENVELOPE}: signed by {signer}, the tag manifest by {check.signer}",
        )
    else:
        check.signer = signer


def _check_crate(
    check: BundleCheck,
    opened: OpenedBundle,
    digests: dict[str, str],
    *,
    profiles: bool,
    cache_dir: Path | None,
) -> None:
    metadata = _metadata(check, opened, CRATE, "crate")
    if metadata is None:
        return
    if profiles:
        from evalrepro.publish.crate import validate_crate

        for problem in validate_crate(opened.data, cache_dir):
            check.add("crate", problem)
    graph = metadata.get("@graph") if isinstance(metadata, dict) else None
    if not isinstance(graph, list):
        check.add("crate", f"{CRATE}: no @graph")
        return
    described: dict[str, object] = {}
    for entity in graph:
        if isinstance(entity, dict) and _is_file(entity) and isinstance(entity.get("@id"), str):
            # The rocrate library percent-encodes ids (a wheel's "+" is "%2B").
            described[unquote(entity["@id"])] = entity.get("sha256")
    expected = {
        **digests,
        **{
            name: sha256_bytes((opened.data / name).read_bytes())
            for name in (ATTESTATION, ENVELOPE)
            if (opened.data / name).is_file()
        },
    }
    for path, digest in sorted(expected.items()):
        if path not in described:
            check.add("crate", f"{path}: a file the crate does not describe")
        elif described[path] != digest.removeprefix("sha256:"):
            check.add("crate", f"{path}: the crate gives another sha256")
    for path in sorted(described.keys() - expected.keys()):
        check.add("crate", f"{path}: described by the crate, not in the bundle")


def _is_file(entity: dict) -> bool:
    kind = entity.get("@type")
    return kind == "File" or (isinstance(kind, list) and "File" in kind)


def _check_lockfile(
    check: BundleCheck, opened: OpenedBundle, index: BundleIndex | None
) -> Lockfile | None:
    path = opened.run / LOCKFILE_NAME
    try:
        lockfile = read_lockfile(path, checked=False)
    except UserError as error:
        check.add("lockfile", _relative(str(error), opened))
        return None
    if index is not None:
        digest = sha256_bytes(path.read_bytes()).removeprefix("sha256:")
        if digest != index.lockfile_sha256.removeprefix("sha256:"):
            check.add(
                "lockfile",
                f"run/{LOCKFILE_NAME}: sha256 {digest[:12]}, the bundle's index recorded "
                f"{index.lockfile_sha256.removeprefix('sha256:')[:12]} (edited?)",
            )
    return lockfile


def config_paths(opened: OpenedBundle, index: BundleIndex | None) -> dict[str, str]:
    """The config's files as the bundle holds them, by the config key that names them."""
    if index is None:
        return {}
    keys = {"dataset": "dataset.instances", "predictions": "target.path"}
    return {
        keys[item.role]: str(opened.data / item.path) for item in index.inputs if item.role in keys
    }


def _check_predictions(check: BundleCheck, lockfile: Lockfile, paths: dict[str, str]) -> None:
    """The bundled predictions file gives every patch the lockfile locked, by digest."""
    if "target.path" not in paths:
        return
    from evalrepro.targets.base import Prediction
    from evalrepro.targets.static import PredictionsTarget

    try:
        config = lockfile.experiment_config(paths)
        if not isinstance(config.target, PredictionsTarget):
            return
        samples = config.dataset.load()
        given = {(p.instance_id, p.sample_index): p for p in config.target.patches(samples)}
    except UserError as error:
        check.add("predictions", f"cannot read the bundled predictions: {error}")
        return
    for locked in lockfile.target.predictions:
        prediction = given.get((locked.instance_id, locked.sample_index)) or Prediction(
            instance_id=locked.instance_id,
            model_name_or_path=lockfile.target.target_id,
            model_patch=None,
            sample_index=locked.sample_index,
        )
        if prediction.patch_digest != locked.patch_digest:
            check.add(
                "predictions",
                f"{locked.instance_id} sample {locked.sample_index}: the bundled predictions "
                f"give patch {short_digest(prediction.patch_digest) or 'none'}, the lockfile "
                f"locked {short_digest(locked.patch_digest) or 'none'}",
            )


# --- the reports -----------------------------------------------------------------------


def _check_reports(
    check: BundleCheck, opened: OpenedBundle, lockfile: Lockfile, index: BundleIndex
) -> None:
    """The reports and the viewer, made again from the trial results, must be the
    bundle's, byte for byte (a number edited in one is a difference)."""
    import tempfile

    from evalrepro.report.view import write_view

    report, results = bundle_report(opened.run, lockfile, index.reports, opened.bag.name)
    other = (
        f" (made by evalrepro {index.evalrepro_version}, checked by {__version__})"
        if index.evalrepro_version != __version__
        else ""
    )
    for path, text in render_reports(opened.data, report).items():
        _compare_file(check, opened, path, text.encode("utf-8"), other)
    stored = opened.data / "reports" / "report.json"
    if stored.is_file():
        _name_numbers(check, stored, report.model_dump(mode="json"))
    with tempfile.TemporaryDirectory(prefix="evalrepro-view-") as tmp:
        site = write_view(opened.run, report, results, output=Path(tmp) / "view", lockfile=lockfile)
        made = {
            f"view/{p.relative_to(site.root).as_posix()}": p
            for p in site.root.rglob("*")
            if p.is_file()
        }
        bundled = {
            f"view/{p.relative_to(opened.data / 'view').as_posix()}"
            for p in (opened.data / "view").rglob("*")
            if p.is_file()
        }
        for name in sorted(made):
            _compare_file(check, opened, name, made[name].read_bytes(), other)
        for name in sorted(bundled - made.keys()):
            check.add("report", f"{name}: a viewer page the trial results do not give")


def _compare_file(
    check: BundleCheck, opened: OpenedBundle, path: str, expected: bytes, other: str
) -> None:
    file = opened.data / path
    if not file.is_file():
        check.add("report", f"{path}: missing")
    elif file.read_bytes() != expected:
        check.add("report", f"{path}: differs from the one the trial results give{other}")


def _name_numbers(check: BundleCheck, stored: Path, rebuilt: dict) -> None:
    """Which values of report.json differ: the first few, by their place."""
    try:
        ours = json.loads(stored.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return
    found = [
        f"{where}: {json.dumps(a)[:40]} in the bundle, {json.dumps(b)[:40]} from the trials"
        for where, a, b in _differences(ours, rebuilt)
    ]
    for line in found[:5]:
        check.add("report", f"reports/report.json: {line}")
    if len(found) > 5:
        check.add("report", f"reports/report.json: and {len(found) - 5} more values differ")


def _differences(a: object, b: object, where: str = "") -> list[tuple[str, object, object]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(a.keys() | b.keys(), key=str):
            out += _differences(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += _differences(x, y, f"{where}[{i}]")
        return out
    return [] if a == b else [(where, a, b)]


def _relative(message: str, opened: OpenedBundle) -> str:
    return message.replace(f"{opened.data}/", "")


# --- output for people -----------------------------------------------------------------


#: Of the problems that follow from a cause, this many of each check are printed (--json
#: lists every one).
_SHOWN = 3


def print_bundle_check(console: Console, check: BundleCheck) -> None:
    if check.problems:
        table = Table("check", "problem", title=escape(str(check.bundle)), title_justify="left")
        grouped = check.causes or causes(check.problems)
        for number, cause in enumerate(grouped, 1):
            if cause.lead is not None:
                table.add_row(
                    Text(cause.lead.kind),
                    Text(cause.lead.detail),
                    style="bold red",
                    end_section=not cause.follow,
                )
            if not cause.follow:
                continue
            count = len(cause.follow)
            noun = "problem follows" if count == 1 else "problems follow"
            if cause.lead is not None:
                files = (
                    f" (the edit touches {len(cause.files)} files)" if len(cause.files) > 1 else ""
                )
                head = f"{count} {noun} from it{files}:"
            elif len(grouped) > 1:
                head = f"{count} {noun} from the causes above together:"
            else:
                head = f"{count} {noun}; no edited file explains them:"
            table.add_row("", Text(head, style="italic"))
            by_kind: dict[str, list[Problem]] = {}
            for problem in cause.follow:
                by_kind.setdefault(problem.kind, []).append(problem)
            rows = [(kind, found) for kind, found in by_kind.items()]
            for row, (kind, found) in enumerate(rows):
                for problem in found[:_SHOWN]:
                    table.add_row(Text(f"  {kind}"), Text(problem.detail), style="red")
                if len(found) > _SHOWN:
                    table.add_row(
                        "",
                        Text(f"and {len(found) - _SHOWN} more {kind} (--json lists all)"),
                        style="red",
                        end_section=row == len(rows) - 1 and number < len(grouped),
                    )
                elif row == len(rows) - 1 and number < len(grouped):
                    table.rows[-1].end_section = True
        console.print(table, highlight=False)
    for note in check.notes:
        console.print(Text(f"note: {note}"), highlight=False)
    took = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in check.seconds.items())
    console.print(Text(f"checks took: {took}", style="dim"), highlight=False)
    signed = f", signed by {escape(check.signer)}" if check.signer else ""
    summary = (
        f"{check.files} files, {check.planned} planned trials, {check.checked} results "
        f"checked, {check.regraded} logs re-graded{signed}"
    )
    where = escape(str(check.bundle))
    if check.ok:
        console.print(f"[bold green]ok[/]: {where}: {summary}", highlight=False)
    else:
        count = len(check.problems)
        led = sum(1 for cause in check.causes if cause.lead is not None)
        edits = f" from {led} edit{'' if led == 1 else 's'}" if led else ""
        console.print(
            f"[bold red]{count} problem{'' if count == 1 else 's'}[/]{edits} in {where}: {summary}",
            highlight=False,
        )
