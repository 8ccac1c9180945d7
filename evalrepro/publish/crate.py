"""A result bundle's payload as an RO-Crate: a Process Run Crate of one evaluation run.

The payload (the bag's ``data/``) is a run directory. Its ``ro-crate-metadata.json``
says, as one ``CreateAction`` (``#run``), what went into the run (``object``: the
lockfile, the config, the harness code by digest), what came out (``result``: trial
logs, patches, results, reports), which software ran it (``instrument``: evalrepro)
and in which container images (``containerImage``). Every file carries its sha256 and
size, so the crate alone says what each byte is.

The metadata is built with the ``rocrate`` library from records only: no file is read
or copied here (the bundle writer writes the files), and nothing volatile goes in (no
"now", no random ids), so the same run gives the same metadata.

:func:`validate_crate` checks a written crate with ``roc-validator`` against the Process
Run Crate 0.5 and RO-Crate 1.3 profiles, offline: the only document the validator may
fetch, RO-Crate's JSON-LD context, is served from a cache filled with the copy that the
``rocrate`` library ships.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import io
import json
import re
import tempfile
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from evalrepro import atomic
from evalrepro.digest import sha256_bytes, sha256_json

PROCESS_RUN_CRATE = "https://w3id.org/ro/wfrun/process/0.5"
RO_CRATE_1_3 = "https://w3id.org/ro/crate/1.3"
# roc-validator checks Process Run Crate 0.5 on top of RO-Crate 1.1, whose descriptor
# check wants 1.1 in conformsTo; a 1.3 crate is also a valid 1.1 crate.
RO_CRATE_1_1 = "https://w3id.org/ro/crate/1.1"
METADATA_FILE = "ro-crate-metadata.json"
RUN_ID = "#run"
HARNESS_ID = "#harness-code"
EVALREPRO_URL = "https://pypi.org/project/evalrepro/"
LICENSE_ID = "https://spdx.org/licenses/CC-BY-4.0"
# The run has no publication date of its own when it did not end: a fixed one, never now.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Workflow Run RO-Crate terms (https://w3id.org/ro/terms/workflow-run) that RO-Crate's
# 1.3 context lacks, inline so that no further context has to be fetched. ``sha256``
# is left to RO-Crate's own context (schema.org's sha256), which files use too.
WFRUN = "https://w3id.org/ro/terms/workflow-run#"
WFRUN_TERMS = {
    term: WFRUN + term for term in ("ContainerImage", "containerImage", "registry", "tag")
}
# Podman images are OCI images; WRROC names them all DockerImage (the other kind is SIF).
DOCKER_IMAGE = WFRUN + "DockerImage"

# The profiles a bundle's crate must pass, as roc-validator names them.
PROFILES = ("process-run-crate-0.5", "ro-crate-1.3")
SEVERITY = "REQUIRED"
CONTEXT_URL = RO_CRATE_1_3 + "/context"
# The Accept headers the validator sends for the context (its descriptor checks and its
# JSON-LD document loader); the cache answers each of them.
CONTEXT_ACCEPT = (
    "application/ld+json, application/json",
    "application/ld+json, application/json, */*;q=0.1",
    "application/ld+json",
)

_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CrateFile:
    """One file of the payload, as the crate describes it."""

    #: posix path relative to the crate root (the bag's ``data/``); the entity's @id is
    #: this path percent-encoded (``a+b`` -> ``a%2Bb``), as RO-Crate wants URI references
    path: str
    #: sha256 of the bytes, hex
    sha256: str
    size: int
    #: object (an input) or result (an output) of the run's CreateAction
    role: Literal["input", "output"]
    name: str
    description: str
    #: e.g. "application/json", "text/plain", "text/x-diff", "text/html", "text/markdown"
    encoding_format: str | None = None


@dataclass(frozen=True)
class CrateImage:
    """A container image the run used: one image layer as the lockfile records it."""

    #: how the runtime names it, e.g. ``localhost/evalrepro-env:58faebce9a41``
    tag: str
    #: the image's config digest, ``sha256:<hex>`` or hex
    image_digest: str
    #: the builder's name for the layer ("base", "env", ...)
    layer: str
    #: the layer's key (its identity in the lockfile)
    key: str


@dataclass(frozen=True)
class CrateRun:
    """The run the crate records."""

    experiment: str
    description: str
    #: tz-aware; written in UTC
    started: datetime | None
    ended: datetime | None
    evalrepro_version: str
    harness_code_digest: str
    images: list[CrateImage]


def crate_metadata(run: CrateRun, files: list[CrateFile]) -> dict[str, Any]:
    """The content of ``ro-crate-metadata.json`` for ``files`` of ``run``.

    Deterministic: the same arguments give an equal dict (files and images sorted, no
    clock). Raises ``ValueError`` for a path that is not a plain relative posix path
    inside the crate, a duplicate path, a digest that is not sha256 hex, or a naive
    datetime.
    """
    # Imported here: the library is only needed by `bundle`, not by every command.
    from rocrate.model.contextentity import ContextEntity
    from rocrate.model.softwareapplication import SoftwareApplication
    from rocrate.rocrate import ROCrate

    crate = ROCrate()
    crate.metadata["conformsTo"] = [{"@id": RO_CRATE_1_3}, {"@id": RO_CRATE_1_1}]
    crate.metadata.extra_terms = dict(WFRUN_TERMS)

    root = crate.root_dataset
    root["name"] = f"evalrepro run: {run.experiment}"
    root["description"] = run.description
    root["datePublished"] = _timestamp(run.ended or EPOCH, "ended")
    root["license"] = crate.add(
        ContextEntity(
            crate,
            LICENSE_ID,
            properties={
                "@type": "CreativeWork",
                "name": "Creative Commons Attribution 4.0 International",
                "identifier": "CC-BY-4.0",
                "description": "Share and adapt, with attribution",
            },
        )
    )
    root["conformsTo"] = crate.add(
        ContextEntity(
            crate,
            PROCESS_RUN_CRATE,
            properties={
                "@type": ["CreativeWork", "Profile"],
                "name": "Process Run Crate",
                "version": "0.5",
            },
        )
    )

    inputs: list[Any] = []
    outputs: list[Any] = []
    seen: set[str] = set()
    # add_file appends to the root's hasPart in call order: sorted by path, so is hasPart.
    for file in sorted(files, key=lambda each: each.path):
        _check_file(file, seen)
        properties: dict[str, Any] = {
            "name": file.name,
            "description": file.description,
            "sha256": file.sha256,
            "contentSize": str(file.size),  # RO-Crate writes sizes as strings
        }
        if file.encoding_format:
            properties["encodingFormat"] = file.encoding_format
        # No source: the entity is metadata only, the library never reads or copies it.
        entity = crate.add_file(dest_path=file.path, properties=properties)
        (inputs if file.role == "input" else outputs).append(entity)

    if run.harness_code_digest:
        # Not a file of the bundle, but an input of the run all the same: a PropertyValue
        # is what Process Run Crate has for an object that is a value.
        inputs.append(
            crate.add(
                ContextEntity(
                    crate,
                    HARNESS_ID,
                    properties={
                        "@type": "PropertyValue",
                        "name": "harness code digest",
                        "description": "Digest of the evalrepro harness code the run used",
                        "value": run.harness_code_digest,
                    },
                )
            )
        )

    # An absolute @id (Process Run Crate recommends one). `version` only: RO-Crate 1.3
    # requires it, and Process Run Crate advises against also giving softwareVersion.
    software = crate.add(
        SoftwareApplication(
            crate,
            f"{EVALREPRO_URL}{run.evalrepro_version}/",
            properties={
                "name": "evalrepro",
                "version": run.evalrepro_version,
                "url": EVALREPRO_URL,
            },
        )
    )

    images = _image_entities(run.images)
    for image_id, properties in images.items():
        crate.add(ContextEntity(crate, image_id, properties=properties))

    action: dict[str, Any] = {
        "@type": "CreateAction",
        "name": f"evalrepro run of {run.experiment}",
        "description": (
            "The evaluation run: its inputs (object), outputs (result), the software that "
            "ran it (instrument) and the container images its trials ran in"
        ),
    }
    if run.started is not None:
        action["startTime"] = _timestamp(run.started, "started")
    if run.ended is not None:
        action["endTime"] = _timestamp(run.ended, "ended")
    if images:
        action["containerImage"] = _single([{"@id": image_id} for image_id in images])
    run_action = crate.add_action(
        software,
        identifier=RUN_ID,
        object=_single(inputs) if inputs else None,
        result=_single(outputs) if outputs else None,
        properties=action,
    )
    root["mentions"] = run_action
    # A plain JSON copy, detached from the library's entities.
    return json.loads(json.dumps(crate.metadata.generate()))


def validate_crate(root: Path, cache_dir: Path | None = None) -> list[str]:
    """Problems of the crate written at ``root``, one line each, for every profile.

    ``ro-crate: <profile>: <check id>: <message>``; empty when it passes both profiles
    at REQUIRED severity. Offline: the validator gets RO-Crate 1.3's context from a
    cache and any other URL it wants fails (it is not fetched). A validator that raises
    gives one problem line, and no further profile is tried.

    ``cache_dir``: the answer is kept there, named by the digest of what it depends on
    (the metadata file's bytes, the crate's file names, the validator's version, the
    profiles and severity): the same crate is validated once (a few seconds of SHACL).
    """
    if not root.is_dir():
        return [f"ro-crate: {root}: not a directory"]
    kept = _kept_answer(root, cache_dir) if cache_dir is not None else None
    if kept is not None and kept.is_file():
        try:
            answer = json.loads(kept.read_text())
            if isinstance(answer, list) and all(isinstance(line, str) for line in answer):
                return answer
        except (OSError, ValueError):
            pass
    problems = _validate_all(root)
    if kept is not None and not any("the validator failed" in p for p in problems):
        atomic.write_text(kept, json.dumps(problems))
    return problems


def _kept_answer(root: Path, cache_dir: Path) -> Path | None:
    """Where the answer for this crate is kept (None: the crate cannot be read)."""
    from importlib.metadata import version

    try:
        metadata = (root / METADATA_FILE).read_bytes()
        names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())
    except OSError:
        return None
    key = sha256_json(
        {
            "metadata": sha256_bytes(metadata),
            "files": names,
            "validator": version("roc-validator"),
            "profiles": list(PROFILES),
            "severity": SEVERITY,
        }
    )
    return cache_dir / "ro-crate" / f"{key.removeprefix('sha256:')}.json"


def _validate_all(root: Path) -> list[str]:
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="evalrepro-crate-") as scratch:
        try:
            cache = _context_cache(Path(scratch))
        except Exception as error:
            return [f"ro-crate: cannot prepare the validator's offline cache: {_one_line(error)}"]
        for profile in PROFILES:
            try:
                problems.extend(_validate(root, profile, cache))
            except _ValidatorFailed as failure:
                # A validator that breaks breaks alike for every profile: said once.
                problems.append(str(failure))
                break
    return problems


class _ValidatorFailed(Exception):
    """The validator raised: the crate's state is unknown, not invalid."""


