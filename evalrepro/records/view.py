"""What ``evalrepro view`` shows of a run: one ``TrialView`` per trial, built where the
trial's evidence is read (``evalrepro.run.trial_view``, with every bound of that reading),
and what it wrote into its folder (``view.json``, ``ViewManifest``). The renderer
(``evalrepro.report.view``) draws pages from these records alone: it reads no file of a
trial, parses nothing and words no verdict.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record
from evalrepro.records.observation import Resolution
from evalrepro.records.rerun import FlakyCounts
from evalrepro.records.score import Outcome
from evalrepro.records.trajectory import Trajectory


class ViewManifest(Record):
    """What a ``view`` wrote into its folder: the trial pages (to remove stale ones)."""

    record: Literal["ViewManifest"] = "ViewManifest"
    pages: list[str]


class _Shown(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: How a shown line is drawn (a CSS class): a log's line, one inside the graded region, a
#: mark of the region's start or end, a cut; a patch's added, removed, hunk header, file
#: header, meta or context line.
RowKind = Literal["line", "graded", "mark", "cut", "add", "del", "hunk", "file", "meta", "ctx"]


class Row(_Shown):
    """One line as shown: its kind and its text (escaped and made visible when drawn)."""

    kind: RowKind
    text: str


class ShownFile(_Shown):
    """A file as a page shows it: an excerpt within a budget, each cut said where it is."""

    name: str
    size: int
    #: Bytes shown (the rest is cut, each cut marked in ``rows``).
    shown: int
    rows: list[Row]
    notes: list[str] = []
    #: Why it is not shown (missing, a link, not recorded); then nothing else is set.
    problem: str | None = None

    @property
    def cut(self) -> int:
        return self.size - self.shown


class Value(_Shown):
    """A record's field as a page shows it: a label and lines of text."""

    name: str
    lines: list[str]


class TestLine(_Shown):
    """A FAIL_TO_PASS or PASS_TO_PASS test: how the log reported it."""

    group: str
    test: str
    passed: bool
    status: str
    #: How its re-runs alone ended ("" when it was not re-run): "flaky" shows first.
    rerun: str = ""
    #: The tests were stopped (a timeout or a limit) before the log reported this one.
    not_run: bool = False

    @property
    def result(self) -> str:
        return "passed" if self.passed else "not run" if self.not_run else "failed"


class ArtifactLine(_Shown):
    """An artifact the last attempt recorded, and how it is found on disk now."""

    name: str
    media_type: str
    size: int
    sha256: str
    state: str
    ok: bool


class AttemptLine(_Shown):
    """One attempt of the trial: why it ran, when, how long, and its score."""

    number: int
    reason: str
    started_at: datetime
    #: Its wall time in seconds (finished less started).
    wall: float
    outcome: Outcome
    score_reason: str
    score_detail: str = ""
    infrastructure_error: str | None = None


class TrialView(Record):
    """Everything a trial's page shows of its records: its last attempt's artifacts
    (excerpts within budgets), its tests, the observation's values, the program, the
    supervisor's report, the image, the agent's phase, every attempt. Built from hostile
    files with bounds, so that it is bounded too; a page is drawn from it alone."""

    record: Literal["TrialView"] = "TrialView"
    trial_id: str
    #: The trial's folder, relative to the run directory (``trials/<label>``).
    folder: str
    #: Why the trial's records are not shown although it has a result ("" when they are).
    withheld: str = ""
    #: Every attempt, the last one's score the trial's (empty: no result to show).
    attempts: list[AttemptLine] = []
    #: The last attempt's score's resolution (SWE-bench's word for it), if any.
    resolution: Resolution | None = None
    #: Why no test list is shown, or how far it holds (stopped tests), in words.
    tests_note: str = ""
    tests: list[TestLine] = []
    #: Listed tests in all (``tests`` is cut at the viewer's list bound), and of them
    #: all, how many failed and how many did not run (stopped before the log said).
    tests_total: int = 0
    tests_failed: int = 0
    tests_not_run: int = 0
    #: The log's parser, and its status map (cut like ``tests``).
    parser: str = ""
    status_map: list[tuple[str, str]] = []
    status_map_total: int = 0
    #: Tests that failed in the run and passed when re-run alone; how they count.
    flaky_tests: int = 0
    flaky_counts_as: FlakyCounts = "failed"
    #: A must-fail canary passed: whatever passed alone on re-run is no sign of flakiness.
    tampered: bool = False
    #: Re-runs planned of each failing test (0: none), or why there were none.
    rerun_times: int = 0
    rerun_note: str = ""
    patch: ShownFile | None = None
    test_patch: ShownFile | None = None
    log: ShownFile | None = None
    log_notes: list[str] = []
    #: Another harness's log (``evalrepro regrade``): its ``foreign.json``.
    foreign: list[Value] = []
    #: The eval script: the attempt's ``program.json``, field by field, or why not.
    program: list[Value] = []
    program_problem: str = ""
    supervisor: list[Value] = []
    supervisor_problem: str = ""
    image: list[Value] = []
    #: Where ``image`` comes from: the attempt's own ``image.json`` (evalrepro 0.2), or
    #: the lockfile's record of the trial's image.
    image_source: str = "the lockfile"
    runtime_log: ShownFile | None = None
    #: An agent target's attempt: how the agent phase ended, and what the agent printed.
    agent: list[Value] = []
    agent_log: ShownFile | None = None
    agent_log_name: str = ""
    #: The agent's steps, from its ``trajectory.json`` (none: no trajectory, or one that
    #: cannot be read; the file itself is still shown).
    trajectory: Trajectory | None = None
    trajectory_problem: str = ""
    observation: list[Value] = []
    artifacts: list[ArtifactLine] = []

    @property
    def has_result(self) -> bool:
        return bool(self.attempts)
