"""Live progress of a run: a rich display on a terminal, plain lines otherwise."""

from __future__ import annotations

import time
from collections import Counter
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evalrepro.execute import TrialResult
from evalrepro.plan import PlannedTrial


class TrialProgress:
    """Counts done / resolved / unresolved / invalid as trials finish."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.total = total
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self.live = console.is_terminal
        self._progress: Progress | None = None

    def __enter__(self) -> TrialProgress:
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]trials"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[summary]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[rate]}"),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task("trials", total=self.total, summary="", rate="")
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

    def __call__(self, planned: PlannedTrial, result: TrialResult) -> None:
        self.counts[result.score.outcome] += 1
        done = sum(self.counts.values())
        elapsed = time.monotonic() - self.started
        rate = f"{done / elapsed * 60:.1f} trials/min" if elapsed > 0 else ""
        if self._progress is not None:
            self._progress.update(self._task, completed=done, summary=self.summary(), rate=rate)
            return
        retries = len(result.attempts) - 1
        self.console.print(
            f"[{done}/{self.total}] {planned.sample.instance_id} (sample "
            f"{planned.prediction.sample_index}): {result.score.outcome} "
            f"({result.score.reason}{f', {retries} retries' if retries else ''}) "
            f"| {self.summary()} | {elapsed:.0f}s, {rate}",
            highlight=False,
            soft_wrap=True,
        )