def _validate(root: Path, profile: str, cache: str) -> list[str]:
    from rocrate_validator import services

    settings = {
        "rocrate_uri": str(root),
        "profile_identifier": profile,
        "requirement_severity": SEVERITY,
        "offline": True,
        "cache_path": cache,
        # Availability checks resolve URLs; offline they would only say "unavailable".
        "skip_availability_check": True,
    }
    try:
        with _quiet():
            result = services.validate(settings)
            issues = [(issue.check.identifier, issue.message) for issue in result.get_issues()]
            passed = result.passed()
    except Exception as error:
        raise _ValidatorFailed(
            f"ro-crate: {profile}: the validator failed: {_one_line(error)}"
        ) from None
    problems = [f"ro-crate: {profile}: {check}: {_message(message)}" for check, message in issues]
    if not passed and not problems:
        problems.append(f"ro-crate: {profile}: does not pass (no issue reported)")
    return problems


def _context_cache(scratch: Path) -> str:
    """A requests-cache database that answers RO-Crate 1.3's context URL, and only it."""
    import requests
    import urllib3
    from requests_cache import CachedSession

    context = importlib.resources.files("rocrate").joinpath("data/ro-crate.jsonld").read_bytes()
    name = str(scratch / "http_cache")
    session = CachedSession(cache_name=name, backend="sqlite", expire_after=-1)
    try:
        for accept in CONTEXT_ACCEPT:
            response = requests.Response()
            response.url = CONTEXT_URL
            response.status_code = 200
            response.reason = "OK"
            response.encoding = "utf-8"
            response._content = context
            response.headers["Content-Type"] = "application/ld+json"
            # requests-cache serializes the raw response too.
            response.raw = urllib3.HTTPResponse(
                body=io.BytesIO(context),
                headers=response.headers,
                status=200,
                preload_content=False,
                request_url=CONTEXT_URL,
            )
            response.request = requests.Request(
                "GET", CONTEXT_URL, headers={"Accept": accept}
            ).prepare()
            session.cache.save_response(response)
    finally:
        session.close()
    return name


