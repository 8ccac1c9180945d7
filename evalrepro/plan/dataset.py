"""A dataset compiled for the plan: each instance's parser and TestSpec, from the
dataset's config (its specs, its protection, its parser family).

The config says what was asked; this is where it becomes what a trial runs.
"""

from __future__ import annotations

from evalrepro.config.dataset import DatasetConfig
from evalrepro.errors import UserError
from evalrepro.grade.parsers import LogParser, get_parser
from evalrepro.plan.testspec import compile_test_spec
from evalrepro.records.testspec import TestSpec
from evalrepro.sample import Sample


def command_advice(dataset: DatasetConfig) -> list[str]:
    """One line per spec whose test command visibly lacks what its parser needs."""
    advice = []
    for repo, versions in sorted(dataset.specs.items()):
        for version, spec in sorted(versions.items()):
            found = get_parser(spec.parser).command_advice(spec.test_cmd)
            if found:
                advice.append(f"spec {repo} {version}: {found} in test_cmd {spec.test_cmd!r}")
    return advice


def instance_parser(dataset: DatasetConfig, sample: Sample) -> LogParser:
    """The instance's own parser, else its spec's; its family must be the dataset's."""
    parser = get_parser(sample.parser or dataset.spec_for(sample).parser)
    if parser.family is not dataset.test_ids:
        raise UserError(
            f"dataset '{dataset.name}': instance '{sample.instance_id}' uses parser "
            f"'{parser.name}' ({parser.family} family) but the dataset's test ids "
            f"come from the {dataset.test_ids} family"
        )
    return parser


def instance_test_spec(
    dataset: DatasetConfig, sample: Sample, *, model_patch: bool = True
) -> TestSpec:
    """``model_patch``: False for a run that applies none (validation's before)."""
    parser = instance_parser(dataset, sample)
    return compile_test_spec(
        sample,
        dataset.spec_for(sample),
        parser=parser.name,
        fail_only=parser.fail_only or sample.fail_only,
        protection=dataset.protection,
        model_patch=model_patch,
    )
