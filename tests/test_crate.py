"""A bundle's RO-Crate metadata: a Process Run Crate of the run, built from records alone
(deterministic, no file read or copied), that roc-validator passes offline against
Process Run Crate 0.5 and RO-Crate 1.3; a broken crate gives problem lines, never an
exception, and the validator never reaches the network."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from evalrepro.publish.crate import (
    PROCESS_RUN_CRATE,
    CrateFile,
    CrateImage,
    CrateRun,
    crate_metadata,
    validate_crate,
)

PAYLOAD: dict[str, tuple[bytes, str, str | None]] = {
    "lockfile.json": (b'{"schema_version": 1}\n', "input", "application/json"),
    "config.json": (b'{"experiment": "demo"}\n', "input", "application/json"),
    "trials/t1/test_output.txt": (b"PASSED tests/test_a.py::test_a\n", "output", "text/plain"),
    "trials/t1/patch.diff": (b"--- a/x.py\n+++ b/x.py\n", "output", "text/x-diff"),
    "trials/t1/result.json": (b'{"outcome": "resolved"}\n', "output", "application/json"),
    "results.json": (b'{"resolved": 1}\n', "output", "application/json"),
    "report.html": (b"<!doctype html><title>r</title>\n", "output", "text/html"),
    "report.md": (b"# demo\n", "output", "text/markdown"),
}
ENV_KEY = "sha256:" + "1" * 64
BASE_KEY = "sha256:" + "2" * 64


def payload_files() -> list[CrateFile]:
    return [
        CrateFile(
            path=path,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            role=role,  # type: ignore[arg-type]
            name=path.rsplit("/", 1)[-1],
            description=f"the run's {path}",
            encoding_format=encoding,
        )
        for path, (data, role, encoding) in PAYLOAD.items()
    ]


def demo_run(**changes: Any) -> CrateRun:
    fields: dict[str, Any] = {
        "experiment": "demo",
        "description": "Gold patches of the demo dataset",
        "started": datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC),
        "ended": datetime(2026, 12, 1, 10, 5, 30, 250000, tzinfo=UTC),
        "evalrepro_version": "0.2.0",
        "harness_code_digest": "sha256:" + "3" * 64,
        "images": [
            CrateImage(
                "localhost/evalrepro-env:111111111111", "sha256:" + "a" * 64, "env", ENV_KEY
            ),
            CrateImage("localhost/evalrepro-base:222222222222", "b" * 64, "base", BASE_KEY),
        ],
    }
    fields.update(changes)
    return CrateRun(**fields)


def by_id(metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entity["@id"]: entity for entity in metadata["@graph"]}


def ids(value: Any) -> list[str]:
    return [each["@id"] for each in (value if isinstance(value, list) else [value])]


def write_crate(root: Path, metadata: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for path, (data, _, _) in PAYLOAD.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    (root / "ro-crate-metadata.json").write_text(json.dumps(metadata, indent=2))
    return root


@pytest.fixture(scope="module")
def connections() -> Iterator[list[object]]:
    """Every network connection or name lookup tried while validating: each one fails."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> Any:
        attempts.append(args[1:] if len(args) > 1 else args)
        raise OSError("test_crate: no network")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        patch.setattr(socket, "getaddrinfo", refuse)
        yield attempts


@pytest.fixture(scope="module")
def crate_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    metadata = crate_metadata(demo_run(), payload_files())
    return write_crate(tmp_path_factory.mktemp("crate"), metadata)


@pytest.fixture(scope="module")
def validated(crate_dir: Path, connections: list[object]) -> list[str]:
    return validate_crate(crate_dir)


def test_a_written_crate_passes_both_profiles_offline(validated, connections):
    assert validated == []
    assert connections == []  # the context came from the cache, nothing else was fetched


def test_the_same_run_gives_the_same_metadata_and_no_clock():
    one = crate_metadata(demo_run(), payload_files())
    # Files in another order: the same metadata.
    two = crate_metadata(demo_run(), list(reversed(payload_files())))
    assert one == two
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    root = by_id(one)["./"]
    assert root["datePublished"] == "2026-12-01T10:05:30+00:00"  # the run's end
    unfinished = crate_metadata(demo_run(started=None, ended=None), payload_files())
    assert by_id(unfinished)["./"]["datePublished"] == "1970-01-01T00:00:00+00:00"
    assert "startTime" not in by_id(unfinished)["#run"]
    assert "endTime" not in by_id(unfinished)["#run"]


