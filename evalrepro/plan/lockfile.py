"""Lockfile: the plan of an experiment, frozen, so that it can be committed and re-run.

A lockfile holds everything that defines the experiment, as digests: the harness, the
resolved config, every instance and its TestSpec, every prediction's patch, every image
layer (key, build-input digest, image digest, the base's package manifest), the gate,
and each trial with the components of its id. It is written as canonical-order JSON
(sorted keys, sorted lists, two-space indent): the same inputs give the same bytes.

Identity. Two lockfiles describe the same experiment when :meth:`Lockfile.identity`
is equal: that leaves out the harness's development provenance (git commit, editable
install), which says where the code came from, not what it measured. Nothing volatile
(creation time, command line) is in a lockfile at all; a run directory keeps those in
``run.json``. :func:`differences` names what differs, field class by field class; it is
the one comparison behind resume, ``run --lockfile`` and ``verify``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalrepro import PACKAGE_DIR, __version__
from evalrepro.build.images import ImageChain, inputs_digest, layer_key
from evalrepro.config.environment import Limits
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.config.identity import environment_digest, settings
from evalrepro.digest import sha256_json, short_digest
from evalrepro.errors import UserError
from evalrepro.plan.harness import code_digest
from evalrepro.plan.plan import config_kinds
from evalrepro.plan.plugin_code import (
    locked_plugins,
    trial_digest,
    used_plugins,
)
from evalrepro.plan.trial import Plan
from evalrepro.records.base import read_record
from evalrepro.records.image import BuildFailure, ImageRecord, PinnedInput
from evalrepro.records.lockfile import (
    Difference,
    Harness,
    LockedDataset,
    LockedEnvironment,
    LockedImage,
    LockedInstance,
    LockedPrediction,
    LockedTarget,
    LockedTrial,
    Lockfile,
    PluginCode,
)
from evalrepro.records.trial import trial_label
from evalrepro.sample import DEFINING_FIELDS

LOCKFILE_NAME = "lockfile.lock.json"


# --- making one ------------------------------------------------------------------------


def harness(plugins: list[PluginCode] | None = None) -> Harness:
    """The harness as a lockfile holds it: what can change a result, nothing of where it
    came from (a session's ``run.json`` says which checkout and commit ran); ``plugins``:
    the kinds of other packages the trials used (``evalrepro.plan.plugin_code``)."""
    unique = {(p.group, p.kind): p for p in plugins or []}
    return Harness(
        version=__version__, code_digest=code_digest(), plugins=[unique[k] for k in sorted(unique)]
    )


def plan_plugins(config: ExperimentConfig, plan: Plan) -> list[PluginCode]:
    """The kinds of other packages the plan's trials use, as installed here."""
    builder = plan.builder or config.environment.builder.kind
    return [
        plugin
        for parser in sorted({p.parser.name for p in plan.trials})
        for plugin in used_plugins(config_kinds(config, parser=parser, builder=builder))
    ]


def portable(value: Any) -> Any:
    """Paths inside the installed package as ${pkg:...}: the same on every machine."""
    if isinstance(value, dict):
        return {key: portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [portable(item) for item in value]
    prefix = f"{PACKAGE_DIR}/"
    if isinstance(value, str) and value.startswith(prefix):
        return "${pkg:" + value.removeprefix(prefix) + "}"
    return value


def build_lockfile(config: ExperimentConfig, plan: Plan) -> Lockfile:
    config_data = portable(config.model_dump(mode="json"))
    trials = sorted(plan.trials, key=lambda p: (p.sample.instance_id, p.prediction.sample_index))
    instances = {
        p.sample.instance_id: LockedInstance(
            instance_id=p.sample.instance_id,
            repo=p.sample.repo,
            base_commit=p.sample.base_commit,
            digest=p.sample.digest(),
            fields=p.sample.field_digests(),
            test_spec_digest=p.spec.digest(),
            parser=p.parser.name,
            outside_files=p.spec.outside_files,
            outside_left=p.spec.outside_left,
        )
        for p in trials
    }
    predictions = [
        LockedPrediction(
            instance_id=p.sample.instance_id,
            sample_index=p.prediction.sample_index,
            patch_digest=p.prediction.patch_digest,
            # SWE-bench's layout is named by it; the target's id is everywhere else.
            model_name_or_path=(
                p.prediction.model_name_or_path
                if p.prediction.model_name_or_path != plan.target_id
                else None
            ),
        )
        for p in trials
    ]
    images: dict[str, ImageRecord] = {}
    failures: dict[str, BuildFailure] = {}
    for planned in trials:
        if isinstance(planned.image, ImageChain):
            images.update({record.key: record for record in planned.image.layers})
        else:
            # The layers below a failure are among the images already.
            failures[f"{planned.image.layer}:{planned.image.key}"] = planned.image.model_copy(
                update={"below": []}
            )
    environment = config.environment

    def depth(record: ImageRecord) -> int:
        # Base layers first, then each layer after the one below it: any builder's chain.
        below = images.get(record.parent_key) if record.parent_key else None
        return 0 if below is None else depth(below) + 1

    return Lockfile(
        experiment=config.name,
        harness=harness(plan_plugins(config, plan)),
        config=config_data,
        config_digest=sha256_json(config_data),
        dataset=LockedDataset(
            name=config.dataset.name,
            test_ids=str(config.dataset.test_ids),
            digest=sha256_json([instance.digest for instance in instances.values()]),
            instances=list(instances.values()),
        ),
        target=LockedTarget(
            kind=config.target.kind,
            target_id=plan.target_id,
            samples=config.target.samples,
            digest=sha256_json([p.model_dump(mode="json") for p in predictions]),
            predictions=predictions,
        ),
        environment=LockedEnvironment(
            kind=environment.kind,
            builder=plan.builder or environment.builder.kind,
            digest=environment_digest(config_data["environment"]),
            limits=getattr(environment, "limits", None),
            timeout=getattr(environment, "timeout", None),
            network=getattr(environment, "network", None),
            images=[
                LockedImage.of(record)
                for record in sorted(images.values(), key=lambda r: (depth(r), r.key))
            ],
            build_failures=[failures[key] for key in sorted(failures)],
        ),
        gate=config.gate,
        trials=[
            LockedTrial(
                trial_id=p.trial.trial_id,
                key=p.trial.key,
                image_key=p.image.image.key if isinstance(p.image, ImageChain) else "",
            )
            for p in trials
        ],
    )


def lockfile_problems(lock: Lockfile) -> list[str]:
    """Each digest the lockfile holds that does not match what it digests (an edit)."""
    found: list[str] = []

    def expect(what: str, recorded: str, computed: str) -> None:
        if recorded != computed:
            found.append(
                f"{what} {short_digest(recorded)} but it digests to {short_digest(computed)}"
            )

    expect("config_digest", lock.config_digest, sha256_json(lock.config))
    expect(
        "dataset.digest",
        lock.dataset.digest,
        sha256_json([i.digest for i in lock.dataset.instances]),
    )
    expect(
        "target.digest",
        lock.target.digest,
        sha256_json([p.model_dump(mode="json") for p in lock.target.predictions]),
    )
    environment = lock.config.get("environment", {})
    expect("environment.digest", lock.environment.digest, environment_digest(environment))
    # Settings the lockfile holds twice, in the config and beside the images: an edit
    # of one copy is an edit (the config's is the one its digest covers).
    locked = lock.environment.model_dump(mode="json", include={"kind", "limits", "timeout"})
    locked["network"] = lock.environment.network
    for name, value in sorted(locked.items()):
        if name in environment and _as_locked(name, environment[name]) != value:
            found.append(
                f"environment.{name} {_show(value)} but the config says {_show(environment[name])}"
            )
    if "gate" in lock.config and lock.gate.model_dump(mode="json") != lock.config["gate"]:
        found.append("gate differs from the config's gate")

    for image in lock.environment.images:
        where = f"image {short_digest(image.key)} ({image.builder} {image.layer})"
        expect(f"{where}: inputs_digest", image.inputs_digest, inputs_digest(image.inputs))
        expect(
            f"{where}: key",
            image.key,
            layer_key(image.builder, image.layer, image.inputs, image.parent_key),
        )

    instances = {i.instance_id: i for i in lock.dataset.instances}
    images = {image.key for image in lock.environment.images}
    for trial in lock.trials:
        key = trial.key
        label = trial_label(key.instance_id, key.sample_index, trial.trial_id)
        expect(f"trial {label}: trial_id", trial.trial_id, key.trial_id())
        instance = instances.get(key.instance_id)
        if instance is None:
            found.append(f"trial {label}: instance not in the dataset")
        elif key.test_spec_digest != instance.test_spec_digest:
            found.append(f"trial {label}: test spec differs from the instance's")
        if key.harness_version != lock.harness.version:
            found.append(f"trial {label}: harness {key.harness_version}")
        # A trial that used kinds of other packages: the harness with those plugins.
        plugins = locked_plugins(lock, trial)
        if key.harness_digest != trial_digest(lock.harness.code_digest, plugins):
            with_plugins = f" with {', '.join(p.describe() for p in plugins)}" if plugins else ""
            found.append(
                f"trial {label}: harness code {short_digest(key.harness_digest)} is not "
                f"the lockfile's {short_digest(lock.harness.code_digest)}{with_plugins}"
            )
        if key.target_id != lock.target.target_id:
            found.append(f"trial {label}: target '{key.target_id}'")
        if trial.image_key and trial.image_key not in images:
            found.append(
                f"trial {label}: image {short_digest(trial.image_key)} "
                "is not among the locked images"
            )
    return found


def _as_locked(name: str, value: Any) -> Any:
    """A config setting as the lockfile's model holds it: limits a later evalrepro added
    read with their defaults on both sides (an older lockfile's config lacks them)."""
    if name == "limits" and isinstance(value, dict):
        try:
            return Limits.model_validate(value).model_dump(mode="json")
        except ValidationError:
            return value
    return value


def read_lockfile(path: Path, *, checked: bool = True) -> Lockfile:
    """A lockfile from a file, or from a run directory's lockfile.

    ``checked``: refuse one whose digests do not match its content (``verify`` lists
    them instead, one by one).
    """
    if path.is_dir():
        path = path / LOCKFILE_NAME
    if not path.exists():
        raise UserError(f"{path}: no such lockfile")
    lockfile = read_record(path, Lockfile)
    problems = lockfile_problems(lockfile) if checked else []
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{path}: edited or corrupt lockfile: {problems[0]}{more}")
    return lockfile


# --- comparing two ----------------------------------------------------------------------


def plugin_differences(a: list[PluginCode], b: list[PluginCode]) -> list[str]:
    """One line per kind of another package that ``a`` and ``b`` (two harnesses'
    plugins, or a lockfile's and this install's) hold differently."""
    ours = {(p.group, p.kind): p for p in a}
    theirs = {(p.group, p.kind): p for p in b}
    lines = []
    for key in sorted(ours.keys() | theirs.keys()):
        one, two = ours.get(key), theirs.get(key)
        if one == two:
            continue
        first = one.describe() if one else "none"
        second = two.describe() if two else "none"
        lines.append(f"plugin {first} vs {second}")
    return lines


def differences(a: Lockfile, b: Lockfile, *, same_target: bool = True) -> list[Difference]:
    """Every difference between ``a`` and ``b`` that changes what was measured.

    With ``same_target=False`` (comparing two models), the target is expected to differ,
    and so are the trial ids that include it. A setting of the config that no class
    above covers is a ``config`` difference, unless its model declares it otherwise
    (``evalrepro.config.identity``).
    """
    found: list[Difference] = []

    def add(kind: str, detail: str) -> None:
        found.append(Difference(kind=kind, detail=detail))  # type: ignore[arg-type]

    if a.harness.version != b.harness.version:
        add("harness", f"harness version {a.harness.version} vs {b.harness.version}")
    if a.harness.code_digest != b.harness.code_digest:
        add(
            "harness",
            f"harness code (parsers, grading, scoring, in-container scripts) "
            f"{short_digest(a.harness.code_digest)} vs {short_digest(b.harness.code_digest)}",
        )
    for line in plugin_differences(a.harness.plugins, b.harness.plugins):
        add("harness", line)

    ours = {i.instance_id: i for i in a.dataset.instances}
    theirs = {i.instance_id: i for i in b.dataset.instances}
    if removed := sorted(ours.keys() - theirs.keys()):
        add("instances", f"only in the first: {', '.join(removed)}")
    if added := sorted(theirs.keys() - ours.keys()):
        add("instances", f"only in the second: {', '.join(added)}")
    for instance_id in sorted(ours.keys() & theirs.keys()):
        one, two = ours[instance_id], theirs[instance_id]
        if one.digest != two.digest:
            fields = sorted(
                name
                for name in (one.fields.keys() | two.fields.keys()) & DEFINING_FIELDS
                if one.fields.get(name) != two.fields.get(name)
            )
            which = (
                f"field{'s' if len(fields) > 1 else ''} {', '.join(fields)}"
                if fields
                else ("instance record")
            )
            add("dataset", f"{instance_id}: {which} differ{'' if len(fields) > 1 else 's'}")
        if one.test_spec_digest != two.test_spec_digest:
            add(
                "test_spec",
                f"{instance_id}: test spec {short_digest(one.test_spec_digest)} vs "
                f"{short_digest(two.test_spec_digest)}",
            )

    found += _image_differences(a, b)
    env_a, env_b = a.environment, b.environment
    for field in ("limits", "timeout", "network", "kind"):
        if getattr(env_a, field) != getattr(env_b, field):
            add(
                "environment",
                f"{field}: {_show(getattr(env_a, field))} vs {_show(getattr(env_b, field))}",
            )
    if a.gate != b.gate:
        add("gate", f"rules {[str(r) for r in a.gate.rules]} vs {[str(r) for r in b.gate.rules]}")
    if same_target:
        # The trials themselves, by (instance, sample): a lockfile trimmed of a trial with
        # its instance and prediction left in place differs in nothing else.
        keys_a = {(t.key.instance_id, t.key.sample_index) for t in a.trials}
        keys_b = {(t.key.instance_id, t.key.sample_index) for t in b.trials}
        for side, keys in (("first", keys_a - keys_b), ("second", keys_b - keys_a)):
            if keys:
                listed = ", ".join(f"{i} sample {n}" for i, n in sorted(keys)[:5])
                more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
                add("trials", f"only in the {side}: {listed}{more}")
    if same_target and a.target != b.target:
        detail = f"{a.target.kind} '{a.target.target_id}' vs {b.target.kind} '{b.target.target_id}'"
        if a.target.target_id == b.target.target_id:
            digests = (short_digest(a.target.digest), short_digest(b.target.digest))
            detail += f": patch digests {digests[0]} vs {digests[1]}"
        add("target", detail)
    ours_config = settings(ExperimentConfig, a.config)
    theirs_config = settings(ExperimentConfig, b.config)
    for key in sorted(ours_config.keys() | theirs_config.keys()):
        one, two = ours_config.get(key, _UNSET), theirs_config.get(key, _UNSET)
        if one == two:
            continue
        shown = [_show(side[1]) if side is not _UNSET else "unset" for side in (one, two)]
        how = (one if one is not _UNSET else two)[0]  # type: ignore[index]
        # A spec setting is named beside the TestSpec digests it changes (above).
        if how == "test_spec":
            add("test_spec", f"setting {key}: {shown[0]} vs {shown[1]}")
        else:
            add("config", f"{key}: {shown[0]} vs {shown[1]}")
    return found


_UNSET: Any = object()


def _image_differences(a: Lockfile, b: Lockfile) -> list[Difference]:
    """Instance images compared per instance, naming the first layer that differs."""

    def chains(lock: Lockfile) -> dict[str, list[LockedImage]]:
        by_key = {image.key: image for image in lock.environment.images}
        result = {}
        for trial in lock.trials:
            chain, key = [], trial.image_key
            while key and key in by_key:
                chain.insert(0, by_key[key])
                key = by_key[key].parent_key or ""
            result[trial.key.instance_id] = chain
        return result

    ours, theirs = chains(a), chains(b)
    found = []
    for instance_id in sorted(ours.keys() & theirs.keys()):
        if bool(ours[instance_id]) != bool(theirs[instance_id]):
            # A layer failed to build on one side: that trial ran in no image there.
            where = "the second" if ours[instance_id] else "the first"
            found.append(Difference(kind="images", detail=f"{instance_id}: no image in {where}"))
            continue
        detail = chain_difference(ours[instance_id], theirs[instance_id])
        if detail is not None:
            found.append(Difference(kind="images", detail=f"{instance_id}: {detail}"))
    return found


def chain_difference(ours: list[LockedImage], theirs: list[LockedImage]) -> str | None:
    """The first layer (base first) that differs between two chains of one instance,
    with the input that makes it differ; None: the same image."""
    for one, two in zip(ours, theirs, strict=False):
        if one.image_digest != two.image_digest or one.key != two.key:
            if one.image_digest == two.image_digest:
                what = f"image {short_digest(one.image_digest)} in both"
            else:
                what = f"{short_digest(one.image_digest)} vs {short_digest(two.image_digest)}"
            return f"{one.layer} layer {what} ({_why(one, two)})"
    return None


def _why(one: LockedImage, two: LockedImage) -> str:
    """What differs between two layers, by input: what a reader can act on."""
    if one.key == two.key:
        if one.builder == "containerfile":
            # Root and rootless build the same bytes (build/layertar.py); what is left is
            # the machine's podman and storage driver (docs/reproducibility.md).
            return (
                "same build inputs, other bytes: the build is not reproducible here; the "
                "containerfile builder's bytes depend on podman's version and storage "
                "driver: build with the author's podman, load its images (bundle "
                "--with-images), or build with environment.builder=nix"
            )
        return "same build inputs, other bytes: the build is not reproducible here"
    if one.builder != two.builder:
        return f"built by {one.builder} vs {two.builder}"
    changed = input_differences(one.inputs, two.inputs)
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        return "; ".join(changed[:3]) + more
    if one.parent_key != two.parent_key:
        return "same inputs, built on another layer below"
    return "same inputs, another layer name or order"


def input_differences(ours: list[PinnedInput], theirs: list[PinnedInput]) -> list[str]:
    """Each input that differs, by kind and name: "wheel pytest 8.3.4 vs 8.3.5"."""
    mine = {(i.kind, i.name): i for i in ours}
    other = {(i.kind, i.name): i for i in theirs}
    found = []
    for key in sorted(mine.keys() | other.keys()):
        one, two = mine.get(key), other.get(key)
        if one is None or two is None:
            present = one or two
            assert present is not None
            side = "first" if one else "second"
            found.append(f"{present.label} only in the {side}")
        elif one.digest != two.digest or one.version != two.version:
            if one.version != two.version:
                found.append(f"{one.kind} {one.name} {one.version} vs {two.version}")
            else:
                found.append(
                    f"{one.label}: {short_digest(one.digest)} vs {short_digest(two.digest)}"
                )
    return found


def _show(value: Any) -> str:
    return json.dumps(value.model_dump(mode="json") if isinstance(value, BaseModel) else value)


if __name__ == "__main__":
    # python -m evalrepro.plan.lockfile --schema > lockfiles/lockfile.schema.json
    import sys

    if sys.argv[1:] != ["--schema"]:
        sys.exit("usage: python -m evalrepro.plan.lockfile --schema")
    sys.stdout.write(Lockfile.json_schema())
