"""Plan: the experiment resolved into trials, before anything runs.

One trial per instance x target sample. Building the plan materializes the repo sources
and asks the backend for every image, because a trial's id includes its image digest:
two runs share a trial id only if they ran the same test spec in the same image under
the same harness. An instance the target has no patch for is still a trial (with an
empty patch): the denominator is the dataset, not what the target chose to submit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrepro import __version__
from evalrepro.backends.base import Backend, BuildFailure, ImageChain
from evalrepro.config import ExperimentConfig
from evalrepro.errors import UserError
from evalrepro.parsers import LogParser
from evalrepro.repos import LocalCheckout, RepoError, materialize
from evalrepro.sample import Sample
from evalrepro.target import GoldTarget, Prediction
from evalrepro.testspec import TestSpec
from evalrepro.trial import Trial, TrialKey


@dataclass(frozen=True)
class PlannedTrial:
    trial: Trial
    sample: Sample
    spec: TestSpec
    parser: LogParser
    prediction: Prediction
    image: ImageChain | BuildFailure

    @property
    def label(self) -> str:
        return self.trial.label


@dataclass(frozen=True)
class Plan:
    target_id: str
    trials: list[PlannedTrial]

    @property
    def images(self) -> list[ImageChain | BuildFailure]:
        return [planned.image for planned in self.trials]


def target_id(config: ExperimentConfig, predictions: list[Prediction]) -> str:
    if isinstance(config.target, GoldTarget):
        return "gold"
    if config.target.name:
        return config.target.name
    names = sorted({p.model_name_or_path for p in predictions})
    if len(names) != 1:
        raise UserError(
            f"target: predictions name {len(names)} models ({', '.join(names[:3])}); "
            "set target.name"
        )
    return names[0]


def build_plan(config: ExperimentConfig, backend: Backend, cache_dir: Path) -> Plan:
    dataset = config.dataset
    samples = dataset.load()
    predictions = config.target.patches(samples)
    target = target_id(config, predictions)
    specs = {sample.instance_id: dataset.test_spec(sample) for sample in samples}
    parsers = {sample.instance_id: dataset.parser_for(sample) for sample in samples}

    checkouts: dict[str, LocalCheckout] = {}
    unavailable: dict[str, str] = {}
    for repo in sorted({sample.repo for sample in samples}):
        if repo not in dataset.repos:
            raise UserError(f"dataset '{dataset.name}': no source for repo '{repo}' (repos:)")
        try:
            checkouts[repo] = materialize(repo, dataset.repos[repo], cache_dir)
        except RepoError as error:
            unavailable[repo] = str(error)

    buildable = [spec for spec in specs.values() if spec.repo in checkouts]
    images: dict[str, ImageChain | BuildFailure] = dict(backend.prepare(buildable, checkouts))
    for spec in specs.values():
        if spec.repo in unavailable:
            images[spec.instance_id] = BuildFailure(
                layer="history", key="", reason=f"repo source: {unavailable[spec.repo]}"
            )

    by_key = {(p.instance_id, p.sample_index): p for p in predictions}
    trials = []
    for sample in samples:
        for index in range(config.target.samples):
            prediction = by_key.get((sample.instance_id, index)) or Prediction(
                instance_id=sample.instance_id,
                model_name_or_path=target,
                model_patch=None,
                sample_index=index,
            )
            image = images[sample.instance_id]
            spec = specs[sample.instance_id]
            key = TrialKey(
                instance_id=sample.instance_id,
                target_id=target,
                repository_commit=sample.base_commit,
                image_digest=image.image.image_digest
                if isinstance(image, ImageChain)
                else f"unbuilt:{image.layer}:{image.key}",
                test_spec_digest=spec.digest(),
                harness_version=__version__,
                sample_index=index,
            )
            trials.append(
                PlannedTrial(
                    trial=Trial.of(key),
                    sample=sample,
                    spec=spec,
                    parser=parsers[sample.instance_id],
                    prediction=prediction,
                    image=image,
                )
            )
    return Plan(target_id=target, trials=trials)
