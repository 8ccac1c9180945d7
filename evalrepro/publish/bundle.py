"""Result bundles: a run directory as one archive a reviewer can check and run again.

``evalrepro bundle RUN`` writes a gzipped tar holding one BagIt bag (``bagit``)::

    <run>/bagit.txt, bag-info.txt       the bag's declaration
    <run>/manifest-sha256.txt           sha256 of every payload file
    <run>/tagmanifest-sha256.txt        sha256 of the files above
    <run>/tagmanifest-sha256.txt.sig    optional: an SSH signature of the tag manifest
    <run>/data/                         the payload, an RO-Crate (Process Run Crate):
        README.txt                      for a reviewer without evalrepro: what is
                                        inside, how to check it with plain tools
        ro-crate-metadata.json          the run as a CreateAction (``crate``)
        attestation.intoto.json         an in-toto Test Result statement (``attestation``)
        attestation.intoto.jsonl        with --sign: the statement in a DSSE envelope,
                                        signed with the author's key (``signing``)
        bundle.json                     the index below (:class:`BundleIndex`)
        run/                            the run directory as it is: whatever it holds
                                        (lockfile, trials, results, image records,
                                        swebench/; a run of evalrepro 0.2 also its
                                        config.json and each attempt's image.json)
        reports/                        report.json, report.md, report.html
        view/                           the trial viewer
        inputs/<sha256>/<name>          the dataset and predictions files the lockfile
                                        names, by content
        build-inputs/<pin digest>       with --with-inputs every pinned build input
                                        (.debs, wheels, repo histories); with
                                        --with-images the repo histories
        images/images.oci.tar           with --with-images: every image, OCI layout

The same run directory gives the same bytes (``tarball``: sorted entries, no times,
owners or modes; identical files stored once, as hard links). The reports are made with
fixed statistics settings and the run's end as their time, so that ``verify`` can make
them again and compare. A bundle is made only from a run that ``verify`` passes.

Reading a bundle (:func:`open_bundle`) treats it as untrusted: ``tarball`` checks every
member before unpacking, and an unpacked folder is walked for links first.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalrepro import __version__, atomic
from evalrepro.build import tarball
from evalrepro.digest import sha256_bytes, sha256_file
from evalrepro.errors import UserError
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.records.base import read_record
from evalrepro.records.bundle import RUN, BundledInput, BundleIndex, ReportSettings
from evalrepro.records.lockfile import Lockfile
from evalrepro.targets.static import PredictionsTarget

if TYPE_CHECKING:  # report pulls in statistics: loaded where a report is built
    from evalrepro.publish.crate import CrateFile
    from evalrepro.publish.signing import SigningKey
    from evalrepro.records.report import RunReport

REPORTS = "reports"
VIEW = "view"
INPUTS = "inputs"
BUILD_INPUTS = "build-inputs"
IMAGES = "images"
INDEX = "bundle.json"
README = "README.txt"
ATTESTATION = "attestation.intoto.json"
#: The statement in a DSSE envelope (a signed bundle): in-toto's file name for envelopes,
#: one JSON line each.
ENVELOPE = "attestation.intoto.jsonl"
CRATE = "ro-crate-metadata.json"
#: The tag manifest is what a signature signs: it holds the payload manifest's digest.
SIGNED_FILE = "tagmanifest-sha256.txt"
SIGNATURE = SIGNED_FILE + ".sig"

#: Not part of a run's evidence: the lock a session holds, and a viewer made earlier
#: (the bundle makes its own, from the bundle's report).
_LEFT_OUT = {".evalrepro.lock"}
_LEFT_OUT_FOLDERS = {"view"}

#: The run's configuration, as the statement and the crate name it: the lockfile (which
#: holds the resolved config) and, in a run of evalrepro 0.2, the composed config it
#: wrote beside it. Each only where the run has it.
_CONFIGURATION = (f"{RUN}/{LOCKFILE_NAME}", f"{RUN}/config.json")

#: A report's time when the run has none (no trial finished).
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class BundleSummary:
    path: Path
    bytes: int
    files: int
    #: Files stored once although they appear more than once.
    deduplicated: int
    signed: bool
    inputs: int
    images: bool


# --- writing -----------------------------------------------------------------------------


def write_bundle(
    run_dir: Path,
    output: Path,
    *,
    with_images: bool = False,
    with_inputs: bool = False,
    sign_key: Path | None = None,
    cache_dir: Path | None = None,
    settings: ReportSettings | None = None,
) -> BundleSummary:
    """Bundle the run directory ``run_dir`` into ``output``, or one UserError line."""
    from evalrepro.publish.verify import check_run
    from evalrepro.run.rundir import RunDirectory
    from evalrepro.run.session import RunSession

    settings = settings or ReportSettings()
    directory = RunDirectory(run_dir)
    if not directory.lockfile_path.is_file():
        raise UserError(f"{run_dir}: not a run directory (no {LOCKFILE_NAME})")
    if sign_key is not None and not sign_key.is_file():
        raise UserError(f"--sign {sign_key}: no such key file")
    signer = None
    if sign_key is not None:
        from evalrepro.publish.signing import load_signer

        signer = load_signer(sign_key)  # a key it cannot sign with fails before any work
    output = Path(os.path.abspath(output))
    if output.is_dir():
        raise UserError(f"-o {output}: a folder; name the bundle's file")
    if directory.path.resolve() in output.parents:
        raise UserError(f"-o {output}: inside the run directory it bundles")
    # Held as a session holds it: no run writes into it while it is checked and packed.
    with RunSession.hold(directory.path):
        check = check_run(directory.path)
        if not check.ok:
            first = check.problems[0]
            raise UserError(
                f"{run_dir}: verify finds {len(check.problems)} problem(s) (first: "
                f"{first.kind}: {first.detail}); a bundle is made from a run that verifies"
            )
        lockfile = read_lockfile(directory.lockfile_path)
        if (with_images or with_inputs) and lockfile.environment.kind == "recorded":
            raise UserError(
                f"{run_dir}: its logs were written by another harness (regrade): there are "
                "no images or build inputs to add"
            )
        output.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=output.parent, prefix=".bundle-") as tmp:
            bag = Path(tmp) / directory.path.name
            return _write(
                directory.path,
                bag,
                output,
                lockfile,
                settings,
                with_images=with_images,
                with_inputs=with_inputs,
                sign_key=sign_key,
                signer=signer,
                cache_dir=cache_dir,
            )


def _write(
    run_dir: Path,
    bag: Path,
    output: Path,
    lockfile: Lockfile,
    settings: ReportSettings,
    *,
    with_images: bool,
    with_inputs: bool,
    sign_key: Path | None,
    signer: SigningKey | None,
    cache_dir: Path | None,
) -> BundleSummary:
    from evalrepro.publish import attestation, crate

    payload = bag  # bagit moves it into bag/data at the end
    _copy_run(run_dir, payload / RUN)
    inputs = _named_inputs(lockfile, payload)
    if with_inputs or with_images:
        inputs += _build_inputs(lockfile, payload, cache_dir, everything=with_inputs)
    images = _export_images(lockfile, payload, cache_dir) if with_images else []
    report = write_reports(payload, lockfile, settings)
    index = BundleIndex(
        evalrepro_version=__version__,
        experiment=lockfile.experiment,
        target_id=lockfile.target.target_id,
        lockfile_sha256=sha256_bytes((payload / RUN / LOCKFILE_NAME).read_bytes()),
        reports=settings,
        inputs=sorted(inputs, key=lambda i: (i.path, i.source)),
        images=images,
        all_build_inputs=with_inputs,
        envelope=ENVELOPE if signer is not None else None,
        readme=README,
    )
    atomic.write_text(payload / INDEX, index.model_dump_json(indent=2) + "\n")
    from evalrepro.publish.readme import readme_text

    atomic.write_text(payload / README, readme_text(bag.name, index, lockfile, report, signer))

    files = payload_files(payload)
    digests = {path: _sha256_hex(payload / path) for path in files}
    statement = attestation.test_result_statement(
        digests,
        result="PASSED" if report.gate_passed else "FAILED",
        configuration={name: digests[name] for name in _CONFIGURATION if name in digests},
        **_tests_by_outcome(report),
    )
    atomic.write_text(payload / ATTESTATION, _json(statement))
    digests[ATTESTATION] = _sha256_hex(payload / ATTESTATION)
    if signer is not None:
        import json

        from evalrepro.publish.signing import sign_statement

        # Around the statement's exact bytes: what the envelope signs is the file beside it.
        envelope = sign_statement((payload / ATTESTATION).read_bytes(), signer.signer)
        atomic.write_text(payload / ENVELOPE, json.dumps(envelope, sort_keys=True) + "\n")
        digests[ENVELOPE] = _sha256_hex(payload / ENVELOPE)
    ended = report.timing.finished_at
    metadata = crate.crate_metadata(
        crate.CrateRun(
            experiment=lockfile.experiment,
            description=(
                f"evalrepro run of {lockfile.experiment}: target {lockfile.target.target_id}, "
                f"{len(lockfile.trials)} trials on {lockfile.dataset.name}"
            ),
            started=report.timing.started_at,
            ended=ended,
            evalrepro_version=lockfile.harness.version,
            harness_code_digest=lockfile.harness.code_digest,
            images=[
                crate.CrateImage(
                    tag=image.tag, image_digest=image.image_digest, layer=image.layer, key=image.key
                )
                for image in lockfile.environment.images
                # A regrade's "images" are its logs, pinned by digest: no container image.
                if image.builder != "recorded"
            ],
        ),
        [_crate_file(path, digests[path], payload / path, index) for path in sorted(digests)],
    )
    atomic.write_text(payload / CRATE, _json(metadata))

    _make_bag(bag, lockfile, ended)
    if sign_key is not None:
        from evalrepro.publish.signing import sign

        sign(bag / SIGNED_FILE, sign_key)
    entries = [
        tarball.Entry(name=f"{bag.name}/{path.relative_to(bag).as_posix()}", source=path)
        for path in sorted(bag.rglob("*"))
        if path.is_file()
    ]
    tarball.write_tarball(output, entries)
    unique = {_sha256_hex(entry.source) for entry in entries}
    return BundleSummary(
        path=output,
        bytes=output.stat().st_size,
        files=len(entries),
        deduplicated=len(entries) - len(unique),
        signed=sign_key is not None,
        inputs=len(inputs),
        images=bool(images),
    )


def _copy_run(run_dir: Path, dest: Path) -> None:
    """The run directory's files, byte for byte; a link or special file is refused."""
    for folder, dirnames, filenames in os.walk(run_dir, followlinks=False):
        here = Path(folder)
        if here == run_dir:
            dirnames[:] = [d for d in dirnames if d not in _LEFT_OUT_FOLDERS]
        dirnames.sort()
        for name in sorted(filenames):
            source = here / name
            relative = source.relative_to(run_dir)
            if (here == run_dir and name in _LEFT_OUT) or name.endswith(".tmp"):
                continue
            if source.is_symlink() or not source.is_file():
                raise UserError(f"{source}: not a regular file; a bundle holds files only")
            target = dest / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(source, "rb") as reader, open(target, "wb") as writer:
                while chunk := reader.read(1 << 20):
                    writer.write(chunk)
        for name in dirnames:
            if (here / name).is_symlink():
                raise UserError(f"{here / name}: a symbolic link; a bundle holds files only")


