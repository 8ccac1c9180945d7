"""A run's comparability class: a digest over exactly what ``verify A B`` compares
(:func:`evalrepro.plan.lockfile.differences`) apart from the target. Two runs with one
class are comparable; runs of different classes are not, and ``differences`` on their
stored lockfiles names why."""

from __future__ import annotations

from typing import Any

from evalrepro.config.experiment import ExperimentConfig
from evalrepro.config.identity import settings
from evalrepro.digest import sha256_json
from evalrepro.records.lockfile import Lockfile


def comparability_class(lockfile: Lockfile) -> str:
    return sha256_json(comparability_fields(lockfile))


def comparability_fields(lockfile: Lockfile) -> dict[str, Any]:
    """What ``differences(a, b, same_target=False)`` reads of one lockfile, field for
    field (a test checks that equal fields mean no difference and the reverse)."""
    by_key = {image.key: image for image in lockfile.environment.images}
    chains: dict[str, list[list[str]]] = {}
    for trial in lockfile.trials:
        chain, key = [], trial.image_key
        while key and key in by_key:
            chain.insert(0, [by_key[key].key, by_key[key].image_digest])
            key = by_key[key].parent_key or ""
        chains[trial.key.instance_id] = chain
    environment = lockfile.environment
    return {
        "harness": [lockfile.harness.version, lockfile.harness.code_digest],
        "instances": {
            i.instance_id: [i.digest, i.test_spec_digest] for i in lockfile.dataset.instances
        },
        "images": chains,
        "environment": {
            "limits": environment.limits.model_dump(mode="json") if environment.limits else None,
            "timeout": environment.timeout,
            "network": environment.network,
            "kind": environment.kind,
        },
        "gate": lockfile.gate.model_dump(mode="json"),
        "config": {
            key: value for key, (_how, value) in settings(ExperimentConfig, lockfile.config).items()
        },
    }
