"""The validated dataset is the dataset that came in, in its own format: every field kept,
the lists replaced by the derived ones (encoded as the dataset encoded its lists), a FLAKY
field, and only the instances that can be resolved."""

from __future__ import annotations

import json

import pyarrow
import pyarrow.parquet as parquet
import pytest

from evalrepro.errors import UserError
from evalrepro.records.validation import InstanceValidation, ValidationReport
from evalrepro.validation.dataset import report_path, write_validated

ROWS = [
    {"instance_id": "a", "repo": "r", "hints_text": "kept", "FAIL_TO_PASS": '["old"]'},
    {"instance_id": "b", "repo": "r"},
    {"instance_id": "c", "repo": "r"},
]
REPORT = ValidationReport(
    dataset="d",
    repeats=3,
    before_lockfile="sha256:1",
    after_lockfile="sha256:2",
    harness_version="0",
    instances=[
        InstanceValidation(
            instance_id="a", verdict="valid", fail_to_pass=["t1"], pass_to_pass=["t2"]
        ),
        InstanceValidation(
            instance_id="b", verdict="flaky_tests", fail_to_pass=["t3"], flaky=["coin"]
        ),
        InstanceValidation(instance_id="c", verdict="gold_breaks_tests", pass_to_fail=["t4"]),
    ],
)


def test_jsonl_keeps_every_field_and_the_encoding_of_its_lists(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert write_validated(source, REPORT, tmp_path / "out.jsonl") == 2
    a, b = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    # "a" wrote its lists as JSON strings (as SWE-bench ships them): so are the derived.
    assert (a["hints_text"], a["FAIL_TO_PASS"], a["FLAKY"]) == ("kept", '["t1"]', "[]")
    assert (b["FAIL_TO_PASS"], b["PASS_TO_PASS"], b["FLAKY"]) == (["t3"], [], ["coin"])
    # The broken instance is left out; the report beside it names it.
    saved = ValidationReport.model_validate_json(report_path(tmp_path / "out.jsonl").read_text())
    assert saved == REPORT


def test_json_and_parquet_come_out_as_they_came_in(tmp_path):
    source = tmp_path / "in.json"
    source.write_text(json.dumps(ROWS[1:]))
    write_validated(source, REPORT, tmp_path / "out.json")
    assert [r["instance_id"] for r in json.loads((tmp_path / "out.json").read_text())] == ["b"]
    table = pyarrow.Table.from_pylist([{"instance_id": "b", "repo": "r", "extra": 1}])
    parquet.write_table(table, tmp_path / "in.parquet")
    write_validated(tmp_path / "in.parquet", REPORT, tmp_path / "out.parquet")
    (row,) = parquet.read_table(tmp_path / "out.parquet").to_pylist()
    assert (row["extra"], row["FAIL_TO_PASS"], row["FLAKY"]) == (1, ["t3"], ["coin"])


def test_another_format_than_the_datasets_is_one_line(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROWS[0]) + "\n")
    with pytest.raises(UserError, match="the dataset is jsonl"):
        write_validated(source, REPORT, tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_validate_refuses_an_output_of_another_format_before_anything_runs(tmp_path):
    from evalrepro.cli import main

    # Nothing is built or run: the refusal comes first, in one line.
    assert main(["validate", "+experiment=demo", "--output", str(tmp_path / "out.parquet")]) == 2
    assert not (tmp_path / "runs").exists()