def _named_inputs(lockfile: Lockfile, payload: Path) -> list[BundledInput]:
    """The dataset and predictions files the lockfile's config names."""
    config = lockfile.experiment_config()
    named = [("dataset", "dataset.instances", Path(config.dataset.instances))]
    if isinstance(config.target, PredictionsTarget):
        named.append(("predictions", "target.path", Path(config.target.path)))
    stored = []
    for role, key, path in named:
        if not path.is_file():
            raise UserError(f"{key}: {path}: the file the lockfile names is gone")
        stored.append(_store_input(payload, path, role=role, source=key, name=_safe(path.name)))
    return stored


def _store_input(payload: Path, path: Path, *, role: str, source: str, name: str) -> BundledInput:
    digest = _sha256_hex(path)
    # By content, under its own name: readers tell a file's format by its suffix.
    target = payload / INPUTS / digest / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "rb") as reader, open(target, "wb") as writer:
            while chunk := reader.read(1 << 20):
                writer.write(chunk)
    if _sha256_hex(target) != digest:
        raise UserError(f"{path}: changed while it was copied into the bundle")
    return BundledInput(
        role=role,  # type: ignore[arg-type]
        source=source,
        name=name,
        path=f"{INPUTS}/{digest}/{name}",
        sha256=digest,
        size=target.stat().st_size,
    )


