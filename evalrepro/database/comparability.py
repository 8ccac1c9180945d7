"""A run's comparability class: a digest over exactly what ``verify A B`` compares
(:func:`evalrepro.plan.lockfile.differences`) apart from the target. Two runs with one
class are comparable; runs of different classes are not, and ``differences`` on their
stored lockfiles names why."""

from __future__ import annotations

import json
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


def class_facts(lockfile: Lockfile) -> dict[str, tuple[str, str]]:
    """What makes the lockfile's class, one entry per thing a class can differ in
    (``comparability_fields`` flattened): key -> (the value compared, how a heading names
    it). Long values (instances, images) are named by a digest of them."""
    fields = comparability_fields(lockfile)

    def digest(value: Any) -> str:
        return sha256_json(value).removeprefix("sha256:")[:12]

    version, code = fields["harness"]
    facts: dict[str, tuple[str, str]] = {
        "harness": (
            sha256_json(fields["harness"]),
            f"harness {version} code {code.removeprefix('sha256:')[:12]}",
        ),
        "instances": (sha256_json(fields["instances"]), f"instances {digest(fields['instances'])}"),
        "images": (sha256_json(fields["images"]), f"images {digest(fields['images'])}"),
        "gate": (
            sha256_json(fields["gate"]),
            "gate " + (", ".join(str(rule) for rule in lockfile.gate.rules) or "without rules"),
        ),
    }
    for key, value in fields["environment"].items():
        facts[f"environment.{key}"] = (sha256_json(value), f"environment.{key} {_shown(value)}")
    for key, value in fields["config"].items():
        facts[f"config.{key}"] = (sha256_json(value), f"{key} {_shown(value)}")
    return facts


def defining_facts(lockfiles: list[Lockfile]) -> list[list[str]]:
    """Per lockfile (one per class), how a heading names what makes its class: its own
    value of everything the classes do not share, in ``class_facts``' order."""
    facts = [class_facts(lockfile) for lockfile in lockfiles]
    keys = list(dict.fromkeys(key for each in facts for key in each))
    missing = ("", "unset")
    differing = [k for k in keys if len({each.get(k, missing)[0] for each in facts}) > 1]
    return [
        [each.get(key, (None, f"{key.removeprefix('config.')} unset"))[1] for key in differing]
        for each in facts
    ]


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
