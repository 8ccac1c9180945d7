"""Every record evalrepro writes: one registry, a pinned schema version each, one reader
that refuses what it cannot trust (another schema, another record, a link, a huge file)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from evalrepro.errors import UserError
from evalrepro.records.base import Record, read_record, records
from evalrepro.records.sessions import RunSessions


def test_every_record_is_registered_with_a_pinned_schema_version():
    known = records()
    for name in (
        "Lockfile",
        "TrialResult",
        "Attempt",
        "RunResults",
        "RunReport",
        "RunSessions",
        "ImageBuilds",
        "ComparisonReport",
        "SupervisorReport",
        "TrialProgram",
    ):
        assert name in known
    for name, model in known.items():
        assert issubclass(model, Record) and model.record_name() == name
        assert isinstance(model.pinned_version(), int)


def write(path, value) -> None:
    path.write_text(json.dumps(value))


def test_a_record_of_another_schema_version_is_refused_naming_both(tmp_path):
    path = tmp_path / "run.json"
    write(path, {"record": "RunSessions", "schema_version": 9, "sessions": []})
    with pytest.raises(
        UserError, match=r"RunSessions schema version 9; this evalrepro reads version 2"
    ):
        read_record(path, RunSessions)


def test_another_record_or_an_unknown_one_is_refused(tmp_path):
    path = tmp_path / "x.json"
    write(path, {"record": "Lockfile", "schema_version": 2})
    with pytest.raises(UserError, match="a Lockfile record, not a RunSessions"):
        read_record(path, RunSessions)
    write(path, {"record": "Mystery"})
    with pytest.raises(UserError, match="unknown record 'Mystery'"):
        read_record(path, RunSessions)
    write(path, [1, 2])
    with pytest.raises(UserError, match="not a RunSessions record"):
        read_record(path, RunSessions)


def test_links_fifos_and_huge_files_are_not_read(tmp_path):
    real = tmp_path / "real.json"
    write(real, {"record": "RunSessions", "sessions": []})
    assert read_record(real, RunSessions).sessions == []
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(UserError, match="cannot read"):
        read_record(link, RunSessions)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="not a regular file"):
        read_record(fifo, RunSessions)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (2 << 20))
    with pytest.raises(UserError, match="larger than 1 MiB"):
        read_record(big, RunSessions, limit=1 << 20)


def test_an_invalid_record_is_one_line_naming_the_field(tmp_path):
    path = tmp_path / "run.json"
    write(path, {"record": "RunSessions", "sessions": [{"started_at": "yesterday"}]})
    with pytest.raises(UserError) as error:
        read_record(path, RunSessions)
    assert "\n" not in str(error.value) and "sessions" in str(error.value)


def test_the_readme_lists_every_record_with_its_schema_version():
    readme = (Path(__file__).parents[1] / "docs" / "reproducibility.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (\d+) \|", readme, flags=re.M))
    assert {name: str(model.pinned_version()) for name, model in records().items()} == rows


# --- migrations: last release's records still read -------------------------------------

from typing import Literal  # noqa: E402


class Shaped(Record):
    """A record that changed shape twice: 1 -> 2 renamed a field, 2 -> 3 added one."""

    record: Literal["TestShaped"] = "TestShaped"
    schema_version: int = 3
    migrations = {
        1: lambda data: {**{k: v for k, v in data.items() if k != "old"}, "new": data["old"]},
        2: lambda data: {**data, "extra": "default"},
    }
    new: str
    extra: str


class Holder(Record):
    record: Literal["TestHolder"] = "TestHolder"
    inner: Shaped


def test_an_older_record_is_upgraded_step_by_step_as_it_is_read(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"record": "TestShaped", "schema_version": 1, "old": "x"}))
    assert read_record(path, Shaped) == Shaped(new="x", extra="default")


def test_a_record_nested_in_another_is_upgraded_too(tmp_path):
    path = tmp_path / "holder.json"
    inner = {"record": "TestShaped", "schema_version": 2, "new": "y"}
    path.write_text(json.dumps({"record": "TestHolder", "inner": inner}))
    assert read_record(path, Holder).inner == Shaped(new="y", extra="default")


def test_a_record_newer_than_the_code_is_refused_in_one_line(tmp_path):
    path = tmp_path / "new.json"
    path.write_text(json.dumps({"record": "TestShaped", "schema_version": 4, "new": "z"}))
    with pytest.raises(UserError) as error:
        read_record(path, Shaped)
    message = str(error.value)
    assert "\n" not in message and "schema version 4" in message and "newer" in message


def test_an_older_version_no_migration_reaches_is_refused_in_one_line(tmp_path):
    path = tmp_path / "older.json"
    path.write_text(json.dumps({"record": "RunSessions", "schema_version": 0, "sessions": []}))
    with pytest.raises(UserError) as error:
        read_record(path, RunSessions)
    message = str(error.value)
    assert "\n" not in message and "no migration" in message


def test_a_trial_result_of_the_previous_release_keeps_its_trial_id():
    from evalrepro.records.trial import TrialKey

    old_key = {
        "instance_id": "x__y-1",
        "target_id": "gold",
        "repository_commit": "a" * 40,
        "image_digest": "sha256:" + "b" * 64,
        "test_spec_digest": "sha256:" + "c" * 64,
        "harness_version": "0.2.0",
        "harness_digest": "sha256:" + "d" * 64,
        "sample_index": 0,
    }
    from evalrepro.digest import sha256_json

    # The id evalrepro 0.2 computed: the key without a target digest.
    assert TrialKey.model_validate(old_key).trial_id() == sha256_json(old_key)
    with_target = TrialKey.model_validate({**old_key, "target_digest": "sha256:" + "e" * 64})
    assert with_target.trial_id() != sha256_json(old_key)
