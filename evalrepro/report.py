"""Report: a run's results, aggregated from the trial results alone.

``results.json`` is an aggregate: it can always be rebuilt from the trials'
``result.json`` files, which are the source of truth. Counts are reported side by side
and every rate is over the planned trials, never over valid trials alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from evalrepro.execute import TrialResult
from evalrepro.record import Record
from evalrepro.score import Outcome


class TrialLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    trial_id: str
    instance_id: str
    sample_index: int
    outcome: Outcome
    reason: str
    attempts: int


class RunResults(Record):
    record: Literal["RunResults"] = "RunResults"
    experiment: str
    target_id: str
    planned: int
    #: Planned trials without a result (an interrupted run); counted in no outcome.
    missing: int = 0
    resolved: int
    unresolved: int
    invalid: int
    resolved_rate: float
    invalid_rate: float
    retried_trials: int
    reasons: dict[str, int]
    trials: list[TrialLine]


def aggregate(
    experiment: str, target_id: str, results: list[TrialResult], *, planned: int | None = None
) -> RunResults:
    outcomes = Counter(result.score.outcome for result in results)
    planned = len(results) if planned is None else planned
    return RunResults(
        experiment=experiment,
        target_id=target_id,
        planned=planned,
        missing=planned - len(results),
        resolved=outcomes[Outcome.RESOLVED],
        unresolved=outcomes[Outcome.UNRESOLVED],
        invalid=outcomes[Outcome.INVALID],
        resolved_rate=outcomes[Outcome.RESOLVED] / planned if planned else 0.0,
        invalid_rate=outcomes[Outcome.INVALID] / planned if planned else 0.0,
        retried_trials=sum(len(result.attempts) > 1 for result in results),
        reasons=dict(sorted(Counter(result.score.reason for result in results).items())),
        trials=[
            TrialLine(
                trial_id=result.trial.trial_id,
                instance_id=result.instance_id,
                sample_index=result.sample_index,
                outcome=result.score.outcome,
                reason=result.score.reason,
                attempts=len(result.attempts),
            )
            for result in results
        ],
    )


_STYLE = {Outcome.RESOLVED: "green", Outcome.UNRESOLVED: "yellow", Outcome.INVALID: "red"}


def print_results(console: Console, results: RunResults) -> None:
    table = Table(
        "instance",
        "sample",
        "outcome",
        "reason",
        "attempts",
        title=f"{results.experiment}: {results.target_id}",
        title_justify="left",
    )
    for line in results.trials:
        table.add_row(
            line.instance_id,
            str(line.sample_index),
            line.outcome,
            line.reason,
            str(line.attempts),
            style=_STYLE[line.outcome],
        )
    console.print(table)
    console.print(
        f"{results.planned} trials: [green]{results.resolved} resolved[/], "
        + (f"[bold red]{results.missing} missing[/], " if results.missing else "")
        + f"[yellow]{results.unresolved} unresolved[/], [red]{results.invalid} invalid[/]; "
        f"resolved rate {results.resolved_rate:.1%} of planned trials, "
        f"invalid rate {results.invalid_rate:.1%}"
        + (f"; {results.retried_trials} trials retried" if results.retried_trials else "")
    )
