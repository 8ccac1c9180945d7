"""The experiment config: composed by Hydra from ``conf/``, then validated by pydantic.

Hydra/OmegaConf stay at this edge: ``compose`` returns an :class:`ExperimentConfig` and
nothing downstream sees an OmegaConf object. Every failure, from a missing config group
to a wrong type, becomes a one-line :class:`UserError` naming the key.

Paths inside the built-in configs use the ``${pkg:...}`` resolver, which points into the
installed ``evalrepro`` package; a user's own paths are relative to the working directory.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, ClassVar

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalrepro import PACKAGE_DIR
from evalrepro.config.dataset import DatasetConfig
from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.config.gate import Gate
from evalrepro.errors import UserError, validation_message
from evalrepro.plugins import config_union

#: Each a union of the kinds its plugin group declares, told apart by ``kind``.
EnvironmentConfig = config_union("runtimes")
ExecutorConfig = config_union("executors")
TargetConfig = config_union("targets")


def builtin_config_dir() -> Path:
    """``conf/`` of a source checkout, or the copy a wheel carries inside the package."""
    for candidate in (PACKAGE_DIR / "conf", PACKAGE_DIR.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise UserError(f"evalrepro's built-in configs are missing (looked in {PACKAGE_DIR})")


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Where `evalrepro run` puts a run directory without --run-dir (runs/<name>-<UTC time>).
    output_dir: Path = Path("runs")


#: The most runs of one side validation makes.
MAX_VALIDATION_RUNS = 100


class FlakyBoundSettings(BaseModel):
    """A test that, in each run of a side (runs independent), has the other outcome than
    the one it would be listed with with probability at least ``min_rate`` (fails after the
    gold patch; for FAIL_TO_PASS, or passes before it) is written into FAIL_TO_PASS or
    PASS_TO_PASS with probability at most ``miss_probability``: each side runs
    n = ceil(log(miss_probability) / log(1 - min_rate)) times (defaults: 9), fewer when
    every test reported has already both passed and failed, or a run already decided that
    the instance is unusable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The smallest per-run probability of a test's other outcome the bound covers (failing
    #: on the side where it is listed as passing; passing before the fix, for FAIL_TO_PASS).
    min_rate: float = Field(default=0.3, gt=0, lt=1)
    #: The largest probability that such a test is written into a list: each side runs
    #: ceil(log(miss_probability) / log(1 - min_rate)) times (9 with the defaults).
    miss_probability: float = Field(default=0.05, gt=0, lt=1)

    @model_validator(mode="after")
    def _affordable(self) -> FlakyBoundSettings:
        if self.runs() > MAX_VALIDATION_RUNS:
            raise ValueError(
                f"min_rate {self.min_rate} and miss_probability {self.miss_probability} need "
                f"{self.runs()} runs of each side, more than {MAX_VALIDATION_RUNS}"
            )
        return self

    def runs(self) -> int:
        """n, the fewest runs of a side with (1 - min_rate) ** n <= miss_probability."""
        n = math.ceil(math.log(self.miss_probability) / math.log1p(-self.min_rate))
        # Floating point can put n one short of the bound (or past it by one): settle it.
        while n > 1 and (1 - self.min_rate) ** (n - 1) <= self.miss_probability:
            n -= 1
        while (1 - self.min_rate) ** n > self.miss_probability:
            n += 1
        return max(n, 1)


class ValidationSettings(BaseModel):
    """How ``evalrepro validate`` derives an instance's test lists."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The flakiness bound that sets the runs of each side (before and after the gold
    #: patch, each in a fresh sandbox; a test whose outcome differs between them is flaky).
    flaky: FlakyBoundSettings = Field(default_factory=lambda: FlakyBoundSettings())
    #: Runs of each side, in place of the bound's number (null: from ``flaky``); the report
    #: gives the bound these runs reach at ``flaky.min_rate``.
    repeats: int | None = Field(default=None, ge=1, le=MAX_VALIDATION_RUNS)

    def planned_runs(self) -> int:
        """The runs each side gets at most."""
        return self.repeats if self.repeats is not None else self.flaky.runs()


class ExperimentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The experiment's name: default run directory and lockfile names, report titles.
    name: str = Field(min_length=1)
    #: What is evaluated: instances, their repos, and the specs they run with.
    dataset: DatasetConfig
    #: What produces the patches (gold, a predictions file, recorded logs, or an agent).
    target: TargetConfig
    #: How images are built and trials run (the runtime, limits, timeout).
    environment: EnvironmentConfig
    #: Rules a run must pass (exit code 3 when one fails).
    gate: Gate
    #: Who schedules the attempts, and how many at once (not part of any trial's identity).
    executor: ExecutorConfig = Field(default_factory=LocalExecutorConfig)
    #: Where runs are written.
    run: RunSettings = Field(default_factory=RunSettings)
    #: Dataset validation (``evalrepro validate``); a run does not read it.
    validation: ValidationSettings = Field(default_factory=ValidationSettings)

    #: Fields that are not what a trial measured, or that are compared through what they
    #: produced (digests): see ``evalrepro.config.identity``.
    identity: ClassVar[dict[str, str]] = {
        "name": "none",
        "run": "none",
        "executor": "none",
        "validation": "none",
        "target": "digest",
        "gate": "digest",
    }

    @model_validator(mode="before")
    @classmethod
    def _executor_settings_moved(cls, data: Any) -> Any:
        """Configs (and lockfiles) of evalrepro 0.2 set ``environment.max_workers`` and
        ``environment.max_attempts``: they are the executor's now."""
        if not isinstance(data, dict) or not isinstance(data.get("environment"), dict):
            return data
        environment = dict(data["environment"])
        moved = {key: environment.pop(key) for key in _MOVED_TO_EXECUTOR if key in environment}
        if not moved:
            return data
        executor = dict(data.get("executor") or {"kind": "local"})
        for key, value in moved.items():
            executor.setdefault(key, value)
        return {**data, "environment": environment, "executor": executor}


