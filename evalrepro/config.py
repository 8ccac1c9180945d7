"""The experiment config: composed by Hydra from ``conf/``, then validated by pydantic.

Hydra/OmegaConf stay at this edge: ``compose`` returns an :class:`ExperimentConfig` and
nothing downstream sees an OmegaConf object. Every failure, from a missing config group
to a wrong type, becomes a one-line :class:`UserError` naming the key.

Paths inside the built-in configs use the ``${pkg:...}`` resolver, which points into the
installed ``evalrepro`` package; a user's own paths are relative to the working directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrepro.dataset import DatasetConfig
from evalrepro.environment import EnvironmentConfig
from evalrepro.errors import UserError, validation_message
from evalrepro.gate import Gate
from evalrepro.target import TargetConfig

PACKAGE_DIR = Path(__file__).resolve().parent


def builtin_config_dir() -> Path:
    """``conf/`` of a source checkout, or the copy a wheel carries inside the package."""
    for candidate in (PACKAGE_DIR / "conf", PACKAGE_DIR.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise UserError(f"evalrepro's built-in configs are missing (looked in {PACKAGE_DIR})")


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    output_dir: Path = Path("runs")


class ExperimentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    dataset: DatasetConfig
    target: TargetConfig
    environment: EnvironmentConfig
    gate: Gate
    run: RunSettings = Field(default_factory=RunSettings)


if not OmegaConf.has_resolver("pkg"):
    OmegaConf.register_new_resolver("pkg", lambda relative: str(PACKAGE_DIR / relative))


def compose_raw(overrides: list[str], config_dir: Path | None = None) -> dict[str, Any]:
    """Hydra's composition of ``conf/`` (plus ``config_dir``), resolved to plain data."""
    search = []
    if config_dir is not None:
        if not config_dir.is_dir():
            raise UserError(f"--config-dir {config_dir}: no such directory")
        search = [f"hydra.searchpath=[file://{config_dir.resolve()}]"]
    try:
        with initialize_config_dir(config_dir=str(builtin_config_dir()), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=[*search, *overrides])
        data = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as error:
        raise UserError(f"config: {_one_line(error)}") from None
    except yaml.YAMLError as error:
        raise UserError(f"config: not valid YAML: {_yaml_problem(error)}") from None
    assert isinstance(data, dict)
    return data


def compose(overrides: list[str], config_dir: Path | None = None) -> ExperimentConfig:
    data = compose_raw(overrides, config_dir)
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as error:
        raise UserError(f"config: {validation_message(error)}") from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    """``file:line:column: problem`` from a YAML error."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is None:
        return problem
    return f"{mark.name}:{mark.line + 1}:{mark.column + 1}: {problem}"


def _one_line(error: Exception) -> str:
    """Hydra's multi-line message as one line: the sentences, then the options it lists."""
    message: list[str] = []
    options: list[str] = []
    section = "message"
    for raw in str(error).splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Available options"):
            section = "options"
        elif line.startswith("Config search path"):
            section = "search path"  # Hydra's internals: of no use to the user
        elif section == "options" and raw.startswith(("\t", " ")):
            options.append(line)
        elif section == "message":
            message.append(line)
    text = " ".join(message) or type(error).__name__
    return f"{text} (available: {', '.join(options)})" if options else text