def test_times_are_written_in_utc_to_the_second():
    berlin = timezone(timedelta(hours=1))
    metadata = crate_metadata(
        demo_run(started=datetime(2026, 12, 1, 11, 0, 0, 999999, tzinfo=berlin)), payload_files()
    )
    assert by_id(metadata)["#run"]["startTime"] == "2026-12-01T10:00:00+00:00"
    with pytest.raises(ValueError, match="no time zone"):
        crate_metadata(demo_run(ended=datetime(2026, 12, 1)), payload_files())


def test_root_descriptor_and_profile():
    graph = by_id(crate_metadata(demo_run(), payload_files()))
    descriptor = graph["ro-crate-metadata.json"]
    assert ids(descriptor["conformsTo"]) == [
        "https://w3id.org/ro/crate/1.3",
        "https://w3id.org/ro/crate/1.1",
    ]
    root = graph["./"]
    assert root["name"] == "evalrepro run: demo"
    assert root["description"] == "Gold patches of the demo dataset"
    assert ids(root["conformsTo"]) == [PROCESS_RUN_CRATE]
    assert graph[PROCESS_RUN_CRATE]["@type"] == ["CreativeWork", "Profile"]
    assert graph[ids(root["license"])[0]]["@type"] == "CreativeWork"
    assert ids(root["mentions"]) == ["#run"]
    assert ids(root["hasPart"]) == sorted(PAYLOAD)


def test_each_file_has_its_digest_size_and_format():
    graph = by_id(crate_metadata(demo_run(), payload_files()))
    for file in payload_files():
        entity = graph[file.path]
        assert entity["@type"] == "File"
        assert entity["sha256"] == file.sha256
        assert entity["contentSize"] == str(file.size)
        assert entity["name"] == file.name
        assert entity["description"] == file.description
        assert entity["encodingFormat"] == file.encoding_format
    untyped = CrateFile("notes.txt", "0" * 64, 0, "output", "notes", "no format known")
    entity = by_id(crate_metadata(demo_run(), [untyped]))["notes.txt"]
    assert "encodingFormat" not in entity


def test_the_run_action_links_inputs_outputs_software_and_images():
    graph = by_id(crate_metadata(demo_run(), payload_files()))
    action = graph["#run"]
    assert action["@type"] == "CreateAction"
    assert action["startTime"] == "2026-12-01T10:00:00+00:00"
    assert action["endTime"] == "2026-12-01T10:05:30+00:00"
    inputs = [f.path for f in payload_files() if f.role == "input"]
    outputs = [f.path for f in payload_files() if f.role == "output"]
    assert ids(action["object"]) == [*sorted(inputs), "#harness-code"]
    assert ids(action["result"]) == sorted(outputs)
    assert graph["#harness-code"]["@type"] == "PropertyValue"
    assert graph["#harness-code"]["value"] == "sha256:" + "3" * 64

    software = graph[ids(action["instrument"])[0]]
    assert software["@type"] == "SoftwareApplication"
    assert software["name"] == "evalrepro"
    assert software["version"] == "0.2.0"
    assert software["url"] == "https://pypi.org/project/evalrepro/"

    images = [graph[image_id] for image_id in ids(action["containerImage"])]
    assert [image["name"] for image in images] == ["evalrepro-env", "evalrepro-base"]
    env = images[0]
    assert env["@type"] == "ContainerImage"
    assert ids(env["additionalType"]) == ["https://w3id.org/ro/terms/workflow-run#DockerImage"]
    assert env["registry"] == "localhost"
    assert env["tag"] == "111111111111"
    assert env["sha256"] == "a" * 64  # the "sha256:" prefix is not part of the value
    assert env["identifier"] == ENV_KEY
    assert images[1]["sha256"] == "b" * 64


@pytest.mark.parametrize(
    ("reference", "registry", "name", "tag"),
    [
        ("localhost/evalrepro-nix:abc", "localhost", "evalrepro-nix", "abc"),
        ("docker.io/library/python:3.11-slim", "docker.io", "library/python", "3.11-slim"),
        ("registry:5000/team/image", "registry:5000", "team/image", None),
        ("python:3.11", None, "python", "3.11"),
        ("ghcr.io/o/i@sha256:" + "c" * 64, "ghcr.io", "o/i", None),
    ],
)
def test_image_references_are_split_into_registry_name_and_tag(reference, registry, name, tag):
    run = demo_run(images=[CrateImage(reference, "d" * 64, "image", ENV_KEY)])
    graph = by_id(crate_metadata(run, payload_files()))
    image = graph[ids(graph["#run"]["containerImage"])[0]]
    assert (image.get("registry"), image["name"], image.get("tag")) == (registry, name, tag)
    assert image["alternateName"] == reference


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside.txt", "not a plain relative posix path"),
        ("/etc/passwd", "not a plain relative posix path"),
        ("a//b.txt", "not a plain relative posix path"),
        ("a\\b.txt", "not a plain relative posix path"),
        ("ro-crate-metadata.json", "own metadata file"),
    ],
)
def test_a_path_outside_the_crate_is_refused(path, message):
    with pytest.raises(ValueError, match=message):
        crate_metadata(demo_run(), [CrateFile(path, "0" * 64, 1, "input", "x", "x")])


