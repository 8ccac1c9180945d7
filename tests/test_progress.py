"""Live progress on a terminal names each running trial and how long it has run."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from evalrepro.report.progress import TrialProgress


def planned(instance_id: str, sample_index: int = 0) -> SimpleNamespace:
    return SimpleNamespace(
        trial=SimpleNamespace(trial_id=f"sha256:{instance_id}"),
        sample=SimpleNamespace(instance_id=instance_id),
        prediction=SimpleNamespace(sample_index=sample_index),
    )


def finished(outcome: str) -> SimpleNamespace:
    return SimpleNamespace(
        score=SimpleNamespace(outcome=outcome, reason="tests_passed"), attempts=[object()]
    )


def screen(progress: TrialProgress, buffer: io.StringIO) -> str:
    progress._progress.refresh()  # what the live display shows now
    return buffer.getvalue()


def test_running_trials_are_named_with_their_time_against_the_timeout():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=160, color_system=None)
    with TrialProgress(console, total=3, timeout=30) as progress:
        one, two = planned("org__repo-[1]"), planned("org__repo-2", sample_index=1)
        progress.attempt_started(one, 1)
        progress.attempt_started(two, 2)
        shown = screen(progress, buffer)
        assert "org__repo-[1]" in shown  # an id is text, never markup
        assert "org__repo-2 (sample 1) attempt 2" in shown
        assert "timeout 30 s" in shown and "running" in shown
        progress.trial_finished(one, finished("resolved"))
        assert len(progress._running) == 1 and "1/3" in screen(progress, buffer)


def test_outside_a_terminal_each_finished_trial_is_one_plain_line():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=200)
    with TrialProgress(console, total=1, timeout=30) as progress:
        progress.attempt_started(planned("org__repo-1"), 1)
        progress.trial_finished(planned("org__repo-1"), finished("resolved"))
    (line,) = buffer.getvalue().splitlines()
    assert line.startswith("[1/1] org__repo-1 (sample 0): resolved (tests_passed)")
