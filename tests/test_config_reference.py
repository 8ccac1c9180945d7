"""The config reference documents every field, and the committed copy is current."""

from __future__ import annotations

import json
from pathlib import Path

from evalrepro.cli import main
from evalrepro.config.reference import json_schema, reference, rows

COMMITTED = Path(__file__).resolve().parent.parent / "docs" / "config-reference.md"


def test_every_config_field_has_a_description():
    undocumented = [key for key, _type, _default, doc in rows() if not doc]
    assert undocumented == []


def test_the_committed_reference_is_current():
    # Regenerate with: evalrepro config --reference > docs/config-reference.md
    assert COMMITTED.read_text() == reference()


def test_the_schema_describes_each_property(capsys):
    assert main(["config", "--schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(json_schema()))
    limits = schema["$defs"]["Limits"]["properties"]
    assert limits["memory"]["description"].startswith("Memory of all test processes")


def test_schema_and_reference_take_no_overrides(capsys):
    assert main(["config", "--schema", "+experiment=demo"]) == 2
    assert "drop the overrides" in capsys.readouterr().err