def test_duplicate_paths_and_bad_digests_are_refused():
    file = CrateFile("a.txt", "0" * 64, 1, "input", "a", "a")
    with pytest.raises(ValueError, match="given twice"):
        crate_metadata(demo_run(), [file, file])
    with pytest.raises(ValueError, match="not hex"):
        crate_metadata(demo_run(), [CrateFile("a.txt", "sha256:" + "0" * 64, 1, "input", "a", "a")])
    with pytest.raises(ValueError, match="not a sha256 digest"):
        crate_metadata(
            demo_run(images=[CrateImage("localhost/x:y", "latest", "env", ENV_KEY)]), [file]
        )


def test_metadata_only_no_file_is_read_or_copied(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The files do not exist anywhere: the metadata is built from the records.
    crate_metadata(demo_run(), payload_files())
    assert list(tmp_path.iterdir()) == []


def edited(source: Path, target: Path, edit: Any) -> Path:
    shutil.copytree(source, target)
    path = target / "ro-crate-metadata.json"
    metadata = json.loads(path.read_text())
    edit(metadata)
    path.write_text(json.dumps(metadata))
    return target


def test_a_broken_crate_gives_one_line_per_problem(crate_dir, tmp_path, connections):
    def break_it(metadata: dict[str, Any]) -> None:
        del by_id(metadata)["#run"]["instrument"]

    root = edited(crate_dir, tmp_path / "crate", break_it)
    (root / "results.json").unlink()
    problems = validate_crate(root)
    assert (
        "ro-crate: process-run-crate-0.5: process-run-crate-0.5_1.1: The Action MUST have an "
        "instrument property that references the executed tool"
    ) in problems
    missing = [line for line in problems if "'results.json'" in line]
    assert {line.split(":")[1].strip() for line in missing} == {
        "process-run-crate-0.5",
        "ro-crate-1.3",
    }
    assert all(line.startswith("ro-crate: ") and "\n" not in line for line in problems)
    assert connections == []


def test_a_crate_without_descriptor_or_directory_is_a_problem(crate_dir, tmp_path, connections):
    root = tmp_path / "crate"
    shutil.copytree(crate_dir, root)
    (root / "ro-crate-metadata.json").unlink()
    problems = validate_crate(root)
    assert problems and all("ro-crate-metadata.json" in line for line in problems)
    assert validate_crate(tmp_path / "absent") == [
        f"ro-crate: {tmp_path / 'absent'}: not a directory"
    ]
    assert connections == []


def test_another_context_url_fails_without_the_network(crate_dir, tmp_path, connections):
    def add_context(metadata: dict[str, Any]) -> None:
        metadata["@context"].append("https://example.org/more-terms")

    problems = validate_crate(edited(crate_dir, tmp_path / "crate", add_context))
    assert problems
    assert all("Unable to retrieve the JSON-LD context" in line for line in problems)
    assert all(" object at 0x" not in line for line in problems)  # no object reprs
    assert connections == []
    # The validator logged the failure to the buffer it prints at exit: emptied.
    from rocrate_validator.utils import log

    assert log.__log_stream__.getvalue() == ""


def test_a_validator_that_raises_is_one_problem_line(crate_dir, monkeypatch, capsys):
    from rocrate_validator import services

    def explode(settings: object) -> None:
        raise RuntimeError("broken\nvalidator")

    monkeypatch.setattr(services, "validate", explode)
    assert validate_crate(crate_dir) == [
        "ro-crate: process-run-crate-0.5: the validator failed: broken validator"
    ]
    assert capsys.readouterr() == ("", "")


def test_ids_are_percent_encoded_paths():
    # RO-Crate @ids are URI references: a reader maps them back with urllib's unquote.
    from urllib.parse import unquote

    path = "inputs/wheels/foo-1.0+local-py3-none-any.whl"
    metadata = crate_metadata(demo_run(), [CrateFile(path, "0" * 64, 1, "input", "w", "a wheel")])
    (entity,) = [each for each in metadata["@graph"] if each["@type"] == "File"]
    assert entity["@id"] == "inputs/wheels/foo-1.0%2Blocal-py3-none-any.whl"
    assert unquote(entity["@id"]) == path
