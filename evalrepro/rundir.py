"""The run directory: one experiment's evidence, safe to resume and hard to fool.

Layout (see ``run.py``): ``lockfile.lock.json`` (the plan; never rewritten), ``run.json``
(volatile: when, how and where each session ran), ``config.json``, ``images/``,
``trials/<label>/`` and ``results.json``.

* One process at a time: an exclusive lock on ``.evalrepro.lock``.
* Resuming: the new plan must be the same experiment as the locked one; otherwise the
  run refuses, naming every difference (``lockfile.differences``).
* A trial is complete when its ``result.json`` exists (written last, atomically); the
  leftovers of an incomplete one are removed before it runs again, so a run killed at
  any moment loses no finished trial and runs each unfinished one exactly once.
* A complete trial is trusted only if its result parses, sits in the folder its trial id
  names, belongs to the plan, and every artifact still has its recorded digest.
"""

from __future__ import annotations

import fcntl
import os
import platform
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from evalrepro import __version__, atomic
from evalrepro.errors import UserError
from evalrepro.execute import TrialResult
from evalrepro.harness import code_digest
from evalrepro.lockfile import LOCKFILE_NAME, Lockfile, differences, read_lockfile
from evalrepro.record import read_record
from evalrepro.report import RunResults, aggregate
from evalrepro.score import score
from evalrepro.sessions import log_session
from evalrepro.trial import TrialKey, trial_label


@dataclass(frozen=True)
class EvidenceProblem:
    """Something wrong with a trial's evidence: its folder and what."""

    folder: str
    message: str
    #: The trial whose result was kept despite it (None: no result was read).
    trial_id: str | None = None


@dataclass
class Survey:
    results: dict[str, TrialResult] = field(default_factory=dict)
    problems: list[EvidenceProblem] = field(default_factory=list)

    def problem(self, folder: Path, message: str, trial_id: str | None = None) -> None:
        self.problems.append(EvidenceProblem(folder.name, message, trial_id))


class RunDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path.resolve()

    @property
    def lockfile_path(self) -> Path:
        return self.path / LOCKFILE_NAME

    @property
    def trials_dir(self) -> Path:
        return self.path / "trials"

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the directory for this process; a second one gets a clear error."""
        if self.path.exists() and not self.path.is_dir():
            raise UserError(f"--run-dir {self.path}: exists and is not a directory")
        created = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--run-dir {self.path}: cannot create it ({error.strerror})") from None
        lock_file = self.path / ".evalrepro.lock"
        handle = lock_file.open("a+")
        locked = False
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise UserError(
                    f"run directory {self.path} is in use by {holder}; wait for it to finish"
                ) from None
            locked = True
            handle.seek(0)
            handle.truncate()
            handle.write(f"evalrepro pid {os.getpid()} on {platform.node()}")
            handle.flush()
            yield
        finally:
            # A run refused before it began (a plan that failed) leaves no empty directory.
            if locked and created and [p.name for p in self.path.iterdir()] == [lock_file.name]:
                lock_file.unlink()
                self.path.rmdir()
            handle.close()

    def begin(self, lockfile: Lockfile, config_json: str, backend: dict[str, str]) -> bool:
        """Start or resume; True when resuming. Refuses a run planned differently."""
        resuming = self.lockfile_path.exists()
        if resuming:
            locked = read_lockfile(self.lockfile_path)
            found = differences(locked, lockfile, same_target=True)
            if found:
                listed = "; ".join(f"{d.kind}: {d.detail}" for d in found)
                raise UserError(
                    f"run directory {self.path} holds a different experiment, refusing to "
                    f"resume ({listed})"
                )
            # The identity may differ in what does not change a trial (max_workers, the
            # instances' order or path): what must not differ is the set of trials.
            ours = {t.trial_id for t in locked.trials}
            theirs = {t.trial_id for t in lockfile.trials}
            if ours != theirs:
                raise UserError(
                    f"run directory {self.path} holds other trials ({len(ours - theirs)} only "
                    f"in the run, {len(theirs - ours)} only in the new plan); refusing to resume"
                )
        else:
            # The lockfile last: it is what makes the directory a run to resume.
            atomic.write_text(self.path / "config.json", config_json)
            lockfile.write(self.lockfile_path)
        log_session(self.path, resumed=resuming, backend=backend)
        return resuming

    # --- trials ----------------------------------------------------------------------

    def completed(self, lockfile: Lockfile) -> dict[str, TrialResult]:
        """The trusted results of complete trials, by trial id; any tampering is an error."""
        survey = self.survey(lockfile)
        if survey.problems:
            raise UserError(survey.problems[0].message)
        return survey.results

    def survey(self, lockfile: Lockfile) -> Survey:
        """Every complete trial's result, and every problem with the evidence, listed
        instead of raised (``report`` shows them; ``completed`` refuses on the first).

        A result whose artifacts changed since they were recorded is kept (its evidence
        is incomplete); a result that cannot be read, or that is not where its trial id
        says, is left out (the trial counts as missing)."""
        planned = {
            trial_label(t.key.instance_id, t.key.sample_index, t.trial_id): t.trial_id
            for t in lockfile.trials
        }
        survey = Survey()
        if not self.trials_dir.exists():
            return survey
        for folder in sorted(self.trials_dir.iterdir()):
            if folder.is_symlink():
                survey.problem(folder, f"{folder}: a symbolic link where a trial folder belongs")
                continue
            if folder.name not in planned or not folder.is_dir():
                survey.problem(folder, f"{folder}: a trial folder that is not in the run's plan")
                continue
            result_file = folder / "result.json"
            if not result_file.exists():
                continue
            try:
                result = read_result(result_file)
            except UserError as error:
                survey.problem(folder, str(error))
                continue
            if result.trial.trial_id != planned[folder.name]:
                survey.problem(
                    folder,
                    f"{result_file}: holds trial {result.trial.trial_id[7:19]}, but the folder "
                    f"belongs to {planned[folder.name][7:19]} (moved or copied?)",
                )
                continue
            try:
                _check_consistent(result, result_file)
            except UserError as error:
                survey.problem(folder, str(error))
                continue
            on_disk = sorted(p.name for p in folder.iterdir() if p.name != "result.json")
            recorded = sorted(f"attempt-{a.number}" for a in result.attempts)
            if on_disk != recorded:
                survey.problem(
                    folder,
                    f"{folder}: holds {', '.join(on_disk) or 'nothing'} but its result "
                    f"records {', '.join(recorded)}",
                    trial_id=result.trial.trial_id,
                )
            for attempt in result.attempts:
                prefix = f"trials/{folder.name}/attempt-{attempt.number}/"
                for artifact in attempt.artifacts:
                    if not artifact.path.startswith(prefix) or ".." in artifact.path:
                        survey.problem(
                            folder,
                            f"{result_file}: artifact {artifact.path} is outside {prefix}",
                            trial_id=result.trial.trial_id,
                        )
                    elif not artifact.matches(self.path):
                        survey.problem(
                            folder,
                            f"{self.path / artifact.path}: missing or changed since it was "
                            f"recorded (sha256 {artifact.sha256[7:19]}...)",
                            trial_id=result.trial.trial_id,
                        )
            survey.results[result.trial.trial_id] = result
        return survey

    def remove_incomplete(self, lockfile: Lockfile) -> list[str]:
        """Delete the leftovers of trials that have no result; their labels."""
        removed = []
        for trial in lockfile.trials:
            label = trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)
            folder = self.trials_dir / label
            if folder.is_dir() and not (folder / "result.json").exists():
                shutil.rmtree(folder)
                removed.append(label)
        return removed

    def rebuild_results(self, lockfile: Lockfile | None = None) -> RunResults:
        """results.json recreated from the trial results alone (and the plan's order)."""
        lockfile = lockfile or read_lockfile(self.lockfile_path)
        done = self.completed(lockfile)
        ordered = [done[t.trial_id] for t in lockfile.trials if t.trial_id in done]
        return aggregate(
            lockfile.experiment, lockfile.target.target_id, ordered, planned=len(lockfile.trials)
        )

    def write_swebench_layout(self, run_id: str | None = None) -> Path:
        """``swebench/``: SWE-bench's layout of this run (``swebench_layout``), by the
        trial results; run id: the directory's name, unless a regrade keeps its own."""
        from evalrepro.swebench_layout import write_swebench_layout

        lockfile = read_lockfile(self.lockfile_path)
        return write_swebench_layout(
            self.path,
            lockfile,
            self.completed(lockfile),
            run_id=run_id or self.path.name,
            model=lockfile.target.target_id,
        )

    def write_results(self, results: RunResults) -> None:
        atomic.write_text(self.path / "results.json", results.model_dump_json(indent=2) + "\n")


def _check_consistent(result: TrialResult, path: Path) -> None:
    """A hand-edited result no longer agrees with itself: id, attempts and score."""
    trial, key = result.trial, result.trial.key
    if trial.trial_id != key.trial_id():
        raise UserError(f"{path}: the trial id is not the digest of its key (edited?)")
    if (result.instance_id, result.target_id, result.sample_index) != (
        key.instance_id,
        key.target_id,
        key.sample_index,
    ):
        raise UserError(f"{path}: instance, target or sample differ from the trial key (edited?)")
    if not result.attempts or [a.number for a in result.attempts] != list(
        range(1, len(result.attempts) + 1)
    ):
        raise UserError(f"{path}: attempts are not numbered 1..n (edited?)")
    for attempt in result.attempts:
        if attempt.trial_id != trial.trial_id:
            raise UserError(f"{path}: attempt {attempt.number} is another trial's (edited?)")
        # A score is a function of its observation: an edited outcome shows here (under
        # the harness that scored it; other grading code may judge by other rules).
        if _same_harness(key) and attempt.score != score(attempt.observation):
            raise UserError(
                f"{path}: attempt {attempt.number}'s score {attempt.score.outcome} is not "
                f"what its observation gives (edited?)"
            )
    if result.score != result.attempts[-1].score:
        raise UserError(f"{path}: the trial's score is not its last attempt's (edited?)")


#: Largest trial result read (a result with thousands of tests is a few MB).
MAX_RESULT_BYTES = 64 << 20


def read_result(path: Path) -> TrialResult:
    return read_record(path, TrialResult, limit=MAX_RESULT_BYTES)


def _same_harness(key: TrialKey) -> bool:
    return key.harness_version == __version__ and key.harness_digest == code_digest()