def _safe(name: str) -> str:
    """A file name as a bundle stores it: one plain path part."""
    cleaned = "".join(c if c.isalnum() or c in "._-+" else "_" for c in name).lstrip(".")
    return cleaned or "file"


def _build_inputs(
    lockfile: Lockfile, payload: Path, cache_dir: Path | None, *, everything: bool
) -> list[BundledInput]:
    """The pinned build inputs (``build_inputs``), each named by its pin's digest: all of
    them, or only the repo histories (what planning reads even when the images are
    loaded, since it resolves each instance's base commit)."""
    from evalrepro.build.inputs import collect_histories, collect_inputs
    from evalrepro.cache import default_cache_dir

    cache = cache_dir or default_cache_dir()
    dest = payload / BUILD_INPUTS
    dest.mkdir(parents=True, exist_ok=True)
    if everything:
        collected = collect_inputs(lockfile, cache, dest)
    else:
        collected = collect_histories(lockfile, cache, dest)
    return [
        BundledInput(
            role="build",
            source=item.label,
            name=item.name,
            path=f"{BUILD_INPUTS}/{Path(item.path).name}",
            sha256=item.sha256,
            size=item.size,
        )
        for item in collected
    ]


def _export_images(lockfile: Lockfile, payload: Path, cache_dir: Path | None) -> list[str]:
    from evalrepro.build.image_archive import export_images
    from evalrepro.cache import default_cache_dir
    from evalrepro.runtimes import open_runtime

    config = lockfile.experiment_config()
    runtime = open_runtime(config.environment, cache_dir or default_cache_dir())
    try:
        runtime.check()
        # A runtime that builds in another store (docker) brings the images into its own;
        # what it cannot bring, export_images names.
        runtime.missing_images(lockfile.environment.images)
        store = runtime.image_store()
        archives = export_images(store, lockfile.environment.images, payload / IMAGES)
    finally:
        runtime.close()
    return sorted(archive.relative_to(payload).as_posix() for archive in archives)