#: Settings that moved from ``environment`` to ``executor``.
_MOVED_TO_EXECUTOR = ("max_workers", "max_attempts")


if not OmegaConf.has_resolver("pkg"):
    OmegaConf.register_new_resolver("pkg", lambda relative: str(PACKAGE_DIR / relative))


def default_gate() -> Gate:
    """The built-in ``gate: default`` (``conf/gate/default.yaml``), without composing."""
    path = builtin_config_dir() / "gate" / "default.yaml"
    return Gate.model_validate(yaml.safe_load(path.read_text()))


def compose_raw(overrides: list[str], config_dir: Path | None = None) -> dict[str, Any]:
    """Hydra's composition of ``conf/`` (plus ``config_dir``), resolved to plain data.

    Overrides whose key has a bracketed part (``dataset.specs[django/django][3.0].python
    =3.9``: repo names hold ``/``, versions ``.``, which Hydra's grammar cannot take) are
    applied to the composed data, after Hydra's own. Relative paths (``instances``,
    ``path``) are resolved against ``config_dir``, or the working directory without one.
    """
    # Hydra is imported here, where it composes: every command imports the models above,
    # most never compose a config (report, verify, grade), and Hydra costs them ~0.1 s.
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    hydra_overrides, literal = _split_overrides(overrides)
    search = []
    if config_dir is not None:
        if not config_dir.is_dir():
            raise UserError(f"--config-dir {config_dir}: no such directory")
        search = [f"hydra.searchpath=[file://{config_dir.resolve()}]"]
    try:
        with initialize_config_dir(config_dir=str(builtin_config_dir()), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=[*search, *hydra_overrides])
        data = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as error:
        raise UserError(f"config: {_one_line(error)}") from None
    except yaml.YAMLError as error:
        raise UserError(f"config: not valid YAML: {_yaml_problem(error)}") from None
    assert isinstance(data, dict)
    for path, value in literal:
        _set(data, path, value)
    return _resolve_paths(data, (config_dir or Path.cwd()).resolve())


#: Keys whose string values are file paths in the user's config: resolved against the
#: config directory when relative (URLs and ${pkg:...} paths are already absolute).
_PATH_KEYS = frozenset({"path", "instances"})


def _resolve_paths(value: Any, base: Path, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _resolve_paths(v, base, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_paths(item, base, key) for item in value]
    if key in _PATH_KEYS and isinstance(value, str) and value and "://" not in value:
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else base / path)
    return value


_BRACKETED = re.compile(r"\[([^\]]*)\]")


def _split_overrides(overrides: list[str]) -> tuple[list[str], list[tuple[list[str], Any]]]:
    """(overrides for Hydra, (key path, value) pairs with bracketed key parts)."""
    for override in overrides:
        if override.startswith(("hydra.", "+hydra.", "++hydra.")) or override in (
            "-m",
            "--multirun",
        ):
            raise UserError(
                f"config: '{override}': Hydra's own settings and sweeps are not used by "
                "evalrepro (use --run-dir for where a run goes; one experiment per command)"
            )
    hydra_overrides, literal = [], []
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or "[" not in key:
            if sep and "/" in key.split("@", 1)[0] and "." in key:
                raise UserError(
                    f"config: override '{override}': write a key part that holds '/' or '.' "
                    "in brackets, e.g. dataset.specs[django/django][3.0].python=3.9"
                )
            if sep and "." in key and not key.startswith(("+", "~")):
                # Set a field whether or not the YAML lists it (dataset.instance_ids=...):
                # a key no model has is still refused, by pydantic, naming the field.
                override = "++" + override
            hydra_overrides.append(override)
            continue
        path: list[str] = []
        for part in re.split(r"\.(?![^\[]*\])", key.lstrip("+")):
            head, _, rest = part.partition("[")
            if head:
                path.append(head)
            path += _BRACKETED.findall("[" + rest) if rest else []
        if not path or any(not part for part in path):
            raise UserError(f"config: override '{override}': an empty key part")
        literal.append((path, yaml.safe_load(value) if value else None))
    return hydra_overrides, literal


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    node: Any = data
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


def compose(overrides: list[str], config_dir: Path | None = None) -> ExperimentConfig:
    data = compose_raw(overrides, config_dir)
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as error:
        raise UserError(f"config: {validation_message(error, model=ExperimentConfig)}") from None


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
