"""Which configuration the runner reads from a file is the runner's own answer.

The supervisor asks pytest itself (its inifile discovery's ``load_config_dict_from_file``,
in a fresh, isolated interpreter of the test environment) what a changed setup.cfg,
tox.ini or pyproject.toml configures, and compares it with the base's. These tests ask
the pytest of this checkout's environment, as the supervisor asks the image's.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from evalrepro.sandbox.infra import pytest_reading, runner_python, sections_changed

PYTHON = sys.executable
BASE = b"[metadata]\nname = calc\n"
HIDDEN = {
    "carriage-return": b"[metadata]\nname = calc\r[tool:pytest]\naddopts = -p no:python\n",
    "file-separator": b"[metadata]\nname = calc\x1c[tool:pytest]\naddopts = -p no:python\n",
    "form-feed": b"[metadata]\nname = calc\x0c[tool:pytest]\naddopts = -p no:python\n",
}


def reading(tmp_path: Path, name: str, data: bytes | None) -> object:
    answer = pytest_reading(PYTHON, name, data)
    return answer if answer in (None, "absent") else json.loads(answer)


def _addopts(config: object) -> str:
    """``addopts`` as pytest read it (pytest 9 keeps a ConfigValue, shown by its repr)."""
    assert isinstance(config, dict) and set(config) == {"addopts"}, config
    value = config["addopts"]
    return value.split("value='", 1)[1].split("'", 1)[0] if "ConfigValue" in value else value


@pytest.mark.parametrize("data", HIDDEN.values(), ids=HIDDEN.keys())
def test_a_section_configparser_cannot_see_is_what_pytest_reads(tmp_path, data):
    # The look-alike parser sees no test section change...
    assert sections_changed("setup.cfg", BASE, data) == []
    # ...pytest reads one, and that is what counts.
    assert reading(tmp_path, "setup.cfg", BASE) is None
    assert _addopts(reading(tmp_path, "setup.cfg", data)) == "-p no:python"


def test_a_file_without_pytest_configuration_reads_as_none(tmp_path):
    assert (
        reading(tmp_path, "setup.cfg", BASE) is None or reading(tmp_path, "setup.cfg", BASE) == {}
    )
    assert reading(tmp_path, "setup.cfg", None) == "absent"


def test_pyproject_is_read_by_pytest_too(tmp_path):
    base = b'[project]\nname = "calc"\n'
    new = base + b'[tool.pytest.ini_options]\naddopts = "-k nothing"\n'
    assert reading(tmp_path, "pyproject.toml", base) != reading(tmp_path, "pyproject.toml", new)
    assert _addopts(reading(tmp_path, "pyproject.toml", new)) == "-k nothing"


def test_the_scratch_folder_is_removed(monkeypatch):
    # Other test workers make folders of their own in /tmp: follow the one this call makes.
    made: list[str] = []
    real = tempfile.mkdtemp

    def recorded(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    # The reading imports tempfile when it runs (the supervisor's start stays light).
    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    assert pytest_reading(PYTHON, "setup.cfg", HIDDEN["carriage-return"]) is not None
    assert made and not any(Path(folder).exists() for folder in made)


def test_an_environment_without_pytest_has_no_reading(tmp_path):
    # The base image's own python3 has no pytest: nothing reads the file as pytest does.
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python3").symlink_to("/usr/bin/python3")
    python = runner_python(str(bare))
    assert python == str(bare / "python3")
    assert pytest_reading(python, "setup.cfg", HIDDEN["carriage-return"]) is None


def test_no_interpreter_no_reading(tmp_path):
    assert runner_python(str(tmp_path)) is None
    assert pytest_reading(None, "setup.cfg", BASE) is None