def bundle_report(
    run_dir: Path, lockfile: Lockfile, settings: ReportSettings, name: str
) -> tuple[RunReport, dict]:
    """The report of a bundled run, made the same way each time: fixed settings, the
    run's folder name, and the run's end as its time. Also the results it read."""
    from evalrepro.report.run_report import build_run_report
    from evalrepro.run.rundir import RunDirectory

    survey = RunDirectory(run_dir).survey(lockfile)
    report = build_run_report(
        run_dir,
        lockfile,
        survey.results,
        confidence=settings.confidence,
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        # Named inside the bundle, not by where it was unpacked (a temporary folder).
        evidence_problems=[f"{RUN}/{p.where}: {p.detail}" for p in survey.problems],
        generated_at=_EPOCH,
    )
    moment = report.timing.finished_at or _EPOCH
    report = report.model_copy(
        update={
            "run": name,
            "provenance": report.provenance.model_copy(update={"generated_at": moment}),
        }
    )
    return report, survey.results


def render_reports(payload: Path, report: RunReport) -> dict[str, str]:
    """The reports' files by payload path: what the bundle holds, and what verify
    expects it to hold."""
    from evalrepro.report.formats import bundled

    # A page links to the bundle's trial viewer.
    page = {"title": f"evalrepro: {report.run}", "viewer": f"../{VIEW}/index.html"}
    return {
        f"{REPORTS}/{shown.bundle_file}": shown.render(
            "run", report, **(page if shown.output == "page" else {})
        )
        for shown in bundled()
    }


