"""The leaderboard (``evalrepro leaderboard``) on the console, in Markdown and in HTML:
it prints the :class:`~evalrepro.records.database.Leaderboard` record and computes
nothing."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from evalrepro.console import Table
from evalrepro.records.compare import run_label
from evalrepro.records.database import Leaderboard, LeaderboardGroup, LeaderboardRow
from evalrepro.records.stats import Interval
from evalrepro.report.run_printer import percent
from evalrepro.text import visible

#: Said under every leaderboard: a rank orders point estimates; whether two runs differ is
#: a paired question, with its own test (docs/statistics.md).
RANK_NOTE = (
    "Ranked by resolved rate. A rank is not a comparison: whether two runs differ is told "
    "by `evalrepro compare` (paired over the shared instances, with its exact test)."
)


def _interval(interval: Interval) -> str:
    """A rate with its interval, as the run report prints it."""
    low, high = percent(interval.low), percent(interval.high)
    return f"{percent(interval.estimate)} ({interval.confidence * 100:g}% CI {low} to {high})"


def pass_k(row: LeaderboardRow) -> str:
    """The run's pass@k and pass^k at its largest k > 1, each with its interval ("" for a
    one-sample run): how often some of k samples resolves, and how often all of them do."""
    ks = [int(name.removeprefix("pass@")) for name in row.pass_at_k]
    ks = [k for k in ks if k > 1]
    if not ks:
        return ""
    k = max(ks)
    said = [f"pass@{k} {_interval(row.pass_at_k[f'pass@{k}'])}"]
    if f"pass^{k}" in row.pass_hat_k:
        said.append(f"pass^{k} {_interval(row.pass_hat_k[f'pass^{k}'])}")
    return "; ".join(said)


def _with_pass_k(group: LeaderboardGroup) -> bool:
    return any(pass_k(row) for row in group.rows)


def heading(group: LeaderboardGroup) -> str:
    """A table's heading: its dataset and harness, and what makes its class (the record's
    ``defined_by``: where the board's classes differ, this one's values)."""
    said = f"{group.dataset}: {group.instances} instances, harness {group.harness_version}"
    return f"{said}; {', '.join(group.defined_by)}" if group.defined_by else said


def _heading(group: LeaderboardGroup) -> str:
    return f"{heading(group)} (comparability class {group.comparability[:19]})"


def _label(row: LeaderboardRow) -> str:
    return run_label(row.experiment, row.target_id)


def print_leaderboard(console: Console, board: Leaderboard) -> None:
    if not board.groups:
        console.print("no complete, finished runs", highlight=False)
    for number, group in enumerate(board.groups):
        table = Table(title=escape(_heading(group)), title_justify="left")
        columns = ["rank", "run", "id", "resolved", "resolved rate", "invalid", "gate"]
        if _with_pass_k(group):  # a multi-sample run: pass@k and pass^k beside the rate
            columns.insert(5, "pass@k, pass^k")
        for column in columns:
            table.add_column(column, justify="right" if column in ("rank", "resolved") else None)
        for row in group.rows:
            cells = [
                str(row.rank),
                escape(_label(row)),
                row.run_id,
                f"{row.resolved}/{row.planned}",
                _interval(row.resolved_rate),
                percent(row.invalid_rate.estimate),
                "passed" if row.gate_passed else "failed",
            ]
            if _with_pass_k(group):
                cells.insert(5, pass_k(row) or "one sample")
            table.add_row(*cells)
        if number:
            console.print()
        console.print(table)
        if group.differences:
            console.print("not comparable with the first table:", highlight=False)
            for difference in group.differences:
                console.print(f"  {difference.kind}: {escape(difference.detail)}", highlight=False)
    for line in board.left_out:
        console.print(f"left out: {escape(line)}", highlight=False)
    if board.groups:
        console.print(f"[dim]{escape(RANK_NOTE)}[/]", highlight=False)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_leaderboard(board: Leaderboard) -> str:
    lines = []
    for group in board.groups:
        lines += [f"## {_cell(_heading(group))}", ""]
        if group.differences:
            lines.append("Not comparable with the first table:")
            lines += [f"- {d.kind}: {_cell(d.detail)}" for d in group.differences]
            lines.append("")
        with_k = _with_pass_k(group)
        lines += [
            "| rank | run | id | resolved | resolved rate |"
            + (" pass@k, pass^k |" if with_k else "")
            + " invalid | gate |",
            "| ---: | --- | --- | ---: | --- |" + (" --- |" if with_k else "") + " ---: | --- |",
        ]
        lines += [
            f"| {row.rank} | {_cell(_label(row))} | `{row.run_id}` | {row.resolved}/{row.planned}"
            f" | {_interval(row.resolved_rate)}"
            + (f" | {_cell(pass_k(row) or 'one sample')}" if with_k else "")
            + f" | {percent(row.invalid_rate.estimate)}"
            f" | {'passed' if row.gate_passed else 'failed'} |"
            for row in group.rows
        ]
        lines.append("")
    if board.left_out:
        lines += ["Left out:", *[f"- {_cell(line)}" for line in board.left_out], ""]
    if board.groups:
        lines += [RANK_NOTE, ""]
    return visible("\n".join(lines)) if lines else "No complete, finished runs.\n"


def render_leaderboard_html(board: Leaderboard, *, title: str = "evalrepro leaderboard") -> str:
    from evalrepro.report.html import render_page

    labels = {row.run_id: _label(row) for group in board.groups for row in group.rows}
    return render_page(
        "leaderboard.html",
        title=title,
        board=board,
        labels=labels,
        rank_note=RANK_NOTE,
        heading=heading,
        pass_k=pass_k,
        with_pass_k=_with_pass_k,
    )
