"""The fake runtime: a dry run of a plan, without podman or any sandbox.

Each attempt's "tests" run in this process: the runtime writes the framed stream a
supervisor would have sent, with test output in the instance parser's own format, in
which every FAIL_TO_PASS and PASS_TO_PASS test has the outcome the environment's
``tests`` setting names. Everything after the stream is the real thing: the stream
reader's bounds, the parsers, grading, scoring, the run directory, resume, verify and
reports. The pipeline's tests use it (with a scripted outcome per instance and patch),
so that they run anywhere in seconds; what a sandbox guarantees is tested with podman.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from evalrepro.config.environment import FakeEnvironment
from evalrepro.records.supervision import (
    DoneEvent,
    GuardEvent,
    PatchEvent,
    Peak,
    ResetEvent,
    RuntimeFacts,
    StartEvent,
    StopReason,
    SupervisorReport,
    TestsFinishedEvent,
    TestsStartedEvent,
)
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.base import Runtime
from evalrepro.runtimes.supervision import StreamReader
from evalrepro.sandbox.protocol import FRAME, KIND_EVENT, KIND_LOG, KIND_OUTPUT, PROTOCOL


@dataclass(frozen=True)
class FakeTests:
    """What the tests of one attempt do: each test id's status, and the exit code."""

    __test__ = False

    passed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    exit_code: int | None = None
    #: The patch does not apply: no tests run.
    rejected: bool = False
    #: A limit stopped the tests after the output above ("timeout", "memory", ...): the
    #: supervisor killed the runner, as it does at its deadline.
    stopped: str | None = None


class FakeRuntime(Runtime):
    kind: ClassVar[str] = "fake"

    def __init__(self, config: FakeEnvironment, cache_dir: Path) -> None:
        self.config = config
        #: The "image store" the fake builder fills: tag -> image digest.
        self.store: dict[str, str] = {}
        self.lock = threading.Lock()

    def check(self) -> None:
        pass

    def describe(self) -> dict[str, str]:
        return {"kind": self.kind, "mode": "in-process"}

    def image_ids(self) -> dict[str, str]:
        return dict(self.store)

    def missing_images(self, images):  # type: ignore[no-untyped-def]
        # Its images are records: another process's store holds them once told of them.
        with self.lock:
            self.store.update({image.tag: image.image_digest for image in images})
        return []

    def tests_for(self, spec: AttemptSpec) -> FakeTests:
        """What the tests do in this attempt (the environment's ``tests`` setting)."""
        named = (*spec.test_spec.fail_to_pass, *spec.test_spec.pass_to_pass)
        if self.config.tests == "pass":
            return FakeTests(passed=named)
        return FakeTests(
            passed=tuple(spec.test_spec.pass_to_pass), failed=tuple(spec.test_spec.fail_to_pass)
        )

    def run(self, spec: AttemptSpec) -> AttemptOutput:
        assert spec.image is not None
        if self.store.get(spec.image.tag) != spec.image.digest:
            error = f"no image {spec.image.tag} with digest {spec.image.digest}"
            return _failed(error)
        writer = OUTPUT.get(spec.test_spec.parser) or OUTPUT.get(
            spec.test_spec.parser.split("_")[0]
        )
        if writer is None:
            return _failed(f"the fake runtime writes no {spec.test_spec.parser} output")
        tests = self.tests_for(spec)
        if self.config.seconds:
            time.sleep(self.config.seconds)
        patch = spec.patch.decode("utf-8", "replace")
        changed = sorted({line[6:] for line in patch.splitlines() if line.startswith("+++ b/")})
        exit_code = tests.exit_code if tests.exit_code is not None else int(bool(tests.failed))
        reader = StreamReader(spec.output_limit)
        reader.feed(
            supervisor_stream(
                writer(tests),
                exit_code=exit_code,
                changed=changed,
                rejected=tests.rejected,
                stopped=tests.stopped,
            )
        )
        report = reader.finish(RuntimeFacts(exit_code=0, seconds=0.2))
        return AttemptOutput(
            artifacts={"test_output.txt": reader.output, "runtime.log": b"fake runtime\n"},
            report=report,
            limits={
                name: "not enforced (fake runtime)" for name in ("memory", "pids", "inodes", "time")
            },
        )


def _failed(error: str) -> AttemptOutput:
    return AttemptOutput(report=SupervisorReport(runtime=RuntimeFacts(error=error)))


# --- test output, as each parser family reads it --------------------------------------


def pytest_output(tests: FakeTests) -> bytes:
    lines = [
        "============================= test session starts ==============================",
        f"collected {len(tests.passed) + len(tests.failed)} items",
        "",
        *(f"{t} PASSED" for t in tests.passed),
        *(f"{t} FAILED" for t in tests.failed),
    ]
    if tests.stopped:
        return ("\n".join(lines) + "\n").encode()  # killed: no summary
    lines += [
        "=========================== short test summary info ============================",
        *(f"PASSED {t}" for t in tests.passed),
        *(f"FAILED {t} - assert 1 == 2" for t in tests.failed),
        f"========== {len(tests.failed)} failed, {len(tests.passed)} passed in 0.12s ==========",
    ]
    return ("\n".join(lines) + "\n").encode()


def unittest_output(tests: FakeTests) -> bytes:
    """``python -m unittest -v`` of Python 3.11, test ids ``module.Class.method``."""

    def line(test_id: str, word: str) -> str:
        method = test_id.rsplit(".", 1)[-1]
        return f"{method} ({test_id}) ... {word}"

    lines = [
        *(line(t, "ok") for t in tests.passed),
        *(line(t, "FAIL") for t in tests.failed),
    ]
    if tests.stopped:
        return ("\n".join(lines) + "\n").encode()  # killed: no summary
    lines += [
        "",
        "-" * 70,
        f"Ran {len(tests.passed) + len(tests.failed)} tests in 0.010s",
        "",
        f"FAILED (failures={len(tests.failed)})" if tests.failed else "OK",
    ]
    return ("\n".join(lines) + "\n").encode()


#: Parser name (or the part before its first "_") -> how its tests' output looks.
OUTPUT = {"pytest": pytest_output, "unittest": unittest_output}


# --- the stream a supervisor writes ---------------------------------------------------


#: What the supervisor says of each limit when it stops the tests.
_STOP_DETAIL = {
    "timeout": "the tests ran longer than 300 s",
    "memory": "the tests' memory reached the limit",
}


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
    stopped: str | None = None,
) -> bytes:
    """The framed stream of one attempt: start, patch, reset, guard, tests, done (the
    test output in frames of 1 MiB, as the supervisor sends it). ``stopped``: the limit
    that killed the tests, as the supervisor reports it (no exit code, SIGKILL, a runner
    that ended without its normal shutdown)."""
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
                exit_code=None if stopped else exit_code,
                signal=9 if stopped else None,
                seconds=0.12,
                output_bytes=len(output),
                output_truncated=False,
                stopped=None
                if stopped is None
                else StopReason(limit=stopped, detail=_STOP_DETAIL.get(stopped, stopped)),
                runner_exit="abnormal" if stopped else "clean",
                runner_detail="the test runner (pid 7) ended without Python's normal shutdown "
                "(os._exit or a fatal signal)"
                if stopped
                else "",
                replaced=[],
                changed_during_run=[],
                peak=Peak(memory=30 << 20, pids=3, disk=4096),
            )
        ),
        event(DoneEvent(event="done")),
    ]
    return b"".join(parts)
