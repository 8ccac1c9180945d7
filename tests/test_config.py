"""Experiments compose with Hydra and validate with pydantic; mistakes are one line."""

import json
from pathlib import Path

import pytest

from evalrepro.cli import main
from evalrepro.config.experiment import builtin_config_dir, compose
from evalrepro.errors import UserError
from evalrepro.plan.dataset import instance_test_spec

EXPERIMENTS = sorted(p.stem for p in (builtin_config_dir() / "experiment").glob("*.yaml"))


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_shipped_experiment_composes_into_a_valid_config(name):
    config = compose([f"+experiment={name}"])
    assert config.name == name
    assert Path(config.dataset.instances).is_file()


def test_the_demo_experiments_are_shipped():
    assert {"demo", "model_a", "model_b"} <= set(EXPERIMENTS)


def test_config_prints_the_validated_config(capsys):
    code, out, _ = run_cli(capsys, "config", "+experiment=model_a", "--json")
    assert code == 0
    printed = json.loads(out)
    assert printed["name"] == "model_a"
    assert printed["target"]["kind"] == "predictions"
    assert printed["environment"]["network"] == "none"


def test_overrides_apply_before_validation(capsys):
    code, out, _ = run_cli(capsys, "config", "+experiment=demo", "environment.timeout=42")
    assert code == 0
    assert "timeout: 42" in out


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+environment.timeot=3", "unknown field 'environment.timeot'"),
        ("environment.timeout=abc", "field 'environment.timeout': Input should be a valid integer"),
        ("environment.timeout=-1", "field 'environment.timeout': Input should be greater than 0"),
        ("target.kind=bogus", "target"),
        ("+experiment=nope", "Could not find 'experiment/nope' (available: demo"),
        ("dataset.test_ids=other", "field 'dataset.test_ids'"),
        (
            "gate.rules=[{metric: resolve_rate, op: '>=', threshold: 1}]",
            "unknown metric 'resolve_rate'",
        ),
    ],
)
def test_a_bad_config_value_is_one_line_naming_the_key(capsys, override, message):
    code, out, err = run_cli(capsys, "config", "+experiment=demo", override)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("evalrepro: error: config: ")
    assert message in err


def test_a_users_own_dataset_is_config_only(tmp_path, capsys):
    (tmp_path / "data.jsonl").write_text(
        json.dumps(
            {
                "instance_id": "me__lib-1",
                "repo": "me/lib",
                "base_commit": "0" * 40,
                "test_patch": "",
                "FAIL_TO_PASS": "[]",
                "PASS_TO_PASS": "[]",
                "version": "2.0",
            }
        )
        + "\n"
    )
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "mine.yaml").write_text(
        f"name: mine\ninstances: {tmp_path / 'data.jsonl'}\ntest_ids: native\n"
        f"repos:\n  me/lib: {{kind: local, path: {tmp_path}}}\n"
        "specs:\n  me/lib:\n    '2.0': {test_cmd: pytest -rA -v, parser: pytest_full}\n"
    )
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /dataset: mine\nname: mine\n"
    )
    config = compose(["+experiment=mine"], config_dir=tmp_path)
    assert config.dataset.name == "mine"
    (sample,) = config.dataset.load()
    assert instance_test_spec(config.dataset, sample).test_cmd == "pytest -rA -v"


def test_a_missing_config_dir_is_an_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "config", "--config-dir", str(tmp_path / "nope"))
    assert code == 2
    assert "no such directory" in err


@pytest.mark.parametrize(
    ("override", "where"),
    [
        # A field whose name is also a kind's tag (a repo source of kind "archive").
        ("environment.base.archive=ftp://x", "field 'environment.base.archive'"),
        # The union tags pydantic adds (podman, nix, archive) are not what the user wrote.
        ("environment.builder={kind: nix, archive: 1}", "field 'environment.builder.archive'"),
        (
            "dataset.repos={demo/calc: {kind: archive}}",
            "missing field 'dataset.repos.demo/calc.path'",
        ),
    ],
)
def test_a_config_error_names_the_field_as_written_without_union_tags(override, where):
    with pytest.raises(UserError) as error:
        compose(["+experiment=demo", override])
    assert where in str(error.value)
