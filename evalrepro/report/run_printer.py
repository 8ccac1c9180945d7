"""A run's results and report as a reader sees them: the console's tables
(``print_results``, ``print_run_report``, ``print_gate``), the Markdown tables of
``markdown_run_report``, and the words and numbers every report prints the same way
(``percent``, ``seconds``, ``provenance_line``).

It prints records only (``RunResults``, ``RunReport``), which
``evalrepro.report.run_report`` builds: nothing here reads a run or computes a number
of it.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from evalrepro.console import Table
from evalrepro.records.compare import run_label
from evalrepro.records.labels import LIMIT_LABELS
from evalrepro.records.metrics import RunMetrics
from evalrepro.records.report import FlaggedTrial, Provenance, RunReport, RunResults, TrialLine
from evalrepro.records.score import Outcome
from evalrepro.records.stats import Interval
from evalrepro.records.timing import RunTiming
from evalrepro.text import visible

_STYLE = {Outcome.RESOLVED: "green", Outcome.UNRESOLVED: "yellow", Outcome.INVALID: "red"}


def print_results(console: Console, results: RunResults) -> None:
    table = Table(
        "instance",
        "sample",
        "outcome",
        "reason",
        "attempts",
        title=escape(f"{results.experiment}: {results.target_id}"),
        title_justify="left",
    )
    for line in results.trials:
        # Ids and reasons come from records on disk: text, never markup.
        table.add_row(
            escape(line.instance_id),
            str(line.sample_index),
            line.outcome,
            escape(line.reason),
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
    print_invalid_reasons(console, results)


def print_invalid_reasons(console: Console, results: RunResults) -> None:
    """Why trials are invalid: each reason once, with its count and a first example, so
    that a config mistake that invalidates every trial says what it is."""
    invalid = [line for line in results.trials if line.outcome is Outcome.INVALID]
    by_reason: dict[str, list[TrialLine]] = {}
    for line in invalid:
        by_reason.setdefault(line.reason, []).append(line)
    for reason, lines in sorted(by_reason.items()):
        first = next((line for line in lines if line.detail), lines[0])
        count = f"{len(lines)} trial" + ("s" if len(lines) > 1 else "")
        example = f", e.g. {first.instance_id}: {first.detail}" if first.detail else ""
        console.print(
            f"[red]invalid[/] {escape(reason)} ({count}){escape(example)}", soft_wrap=True
        )


def flag_facts(line: FlaggedTrial) -> list[str]:
    """Why a trial is flagged, as the console and Markdown say it: a runner that a timeout
    or a limit killed is "not run: timeout", not an abnormal exit of its own."""
    facts = [*line.suspects, *(f"changed {p}" for p in line.protected)]
    if line.stopped is not None:
        facts.append(f"not run: {LIMIT_LABELS.get(line.stopped, line.stopped)}")
    elif line.runner_exit == "abnormal":
        facts.append("runner exit abnormal")
    return facts


def percent(value: float) -> str:
    """A fraction as a percentage with one decimal, as every report prints it."""
    return f"{value * 100:.1f}%"


def pass_at_k_value(interval: Interval | None, coverage: str) -> str:
    """A pass@k as reports print it: its interval, and over which instances when not all
    of them (``RunMetrics.pass_at_k_coverage``), or why it is not available."""
    if interval is None:
        return coverage
    return _interval(interval) + (f", {coverage}" if coverage else "")


def _interval(interval: Interval) -> str:
    level = f"{interval.confidence * 100:g}%"
    low, high = percent(interval.low), percent(interval.high)
    return f"{percent(interval.estimate)} ({level} CI {low} to {high})"


def _level(interval: Interval) -> str:
    return f"{interval.confidence * 100:g}%"


def _range(interval: Interval) -> str:
    return f"{percent(interval.estimate)} [{percent(interval.low)}, {percent(interval.high)}]"


def seconds(value: float) -> str:
    """A duration as people read it: 0.42 s, 12.3 s, 4 min 05 s, 2 h 03 min."""
    if value < 10:
        return f"{value:.2f} s"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def provenance_line(p: Provenance) -> str:
    """One line of where the numbers come from, as every report shows it."""
    commit = f" at commit {p.harness_commit[:12]}" if p.harness_commit else ""
    when = ""
    if p.started_at and p.finished_at:
        when = f"; ran {p.started_at:%Y-%m-%d %H:%M} to {p.finished_at:%Y-%m-%d %H:%M} UTC"
    return (
        f"evalrepro {p.evalrepro_version}; trials run by evalrepro {p.harness_version}{commit}; "
        f"lockfile {p.lockfile_digest[:19]}; experiment {p.experiment}, target "
        f"{p.target_id}, dataset {p.dataset} ({p.instances} instances, {p.planned_trials} "
        f"trials); runtime {', '.join(p.runtime) or 'unknown'}{when}; gate {p.gate}; "
        f"intervals {p.confidence * 100:g}%, {p.n_resamples} resamples, seed {p.seed}; "
        f"generated {p.generated_at:%Y-%m-%d %H:%M} UTC"
    )


def print_timing(console: Console, timing: RunTiming) -> None:
    t = timing.seconds
    table = Table("time and cost", "total", "per trial", title_justify="left")
    per = (lambda v: seconds(v / timing.trials)) if timing.trials else (lambda v: "-")
    table.add_row(
        f"image builds in this run ({timing.layers_built} layers built)",
        seconds(timing.build_total),
        "-",
    )
    if timing.layers_reused:
        table.add_row(*reused_row(timing), "-")
    for name, label in (
        ("wall", "trials, wall time (all attempts)"),
        ("container", "  containers"),
        ("patch", "  patch apply"),
        ("reset", "  test reset"),
        ("tests", "  tests"),
        ("agent", "  agent phase"),
    ):
        if name == "agent" and not t.agent:
            continue  # not an agent's run
        table.add_row(label, seconds(getattr(t, name)), per(getattr(t, name)))
    table.add_row("attempts", str(timing.attempts), f"{timing.retried_trials} trials retried")
    if timing.input_tokens is not None or timing.output_tokens is not None:
        table.add_row(
            "tokens (input / output)",
            f"{timing.input_tokens or 0} / {timing.output_tokens or 0}",
            "",
        )
    if timing.cost_usd is not None:
        table.add_row("cost (as the target reported it)", f"${timing.cost_usd:.2f}", "")
    console.print(table)


def reused_row(timing: RunTiming) -> tuple[str, str]:
    """The layers a run used that were built before it, and the build time recorded when
    they were built, as a row: ("images used, built earlier (12 layers): recorded build
    time", "4 min 10 s"); none of that time is the run's own."""
    n = timing.layers_reused
    unrecorded = timing.reused_unrecorded
    some = f", {unrecorded} without a record" if unrecorded and unrecorded < n else ""
    label = f"images used, built earlier ({n} layer{'' if n == 1 else 's'}{some}): "
    label += "recorded build time"
    value = timing.reused_build_seconds
    return label, "not recorded" if value is None else seconds(value)


def _flaky(m: RunMetrics) -> str:
    """The flaky trials in words (a trial is flaky when a failing test of its passed
    when re-run alone)."""
    return (
        f"{m.flaky} trial{'' if m.flaky == 1 else 's'} with {m.flaky_tests} flaky "
        f"test{'' if m.flaky_tests == 1 else 's'}"
    )


def print_run_report(console: Console, report: RunReport) -> None:
    m = report.metrics
    console.print(f"[dim]{escape(provenance_line(report.provenance))}[/]", highlight=False)
    console.print(
        f"[bold]{escape(run_label(m.experiment, m.target_id))}[/]: {m.planned} planned trials: "
        f"[green]{m.resolved} resolved[/], [yellow]{m.unresolved} unresolved[/], "
        f"[red]{m.invalid} invalid[/]"
        + (f", [bold red]{m.missing} missing[/]" if m.missing else ""),
        highlight=False,
    )
    rates = Table("metric (over planned trials)", "value", title_justify="left")
    rates.add_row("resolved rate", _interval(m.resolved_rate))
    rates.add_row("unresolved rate", _interval(m.unresolved_rate))
    rates.add_row("invalid rate", _interval(m.invalid_rate))
    for name, interval, coverage in m.pass_at_k_rows():
        rates.add_row(name, pass_at_k_value(interval, coverage))
    if m.sample_rate is not None:
        rates.add_row("mean per-sample rate", _interval(m.sample_rate))
    if m.flaky_rate is not None:
        rates.add_row("flaky rate (trials)", f"{_interval(m.flaky_rate)}; {_flaky(m)}")
    rates.add_row("evidence completeness", percent(m.evidence_completeness))
    rates.add_row("attempts", f"{m.attempts} ({m.retried_trials} trials retried)")
    console.print(rates)
    repos = Table(
        "repo",
        "n (planned)",
        "resolved",
        "unresolved",
        "invalid",
        "missing",
        f"resolved rate ({_level(m.resolved_rate)} Wilson)",
        title="per repo",
        title_justify="left",
    )
    for repo, row in m.per_repo.items():
        repos.add_row(
            escape(repo),
            str(row.planned),
            str(row.resolved),
            str(row.unresolved),
            str(row.invalid),
            str(row.missing),
            _range(row.rate),
        )
    console.print(repos)
    print_timing(console, report.timing)
    if m.reasons or m.retry_reasons:
        modes = Table(
            "score reason / retry reason", "trials", title="failure modes", title_justify="left"
        )
        for reason, count in m.reasons.items():
            modes.add_row(escape(reason), str(count))
        for reason, count in m.retry_reasons.items():
            modes.add_row(escape(f"retry: {reason}"), str(count), style="dim")
        console.print(modes)
    print_flagged(console, report)
    for problem in report.evidence_problems:
        console.print(f"[red]evidence[/]: {escape(problem)}", highlight=False, soft_wrap=True)
    print_gate(console, report)


def print_flagged(console: Console, report: RunReport) -> None:
    if not report.flagged:
        return
    table = Table(
        "instance",
        "sample",
        "outcome (reason)",
        "suspect code / test infrastructure changed / runner exit",
        title="flagged trials (look at these patches)",
        title_justify="left",
    )
    for line in report.flagged:
        facts = flag_facts(line)
        table.add_row(
            escape(line.instance_id),
            str(line.sample_index),
            escape(f"{line.outcome} ({line.reason})"),
            escape("; ".join(facts)),
            style=_STYLE[line.outcome],
        )
    console.print(table)


def print_gate(console: Console, report: RunReport) -> None:
    gate = Table(
        "rule",
        "measured",
        "verdict",
        title=escape(f"gate '{report.gate_name}'"),
        title_justify="left",
    )
    for verdict in report.gate:
        measured = "n/a" if verdict.value is None else f"{verdict.value:.4g}"
        gate.add_row(
            escape(str(verdict.rule)),
            measured,
            "pass" if verdict.passed else "FAIL",
            style="green" if verdict.passed else "red",
        )
    console.print(gate)
    console.print(
        "[bold green]gate passed[/]" if report.gate_passed else "[bold red]gate failed[/]"
    )


def _md(text: str) -> str:
    """Text for a Markdown table cell: pipes escaped, no line breaks, nothing hidden."""
    return " ".join(visible(text).replace("|", "\\|").split())


def markdown_run_report(report: RunReport) -> str:
    """The report as Markdown tables, for a paper's appendix."""
    m = report.metrics
    lines = [
        f"### {m.experiment}: {m.target_id}",
        "",
        f"_{_md(provenance_line(report.provenance))}_",
        "",
        f"{m.planned} planned trials: {m.resolved} resolved, {m.unresolved} unresolved, "
        f"{m.invalid} invalid"
        + (f", {m.missing} missing" if m.missing else "")
        + ". Rates are over planned trials; intervals are Wilson (pass@k and pass^k: "
        "bootstrap over instances).",
        "",
        "| metric | value |",
        "| --- | --- |",
        f"| resolved rate | {_interval(m.resolved_rate)} |",
        f"| invalid rate | {_interval(m.invalid_rate)} |",
        *(
            f"| {name} | {pass_at_k_value(interval, coverage)} |"
            for name, interval, coverage in m.pass_at_k_rows()
        ),
        *(
            [f"| flaky rate (trials) | {_interval(m.flaky_rate)}; {_flaky(m)} |"]
            if m.flaky_rate is not None
            else []
        ),
        f"| evidence completeness | {percent(m.evidence_completeness)} |",
        f"| attempts | {m.attempts} ({m.retried_trials} trials retried) |",
        "",
        f"| repo | n (planned) | resolved | unresolved | invalid | resolved rate "
        f"({_level(m.resolved_rate)} Wilson) |",
        "| --- | --- | --- | --- | --- | --- |",
        *(
            f"| {_md(repo)} | {r.planned} | {r.resolved} | {r.unresolved} | {r.invalid} | "
            f"{_range(r.rate)} |"
            for repo, r in m.per_repo.items()
        ),
        "",
        "| time | total |",
        "| --- | --- |",
        f"| image builds in this run ({report.timing.layers_built} layers built) | "
        f"{seconds(report.timing.build_total)} |",
        *(
            ["| {} | {} |".format(*reused_row(report.timing))]
            if report.timing.layers_reused
            else []
        ),
        f"| trials, wall time | {seconds(report.timing.seconds.wall)} |",
        f"| tests | {seconds(report.timing.seconds.tests)} |",
        *(
            [f"| agent phase | {seconds(report.timing.seconds.agent)} |"]
            if report.timing.seconds.agent
            else []
        ),
        *(
            [
                f"| tokens (input / output) | {report.timing.input_tokens or 0} / "
                f"{report.timing.output_tokens or 0} |"
            ]
            if report.timing.input_tokens is not None or report.timing.output_tokens is not None
            else []
        ),
        *(
            [f"| cost | ${report.timing.cost_usd:.2f} |"]
            if report.timing.cost_usd is not None
            else []
        ),
        "",
        *(
            [
                "| flagged trial | outcome (reason) | suspect code / test infrastructure "
                "changed / runner exit |",
                "| --- | --- | --- |",
                *(
                    f"| {_md(f.instance_id)} (sample {f.sample_index}) | {f.outcome} "
                    f"({_md(f.reason)}) | {_md('; '.join(flag_facts(f)))} |"
                    for f in report.flagged
                ),
                "",
            ]
            if report.flagged
            else []
        ),
        f"| gate '{report.gate_name}' rule | measured | verdict |",
        "| --- | --- | --- |",
        *(
            f"| {v.rule} | {'n/a' if v.value is None else f'{v.value:.4g}'} | "
            f"{'pass' if v.passed else 'FAIL'} |"
            for v in report.gate
        ),
    ]
    # Every string from the run shown by the one rule, whatever a line above forgot.
    return visible("\n".join(lines) + "\n")
