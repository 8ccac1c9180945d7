"""Bringing your own dataset is config: paths, selection, missing patches, Python, gates.

Specifications of what a dataset config means, without containers: relative paths
resolve against the config directory, instances can be selected by id or pattern (and
Parquet read like JSONL), a predictions file that covers part of the dataset is planned
as ``target.missing`` declares, a spec names its Python, keys with ``/`` and ``.`` are
overridden in brackets, and the default gate fails a run that measured nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.config.experiment import compose
from evalrepro.config.gate import Gate
from evalrepro.demo import INSTANCES_PATH
from evalrepro.errors import UserError
from evalrepro.plan.dataset import command_advice, instance_test_spec
from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.plan.plan import planned_predictions
from evalrepro.records.lockfile import LockedInstance
from evalrepro.sample import DEFINING_FIELDS, load_samples
from evalrepro.targets.base import Prediction
from evalrepro.targets.static import PredictionsTarget

ROOT = Path(__file__).resolve().parent.parent
DEMO_LOCK = ROOT / "lockfiles" / "demo.lock.json"


def evalrepro(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def own_dataset(folder: Path) -> Path:
    """A config tree of one's own: conf/dataset/mine.yaml with a relative instances path."""
    conf = folder / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "data").mkdir()
    shutil.copy(INSTANCES_PATH, conf / "data" / "instances.jsonl")
    demo = (ROOT / "conf" / "dataset" / "demo.yaml").read_text()
    mine = demo.replace("${pkg:demo/instances.jsonl}", "data/instances.jsonl").replace(
        "name: demo", "name: mine"
    )
    (conf / "dataset" / "mine.yaml").write_text(mine)
    return conf


# --- paths ---------------------------------------------------------------------------


def test_relative_paths_resolve_against_the_config_directory_from_anywhere(tmp_path):
    conf = own_dataset(tmp_path)
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    done = evalrepro("config", "--config-dir", conf, "+experiment=demo", "dataset=mine",
                     "--json", cwd=elsewhere)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dataset"]["instances"] == str(conf / "data" / "instances.jsonl")


# --- overrides -------------------------------------------------------------------------


def test_keys_holding_slashes_and_dots_are_overridden_in_brackets():
    config = compose(["+experiment=demo", "dataset.specs[demo/calc][1.0].python=3.9"])
    assert config.dataset.specs["demo/calc"]["1.0"].python == "3.9"
    assert config.dataset.specs["demo/textkit"]["1.0"].python is None


def test_an_unbracketed_key_with_a_slash_is_refused_with_the_way_to_write_it():
    with pytest.raises(UserError, match=r"in brackets, e\.g\. dataset\.specs\[django/django\]"):
        compose(["+experiment=demo", "dataset.specs.demo/calc.1.0.python=3.9"])


@pytest.mark.parametrize("override", ["hydra.run.dir=/tmp/x", "hydra.job.chdir=true"])
def test_hydras_own_settings_are_refused_in_one_line(override):
    with pytest.raises(UserError, match="Hydra's own settings"):
        compose(["+experiment=demo", override])