def write_reports(payload: Path, lockfile: Lockfile, settings: ReportSettings) -> RunReport:
    from evalrepro.report.view import write_view

    report, results = bundle_report(payload / RUN, lockfile, settings, payload.name)
    for path, text in render_reports(payload, report).items():
        atomic.write_text(payload / path, text)
    write_view(payload / RUN, report, results, output=payload / VIEW, lockfile=lockfile)
    return report


def _tests_by_outcome(report: RunReport) -> dict[str, list[str]]:
    """The trials as the Test Result predicate lists tests: resolved ones passed,
    unresolved failed, invalid (and missing) warned."""
    by = {"passed": [], "failed": [], "warned": []}
    for row in report.trials:
        kind = {"resolved": "passed", "unresolved": "failed"}.get(row.outcome, "warned")
        by[kind].append(row.folder)
    return {kind: sorted(folders) for kind, folders in by.items()}


def _crate_file(path: str, digest: str, file: Path, index: BundleIndex) -> CrateFile:
    from evalrepro.publish.crate import CrateFile

    inputs = {item.path: item for item in index.inputs}
    if path in inputs:
        item = inputs[path]
        return CrateFile(
            path=path,
            sha256=digest,
            size=file.stat().st_size,
            role="input",
            name=item.name,
            description=f"{item.role}: {item.source}",
            encoding_format=None,
        )
    role = "input" if path in _CONFIGURATION else "output"
    return CrateFile(
        path=path,
        sha256=digest,
        size=file.stat().st_size,
        role=role,  # type: ignore[arg-type]
        name=Path(path).name,
        description=_describe(path),
        encoding_format=_FORMATS.get(Path(path).suffix),
    )


_FORMATS = {
    ".json": "application/json",
    ".txt": "text/plain",
    ".diff": "text/x-diff",
    ".patch": "text/x-diff",
    ".log": "text/plain",
    ".html": "text/html",
    ".md": "text/markdown",
    ".css": "text/css",
    ".tar": "application/x-tar",
}


def _describe(path: str) -> str:
    parts = path.split("/")
    if path == f"{RUN}/{LOCKFILE_NAME}":
        return "the frozen plan: every instance, patch, image and trial by digest"
    if path == f"{RUN}/config.json":
        return "the composed experiment config (written by evalrepro 0.2; the lockfile holds it)"
    if path == README:
        return "for a reviewer without evalrepro: what the bundle holds, how to check it"
    if path == INDEX:
        return "the bundle's index: its inputs and how its reports were made"
    if path == ATTESTATION:
        return "an in-toto Statement (Test Result predicate) over the bundle's files"
    if path == ENVELOPE:
        return "the in-toto Statement in a DSSE envelope, signed with the author's key"
    if parts[0] == REPORTS:
        return "the run's report"
    if parts[0] == VIEW:
        return "the trial viewer"
    if parts[0] == IMAGES:
        return "the run's container images (OCI layout)"
    if len(parts) > 2 and parts[1] == "trials":
        return f"trial {parts[2]}: {parts[-1]}"
    return f"the run's {'/'.join(parts[1:])}"


