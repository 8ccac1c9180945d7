"""A run session: one ``run`` (or resume, or ``report --rebuild``) holding its run
directory (``evalrepro.run.rundir``) from the lock to the written result.

The session is the one place that conducts the directory, in this order:

1. :meth:`RunSession.hold`: the exclusive lock (a second process is refused at once);
   the directory's own lockfile, if it has one (a resume rebuilds its pins).
2. :meth:`RunSession.begin`: start or resume (the lockfile written, or the new plan
   checked against it; the session logged in ``run.json``), the trusted results of the
   trials done, the leftovers of incomplete ones and a killed session's stray sandboxes
   removed, each base image's package list and the build records written.
3. :meth:`RunSession.run`: the trials not done, run into the directory.
4. :meth:`RunSession.finish`: ``results.json`` and the SWE-bench layout.

The pipeline plans and locks and hands the session what it needs: the lockfile, the
plan's images, the backend, the trials, and what runs them (the config's parts go from
the pipeline to the executor; the session holds none).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from evalrepro import atomic
from evalrepro.build.buildlog import record_builds
from evalrepro.build.images import ImageChain, package_manifest_name
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.plan.trial import PlannedTrial
from evalrepro.records.image import BuildFailure
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.report import RunResults
from evalrepro.records.trial import TrialResult
from evalrepro.run.backend import Backend
from evalrepro.run.execute import container_prefix
from evalrepro.run.rundir import RunDirectory

#: What runs the trials: ``(trials, run_dir=..., events=...)`` -> their results (the
#: pipeline binds the runtime, the config's parts and the executor's cluster).
TrialRunner = Callable[..., list[TrialResult]]


class RunSession:
    """One process's hold on a run directory (see the module's docstring)."""

    def __init__(self, directory: RunDirectory) -> None:
        self._directory = directory
        self._lockfile: Lockfile | None = None
        #: The trusted results: those found done, then those this session ran.
        self._results: dict[str, TrialResult] = {}
        self._done: frozenset[str] = frozenset()

    @classmethod
    @contextmanager
    def hold(cls, path: Path) -> Iterator[RunSession]:
        """The directory at ``path`` held for this process (created if missing; removed
        again if nothing was written into it)."""
        directory = RunDirectory(path)
        with directory.exclusive():
            yield cls(directory)

    @property
    def path(self) -> Path:
        return self._directory.path

    @cached_property
    def previous(self) -> Lockfile | None:
        """The directory's own lockfile (a run to resume), or None (a new run)."""
        existing = self._directory.lockfile_path
        return read_lockfile(existing) if existing.is_file() else None

    @property
    def lockfile(self) -> Lockfile:
        assert self._lockfile is not None, "the session has not begun"
        return self._lockfile

    @property
    def done(self) -> dict[str, TrialResult]:
        """The trials found complete when the session began, by trial id."""
        return {key: self._results[key] for key in self._done}

    @property
    def results(self) -> dict[str, TrialResult]:
        """Every trusted result: found done, then run by this session; by trial id."""
        return dict(self._results)

    def begin(
        self,
        lockfile: Lockfile,
        images: list[ImageChain | BuildFailure],
        backend: Backend,
        cache_dir: Path,
        console: Console,
    ) -> None:
        """Start, or resume (refusing a run planned differently); find what is done,
        remove what is not and a killed session's sandboxes; write the image artifacts
        and build records. Says so on ``console`` when resuming."""
        resuming = self._directory.begin(lockfile, backend.describe(), previous=self.previous)
        done = self.adopt(lockfile)
        # Before their folders go: a killed session's containers may still write there.
        # A run directory without a lockfile had no session that started a container
        # (the lockfile is written before the first one), so there is nothing to find.
        leftovers = (
            backend.runtime.remove_leftovers(container_prefix(self.path))
            if self.previous is not None
            else []
        )
        removed = self._directory.remove_incomplete(lockfile)
        self._write_image_artifacts(images, backend)
        record_builds(self.path, images, cache_dir)
        if resuming:
            console.print(
                f"resuming {escape(str(self.path))}: {len(done)} of "
                f"{len(lockfile.trials)} trials done"
                + (f", leftovers of {len(removed)} removed" if removed else "")
                + (f", {len(leftovers)} stray containers removed" if leftovers else "")
            )

    def adopt(self, lockfile: Lockfile) -> dict[str, TrialResult]:
        """Take the directory's plan as ``lockfile`` and its trusted complete trials
        (any problem with their evidence is an error); returns them, by trial id."""
        self._lockfile = lockfile
        done = self._directory.completed(lockfile)
        self._results = dict(done)
        self._done = frozenset(done)
        return done

    def todo(
        self, trials: list[PlannedTrial], only: Collection[tuple[str, int]] | None = None
    ) -> list[PlannedTrial]:
        """The planned trials not done, in the plan's order; ``only``: just these, by
        (instance id, sample index)."""
        todo = [p for p in trials if p.trial.trial_id not in self._done]
        if only is not None:
            wanted = set(only)
            todo = [p for p in todo if (p.sample.instance_id, p.trial.key.sample_index) in wanted]
        return todo

    def run(self, trials: list[PlannedTrial], runner: TrialRunner, events: Any) -> None:
        """Run ``trials`` into the directory; their results join the session's."""
        for result in runner(trials, run_dir=self.path, events=events):
            self._results[result.trial.trial_id] = result

    def ordered(self) -> list[TrialResult]:
        """The session's results in the lockfile's order."""
        found = self._results
        return [found[t.trial_id] for t in self.lockfile.trials if t.trial_id in found]

    def finish(self, summary: RunResults, swebench_run_id: str | None = None) -> None:
        """``results.json`` (``summary``, the aggregate of :meth:`results`) and the
        SWE-bench layout of every result (run id: ``swebench_run_id``, else the run's)."""
        self._directory.write_results(summary)
        # Every result here was checked (the survey when the session began) or recorded
        # by this session: its artifacts are not hashed again.
        self._directory.write_swebench_layout(
            self.lockfile, self.results, run_id=swebench_run_id, intact=True
        )

    def _write_image_artifacts(
        self, images: list[ImageChain | BuildFailure], backend: Backend
    ) -> None:
        """Each base image's installed packages (name=version), beside the results."""
        for image in images:
            if not isinstance(image, ImageChain):
                continue
            base = image.layers[0]
            manifest = backend.builder.package_manifest(base)
            target = self.path / package_manifest_name(base.key)
            if manifest is not None and not target.exists():
                atomic.write_bytes(target, manifest.read_bytes())