def test_multirun_is_refused_in_one_line(tmp_path):
    done = evalrepro("run", "-m", "+experiment=demo,model_a", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("evalrepro: error: --multirun:")
    assert len(done.stderr.splitlines()) == 1


# --- Python per spec -------------------------------------------------------------------


def test_a_spec_names_its_python_and_gets_the_suite_that_ships_it():
    config = compose(["+experiment=demo", "dataset.specs[demo/calc][1.0].python=3.9"])
    spec = config.dataset.specs["demo/calc"]["1.0"]
    assert spec.suite(config.environment.base.suite) == "bullseye"
    assert config.dataset.specs["demo/ledger"]["1.0"].suite("bookworm") == "bookworm"
    sample = next(s for s in config.dataset.load() if s.repo == "demo/calc")
    other = instance_test_spec(compose(["+experiment=demo"]).dataset, sample)
    assert instance_test_spec(config.dataset, sample).digest() != other.digest()


def test_a_python_no_suite_ships_is_refused_naming_the_spec():
    with pytest.raises(UserError) as refused:
        compose(["+experiment=demo", "dataset.specs[demo/calc][1.0].python='3.7'"])
    message = str(refused.value)
    assert "dataset.specs.demo/calc.1.0.python" in message
    assert "3.9 (bullseye), 3.11 (bookworm), 3.13 (trixie)" in message


# --- selection and formats -------------------------------------------------------------


def test_instances_are_selected_by_id_and_by_pattern():
    by_id = compose(["+experiment=demo", "dataset.instance_ids=[demo__calc-2,demo__ledger-1]"])
    assert [s.instance_id for s in by_id.dataset.load()] == ["demo__calc-2", "demo__ledger-1"]
    by_pattern = compose(["+experiment=demo", "dataset.filter='^demo__textkit-[12]$'"])
    assert [s.instance_id for s in by_pattern.dataset.load()] == [
        "demo__textkit-1",
        "demo__textkit-2",
    ]


def test_an_unknown_instance_id_or_an_empty_selection_is_one_line():
    with pytest.raises(UserError, match=r"names 1 instance.* not in .*: demo__nope"):
        compose(["+experiment=demo", "dataset.instance_ids=[demo__nope]"]).dataset.load()
    with pytest.raises(UserError, match="the selection holds no instance"):
        compose(["+experiment=demo", "dataset.filter='^nothing$'"]).dataset.load()


def test_a_parquet_dataset_reads_as_its_jsonl(tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    rows = [json.loads(line) for line in INSTANCES_PATH.read_text().splitlines()]
    for row in rows:  # as SWE-bench publishes them: test lists as JSON strings
        row["FAIL_TO_PASS"], row["PASS_TO_PASS"] = map(
            json.dumps, (row["FAIL_TO_PASS"], row["PASS_TO_PASS"])
        )
    parquet.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "test.parquet")
    assert load_samples(tmp_path / "test.parquet") == load_samples(INSTANCES_PATH)


def test_a_file_that_is_not_parquet_is_one_line(tmp_path):
    pytest.importorskip("pyarrow")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(UserError, match="not a readable Parquet file"):
        load_samples(tmp_path / "broken.parquet")


# --- a predictions file that covers part of the dataset --------------------------------


def _covering(count: int, missing: str) -> list:
    samples = load_samples(INSTANCES_PATH)
    predictions = [
        Prediction(instance_id=s.instance_id, model_name_or_path="m", model_patch="x")
        for s in samples[:count]
    ]
    target = PredictionsTarget(path=INSTANCES_PATH, missing=missing)
    return planned_predictions(samples, predictions, target, "m")


def test_a_partial_predictions_file_is_refused_unless_the_user_says_what_it_means():
    with pytest.raises(UserError, match=r"no patch for 4 of 12 planned trials .*target\.missing"):
        _covering(8, "error")


def test_missing_patches_are_planned_as_empty_or_left_out_as_declared():
    empty = _covering(8, "empty")
    assert len(empty) == 12
    assert [p.model_patch for _, p in empty[8:]] == [None] * 4
    skipped = _covering(8, "skip")
    assert len(skipped) == 8 and all(p.model_patch == "x" for _, p in skipped)


# --- identity of an instance -----------------------------------------------------------


def test_an_instance_difference_names_the_fields_and_ignores_non_defining_ones():
    lock = read_lockfile(DEMO_LOCK)
    first = lock.dataset.instances[0]
    changed = dict(first.fields, problem_statement="sha256:" + "1" * 64)
    other_digest = "sha256:" + "2" * 64
    edited = first.model_copy(update={"fields": changed, "digest": other_digest})
    other = _with_instance(lock, edited)
    found = [d.detail for d in differences(lock, other) if d.kind == "dataset"]
    assert found == [f"{first.instance_id}: field problem_statement differs"]
    assert "repo_path" not in DEFINING_FIELDS


def _with_instance(lock, instance: LockedInstance):
    instances = [instance, *lock.dataset.instances[1:]]
    return lock.model_copy(
        update={"dataset": lock.dataset.model_copy(update={"instances": instances})}
    )


def test_a_field_the_dataset_carries_but_does_not_define_does_not_change_the_digest():
    sample = load_samples(INSTANCES_PATH)[0]
    moved = sample.model_copy(update={"repo_path": "/home/someone/data/calc"})
    assert moved.digest() == sample.digest()
    assert moved.field_digests().keys() - sample.field_digests().keys() == {"repo_path"}


# --- gates -----------------------------------------------------------------------------


def test_the_default_gate_fails_a_run_that_is_all_invalid():
    gate = Gate.model_validate(compose(["+experiment=demo", "gate=default"]).gate.model_dump())
    verdicts = gate.evaluate({"evidence_completeness": 1.0, "invalid_rate": 1.0})
    assert not all(v.passed for v in verdicts)
    assert all(v.passed for v in gate.evaluate({"evidence_completeness": 1.0, "invalid_rate": 0.1}))


def test_environment_variables_do_not_leak_into_the_resolution(tmp_path, monkeypatch):
    # Paths resolve against the config directory, not a variable of the shell.
    monkeypatch.setenv("PWD", "/nonexistent")
    conf = own_dataset(tmp_path)
    config = compose(["+experiment=demo", "dataset=mine"], conf)
    assert Path(config.dataset.instances) == conf / "data" / "instances.jsonl"
    assert os.path.isfile(config.dataset.instances)


def test_a_test_command_that_its_parser_cannot_read_is_named_before_anything_runs():
    quiet = compose(
        ["+experiment=demo", "dataset.specs[demo/calc][1.0].test_cmd='pytest -rA'"]
    ).dataset
    (advice,) = command_advice(quiet)
    assert advice.startswith("spec demo/calc 1.0: pytest_full needs -v or --no-fold-skipped")
    assert command_advice(compose(["+experiment=demo"]).dataset) == []
