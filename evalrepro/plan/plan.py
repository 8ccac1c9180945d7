"""Plan: the experiment resolved into trials, before anything runs.

One trial per instance x target sample. Building the plan materializes the repo sources
and asks the backend for every image, because a trial's id includes its image digest:
two runs share a trial id only if they ran the same test spec in the same image under
the same harness. An instance the target has no patch for is planned as the target
says (``target.missing``): refused (default), an empty patch (the denominator is the
dataset), or left out (the denominator is what was submitted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalrepro import __version__
from evalrepro.build.base import Builder
from evalrepro.build.images import ImageChain
from evalrepro.config.dataset import DatasetConfig
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.errors import UserError
from evalrepro.plan.dataset import instance_parser, instance_test_spec
from evalrepro.plan.harness import code_digest
from evalrepro.plan.outside import find_outside, outside_bytes, store_of
from evalrepro.plan.plugin_code import TrialKinds, trial_digest, used_plugins
from evalrepro.plan.trial import Plan, PlannedTrial
from evalrepro.records.image import BuildFailure, ImageRecord
from evalrepro.records.testspec import TestSpec
from evalrepro.records.trial import Trial, TrialKey
from evalrepro.rules.evalscript import without_model_patch
from evalrepro.rules.patchcheck import check_patch, patch_bytes
from evalrepro.sample import Sample, load_samples
from evalrepro.sources.checkout import LocalCheckout
from evalrepro.sources.git import RepoError
from evalrepro.sources.resolve import resolve_sources
from evalrepro.targets.base import Prediction, Target


def planned_predictions(
    samples: list[Sample], predictions: list[Prediction], target: Target, target_id: str
) -> list[tuple[Sample, Prediction]]:
    """(sample, its patch) for every trial to plan, in dataset then sample order.

    A sample the target gave no patch for is handled as ``target.missing`` declares.
    """
    by_key = {(p.instance_id, p.sample_index): p for p in predictions}
    wanted = [(s, i) for s in samples for i in range(target.samples)]
    missing = [(s.instance_id, i) for s, i in wanted if (s.instance_id, i) not in by_key]
    if missing and target.missing == "error":
        listed = ", ".join(
            f"{iid}" + (f" sample {i}" if target.samples > 1 else "") for iid, i in missing[:3]
        )
        raise UserError(
            f"target: no patch for {len(missing)} of {len(wanted)} planned trials ({listed}"
            f"{' ...' if len(missing) > 3 else ''}); set target.missing=empty (planned as "
            "empty patches, scored unresolved) or target.missing=skip (left out of the plan)"
        )
    planned = []
    for sample, index in wanted:
        prediction = by_key.get((sample.instance_id, index))
        if prediction is None:
            if target.missing == "skip":
                continue
            prediction = Prediction(
                instance_id=sample.instance_id,
                model_name_or_path=target_id,
                model_patch=None,
                sample_index=index,
            )
        planned.append((sample, prediction))
    return planned


def build_plan(
    config: ExperimentConfig,
    builder: Builder,
    cache_dir: Path,
    locked: list[ImageRecord] | None = None,
) -> Plan:
    """The trials of ``config``, with every image built; ``locked``: the image records of
    a lockfile being run again, for a builder that builds exactly what it pinned."""
    dataset = config.dataset
    samples = dataset.load()
    if config.target.needs_test_lists:
        unlisted = [s.instance_id for s in samples if not s.declares_lists]
        if unlisted:
            more = f" and {len(unlisted) - 1} more" if len(unlisted) > 1 else ""
            raise UserError(
                f"{dataset.instances}: {unlisted[0]}{more} declare no FAIL_TO_PASS / "
                "PASS_TO_PASS: derive them with `evalrepro validate` first"
            )
    predictions = config.target.patches(samples)
    target = config.target.target_id(predictions)
    wanted = planned_predictions(samples, predictions, config.target, target)
    planned_ids = {sample.instance_id for sample, _ in wanted}
    samples = [sample for sample in samples if sample.instance_id in planned_ids]
    model_patch = config.target.applies_patch
    specs = {
        sample.instance_id: instance_test_spec(dataset, sample, model_patch=model_patch)
        for sample in samples
    }
    parsers = {sample.instance_id: instance_parser(dataset, sample) for sample in samples}

    def find_outside_files(checkouts: dict[str, LocalCheckout]) -> None:
        # The test files the command runs outside the test patch, from the base's tree:
        # the trial's canaries go there too (evalrepro.plan.outside).
        for instance_id, spec in list(specs.items()):
            checkout = checkouts.get(instance_id)
            if checkout is None or not spec.eval_script.protection.canaries:
                continue
            try:
                kept, left = find_outside(checkout.git_dir, spec, cache_dir)
            except RepoError:
                continue
            specs[instance_id] = spec.model_copy(
                update={"outside_files": kept, "outside_left": left}
            )

    images = build_images(
        dataset, builder, cache_dir, list(specs.values()), locked, on_checkouts=find_outside_files
    )

    trials = []
    for sample, prediction in wanted:
        index = prediction.sample_index
        image = images[sample.instance_id]
        spec = specs[sample.instance_id]
        # A kind of another package the trial uses is part of its harness.
        kinds = config_kinds(config, parser=parsers[sample.instance_id].name, builder=builder.kind)
        key = TrialKey(
            instance_id=sample.instance_id,
            target_id=target,
            repository_commit=sample.base_commit,
            image_digest=image.image.image_digest
            if isinstance(image, ImageChain)
            else f"unbuilt:{image.layer}:{image.key}",
            test_spec_digest=spec.digest(),
            harness_version=__version__,
            harness_digest=trial_digest(code_digest(), used_plugins(kinds)),
            sample_index=index,
            target_digest=config.target.identity(prediction),
        )
        trials.append(
            PlannedTrial(
                trial=Trial.of(key),
                sample=sample,
                spec=spec,
                parser=parsers[sample.instance_id],
                prediction=prediction,
                image=image,
                check=check_patch(
                    patch_bytes(prediction.model_patch),
                    spec.eval_script.protection,
                    without_patch=without_model_patch(spec.eval_script.patch_commands),
                ),
                outside=outside_bytes(spec, store_of(cache_dir)),
            )
        )
    return Plan(target_id=target, trials=trials, builder=builder.kind)


def config_kinds(config: ExperimentConfig, *, parser: str, builder: str) -> TrialKinds:
    """The kinds a trial of ``config`` uses, graded by ``parser`` in an image of
    ``builder`` (read here, where the plan holds the whole config)."""
    adapter = getattr(config.target, "adapter", None)
    return TrialKinds(
        parser=parser,
        runtime=config.environment.kind,
        builder=builder,
        executor=config.executor.kind,
        target=config.target.kind,
        agent=getattr(adapter, "kind", "") or "",
    )


def build_images(
    dataset: DatasetConfig,
    builder: Builder,
    cache_dir: Path,
    specs: list[TestSpec],
    locked: list[ImageRecord] | None = None,
    *,
    on_checkouts: Callable[[dict[str, LocalCheckout]], None] | None = None,
) -> dict[str, ImageChain | BuildFailure]:
    """Each spec's image, built by ``builder`` (a build failure for an instance whose repo
    source is unavailable); ``locked``: the records to rebuild exactly. A plan builds its
    images here, and so does a node of a distributed run that builds its own."""
    if builder.needs_sources:
        # Every instance of the file counts toward the histories (a remote's is the
        # ancestry of the base commits it serves): a selection builds the whole dataset's
        # layers.
        resolved = resolve_sources(
            dataset.sources(),
            load_samples(Path(dataset.instances)),
            cache_dir,
            dataset=dataset.name,
            selected={spec.instance_id for spec in specs},
        )
        checkouts = {iid: resolved.checkout(iid) for iid in resolved.keys}
        unavailable = resolved.unavailable
        if on_checkouts is not None:
            on_checkouts(checkouts)
        buildable = [spec for spec in specs if spec.instance_id in checkouts]
    else:
        checkouts, unavailable, buildable = {}, {}, list(specs)
    images: dict[str, ImageChain | BuildFailure] = dict(
        builder.prepare(buildable, checkouts, locked)
    )
    for instance_id, reason in unavailable.items():
        images[instance_id] = BuildFailure(
            builder=builder.kind, layer="history", key="", reason=f"repo source: {reason}"
        )
    return images


# --- the plan a lockfile's own config gives -----------------------------------------------


@dataclass(frozen=True)
class PlanShape:
    """The trials a config and its dataset give, by (instance id, sample index), without
    building anything: instances x samples, less what the config itself excludes."""

    keys: list[tuple[str, int]]
    #: What the config excludes of instances x samples, and why.
    excluded: dict[tuple[str, int], str]


def plan_shape(config: ExperimentConfig) -> PlanShape:
    """The (instance, sample) pairs :func:`build_plan` plans for ``config`` (the same
    selection: the dataset's ``instance_ids`` and ``filter``, the target's samples and
    ``missing``), without sources or images; a UserError when the plan cannot be made."""
    samples = config.dataset.load()
    target = config.target
    predictions = target.patches(samples)
    planned = planned_predictions(samples, predictions, target, target.target_id(predictions))
    keys = [(sample.instance_id, prediction.sample_index) for sample, prediction in planned]
    kept = set(keys)
    excluded = {
        (sample.instance_id, index): "the target gave no patch (target.missing: skip)"
        for sample in samples
        for index in range(target.samples)
        if (sample.instance_id, index) not in kept
    }
    return PlanShape(keys=keys, excluded=excluded)


def trimmed(shape: PlanShape, locked: list[tuple[str, int]]) -> list[str]:
    """How the lockfile's trials (``locked``) differ from the plan ``shape`` its own config
    and dataset give: one line per trial missing from it or added to it."""
    ours = set(locked)
    found = [
        f"{instance_id} sample {index}: in the plan its config and dataset give, not among "
        "the lockfile's trials (trimmed?)"
        for instance_id, index in shape.keys
        if (instance_id, index) not in ours
    ]
    planned = set(shape.keys)
    for instance_id, index in sorted(ours - planned):
        why = shape.excluded.get((instance_id, index))
        found.append(
            f"{instance_id} sample {index}: among the lockfile's trials, not in the plan its "
            "config and dataset give" + (f" (excluded: {why})" if why else "")
        )
    return found
