"""Datasets and predictions load in SWE-bench's formats; bad records name their line."""

import json

import pytest

from evalrepro.errors import UserError
from evalrepro.sample import load_samples
from evalrepro.targets.static import GoldTarget, PredictionsTarget, load_predictions


def instance(instance_id="o__r-1", **fields):
    record = {
        "instance_id": instance_id,
        "repo": "o/r",
        "base_commit": "abc123",
        "patch": "diff --git a/x b/x\n",
        "test_patch": "diff --git a/tests/t.py b/tests/t.py\n",
        "FAIL_TO_PASS": ["tests/t.py::test_a"],
        "PASS_TO_PASS": [],
        "version": "1.0",
    }
    record.update(fields)
    return record


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_jsonl_json_list_and_single_object_datasets_load_alike(tmp_path):
    records = [instance("o__r-1"), instance("o__r-2")]
    jsonl = write_jsonl(tmp_path / "d.jsonl", records)
    listed = tmp_path / "d.json"
    listed.write_text(json.dumps(records, indent=2))
    single = tmp_path / "one.json"
    single.write_text(json.dumps(records[0]))
    assert [s.instance_id for s in load_samples(jsonl)] == ["o__r-1", "o__r-2"]
    assert load_samples(listed) == load_samples(jsonl)
    assert load_samples(single) == load_samples(jsonl)[:1]


def test_test_lists_given_as_json_strings_as_swebench_ships_them_are_decoded(tmp_path):
    path = write_jsonl(
        tmp_path / "d.jsonl",
        [instance(FAIL_TO_PASS='["a", "b c"]', PASS_TO_PASS="[]")],
    )
    (sample,) = load_samples(path)
    assert sample.fail_to_pass == ["a", "b c"]
    assert sample.pass_to_pass == []


def test_swebench5_log_parser_names_are_understood(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [instance(log_parser="parse_log_django")])
    assert load_samples(path)[0].parser == "django"


def test_unknown_fields_are_kept_and_covered_by_the_instance_digest(tmp_path):
    a = load_samples(write_jsonl(tmp_path / "a.jsonl", [instance(hints_text="x")]))[0]
    b = load_samples(write_jsonl(tmp_path / "b.jsonl", [instance(hints_text="y")]))[0]
    assert a.digest() != b.digest()
    assert a.model_dump(by_alias=True)["hints_text"] == "x"


def test_a_duplicate_instance_id_names_both_lines(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [instance("x"), instance("y"), instance("x")])
    with pytest.raises(
        UserError, match=r"d\.jsonl:3: duplicate instance_id 'x' \(first at .*d\.jsonl:1\)"
    ):
        load_samples(path)


def test_a_missing_field_names_the_line_and_the_field(tmp_path):
    bad = instance()
    del bad["base_commit"]
    path = write_jsonl(tmp_path / "d.jsonl", [instance("ok"), bad])
    with pytest.raises(UserError, match=r"d\.jsonl:2: missing field 'base_commit'"):
        load_samples(path)


def test_malformed_json_names_the_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(instance()) + "\n{not json\n")
    with pytest.raises(UserError, match=r"d\.jsonl:2: invalid JSON"):
        load_samples(path)


def test_a_test_list_string_that_is_not_json_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [instance(FAIL_TO_PASS="[oops")])
    with pytest.raises(UserError, match=r"FAIL_TO_PASS.*not a JSON list"):
        load_samples(path)


def test_a_missing_dataset_file_is_one_clear_line(tmp_path):
    with pytest.raises(UserError, match=r"no such file"):
        load_samples(tmp_path / "absent.jsonl")


# --- predictions ---------------------------------------------------------------------


@pytest.fixture
def samples(tmp_path):
    return load_samples(write_jsonl(tmp_path / "d.jsonl", [instance("a"), instance("b")]))


def prediction(instance_id, patch="diff", model="m"):
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}


def test_predictions_load_from_jsonl_json_list_and_dict_keyed_by_id(tmp_path, samples):
    records = [prediction("a"), prediction("b", patch=None)]
    jsonl = write_jsonl(tmp_path / "p.jsonl", records)
    listed = tmp_path / "p.json"
    listed.write_text(json.dumps(records))
    keyed = tmp_path / "k.json"
    keyed.write_text(json.dumps({r["instance_id"]: r for r in records}))
    for path in (jsonl, listed, keyed):
        loaded = load_predictions(path, samples)
        assert [(p.instance_id, p.model_patch) for p in loaded] == [("a", "diff"), ("b", None)]


def test_a_dict_keyed_by_id_may_omit_instance_id_in_the_values(tmp_path, samples):
    keyed = tmp_path / "k.json"
    keyed.write_text(json.dumps({"a": {"model_name_or_path": "m", "model_patch": "x"}}))
    assert load_predictions(keyed, samples)[0].instance_id == "a"


def test_a_prediction_for_an_unknown_instance_names_its_line(tmp_path, samples):
    path = write_jsonl(tmp_path / "p.jsonl", [prediction("a"), prediction("zzz")])
    with pytest.raises(UserError, match=r"p\.jsonl:2: prediction for unknown instance 'zzz'"):
        load_predictions(path, samples)


def test_a_duplicate_prediction_is_an_error_unless_the_target_declares_samples(tmp_path, samples):
    path = write_jsonl(tmp_path / "p.jsonl", [prediction("a", "p1"), prediction("a", "p2")])
    with pytest.raises(
        UserError, match=r"p\.jsonl:2: sample 1 of 'a' but the target declares samples: 1"
    ):
        load_predictions(path, samples)
    two = load_predictions(path, samples, samples_per_instance=2)
    assert [(p.sample_index, p.model_patch) for p in two] == [(0, "p1"), (1, "p2")]


def test_explicit_sample_indexes_must_not_repeat(tmp_path, samples):
    records = [dict(prediction("a"), sample_index=1), dict(prediction("a"), sample_index=1)]
    path = write_jsonl(tmp_path / "p.jsonl", records)
    with pytest.raises(UserError, match=r"p\.jsonl:2: duplicate prediction for 'a' sample 1"):
        load_predictions(path, samples, samples_per_instance=2)


def test_a_prediction_without_model_patch_names_the_field(tmp_path, samples):
    path = write_jsonl(tmp_path / "p.jsonl", [{"instance_id": "a", "model_name_or_path": "m"}])
    with pytest.raises(UserError, match=r"p\.jsonl:1: missing field 'model_patch'"):
        load_predictions(path, samples)


def test_gold_target_evaluates_the_datasets_own_patches(samples):
    patches = GoldTarget().patches(samples)
    assert [(p.instance_id, p.model_patch) for p in patches] == [
        ("a", "diff --git a/x b/x\n"),
        ("b", "diff --git a/x b/x\n"),
    ]


def test_predictions_target_reads_its_file(tmp_path, samples):
    path = write_jsonl(tmp_path / "p.jsonl", [prediction("b")])
    assert PredictionsTarget(path=path).patches(samples)[0].instance_id == "b"
