"""Executors are plugins, and not part of what a trial measures.

The same experiment run by the ``local`` executor (a pool of threads) and by the
``serial`` one (one trial at a time, in the calling thread) gives the same lockfile
identity, the same trial ids and the same verdicts; each verifies. An unknown executor
kind is one line naming the kinds there are. The runs use the fake environment, so that
only the scheduling differs.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro import plugins
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.publish.verify import check_run
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def run(tmp_path: Path, name: str, *overrides: str):
    config = compose(["+experiment=model_a", *overrides])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    backend = fake_backend(gold_scenario(samples))
    threads: set[str] = set()
    real = backend.runtime.run

    def run_and_note(spec):
        threads.add(threading.current_thread().name)
        return real(spec)

    backend.runtime.run = run_and_note
    outcome = run_experiment(
        config, quiet(), run_dir=tmp_path / name, cache_dir=tmp_path / "cache", backend=backend
    )
    return outcome, threads


def test_local_and_serial_executors_give_the_same_trials_and_verdicts(tmp_path):
    local, local_threads = run(tmp_path, "local", "executor=local", "executor.max_workers=2")
    serial, serial_threads = run(tmp_path, "serial", "executor=serial")
    assert serial_threads == {threading.current_thread().name}
    assert local_threads and threading.current_thread().name not in local_threads
    assert [t.trial_id for t in local.results.trials] == [t.trial_id for t in serial.results.trials]
    assert [(t.outcome, t.reason) for t in local.results.trials] == [
        (t.outcome, t.reason) for t in serial.results.trials
    ]
    first, second = read_lockfile(tmp_path / "local"), read_lockfile(tmp_path / "serial")
    assert differences(first, second) == []
    assert first.config["executor"]["kind"] == "local"
    assert second.config["executor"]["kind"] == "serial"
    assert check_run(tmp_path / "local").ok and check_run(tmp_path / "serial").ok


def test_a_run_resumed_by_another_executor_is_the_same_run(tmp_path):
    run(tmp_path, "run", "executor=serial")
    again, _ = run(tmp_path, "run", "executor=local")
    assert again.results.planned == len(again.results.trials)
    assert check_run(tmp_path / "run").ok


def test_the_executor_kinds_are_the_declared_plugins():
    assert {"local", "serial"} <= set(plugins.declared("executors"))


def test_an_unknown_executor_kind_is_one_line_naming_the_known_ones():
    with pytest.raises(UserError) as error:
        compose(["+experiment=demo", "executor.kind=nowhere"])
    message = str(error.value)
    assert "\n" not in message and "executor" in message and "local" in message
