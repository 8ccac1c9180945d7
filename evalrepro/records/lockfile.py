"""The lockfile: an experiment resolved and frozen, every digest it stands on, its
trials. Making, reading and comparing one: ``evalrepro.plan.lockfile``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from omegaconf import OmegaConf
from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from evalrepro import atomic
from evalrepro.config.environment import Limits
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.config.gate import Gate
from evalrepro.config.identity import environment_digest
from evalrepro.digest import sha256_json
from evalrepro.errors import UserError, validation_message
from evalrepro.records.base import Record, unchanged
from evalrepro.records.image import BuildFailure, ImageRecord, PinnedInput
from evalrepro.records.testspec import OutsideFile
from evalrepro.records.trial import TrialKey
from evalrepro.text import InstanceId


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginCode(_Frozen):
    """A kind from another package that can change a verdict, as a run used it
    (``evalrepro.plan.plugin_code``): its trials' harness digest covers it."""

    #: The plugin group (``parsers``, ``runtimes``, ...) and the kind's name in it.
    group: str
    kind: str
    #: The distribution that installed it ("" for code on the path of no distribution).
    distribution: str
    version: str
    #: sha256 over the canonical JSON of {path: sha256 of the file's bytes}, for the
    #: Python files of the package that defines the kind.
    code_digest: str

    def describe(self) -> str:
        """The plugin in one phrase: ``parser 'tiny' of tinyparser 1.0 (code sha256:ab..)``."""
        source = f"{self.distribution} {self.version}" if self.distribution else "no distribution"
        return (
            f"{PLUGIN_NOUNS.get(self.group, self.group)} '{self.kind}' of {source} "
            f"(code {self.code_digest.removeprefix('sha256:')[:12]})"
        )


#: What a kind of each plugin group is called in messages.
PLUGIN_NOUNS = {
    "parsers": "parser",
    "runtimes": "environment",
    "builders": "builder",
    "executors": "executor",
    "targets": "target",
    "agents": "agent adapter",
}


