"""The seam: an attempt is a value that moves.

``AttemptSpec`` is everything a machine needs to run one attempt of a trial (the image by
tag and digest, the supervisor's program, limits, network policy, the patch and test
patch as bytes, the test spec) and holds no host path, so it can be sent to another
process or machine. A runtime turns it into an ``AttemptOutput``: the attempt's artifact
bytes, bounded by the runtime, and the supervisor's report, returned as a value. The
host alone writes a run directory (``evalrepro.run.recorder``).

An attempt that must not run (no image, an empty or unsafe patch) never reaches a
runtime's ``run``: ``Runtime.attempt`` answers it, the same way on every executor.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.records.agent import AgentOutcome
from evalrepro.records.foreign import ForeignLog
from evalrepro.records.supervision import SupervisorReport, TrialProgram
from evalrepro.records.testspec import TestSpec
from evalrepro.targets.agent import AgentTarget

#: Artifact names with their media types, in the order a recorder writes them.
MEDIA_TYPES = {
    "patch.diff": "text/x-diff",
    "test.patch": "text/x-diff",
    "program.json": "application/json",
    "test_output.txt": "text/plain",
    "supervisor.json": "application/json",
    "runtime.log": "text/plain",
    "foreign.json": "application/json",
    "swebench_report.json": "application/json",
    "agent.json": "application/json",
    "agent_log.txt": "text/plain",
    "trajectory.json": "application/json",
}
#: Names a runtime may return (the others come from the spec or are written by the host).
OUTPUT_NAMES = (
    "test_output.txt",
    "runtime.log",
    "foreign.json",
    "swebench_report.json",
    "agent_log.txt",
    "trajectory.json",
)


class ImageRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tag: str
    digest: str


#: Bytes travel as base64 when a spec or an output is sent as JSON (to another machine).
_VALUE = ConfigDict(extra="forbid", frozen=True, ser_json_bytes="base64", val_json_bytes="base64")


class RecordedAgent(BaseModel):
    """An agent phase recorded by an earlier run (``reproduce``): its end and its diff,
    used instead of running the agent again (agents are not deterministic)."""

    model_config = _VALUE

    outcome: AgentOutcome
    patch: bytes | None


class AgentTask(BaseModel):
    """The agent phase of an attempt: which agent, and the task it is given."""

    model_config = _VALUE

    target: AgentTarget
    #: The instance's problem statement (in a file in the sandbox, and in the prompt).
    problem_statement: str
    #: The phase as an earlier run recorded it: the agent is not run, its patch is
    #: evaluated again.
    recorded: RecordedAgent | None = None


class AttemptSpec(BaseModel):
    """One attempt, as a value: no host paths, nothing that needs the host's disk."""

    model_config = _VALUE

    trial_id: str
    #: The trial's folder name (readable; unique by the id's digits).
    label: str
    number: int = Field(ge=1)
    #: Why this attempt runs: "planned" for the first, the infrastructure error after.
    reason: str = "planned"
    instance_id: str
    #: The image to run in; None when it could not be built (``unavailable`` says why).
    image: ImageRef | None
    unavailable: str | None = None
    test_spec: TestSpec
    #: What the supervisor in the sandbox is asked to do (``program.json``); None for a
    #: log that was recorded elsewhere (no sandbox of ours runs).
    program: TrialProgram | None
    patch: bytes
    #: False: the target has no patch to show (a foreign log's folder kept none), which
    #: is not an empty patch.
    patch_known: bool = True
    test_patch: bytes
    #: Why the patch is not run (``empty``, ``unsafe: ...``), decided once at planning.
    patch_problem: str | None = None
    #: Seconds the tests may run; the runtime's own backstop comes after it.
    timeout: int = Field(gt=0)
    #: Bytes of test output the runtime lets through (bounds what it returns).
    output_limit: int = Field(gt=0)
    network: Literal["none"] = "none"
    #: A name for the sandbox, unique per run directory and attempt (leftovers are found
    #: by its prefix after a killed session).
    sandbox_name: str
    #: An agent makes the patch first, in a sandbox of its own (None: the patch is here).
    agent: AgentTask | None = None

    @property
    def runs(self) -> bool:
        """Whether a runtime is asked at all (not for a missing image or a refused patch)."""
        return self.image is not None and self.patch_problem is None


class AttemptOutput(BaseModel):
    """What a runtime returns for one attempt: bounded bytes and the report."""

    model_config = _VALUE

    #: Artifact name (one of OUTPUT_NAMES) -> its bytes.
    artifacts: dict[str, bytes] = {}
    #: The supervisor's report with the runtime's own facts (None: nothing ran).
    report: SupervisorReport | None = None
    #: Each limit and how (or whether) the runtime enforced it.
    limits: dict[str, str] = {}
    #: The log came from another harness, read by these rules (a recorded runtime).
    foreign: ForeignLog | None = None
    #: The agent phase's end, and the diff the harness took of what the agent left (the
    #: patch the tests ran with, if they ran).
    agent: AgentOutcome | None = None
    agent_patch: bytes | None = None
