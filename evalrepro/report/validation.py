"""A validation report on the console and as an HTML page: instances by verdict, tests by
transition, the flaky tests with their pass counts over the repeats, where the dataset's
own lists differ (read from the ``ValidationReport``; nothing is computed here but
counts)."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape

from evalrepro.console import Table
from evalrepro.records.validation import ValidationReport


def print_validation(console: Console, report: ValidationReport) -> None:
    verdicts = Counter(i.verdict for i in report.instances)
    console.print(
        f"[bold]{escape(report.dataset)}[/]: {len(report.instances)} instances, "
        f"up to {report.repeats} run(s) of each side{_asked(report)}; "
        + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())),
        highlight=False,
    )
    table = Table(
        "instance", "verdict", "F2P", "P2P", "flaky", "runs", "bound", "detail",
        title_justify="left",
    )  # fmt: skip
    for i in report.instances:
        colour = (
            "green" if i.verdict == "valid" else "yellow" if i.verdict == "flaky_tests" else "red"
        )
        table.add_row(
            escape(i.instance_id),
            f"[{colour}]{i.verdict}[/]",
            str(len(i.fail_to_pass)),
            str(len(i.pass_to_pass)),
            str(len(i.flaky)),
            f"{i.bound.runs_before}+{i.bound.runs_after}" if i.bound else "",
            f"{i.bound.miss_probability:.3g}" if i.bound else "",
            escape(
                i.detail + (f" (stopped {i.bound.stopped})" if i.bound and i.bound.stopped else "")
            ),
        )
    console.print(table)
    transitions = Counter(t.transition for i in report.instances for t in i.transitions)
    if transitions:
        console.print(
            "tests by transition: " + ", ".join(f"{n} {t}" for t, n in sorted(transitions.items())),
            highlight=False,
        )
    flaky = [
        (i.instance_id, t)
        for i in report.instances
        for t in i.transitions
        if t.transition == "flaky"
    ]
    if flaky:
        table = Table(
            "instance",
            "flaky test",
            "passed before",
            "passed after",
            "failed, then passed alone",
            title_justify="left",
        )
        for instance_id, t in flaky:
            table.add_row(
                escape(instance_id),
                escape(t.test),
                f"{t.before_passed}/{t.repeats}",
                f"{t.after_passed}/{t.repeats}",
                f"in {t.passed_alone} run{'' if t.passed_alone == 1 else 's'}",
            )
        console.print(table)
    disagreements = [(i.instance_id, d) for i in report.instances for d in i.disagreements]
    for instance_id, line in disagreements[:50]:
        console.print(f"[yellow]differs from the dataset[/] {escape(instance_id)}: {escape(line)}")
    if len(disagreements) > 50:
        console.print(f"... and {len(disagreements) - 50} more (in the report's JSON)")


def _asked(report: ValidationReport) -> str:
    """The flakiness bound the runs were planned for (each instance's reached is its own)."""
    if report.min_rate is None:
        return ""
    asked = f", miss probability {report.miss_probability}" if report.miss_probability else ""
    return f" (flakiness bound: min_rate {report.min_rate}{asked})"


def validation_html(report: ValidationReport) -> str:
    from evalrepro.report.html import render_page

    return render_page(
        "validation.html",
        title=f"Validation of {report.dataset}",
        report=report,
        verdicts=sorted(Counter(i.verdict for i in report.instances).items()),
        transitions=sorted(
            Counter(t.transition for i in report.instances for t in i.transitions).items()
        ),
        flaky=[
            (i.instance_id, t)
            for i in report.instances
            for t in i.transitions
            if t.transition == "flaky"
        ],
        disagreements=[(i.instance_id, d) for i in report.instances for d in i.disagreements],
    )
