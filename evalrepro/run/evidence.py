"""The one trust check of a recorded trial, and of a run's trial folders.

``check_trial`` reads a trial folder as evidence from elsewhere (an unpacked bundle, a
directory someone edited) and lists every problem with it; resume refuses at the first
(``RunDirectory.completed``), ``verify`` lists them all. A trial is trusted only if its
result parses, is the locked trial's, agrees with itself (id, attempts, scores), every
attempt's own record agrees with it, every artifact it recorded still has its digest,
and nothing else lies in its folders.

:func:`read_evidence` reads an attempt's files back into the values the recorder observed
(``evalrepro.run.recorder.observe``), bounded, for ``verify``'s re-observation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evalrepro import __version__
from evalrepro.digest import short_digest
from evalrepro.errors import UserError
from evalrepro.files import read_regular_file
from evalrepro.grade.foreign import MAX_LOG_BYTES, MAX_PATCH_BYTES
from evalrepro.grade.parsers import LogParser
from evalrepro.grade.score import score
from evalrepro.plan.harness import code_digest
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.base import read_record
from evalrepro.records.foreign import ForeignLog
from evalrepro.records.lockfile import LockedTrial, Lockfile
from evalrepro.records.observation import Observation
from evalrepro.records.score import Score
from evalrepro.records.supervision import SupervisorReport, TrialProgram
from evalrepro.records.testspec import ResolvedProtection
from evalrepro.records.trial import Attempt, TrialKey, TrialResult, read_trial_result, trial_label
from evalrepro.rules.evalscript import without_model_patch
from evalrepro.rules.patchcheck import check_patch
from evalrepro.run.recorder import Evidence, observe
from evalrepro.runtimes.attempt import MEDIA_TYPES, AttemptOutput
from evalrepro.sample import Sample

Kind = Literal["missing", "unplanned", "result", "artifact"]


@dataclass(frozen=True)
class TrialProblem:
    """Something wrong with a trial's evidence: which check, where (relative to the run
    directory), and what."""

    kind: Kind
    where: str
    detail: str
    #: The trial whose result was kept despite it (None: no result could be trusted).
    trial_id: str | None = None

    @property
    def message(self) -> str:
        return f"{self.where}: {self.detail}"


@dataclass
class TrialCheck:
    #: The result, when it could be read, is the locked trial's and agrees with itself
    #: (its artifacts may still have problems: see ``problems``).
    result: TrialResult | None = None
    #: The result as read, when it is the locked trial's, even if it disagrees with itself:
    #: ``verify`` goes on checking it (its aggregate, its log) to list every problem.
    readable: TrialResult | None = None
    problems: list[TrialProblem] = field(default_factory=list)


@dataclass
class Survey:
    """Every complete trial's result, and every problem with the run's trial folders."""

    run_dir: Path
    results: dict[str, TrialResult] = field(default_factory=dict)
    problems: list[TrialProblem] = field(default_factory=list)
    #: Every result that is the locked trial's, trusted or not (``TrialCheck.readable``).
    readable: dict[str, TrialResult] = field(default_factory=dict)

    def messages(self) -> list[str]:
        """Each problem as one line naming the file by its full path (``verify`` names
        them relative to the run; a report, a resume and a compare by where they are)."""
        return [f"{self.run_dir / p.where}: {p.detail}" for p in self.problems]


def survey(run_dir: Path, lockfile: Lockfile) -> Survey:
    """Each planned trial checked (:func:`check_trial`), and each folder that is not one."""
    found = Survey(run_dir)
    planned = {_label(trial): trial for trial in lockfile.trials}
    trials_dir = run_dir / "trials"
    if trials_dir.is_dir():
        for folder in sorted(trials_dir.iterdir()):
            if folder.is_symlink():
                found.problems.append(
                    TrialProblem(
                        "unplanned",
                        _rel(run_dir, folder),
                        "a symbolic link where a trial folder belongs",
                    )
                )
            elif folder.name not in planned or not folder.is_dir():
                found.problems.append(
                    TrialProblem("unplanned", _rel(run_dir, folder), "not a trial of the plan")
                )
    for label, trial in planned.items():
        folder = trials_dir / label
        if folder.is_symlink() or not folder.is_dir():
            continue
        checked = check_trial(folder, trial, run_dir)
        found.problems += checked.problems
        if checked.result is not None:
            found.results[trial.trial_id] = checked.result
        if checked.readable is not None:
            found.readable[trial.trial_id] = checked.readable
    return found


def check_trial(folder: Path, locked: LockedTrial, run_dir: Path) -> TrialCheck:
    """Every problem of the trial folder ``folder`` (of the run at ``run_dir``) against
    the trial the lockfile planned; a folder without ``result.json`` is an unfinished
    trial, not a problem (``verify`` counts it missing)."""
    check = TrialCheck()
    result_file = folder / "result.json"
    where = _rel(run_dir, result_file)
    if not result_file.exists():
        return check
    try:
        result = read_trial_result(result_file)
    except UserError as error:
        check.problems.append(TrialProblem("result", where, _without(str(error), result_file)))
        return check
    if result.trial.trial_id != locked.trial_id or result.trial.key != locked.key:
        check.problems.append(
            TrialProblem(
                "result",
                where,
                f"holds trial {short_digest(result.trial.trial_id)}, but the folder belongs "
                f"to {short_digest(locked.trial_id)} (moved or copied?)",
            )
        )
        return check
    if result.attempts:
        check.readable = result
    consistent = list(_inconsistencies(result))
    if consistent:
        # An untrustworthy result's artifacts are not checked against it: it is refused.
        check.problems += [TrialProblem("result", where, detail) for detail in consistent]
        return check
    trial_id = result.trial.trial_id
    check.result = result
    on_disk = sorted(p.name for p in folder.iterdir() if p.name != "result.json")
    recorded = sorted(f"attempt-{a.number}" for a in result.attempts)
    if on_disk != recorded:
        check.problems.append(
            TrialProblem(
                "result",
                _rel(run_dir, folder),
                f"holds {', '.join(on_disk) or 'nothing'} but its result records "
                f"{', '.join(recorded)}",
                trial_id,
            )
        )
    for attempt in result.attempts:
        check.problems += _attempt_problems(run_dir, folder, attempt, trial_id)
    return check


def _inconsistencies(result: TrialResult) -> Iterator[str]:
    """How a hand-edited result no longer agrees with itself: id, attempts and score."""
    trial, key = result.trial, result.trial.key
    if trial.trial_id != key.trial_id():
        yield "the trial id is not the digest of its key (edited?)"
    if (result.instance_id, result.target_id, result.sample_index) != (
        key.instance_id,
        key.target_id,
        key.sample_index,
    ):
        yield "instance, target or sample differ from the trial key (edited?)"
    if not result.attempts or [a.number for a in result.attempts] != list(
        range(1, len(result.attempts) + 1)
    ):
        yield "attempts are not numbered 1..n (edited?)"
        return
    for attempt in result.attempts:
        if attempt.trial_id != trial.trial_id:
            yield f"attempt {attempt.number} is another trial's (edited?)"
        # A score is a function of its observation: an edited outcome shows here (under
        # the harness that scored it; other grading code may judge by other rules).
        elif _same_harness(key) and attempt.score != score(attempt.observation):
            yield (
                f"attempt {attempt.number}'s score {attempt.score.outcome} is not what its "
                "observation gives (edited?)"
            )
    if result.score != result.attempts[-1].score:
        yield (
            f"the trial's score {_outcome(result.score)} is not its last attempt's "
            f"({_outcome(result.attempts[-1].score)}) (edited?)"
        )


def _attempt_problems(
    run_dir: Path, folder: Path, attempt: Attempt, trial_id: str
) -> Iterator[TrialProblem]:
    attempt_dir = folder / f"attempt-{attempt.number}"
    where = _rel(run_dir, attempt_dir)
    recorded = {artifact.path for artifact in attempt.artifacts}
    for name in MEDIA_TYPES:
        # The recorder records every one of these it writes: one left out escaped its digest.
        if (attempt_dir / name).is_file() and f"{where}/{name}" not in recorded:
            yield TrialProblem(
                "artifact", f"{where}/{name}", "on disk but not recorded as an artifact", trial_id
            )
    for artifact in attempt.artifacts:
        if not artifact.path.startswith(f"{where}/") or ".." in artifact.path.split("/"):
            yield TrialProblem(
                "artifact", artifact.path, f"recorded by {where}, outside its folder", trial_id
            )
        elif not artifact.matches(run_dir):
            state = "missing" if not (run_dir / artifact.path).is_file() else "changed"
            yield TrialProblem(
                "artifact",
                artifact.path,
                f"{state} since it was recorded (sha256 {short_digest(artifact.sha256)})",
                trial_id,
            )
    # The attempt's own record is written before the trial's: the two must agree.
    record_file = attempt_dir / "result.json"
    if not record_file.is_file():
        yield TrialProblem(
            "missing", f"{where}/result.json", "the attempt record is missing", trial_id
        )
        return
    try:
        record = read_record(record_file, Attempt)
    except UserError as error:
        yield TrialProblem(
            "result", f"{where}/result.json", _without(str(error), record_file), trial_id
        )
        return
    if record != attempt:
        yield TrialProblem(
            "result",
            f"{where}/result.json",
            "differs from the attempt in the trial result",
            trial_id,
        )


def read_evidence(attempt_dir: Path) -> Evidence:
    """An attempt's evidence from its files: what the recorder observed, read back with
    the same bounds (verify's re-observation). Raises UserError for an unreadable one."""

    def read(name: str, limit: int) -> bytes | None:
        path = attempt_dir / name
        if not path.exists() and not path.is_symlink():
            return None
        return read_regular_file(path, limit, name)

    patch = read("patch.diff", MAX_PATCH_BYTES)
    log = read("test_output.txt", MAX_LOG_BYTES)
    artifacts = {"test_output.txt": log} if log is not None else {}
    if (attempt_dir / "foreign.json").exists():
        foreign = read_record(attempt_dir / "foreign.json", ForeignLog)
        output = AttemptOutput(artifacts=artifacts, foreign=foreign)
        return Evidence(patch, None, None, output)
    program = read_record(attempt_dir / "program.json", TrialProgram)
    report = None
    if (attempt_dir / "supervisor.json").exists():
        report = read_record(attempt_dir / "supervisor.json", SupervisorReport)
    agent = None
    if (attempt_dir / "agent.json").exists():
        agent = read_record(attempt_dir / "agent.json", AgentOutcome)
    protection = ResolvedProtection.model_validate(program.protection)
    check = check_patch(
        patch or b"", protection, without_patch=without_model_patch(program.patch_commands)
    )
    output = AttemptOutput(artifacts=artifacts, report=report)
    return Evidence(patch, check, program, output, agent=agent)


def _label(trial: LockedTrial) -> str:
    return trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)


def _rel(run_dir: Path, path: Path) -> str:
    try:
        return path.relative_to(run_dir).as_posix()
    except ValueError:
        return str(path)


def _without(message: str, path: Path) -> str:
    """A reader's message without the file's path in front (the problem names it)."""
    return message.removeprefix(f"{path}: ")


def _same_harness(key: TrialKey) -> bool:
    return key.harness_version == __version__ and key.harness_digest == code_digest()


def _outcome(result: Score) -> str:
    return f"{result.outcome} ({result.reason})"


def reobserve(attempt_dir: Path, sample: Sample, parser: LogParser) -> Observation:
    """A recorded attempt observed again, from its files alone, as the recorder did."""
    return observe(read_evidence(attempt_dir), sample, parser)
