"""Live progress of a run: a rich display on a terminal, plain lines otherwise.

On a terminal, below the bar, one line per running trial says which trial (and attempt)
it is and how long it has run against the timeout: a trial that hangs until its
timeout is visible while it does.
"""

from __future__ import annotations

import time
from collections import Counter
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from evalrepro.plan.trial import PlannedTrial
from evalrepro.records.trial import TrialResult


class TrialProgress:
    """Counts done / resolved / unresolved / invalid as trials finish."""

    def __init__(self, console: Console, total: int, timeout: float | None = None) -> None:
        self.console = console
        self.total = total
        self.timeout = timeout
        #: Running trials' progress rows, by trial id.
        self._running: dict[str, TaskID] = {}
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self.live = console.is_terminal
        self._progress: Progress | None = None
        self._workers: TaskID | None = None

    def __enter__(self) -> TrialProgress:
        if self.live:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),
                TextColumn("{task.fields[summary]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[rate]}"),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "[bold]trials", total=self.total, count=f"0/{self.total}", summary="", rate=""
            )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def summary(self) -> str:
        return (
            f"[green]{self.counts['resolved']} resolved[/] "
            f"[yellow]{self.counts['unresolved']} unresolved[/] "
            f"[red]{self.counts['invalid']} invalid[/]"
        )

    def attempt_started(self, planned: PlannedTrial, attempt: int) -> None:
        """A trial's attempt started: on a terminal, a row of its own until it ends."""
        if self._progress is None:
            return
        trial_id = planned.trial.trial_id
        if trial_id in self._running:
            self._progress.remove_task(self._running.pop(trial_id))
        label = f"  {escape(planned.sample.instance_id)}"
        if planned.prediction.sample_index:
            label += f" (sample {planned.prediction.sample_index})"
        if attempt > 1:
            label += f" attempt {attempt}"
        limit = f"timeout {self.timeout:g} s" if self.timeout else ""
        # No total: the bar pulses; the elapsed column counts this attempt's time.
        self._running[trial_id] = self._progress.add_task(
            label, total=None, count="", summary="[dim]running[/]", rate=f"[dim]{limit}[/]"
        )

    def workers_changed(self, summary: str) -> None:
        """The executor's workers: a row of its own on a terminal, else a line."""
        if self._progress is None:
            self.console.print(f"workers: {escape(summary)}", highlight=False, soft_wrap=True)
            return
        if self._workers is None:
            self._workers = self._progress.add_task(
                "  workers", total=None, count="", summary="", rate=""
            )
        self._progress.update(self._workers, summary=f"[dim]{escape(summary)}[/]")

    def trial_finished(self, planned: PlannedTrial, result: TrialResult) -> None:
        if self._progress is not None and planned.trial.trial_id in self._running:
            self._progress.remove_task(self._running.pop(planned.trial.trial_id))
        self.counts[result.score.outcome] += 1
        done = sum(self.counts.values())
        elapsed = time.monotonic() - self.started
        rate = f"{done / elapsed * 60:.1f} trials/min" if elapsed > 0 else ""
        if self._progress is not None:
            self._progress.update(
                self._task,
                completed=done,
                count=f"{done}/{self.total}",
                summary=self.summary(),
                rate=rate,
            )
            return
        retries = len(result.attempts) - 1
        # The instance id is the dataset's text: escaped, as every id printed here.
        self.console.print(
            f"[{done}/{self.total}] {escape(planned.sample.instance_id)} (sample "
            f"{planned.prediction.sample_index}): {result.score.outcome} "
            f"({escape(result.score.reason)}{f', {retries} retries' if retries else ''}) "
            f"| {self.summary()} | {elapsed:.0f}s, {rate}",
            highlight=False,
            soft_wrap=True,
        )
