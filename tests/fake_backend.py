"""The fake environment with a script: the pipeline (plan, lock, execute, resume, verify,
report) without containers, in seconds.

The production ``fake`` runtime and builder (``evalrepro.runtimes.fake``,
``evalrepro.build.fake``) do what a container would do, in process. Here the runtime's
tests follow ``scenario(instance_id, patch)``, and it records which trials ran (a test can
interrupt a run before an attempt). Everything after the stream is the real thing:
the stream reader's bounds, the parsers, grading, scoring, the run directory, resume,
verify and reports. The real podman tests (``tests/test_podman_*.py``) stay: this is for
the pipeline's logic, not for what a sandbox guarantees.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from evalrepro.build.fake import FakeBuilder
from evalrepro.config.environment import FakeEnvironment
from evalrepro.run.backend import Backend
from evalrepro.runtimes.attempt import AttemptSpec
from evalrepro.runtimes.fake import (
    OUTPUT,
    FakeRuntime,
    FakeTests,
    supervisor_stream,
)
from evalrepro.sample import Sample

__all__ = ["OUTPUT", "Tests", "fake_backend", "gold_scenario", "supervisor_stream", "trial_dirs"]

Tests = FakeTests

#: (instance_id, patch text) -> what the tests do.
Scenario = Callable[[str, str], Tests]


def gold_scenario(samples: dict[str, Sample]) -> Scenario:
    """The gold patch fixes every instance; any other patch fixes none (its FAIL_TO_PASS
    tests fail, its PASS_TO_PASS tests pass)."""

    def scenario(instance_id: str, patch: str) -> Tests:
        sample = samples[instance_id]
        if patch == (sample.patch or ""):
            return Tests(passed=(*sample.fail_to_pass, *sample.pass_to_pass))
        return Tests(passed=tuple(sample.pass_to_pass), failed=tuple(sample.fail_to_pass))

    return scenario


class ScriptedRuntime(FakeRuntime):
    """The fake runtime whose tests do what the scenario says."""

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(FakeEnvironment(), Path("/nonexistent"))
        self.scenario = scenario
        self._ran_lock = threading.Lock()
        #: Trial labels in the order their attempts ran.
        self.ran: list[str] = []
        #: Called before an attempt runs (a test can interrupt a run here).
        self.before: Callable[[str], None] = lambda label: None

    def tests_for(self, spec: AttemptSpec) -> Tests:
        return self.scenario(spec.instance_id, spec.patch.decode("utf-8", "surrogateescape"))

    def run(self, spec: AttemptSpec):
        self.before(spec.label)
        with self._ran_lock:
            self.ran.append(spec.label)
        return super().run(spec)


def fake_backend(scenario: Scenario) -> Backend:
    runtime = ScriptedRuntime(scenario)
    builder = FakeBuilder(FakeEnvironment(), runtime, Path("/nonexistent"), concurrency=1)
    return Backend(runtime=runtime, builder=builder)


def trial_dirs(run_dir: Path) -> list[Path]:
    return sorted(p for p in (run_dir / "trials").iterdir() if p.is_dir())
