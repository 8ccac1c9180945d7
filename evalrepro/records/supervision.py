"""What the trial supervisor says (its events, on its own channel) and what the host
records of an attempt's sandbox (``supervisor.json``), and the program one attempt asks
the supervisor to carry out (``program.json``). Read by ``evalrepro.runtimes.supervision``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.config.environment import Limits
from evalrepro.records.base import Record, unchanged
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshResult, FreshRun
from evalrepro.records.rerun import RerunPlan
from evalrepro.records.testspec import EvalScript
from evalrepro.sandbox import GIT_DIR, GUARD_PATH, PATCH_PATH, TEST_PATCH_PATH, TESTBED
from evalrepro.sandbox.protocol import PROGRAM

#: The unprivileged user the code under test runs as (created in the base image).
TEST_USER = {"uid": 1000, "gid": 1000, "name": "tester", "home": "/home/tester"}


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StartEvent(_Event):
    event: Literal["start"]
    protocol: int
    python: str
    uid: int
    pid: int


class PatchEvent(_Event):
    event: Literal["patch"]
    #: "unsafe": it applied, and left a link that resolves outside the tree (no tests).
    status: Literal["applied", "rejected", "unsafe"]
    method: str | None
    changed: list[str]
    changed_total: int
    detail: str = ""
    seconds: float


class ProtectedFile(_Event):
    path: str
    reason: str
    action: Literal["restored", "recorded"]


class ProtectEvent(_Event):
    event: Literal["protect"]
    policy: Literal["restore", "record", "invalid"]
    touched: list[ProtectedFile]
    touched_total: int


class ResetEvent(_Event):
    event: Literal["reset"]
    ok: bool
    reason: Literal["test_patch_failed", "verification_failed"] | None
    detail: str
    test_files: int = 0
    verified: int = 0
    seconds: float = 0.0
    #: The canaries placed (by name): a canary whose name the file already held is not.
    canaries: list[str] = []


class GuardEvent(_Event):
    event: Literal["guard"]
    sites: list[str]


class TestsStartedEvent(_Event):
    event: Literal["tests_started"]
    #: True when the tests ran in a user namespace of their own (a per-trial process cap).
    user_namespace: bool
    #: Whether the code under test may create user namespaces of its own.
    new_user_namespaces: Literal["refused", "allowed"]
    #: The repository's .git and the harness's store: locked away from the tests
    #: (``hidden``), or left readable because the dataset declared that its tests read
    #: git (``protection.tests_read_git``); None in reports of older supervisors.
    git: Literal["hidden", "readable"] | None = None


class StopReason(_Event):
    limit: Literal["timeout", "memory", "pids", "disk", "inodes", "output"]
    detail: str


class Replaced(_Event):
    target: str
    file: str


class Peak(_Event):
    memory: int
    pids: int
    disk: int
    #: Files and folders the tests created (net); 0 in reports of older supervisors.
    inodes: int = 0


class TestsFinishedEvent(_Event):
    event: Literal["tests_finished"]
    exit_code: int | None
    signal: int | None
    seconds: float
    output_bytes: int
    output_truncated: bool
    stopped: StopReason | None
    runner_exit: Literal["clean", "abnormal", "unknown"]
    runner_detail: str
    replaced: list[Replaced]
    #: Test files and test infrastructure that the run itself changed.
    changed_during_run: list[str]
    peak: Peak


class FreshEvent(_Event):
    """The fresh runs after the tests (``evalrepro.grade.fresh``), in the order they ran."""

    event: Literal["fresh"]
    runs: list[FreshResult]
    #: Test files and test infrastructure that the fresh runs changed.
    changed_during_run: list[str] = []
    #: Paths put back to the state the tests started from, before the fresh runs (what
    #: the run and each fresh run before changed); 0 in reports of older supervisors.
    restored: int = 0


class RerunEvent(_Event):
    """The re-runs of failing tests (``evalrepro.grade.rerun``), in the order they ran:
    what the host asked for on the supervisor's stdin, each test at most ``times``."""

    event: Literal["rerun"]
    runs: list[FreshResult]
    #: The runs the host asked for (tests and the canary); -1: no word came from it.
    asked: int
    #: Test files and test infrastructure that the re-runs changed.
    changed_during_run: list[str] = []
    #: Paths put back to the state the tests started from, before the re-runs (what the
    #: run and each re-run before changed); 0 in reports of older supervisors.
    restored: int = 0


class ErrorEvent(_Event):
    event: Literal["error"]
    phase: str
    detail: str


class DoneEvent(_Event):
    event: Literal["done"]


Event = Annotated[
    StartEvent
    | PatchEvent
    | ProtectEvent
    | ResetEvent
    | GuardEvent
    | TestsStartedEvent
    | TestsFinishedEvent
    | FreshEvent
    | RerunEvent
    | ErrorEvent
    | DoneEvent,
    Field(discriminator="event"),
]