@contextlib.contextmanager
def _quiet():
    """Keep the validator's output off the console.

    Its loggers write to a buffer that it prints as a "Log Report" at exit, it may
    print progress, and its libraries warn; all of it is dropped.
    """
    from rocrate_validator.utils import log

    sink = io.StringIO()
    try:
        with (
            contextlib.redirect_stdout(sink),
            contextlib.redirect_stderr(sink),
            warnings.catch_warnings(),
        ):
            # rdflib's deprecation warnings are about the validator's code, not the crate.
            warnings.simplefilter("ignore")
            yield
    finally:
        buffer = getattr(log, "__log_stream__", None)
        if isinstance(buffer, io.StringIO) and not buffer.closed:
            buffer.seek(0)
            buffer.truncate()


def _image_entities(images: list[CrateImage]) -> dict[str, dict[str, Any]]:
    """ContainerImage entities by @id (from the layer key), sorted by @id."""
    entities: dict[str, dict[str, Any]] = {}
    for image in images:
        digest = _hex(image.image_digest, f"image {image.tag}: image_digest")
        image_id = f"#image-{_hex(image.key, f'image {image.tag}: key') if image.key else digest}"
        registry, name, tag = _reference(image.tag)
        properties: dict[str, Any] = {
            "@type": "ContainerImage",
            "additionalType": {"@id": DOCKER_IMAGE},
            "name": name,
            "alternateName": image.tag,
            "description": f"The {image.layer} layer's image, key {image.key}",
            "identifier": image.key,
            "sha256": digest,
        }
        if registry:
            properties["registry"] = registry
        if tag:
            properties["tag"] = tag
        if entities.get(image_id, properties) != properties:
            raise ValueError(f"image {image.tag}: key {image.key} is given twice, differently")
        entities[image_id] = properties
    return dict(sorted(entities.items()))