class Harness(_Frozen):
    version: str
    #: sha256 over the code that can change a result (``evalrepro.plan.harness``).
    code_digest: str
    #: The kinds from other packages the trials used that can change a verdict (empty
    #: with evalrepro's own kinds only: left out then, so such a lockfile is what it was).
    plugins: list[PluginCode] = []

    @model_serializer(mode="wrap")
    def _without_no_plugins(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not self.plugins:
            data.pop("plugins", None)
        return data


class LockedInstance(_Frozen):
    instance_id: InstanceId
    repo: str
    base_commit: str
    #: sha256 over the canonical JSON of the instance's defining fields.
    digest: str
    #: Every field's own digest (defining or not), so that a difference names it.
    fields: dict[str, str] = {}
    test_spec_digest: str
    parser: str
    #: The test files the command runs outside the test patch, as its TestSpec names them
    #: (found at plan time from the source: ``verify`` recomputes the spec with them).
    outside_files: list[OutsideFile] = []
    outside_left: int = 0


class LockedDataset(_Frozen):
    name: str
    test_ids: str
    #: sha256 over the canonical JSON of the instances' digests, in id order.
    digest: str
    instances: list[LockedInstance]


class LockedPrediction(_Frozen):
    instance_id: InstanceId
    sample_index: int
    #: sha256 over the patch's bytes ("" for a missing or empty patch).
    patch_digest: str
    #: The prediction's own ``model_name_or_path`` when it is not the target's id (a
    #: ``target.name`` renames it in evalrepro's reports): SWE-bench's layout is named
    #: by it, as swebench names its folders. Left out when None, so a lockfile (and its
    #: target digest) without one is what it was.
    model_name_or_path: str | None = None

    @model_serializer(mode="wrap")
    def _without_default_name(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.model_name_or_path is None:
            data.pop("model_name_or_path", None)
        return data


class LockedTarget(_Frozen):
    kind: str
    target_id: str
    samples: int
    #: sha256 over the canonical JSON of the predictions below.
    digest: str
    predictions: list[LockedPrediction]


class LockedImage(_Frozen):
    """An image layer as its builder recorded it: its pinned inputs and what came out."""

    builder: str
    layer: str
    key: str
    inputs_digest: str
    inputs: list[PinnedInput]
    parent_key: str | None
    tag: str
    image_digest: str
    package_manifest_digest: str | None = None

    @classmethod
    def of(cls, record: ImageRecord) -> LockedImage:
        """The layer as a lockfile keeps it (what a session's build took is not kept)."""
        return cls(**record.model_dump(exclude={"built", "build_seconds"}))

    def record(self) -> ImageRecord:
        """The record a builder reads back to rebuild exactly this layer."""
        return ImageRecord(**self.model_dump())


class LockedEnvironment(_Frozen):
    kind: str
    #: The builder kind that made the images ("" for recorded logs).
    builder: str = ""
    #: sha256 over the canonical JSON of the environment config.
    digest: str
    #: None for an environment evalrepro did not run (a regrade's recorded logs).
    limits: Limits | None = None
    timeout: int | None = None
    network: str | None = None
    images: list[LockedImage]
    #: Layers that could not be built (a run records them; ``evalrepro lock`` refuses).
    build_failures: list[BuildFailure] = []


class LockedTrial(_Frozen):
    trial_id: str
    key: TrialKey
    #: The key of the instance image layer the trial runs in ("" if it was not built).
    image_key: str


def _executor_settings_moved(data: dict[str, Any]) -> dict[str, Any]:
    """2 -> 3: ``environment.max_workers`` / ``max_attempts`` became the executor's, and
    the environment digest covers the environment's identity (``config.identity``). The
    digests are recomputed only where they held before: an edited lockfile stays one."""
    config = data.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("environment"), dict):
        return data
    old_environment = {k: v for k, v in config["environment"].items() if k != "build"}
    environment_held = (data.get("environment") or {}).get("digest") == sha256_json(old_environment)
    config_held = data.get("config_digest") == sha256_json(config)
    environment = dict(config["environment"])
    moved = {k: environment.pop(k) for k in ("max_workers", "max_attempts") if k in environment}
    new_config = {**config, "environment": environment}
    if moved:
        new_config["executor"] = {"kind": "local", **moved}
    data = {**data, "config": new_config}
    if config_held:
        data["config_digest"] = sha256_json(new_config)
    if environment_held and isinstance(data.get("environment"), dict):
        data["environment"] = {**data["environment"], "digest": environment_digest(environment)}
    return data


class Lockfile(Record):
    record: Literal["Lockfile"] = "Lockfile"
    #: 2: images are builder-owned records with their pinned inputs; 3: trial keys hold
    #: the target's digest, the executor's settings are not the environment's; 4: a
    #: prediction may name its own model (``LockedPrediction.model_name_or_path``); 5: an
    #: instance names the test files its command runs outside the test patch.
    schema_version: int = 5
    migrations = {2: _executor_settings_moved, 3: unchanged, 4: unchanged}
    experiment: str
    harness: Harness
    #: The resolved config; paths inside evalrepro's package are written ${pkg:...}.
    config: dict[str, Any]
    config_digest: str
    dataset: LockedDataset
    target: LockedTarget
    environment: LockedEnvironment
    gate: Gate
    trials: list[LockedTrial]

    def identity(self) -> dict[str, Any]:
        """Everything the lockfile holds: equal for one config locked again anywhere.
        (Whether two lockfiles measure the same thing, wherever their data lives, is
        :func:`differences`'s question.)"""
        return self.model_dump(mode="json")

    def dumps(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"

    def write(self, path: Path) -> None:
        atomic.write_text(path, self.dumps())

    @classmethod
    def json_schema(cls) -> str:
        """The JSON Schema of a lockfile, as committed in ``lockfiles/lockfile.schema.json``."""
        return json.dumps(cls.model_json_schema(), indent=2, sort_keys=True) + "\n"

    def experiment_config(self, paths: Mapping[str, str] | None = None) -> ExperimentConfig:
        """The config this lockfile was made from, with ${pkg:...} paths resolved here.

        ``paths``: files elsewhere than the config says, by dotted key (a bundle's copy of
        ``dataset.instances``); a config compares its files by digest, not by path."""
        resolved = OmegaConf.to_container(OmegaConf.create(self.config), resolve=True)
        for dotted, path in (paths or {}).items():
            *parents, leaf = dotted.split(".")
            node: Any = resolved
            for part in parents:
                node = node[part]
            node[leaf] = path
        try:
            return ExperimentConfig.model_validate(resolved)
        except ValidationError as error:
            raise UserError(
                f"lockfile config: {validation_message(error, model=ExperimentConfig)}"
            ) from None


class Difference(_Frozen):
    """One way two lockfiles differ, in a class a reader can act on."""

    kind: Literal[
        "harness",
        "instances",
        "test_spec",
        "images",
        "environment",
        "gate",
        "target",
        "dataset",
        "config",
        "trials",
    ]
    detail: str