class Region(BaseModel):
    """Where the test output sits in ``test_output.txt``: bytes [offset, offset+length)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    offset: int
    length: int
    #: sha256 over the region's bytes.
    sha256: str


class RuntimeFacts(BaseModel):
    """What the host saw of the container itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: podman's exit code (None: the attempt never reached podman).
    exit_code: int | None = None
    #: The host's own deadline passed and it removed the container.
    deadline_passed: bool = False
    #: Why the runtime could not run the attempt (no image, podman failed, ...).
    error: str | None = None
    seconds: float = 0.0


class SupervisorReport(Record):
    """Everything the host learnt about one attempt's sandbox (``supervisor.json``)."""

    record: Literal["SupervisorReport"] = "SupervisorReport"
    #: 2: a lone run's result names its runner (the second runner's beside the fresh run's).
    schema_version: int = 2
    migrations = {1: unchanged}
    runtime: RuntimeFacts = Field(default_factory=RuntimeFacts)
    #: The supervisor's last event arrived: the stream is whole.
    complete: bool = False
    start: StartEvent | None = None
    patch: PatchEvent | None = None
    protect: ProtectEvent | None = None
    reset: ResetEvent | None = None
    guard: GuardEvent | None = None
    tests_started: TestsStartedEvent | None = None
    tests: TestsFinishedEvent | None = None
    fresh: FreshEvent | None = None
    rerun: RerunEvent | None = None
    error: ErrorEvent | None = None
    region: Region | None = None
    #: Why the host stopped reading (a malformed frame, a stream over its bounds).
    stream_problem: str | None = None
    #: Bytes of a frame that never finished (the stream was cut there).
    cut_bytes: int = 0
    log_truncated: bool = False


class TrialProgram(Record):
    """What one attempt asks of the supervisor (``program.json``)."""

    record: Literal["TrialProgram"] = "TrialProgram"
    #: 2: canaries of every language (``Canary.style``'s new values, ``Canary.title``).
    schema_version: int = PROGRAM
    migrations = {1: unchanged}
    testbed: str = TESTBED
    git_dir: str = GIT_DIR
    patch: str = PATCH_PATH
    test_patch: str = TEST_PATCH_PATH
    guard_source: str = GUARD_PATH
    guard: bool = True
    user_namespace: bool = True
    allow_user_namespaces: bool = False
    base_commit: str
    test_command: str
    test_files: list[str]
    test_patch_empty: bool
    patch_commands: list[tuple[str, list[str]]]
    protection: dict
    user: dict
    #: Sizes in bytes, the timeout in seconds, inodes as counts.
    limits: dict[str, int]
    #: Tests whose outcome the harness knows, appended after the reset.
    canaries: list[Canary] = []
    #: The test files the command runs outside the test patch that the plan kept
    #: (``TestSpec.outside_files``): each is written again from the base at the reset,
    #: whether a canary went into it or not, so that none stands out by being rewritten.
    outside_files: list[str] = []
    #: Tests run alone after the tests, each in a fresh process, judged by exit status.
    fresh: list[FreshRun] = []
    #: Why there are none, when the dataset asked for them.
    fresh_note: str = ""
    #: Failing tests re-run alone after the run (``environment.rerun_failed``); the host
    #: names them on the supervisor's stdin once the tests finished.
    rerun: RerunPlan | None = None
    #: Why there is no plan, when re-runs were asked for.
    rerun_note: str = ""

    @classmethod
    def of(
        cls,
        script: EvalScript,
        limits: Limits,
        timeout: int,
        *,
        allow_user_namespaces: bool = False,
        canaries: list[Canary] | None = None,
        outside_files: list[str] | None = None,
        fresh: tuple[list[FreshRun], str] = ([], ""),
        rerun: tuple[RerunPlan | None, str] = (None, ""),
    ) -> TrialProgram:
        return cls(
            canaries=canaries or [],
            outside_files=outside_files or [],
            fresh=fresh[0],
            fresh_note=fresh[1],
            rerun=rerun[0],
            rerun_note=rerun[1],
            allow_user_namespaces=allow_user_namespaces,
            base_commit=script.base_commit,
            test_command=script.test_command,
            test_files=script.test_files,
            test_patch_empty=script.test_patch_empty,
            patch_commands=script.patch_commands,
            protection=script.protection.model_dump(),
            user=TEST_USER,
            limits={
                "timeout": timeout,
                "memory": limits.in_bytes("memory"),
                "pids": limits.pids,
                "disk": limits.in_bytes("disk"),
                "output": limits.in_bytes("output"),
                "memory_reserve": limits.in_bytes("memory_reserve"),
                "disk_reserve": limits.in_bytes("disk_reserve"),
                "inodes": limits.inodes,
                "inodes_reserve": limits.inodes_reserve,
            },
        )
