"""`evalrepro reproduce BUNDLE`: the bundle's trials run again, and each is said to agree
or not; a test that disagrees is classified as flaky, environment drift or a harness
change.

The container is the fake backend's (tests/fake_backend.py), scripted per test so that
a reproduction can agree, drift or flake on purpose; everything else is the real code.
Real podman, from a fresh cache: tests/test_bundle_podman.py.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.cli import EXIT_NOT_REPRODUCIBLE, main
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from evalrepro.pipeline import PlanMismatch, run_experiment
from evalrepro.publish.bundle import write_bundle
from evalrepro.publish.reproduce import REPRODUCTION_NAME, print_reproduction, reproduce
from evalrepro.sample import load_samples
from tests.fake_backend import Tests, fake_backend, gold_scenario


def quiet() -> Console:
    return Console(file=open(os.devnull, "w"), width=120)


@pytest.fixture(scope="module")
def samples():
    config = compose(["+experiment=demo"])
    return {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}


@pytest.fixture(scope="module")
def bundle(samples, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gold")
    run_experiment(
        compose(["+experiment=demo"]),
        quiet(),
        run_dir=root / "demo-gold",
        cache_dir=root / "cache",
        backend=fake_backend(gold_scenario(samples)),
    )
    out = root / "demo-gold.bundle.tar.gz"
    write_bundle(root / "demo-gold", out)
    return out


def run(bundle: Path, tmp_path: Path, scenario, **kwargs):
    return reproduce(
        bundle,
        quiet(),
        run_dir=tmp_path / "again",
        cache_dir=tmp_path / "cache",
        backends=lambda: fake_backend(scenario),
        **kwargs,
    )


def test_a_faithful_reproduction_agrees_on_every_trial(bundle, samples, tmp_path):
    reproduction = run(bundle, tmp_path, gold_scenario(samples))
    assert (reproduction.agreeing, len(reproduction.trials)) == (12, 12)
    record = json.loads((tmp_path / "again" / REPRODUCTION_NAME).read_text())
    assert record["record"] == "Reproduction" and len(record["trials"]) == 12
    console = Console(record=True, width=120)
    print_reproduction(console, reproduction)
    assert "12/12 trials agree" in console.export_text()


def test_a_seeded_sample_runs_that_many_trials_the_same_ones_each_time(bundle, samples, tmp_path):
    one = run(bundle, tmp_path / "1", gold_scenario(samples), sample=3, seed=7)
    two = run(bundle, tmp_path / "2", gold_scenario(samples), sample=3, seed=7)
    other = run(bundle, tmp_path / "3", gold_scenario(samples), sample=3, seed=8)
    labels = [t.label for t in one.trials]
    assert len(labels) == 3 and labels == [t.label for t in two.trials]
    assert labels != [t.label for t in other.trials]
    results = json.loads((tmp_path / "1" / "again" / "results.json").read_text())
    assert results["planned"] == 12 and results["missing"] == 9


def drifting(samples, instance_id: str):
    """On this machine one F2P test of ``instance_id`` fails, every time."""
    gold = gold_scenario(samples)
    broken = samples[instance_id].fail_to_pass[0]

    def scenario(iid: str, patch: str) -> Tests:
        tests = gold(iid, patch)
        if iid != instance_id:
            return tests
        return Tests(passed=tuple(t for t in tests.passed if t != broken), failed=(broken,))

    return scenario, broken


def test_a_test_that_fails_here_every_time_is_environment_drift(bundle, samples, tmp_path):
    scenario, broken = drifting(samples, "demo__calc-2")
    reproduction = run(bundle, tmp_path, scenario)
    assert reproduction.agreeing == 11
    [trial] = [t for t in reproduction.trials if not t.agrees]
    assert trial.instance_id == "demo__calc-2"
    assert trial.bundle_outcome.startswith("resolved")
    assert trial.reproduction_outcome.startswith("unresolved")
    [test] = trial.tests
    assert (test.test, test.bundle, test.reproduction) == (broken, "PASSED", "FAILED")
    assert test.kind == "environment drift" and test.reruns == ["FAILED", "FAILED"]
    # Each side's log lines that name the test, so a reader sees both without digging.
    assert any(broken.split("::")[-1] in line for line in test.bundle_lines)
    assert any(broken.split("::")[-1] in line for line in test.reproduction_lines)
    console = Console(record=True, width=200)
    print_reproduction(console, reproduction)
    text = console.export_text()
    assert "11/12 trials agree" in text and "environment drift" in text


def test_a_test_that_flips_between_runs_is_flaky(bundle, samples, tmp_path):
    gold = gold_scenario(samples)
    flip = samples["demo__textkit-1"].fail_to_pass[0]
    turns = itertools.cycle([True, False])  # fails here, passes on the first rerun

    def scenario(iid: str, patch: str) -> Tests:
        tests = gold(iid, patch)
        if iid == "demo__textkit-1" and next(turns):
            return Tests(passed=tuple(t for t in tests.passed if t != flip), failed=(flip,))
        return tests

    reproduction = run(bundle, tmp_path, scenario)
    [trial] = [t for t in reproduction.trials if not t.agrees]
    assert [(t.test, t.kind) for t in trial.tests] == [(flip, "flaky")]


def test_a_log_this_evalrepro_reads_otherwise_is_a_harness_change(
    bundle, samples, tmp_path, monkeypatch
):
    scenario, broken = drifting(samples, "demo__ledger-1")
    from evalrepro.publish import reproduce as module

    real = module.reobserve

    def reads_otherwise(folder, sample, parser):
        observation = real(folder, sample, parser)
        if sample.instance_id != "demo__ledger-1":
            return observation
        return observation.model_copy(
            update={"status_map": {**observation.status_map, broken: "FAILED"}}
        )

    monkeypatch.setattr(module, "reobserve", reads_otherwise)
    reproduction = run(bundle, tmp_path, scenario)
    [trial] = [t for t in reproduction.trials if not t.agrees]
    assert [t.kind for t in trial.tests] == ["harness change"]


def test_an_image_that_differs_stops_the_reproduction_before_any_trial(bundle, samples, tmp_path):
    backend = fake_backend(gold_scenario(samples))
    prepare = backend.builder.prepare

    def another_image(*args, **kwargs):
        # What a rebuild with another input gives: the same key, another digest.
        images = prepare(*args, **kwargs)
        return {
            iid: chain.model_copy(
                update={
                    "layers": [
                        layer.model_copy(update={"image_digest": "sha256:" + "0" * 64})
                        for layer in chain.layers
                    ]
                }
            )
            for iid, chain in images.items()
        }

    backend.builder.prepare = another_image
    with pytest.raises(PlanMismatch) as refused:
        reproduce(
            bundle,
            quiet(),
            run_dir=tmp_path / "again",
            cache_dir=tmp_path / "cache",
            backends=lambda: backend,
        )
    assert {d.kind for d in refused.value.differences} == {"images"}
    assert backend.runtime.ran == []


def test_a_bundle_that_does_not_verify_is_not_reproduced(bundle, samples, tmp_path):
    import tarfile

    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path / "x")
    bag = tmp_path / "x" / "demo-gold"
    report = bag / "data" / "reports" / "report.md"
    report.write_text(report.read_text() + "edited\n")
    with pytest.raises(UserError, match="does not verify"):
        run(bag, tmp_path, gold_scenario(samples))
    assert not (tmp_path / "again").exists()


def test_the_exit_code_for_an_unreproducible_plan_is_documented():
    assert EXIT_NOT_REPRODUCIBLE == 4
    assert main(["reproduce", "/nonexistent.tar.gz"]) == 2


def test_log_lines_and_ids_full_of_markup_print_as_text():
    """A patch writes what it likes into the log: its lines are shown, never read as markup."""
    from evalrepro.records.reproduce import Reproduction, TestDisagreement, TrialAgreement

    test = TestDisagreement(
        test="tests/t.py::test_x[/tmp/a]",
        bundle="PASSED",
        reproduction="FAILED",
        kind="flaky",
        reruns=["PASSED"],
        bundle_lines=["[bold red]PASSED[/] tests/t.py::test_x[/tmp/a]"],
        reproduction_lines=["\x1b[31m[/]FAILED"],
    )
    trial = TrialAgreement(
        label="x[/]--s0--abc",
        instance_id="x[/]",
        sample_index=0,
        agrees=False,
        bundle_outcome="resolved (tests_passed)",
        reproduction_outcome="unresolved (tests_failed)",
        bundle_resolution=None,
        reproduction_resolution=None,
        tests=[test],
    )
    reproduction = Reproduction(
        bundle="b.tar.gz", lockfile_sha256="sha256:" + "0" * 64, bundle_harness="a",
        reproduction_harness="a", planned=1, sample=None, seed=0, reruns=1, trials=[trial],
    )  # fmt: skip
    console = Console(record=True, width=400)
    print_reproduction(console, reproduction)
    text = console.export_text()
    assert "[bold red]PASSED[/] tests/t.py::test_x[/tmp/a]" in text
    assert "x[/]--s0--abc" in text and "0/1 trials agree" in text