def _reference(reference: str) -> tuple[str | None, str, str | None]:
    """``registry/name:tag`` (each of registry and tag optional) split, as docker does."""
    rest = reference.split("@", 1)[0]  # a pinned reference's digest is in sha256 already
    registry = None
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, rest = first, remainder
    name, colon, tag = rest.rpartition(":")
    if not colon or "/" in tag:
        return registry, rest, None
    return registry, name, tag


def _single(values: list[Any]) -> Any:
    """RO-Crate's JSON-LD form: one value as itself, more as a list."""
    return values[0] if len(values) == 1 else values


def _check_file(file: CrateFile, seen: set[str]) -> None:
    path = PurePosixPath(file.path)
    if (
        not file.path
        or file.path != path.as_posix()
        or path.is_absolute()
        or any(part in ("", ".", "..") for part in path.parts)
        or "\\" in file.path
    ):
        raise ValueError(f"crate file {file.path!r}: not a plain relative posix path")
    if file.path == METADATA_FILE:
        raise ValueError(f"crate file {file.path!r}: that is the crate's own metadata file")
    if file.path in seen:
        raise ValueError(f"crate file {file.path!r}: given twice")
    seen.add(file.path)
    if not _HEX.fullmatch(file.sha256):
        raise ValueError(f"crate file {file.path!r}: sha256 {file.sha256!r} is not hex")
    if file.size < 0:
        raise ValueError(f"crate file {file.path!r}: negative size {file.size}")
    if file.role not in ("input", "output"):
        raise ValueError(f"crate file {file.path!r}: role {file.role!r} is not input or output")


def _hex(digest: str, what: str) -> str:
    value = digest.removeprefix("sha256:")
    if not _HEX.fullmatch(value):
        raise ValueError(f"{what}: {digest!r} is not a sha256 digest")
    return value


def _timestamp(moment: datetime, what: str) -> str:
    """ISO 8601 in UTC to the second: the form Process Run Crate's checks accept."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"run {what} time {moment.isoformat()} has no time zone")
    return moment.astimezone(UTC).isoformat(timespec="seconds")


# Some checks put the exception's args, the check object among them, into the message.
_ARGS_WITH_CHECK = re.compile(r"""\((['"])(?P<message>.*)\1, <[^<>]* object at 0x[0-9a-f]+>\)""")


def _message(value: object) -> str:
    """An issue's message on one line, without a memory address that differs every run."""
    text = _one_line(value)
    match = _ARGS_WITH_CHECK.fullmatch(text)
    return match["message"] if match else text


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