def _make_bag(bag: Path, lockfile: Lockfile, ended: datetime | None) -> None:
    import bagit

    info = {
        "Bagging-Date": (ended or _EPOCH).date().isoformat(),
        "Bag-Software-Agent": f"evalrepro {__version__} (bagit.py {bagit.VERSION})",
        "External-Description": (
            f"evalrepro result bundle: {lockfile.experiment}, target "
            f"{lockfile.target.target_id}, {len(lockfile.trials)} trials"
        ),
        "External-Identifier": f"lockfile sha256:{_sha256_hex(bag / RUN / LOCKFILE_NAME)}",
    }
    cwd = os.getcwd()
    try:
        bagit.make_bag(str(bag), info, processes=1, checksums=["sha256"])
    finally:
        os.chdir(cwd)  # make_bag works from inside the bag
    # bagit lists tag files in directory order; sorted, the bytes do not depend on it.
    tagmanifest = bag / SIGNED_FILE
    lines = sorted(tagmanifest.read_text(encoding="utf-8").splitlines(keepends=True))
    atomic.write_text(tagmanifest, "".join(lines))


def payload_files(payload: Path) -> list[str]:
    """Every file of a payload folder, by posix path relative to it, sorted; the crate
    metadata and the attestation and its envelope (which list the others) left out."""
    found = []
    for path in payload.rglob("*"):
        if path.is_file():
            relative = path.relative_to(payload).as_posix()
            if relative not in (CRATE, ATTESTATION, ENVELOPE):
                found.append(relative)
    return sorted(found)


def _sha256_hex(path: Path) -> str:
    return sha256_file(path).removeprefix("sha256:")


def _json(value: object) -> str:
    import json

    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- reading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenedBundle:
    #: The bag's root folder (bagit.txt), its payload and the run directory inside.
    bag: Path
    source: Path

    @property
    def data(self) -> Path:
        return self.bag / "data"

    @property
    def run(self) -> Path:
        return self.data / RUN

    def index(self) -> BundleIndex:
        return read_record(self.data / INDEX, BundleIndex)


def is_bundle(path: Path) -> bool:
    """An archive file, or a folder holding a bag (or one folder that does).

    A file is told by its content, whatever its name (a download renamed ``bundle``, a
    ``.tar.gz`` saved as ``.gz``): any tar archive, plain or compressed, is taken for a
    bundle, since a run directory is never one, and opening it says what is wrong with
    it. A file named like an archive is one too, so that a broken one is named as such."""
    if path.is_file():
        if path.name.endswith((".tar.gz", ".tgz", ".tar")):
            return True
        try:
            # Reads the first header only (through gzip, bzip2 or xz).
            return tarfile.is_tarfile(path)
        except OSError:
            return False
    return _bag_root(path) is not None


def _bag_root(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    if (folder / "bagit.txt").is_file():
        return folder
    children = [child for child in folder.iterdir() if not child.name.startswith(".")]
    if len(children) == 1 and (children[0] / "bagit.txt").is_file():
        return children[0]
    return None


@contextmanager
def open_bundle(path: Path) -> Iterator[OpenedBundle]:
    """The bundle at ``path`` (an archive, unpacked into a temporary folder for the
    block, or an unpacked folder), checked for links and special files."""
    if path.is_dir():
        root = _bag_root(path)
        if root is None:
            raise UserError(f"{path}: not a bundle (no bagit.txt)")
        tarball.check_tree(root, what="bundle")
        yield OpenedBundle(bag=root, source=path)
        return
    if not path.is_file():
        raise UserError(f"{path}: no such bundle")
    with tempfile.TemporaryDirectory(prefix="evalrepro-bundle-") as tmp:
        tarball.extract_untrusted(path, Path(tmp), what="bundle")
        root = _bag_root(Path(tmp))
        if root is None:
            raise UserError(f"{path}: not a bundle (the archive holds no bag with bagit.txt)")
        yield OpenedBundle(bag=root, source=path)


@contextmanager
def run_directory(path: Path) -> Iterator[Path]:
    """The run directory at ``path``, or the one inside the bundle at ``path``: what
    ``report``, ``compare``, ``verify A B`` and ``view`` read."""
    if is_bundle(path):
        with open_bundle(path) as opened:
            if not (opened.run / LOCKFILE_NAME).is_file():
                raise UserError(f"{path}: a bundle without a run directory (data/{RUN})")
            yield opened.run
    else:
        yield path
