"""A fake builder and runtime: the pipeline (plan, lock, execute, resume, verify, report)
without containers, in seconds.

What is fake is only what a container would do. ``FakeBuilder`` records one image layer
per instance whose digest is a function of its inputs (the repo's history and the test
spec), as a real builder's is. ``FakeRuntime`` answers each attempt with the framed
stream a supervisor would have written: the test output that ``scenario(instance_id,
patch)`` says the tests print, in the instance's parser's own format. Everything after
the stream is the real thing: ``StreamReader``'s bounds, the parsers, grading, scoring,
the run directory, resume, verify and reports.

The real podman tests (``tests/test_podman_*.py``) stay: this is for the pipeline's
logic, not for what a sandbox guarantees.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalrepro.backend import Backend
from evalrepro.builders.base import Builder
from evalrepro.digest import sha256_json
from evalrepro.images import (
    BuildFailure,
    ImageChain,
    ImageRecord,
    PinnedInput,
    inputs_digest,
    layer_key,
)
from evalrepro.repos import LocalCheckout
from evalrepro.runtimes.base import AttemptRequest, AttemptRun, Runtime
from evalrepro.sample import Sample
from evalrepro.sandbox.supervisor import FRAME, KIND_EVENT, KIND_LOG, KIND_OUTPUT, PROTOCOL
from evalrepro.supervision import (
    DoneEvent,
    GuardEvent,
    PatchEvent,
    Peak,
    ResetEvent,
    RuntimeFacts,
    StartEvent,
    StreamReader,
    SupervisorReport,
    TestsFinishedEvent,
    TestsStartedEvent,
)
from evalrepro.testspec import TestSpec


@dataclass(frozen=True)
class Tests:
    __test__ = False
    """What the tests of one attempt do: each test id's status, and the exit code."""

    passed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    exit_code: int | None = None
    #: The patch does not apply: no tests run.
    rejected: bool = False


#: (instance_id, patch text) -> what the tests do.
Scenario = Callable[[str, str], Tests]


def gold_scenario(samples: dict[str, Sample]) -> Scenario:
    """The gold patch fixes every instance; any other patch fixes none (its FAIL_TO_PASS
    tests fail, its PASS_TO_PASS tests pass)."""

    def scenario(instance_id: str, patch: str) -> Tests:
        sample = samples[instance_id]
        if patch == sample.patch:
            return Tests(passed=(*sample.fail_to_pass, *sample.pass_to_pass))
        return Tests(passed=tuple(sample.pass_to_pass), failed=tuple(sample.fail_to_pass))

    return scenario


# --- test output, as each parser family reads it --------------------------------------


def pytest_output(tests: Tests) -> bytes:
    lines = [
        "============================= test session starts ==============================",
        f"collected {len(tests.passed) + len(tests.failed)} items",
        "",
        *(f"{t} PASSED" for t in tests.passed),
        *(f"{t} FAILED" for t in tests.failed),
        "=========================== short test summary info ============================",
        *(f"PASSED {t}" for t in tests.passed),
        *(f"FAILED {t} - assert 1 == 2" for t in tests.failed),
        f"========== {len(tests.failed)} failed, {len(tests.passed)} passed in 0.12s ==========",
    ]
    return ("\n".join(lines) + "\n").encode()


def unittest_output(tests: Tests) -> bytes:
    """``python -m unittest -v`` of Python 3.11, test ids ``module.Class.method``."""

    def line(test_id: str, word: str) -> str:
        method = test_id.rsplit(".", 1)[-1]
        return f"{method} ({test_id}) ... {word}"

    lines = [
        *(line(t, "ok") for t in tests.passed),
        *(line(t, "FAIL") for t in tests.failed),
        "",
        "-" * 70,
        f"Ran {len(tests.passed) + len(tests.failed)} tests in 0.010s",
        "",
        f"FAILED (failures={len(tests.failed)})" if tests.failed else "OK",
    ]
    return ("\n".join(lines) + "\n").encode()


OUTPUT: dict[str, Callable[[Tests], bytes]] = {
    "pytest": pytest_output,
    "pytest_full": pytest_output,
    "unittest": unittest_output,
}


# --- the stream a supervisor writes ---------------------------------------------------


def frame(kind: bytes, payload: bytes) -> bytes:
    return FRAME.pack(kind, len(payload)) + payload


def event(model) -> bytes:
    return frame(KIND_EVENT, json.dumps(model.model_dump()).encode())


