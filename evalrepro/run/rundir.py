"""The run directory: one experiment's evidence, safe to resume and hard to fool.

Layout: ``lockfile.lock.json`` (the plan, with the validated config; never rewritten),
``run.json`` (volatile: when, how and where each session ran), ``images/`` (each base
image's package list), ``trials/<label>/`` (``evalrepro.run.recorder``), ``results.json``
and ``swebench/`` (SWE-bench's own layout of the run). A run session
(``evalrepro.run.session``) is what conducts it, from the lock to the written result;
other commands only open and read it.

* One process at a time: an exclusive lock on ``.evalrepro.lock``.
* Resuming: the new plan must be the same experiment as the locked one; otherwise the
  run refuses, naming every difference (``lockfile.differences``).
* A trial is complete when its ``result.json`` exists (written last, atomically); the
  leftovers of an incomplete one are removed before it runs again, so a run killed at
  any moment loses no finished trial and runs each unfinished one exactly once.
* A complete trial is trusted only if it passes ``evalrepro.run.evidence``'s check, the
  one ``verify`` runs too.
"""

from __future__ import annotations

import fcntl
import os
import platform
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalrepro import atomic
from evalrepro.errors import UserError
from evalrepro.plan.lockfile import LOCKFILE_NAME, differences, read_lockfile
from evalrepro.records.base import read_record
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.regrade import RegradeSummary
from evalrepro.records.report import RunResults
from evalrepro.records.trial import TrialResult, trial_label
from evalrepro.run.evidence import Survey, survey
from evalrepro.run.sessions import lockfile_drift, log_session
from evalrepro.run.swebench_layout import LAYOUT_DIR, RUN_EVALUATION, write_swebench_layout
from evalrepro.text import inside


class RunDirectory:
    def __init__(self, path: Path) -> None:
        self.path = path.resolve()

    @classmethod
    def open(cls, path: Path, *, checked: bool = True) -> tuple[RunDirectory, Lockfile]:
        """An existing run directory and its lockfile, read once: the one way a command
        opens a run (one line when ``path`` is not one). ``checked``: refuse a lockfile
        whose digests do not match its content (``verify`` lists them instead)."""
        directory = cls(path)
        if not directory.path.is_dir():
            raise UserError(f"{path}: not a run directory")
        if not directory.lockfile_path.is_file():
            raise UserError(f"{path}: not a run directory (no {LOCKFILE_NAME})")
        return directory, read_lockfile(directory.lockfile_path, checked=checked)

    @property
    def lockfile_path(self) -> Path:
        return self.path / LOCKFILE_NAME

    @property
    def trials_dir(self) -> Path:
        return self.path / "trials"

    def trial_folder(self, label: str) -> Path:
        """``trials/<label>``, checked to resolve inside the run directory (a label is
        made of an instance id: one safe path component, but a lockfile is an input)."""
        return inside(self.path, Path("trials") / label, "trial folder")

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

    def begin(
        self, lockfile: Lockfile, backend: dict[str, str], *, previous: Lockfile | None = None
    ) -> bool:
        """Start or resume; True when resuming. Refuses a run planned differently.

        ``previous``: the directory's own lockfile, when the caller read it already."""
        resuming = self.lockfile_path.exists()
        if resuming:
            drift = lockfile_drift(self.path)
            if drift is not None:
                raise UserError(f"run directory {self.path}: {drift}; refusing to resume")
            locked = previous or read_lockfile(self.lockfile_path)
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
            # It holds the config (validated, composed): it is what makes the directory
            # a run to resume.
            lockfile.write(self.lockfile_path)
        log_session(self.path, resumed=resuming, backend=backend)
        return resuming

    # --- trials ----------------------------------------------------------------------

    def completed(self, lockfile: Lockfile) -> dict[str, TrialResult]:
        """The trusted results of complete trials, by trial id; any problem with the
        evidence is an error (``evalrepro.run.evidence``: the check ``verify`` lists)."""
        found = self.survey(lockfile)
        if found.problems:
            raise UserError(found.messages()[0])
        return found.results

    def survey(self, lockfile: Lockfile) -> Survey:
        """Every complete trial's result, and every problem with the evidence, listed
        instead of raised (``report`` shows them; ``completed`` refuses on the first)."""
        return survey(self.path, lockfile)

    def remove_incomplete(self, lockfile: Lockfile) -> list[str]:
        """Delete the leftovers of trials that have no result; their labels."""
        removed = []
        for trial in lockfile.trials:
            label = trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)
            folder = self.trial_folder(label)
            if folder.is_dir() and not (folder / "result.json").exists():
                shutil.rmtree(folder)
                removed.append(label)
        return removed

    def write_swebench_layout(
        self,
        lockfile: Lockfile,
        results: dict[str, TrialResult],
        run_id: str | None = None,
        *,
        intact: bool = False,
    ) -> Path:
        """``swebench/``: SWE-bench's layout of this run, by the trial results; run id:
        ``run_id`` (a regrade keeps the logs' own), else the run's (``swebench_run_id``).
        ``intact``: the results' artifacts are known to have their digests (not hashed
        again)."""
        return write_swebench_layout(
            self.path,
            lockfile,
            results,
            run_id=run_id or self.swebench_run_id(),
            model=lockfile.target.target_id,
            intact=intact,
        )

    def swebench_run_id(self) -> str:
        """The run id the run's SWE-bench layout has: the one it was first written under
        (the directory's name then, or a regrade's logs' run id), so that a renamed run
        folder, rebuilt or resumed, keeps it; the directory's name for a run not laid out
        yet. Several trees (an older evalrepro wrote one per name) give the first written."""
        if (self.path / "regrade.json").is_file():
            try:
                return read_record(self.path / "regrade.json", RegradeSummary).run_id
            except UserError:
                pass  # unreadable: the tree decides, as for any run
        runs = self.path / LAYOUT_DIR / RUN_EVALUATION
        try:
            trees = [p for p in runs.iterdir() if p.is_dir() and not p.is_symlink()]
        except OSError:
            trees = []
        if not trees:
            return self.path.name
        return min(trees, key=lambda p: (p.stat().st_mtime_ns, p.name)).name

    def write_results(self, results: RunResults) -> None:
        atomic.write_text(self.path / "results.json", results.model_dump_json(indent=2) + "\n")