def supervisor_stream(
    output: bytes,
    *,
    exit_code: int,
    changed: list[str],
    rejected: bool = False,
    harness_log: str = "$ git apply --verbose /evalrepro/patch.diff\n",
    reject_detail: str = "error: patch failed",
) -> bytes:
    """The framed stream of one attempt: start, patch, reset, guard, tests, done (the
    test output in frames of 1 MiB, as the supervisor sends it)."""
    parts = [
        event(StartEvent(event="start", protocol=PROTOCOL, python="3.11.2", uid=0, pid=1)),
        frame(KIND_LOG, harness_log.encode()),
    ]
    if rejected:
        patch = PatchEvent(
            event="patch",
            status="rejected",
            method=None,
            changed=[],
            changed_total=0,
            detail=reject_detail,
            seconds=0.02,
        )
        return b"".join([*parts, event(patch), event(DoneEvent(event="done"))])
    step = 1 << 20
    parts += [
        event(
            PatchEvent(
                event="patch",
                status="applied",
                method="git_apply",
                changed=changed,
                changed_total=len(changed),
                seconds=0.03,
            )
        ),
        event(
            ResetEvent(
                event="reset", ok=True, reason=None, detail="", test_files=1, verified=1, seconds=0
            )
        ),
        event(GuardEvent(event="guard", sites=["/usr/lib/python3/dist-packages"])),
        event(
            TestsStartedEvent(
                event="tests_started", user_namespace=True, new_user_namespaces="refused"
            )
        ),
        *(frame(KIND_OUTPUT, output[i : i + step]) for i in range(0, len(output), step)),
        event(
            TestsFinishedEvent(
                event="tests_finished",
                exit_code=exit_code,
                signal=None,
                seconds=0.12,
                output_bytes=len(output),
                output_truncated=False,
                stopped=None,
                runner_exit="clean",
                runner_detail="",
                replaced=[],
                changed_during_run=[],
                peak=Peak(memory=30 << 20, pids=3, disk=4096),
            )
        ),
        event(DoneEvent(event="done")),
    ]
    return b"".join(parts)


# --- the builder and the runtime ------------------------------------------------------


class FakeBuilder(Builder):
    """One layer per instance; its digest is a function of its inputs alone."""

    kind = "fake"
    runtimes = ("fake",)

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime
        self.parsers: dict[str, str] = {}
        self.prepared: list[str] = []

    def prepare(
        self,
        specs: list[TestSpec],
        checkouts: dict[str, LocalCheckout],
        locked: list[ImageRecord] | None = None,
    ) -> dict[str, ImageChain | BuildFailure]:
        pinned = {record.key: record for record in locked or []}
        images: dict[str, ImageChain | BuildFailure] = {}
        for spec in specs:
            self.parsers[spec.instance_id] = spec.parser
            inputs = [
                PinnedInput(
                    kind="history",
                    name=spec.repo,
                    digest=checkouts[spec.instance_id].source_digest,
                ),
                PinnedInput(kind="recipe", name="test spec", digest=spec.digest()),
            ]
            key = layer_key(self.kind, "instance", inputs, None)
            digest = sha256_json({"image of": key})
            if key in pinned and pinned[key].image_digest != digest:
                images[spec.instance_id] = BuildFailure(
                    builder=self.kind, layer="instance", key=key, reason="digest differs"
                )
                continue
            self.prepared.append(spec.instance_id)
            tag = f"fake/{spec.instance_id}:{key[7:19]}"
            self.runtime.store[tag] = digest
            images[spec.instance_id] = ImageChain(
                layers=[
                    ImageRecord(
                        builder=self.kind,
                        layer="instance",
                        key=key,
                        inputs_digest=inputs_digest(inputs),
                        inputs=inputs,
                        tag=tag,
                        parent_key=None,
                        image_digest=digest,
                        built=True,
                    )
                ]
            )
        return images


class FakeRuntime(Runtime):
    """Answers each attempt with the stream its scenario's tests would print."""

    kind = "fake"

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.parsers: dict[str, str] = {}
        #: The "image store": tag -> image digest.
        self.store: dict[str, str] = {}
        self.lock = threading.Lock()
        #: Trial labels in the order their attempts ran.
        self.ran: list[str] = []
        #: Called before an attempt runs (a test can interrupt a run here).
        self.before: Callable[[str], None] = lambda label: None

    def check(self) -> None:
        pass

    def describe(self) -> dict[str, str]:
        return {"kind": self.kind, "mode": "in-process"}

    def image_ids(self) -> dict[str, str]:
        return dict(self.store)

    def run(self, request: AttemptRequest) -> AttemptRun:
        label = request.attempt_dir.parent.name
        self.before(label)
        with self.lock:
            self.ran.append(label)
        instance_id = label.split("--s", 1)[0]
        patch = (request.attempt_dir / "patch.diff").read_text()
        tests = self.scenario(instance_id, patch)
        output = OUTPUT[self.parsers[instance_id]](tests)
        changed = sorted({line[6:] for line in patch.splitlines() if line.startswith("+++ b/")})
        reader = StreamReader(request.attempt_dir / "test_output.txt", request.output_limit)
        exit_code = tests.exit_code if tests.exit_code is not None else int(bool(tests.failed))
        reader.feed(
            supervisor_stream(output, exit_code=exit_code, changed=changed, rejected=tests.rejected)
        )
        report: SupervisorReport = reader.finish(RuntimeFacts(exit_code=0, seconds=0.2))
        return AttemptRun(report=report, limits={"memory": "fake"})


def fake_backend(scenario: Scenario) -> Backend:
    runtime = FakeRuntime(scenario)
    builder = FakeBuilder(runtime)
    builder.parsers = runtime.parsers
    return Backend(runtime=runtime, builder=builder)


def trial_dirs(run_dir: Path) -> list[Path]:
    return sorted(p for p in (run_dir / "trials").iterdir() if p.is_dir())
