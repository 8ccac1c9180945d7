"""The ``evalrepro`` command line.

Each subcommand is a function taking the parsed arguments and returning an exit code;
``main`` turns a :class:`UserError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import sys
from collections.abc import Callable
from pathlib import Path

from omegaconf import OmegaConf
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from evalrepro import __version__, atomic
from evalrepro.config.experiment import compose
from evalrepro.config.sample import Sample, load_samples
from evalrepro.errors import UserError
from evalrepro.grade.grading import TestGroup
from evalrepro.grade.observation import Observation, observe
from evalrepro.grade.parsers import LogParser, get_parser, parser_names
from evalrepro.grade.parsers.swebench_repos import SWEBENCH_REPO_PARSERS
from evalrepro.grade.score import Score, score

#: Exit codes: a passed run or check, a failed check (verify, compare), a user error,
#: a failed gate. A crash (a bug) exits 1 with a traceback, like any Python program.
EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_GATE_FAILED = 3
#: reproduce: the plan made here is not the bundle's (an image differs); nothing ran.
EXIT_NOT_REPRODUCIBLE = 4


def make_console(*, stderr: bool = False) -> Console:
    """The console every command prints to. Outside a terminal (a log, a pipe) rich would
    squeeze tables into 80 columns and cut instance ids and paths: never cut them there."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 400
    return Console(stderr=stderr, width=width)


# --- grade ---------------------------------------------------------------------------


def _pick_sample(path: Path, instance_id: str | None) -> Sample:
    samples = load_samples(path)
    if instance_id is None:
        if len(samples) > 1:
            raise UserError(f"{path} holds {len(samples)} instances; pick one with --instance-id")
        return samples[0]
    for sample in samples:
        if sample.instance_id == instance_id:
            return sample
    raise UserError(f"{path}: no instance '{instance_id}'")


def _pick_parser(sample: Sample, name: str | None) -> LogParser:
    chosen = name or sample.parser or SWEBENCH_REPO_PARSERS.get(sample.repo)
    if chosen is None:
        raise UserError(
            f"instance '{sample.instance_id}' names no log parser and '{sample.repo}' is "
            "not a SWE-bench repo; pass --parser (see 'evalrepro parsers')"
        )
    return get_parser(chosen)


def _read_log(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        raise UserError(f"--log {path}: cannot read ({error.strerror})") from None


def grade_payload(observation: Observation, result: Score) -> dict:
    empty = {"success": [], "failure": []}
    tests = observation.tests
    return {
        "instance_id": observation.instance_id,
        "parser": observation.parser,
        "log_rules": observation.log_rules,
        "status_map": observation.status_map,
        "fail_to_pass": tests.fail_to_pass.model_dump() if tests else empty,
        "pass_to_pass": tests.pass_to_pass.model_dump() if tests else empty,
        "resolution": str(tests.resolution) if tests else None,
        "score": result.model_dump(mode="json", exclude={"record", "schema_version"}),
        "observation": observation.model_dump(mode="json"),
    }


def cmd_grade(args: argparse.Namespace) -> int:
    sample = _pick_sample(args.instance, args.instance_id)
    parser = _pick_parser(sample, args.parser)
    observation = observe(
        _read_log(args.log), sample, parser, rules="strict" if args.strict else "swebench"
    )
    result = score(observation)
    if args.json:
        print(json.dumps(grade_payload(observation, result), indent=2, ensure_ascii=False))
        return 0
    _print_grade(make_console(), observation, result)
    return 0


def _print_grade(console: Console, observation: Observation, result: Score) -> None:
    console.print(
        f"[bold]{escape(observation.instance_id)}[/] parsed with "
        f"[bold]{escape(observation.parser)}[/]: "
        f"{len(observation.status_map)} tests, parser status {observation.parser_status}, "
        f"read by {observation.log_rules or 'strict'} rules"
        + (f" ({escape(observation.parser_detail)})" if observation.parser_detail else ""),
        highlight=False,
    )
    if observation.status_map:
        table = Table("test", "status", title="status map", title_justify="left")
        for test, status in observation.status_map.items():
            # Test ids are text from a log (parametrized ids hold "[/...]"): never markup.
            table.add_row(Text(test), Text(status), style=_STATUS_STYLE.get(status, ""))
        console.print(table)
    if observation.tests is not None:
        for label, group in (
            ("FAIL_TO_PASS", observation.tests.fail_to_pass),
            ("PASS_TO_PASS", observation.tests.pass_to_pass),
        ):
            _print_group(console, label, group)
        console.print(f"resolution: [bold]{observation.tests.resolution}[/]")
    colour = {"resolved": "green", "unresolved": "yellow", "invalid": "red"}[result.outcome]
    console.print(
        f"score: [bold {colour}]{result.outcome}[/] ({result.reason}"
        + (f": {escape(result.detail)}" if result.detail else "")
        + ")",
        highlight=False,
    )


_STATUS_STYLE = {"PASSED": "green", "FAILED": "red", "ERROR": "red", "SKIPPED": "dim"}


def _print_group(console: Console, label: str, group: TestGroup) -> None:
    console.print(f"{label}: {len(group.success)}/{group.total} ok")
    for test in group.failure:
        console.print(f"  [red]x[/] {escape(test)}", highlight=False)


# --- config --------------------------------------------------------------------------


def cmd_config(args: argparse.Namespace) -> int:
    if args.schema or args.reference:
        from evalrepro.config.reference import json_schema, reference

        if args.overrides or args.config_dir:
            raise UserError("--schema and --reference describe every config: drop the overrides")
        sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n" if args.schema else reference())
        return 0
    config = compose(args.overrides, args.config_dir)
    if args.json:
        print(json.dumps(config.model_dump(mode="json"), indent=2))
    else:
        # The validated config, printed as YAML in the shape the user wrote.
        print(OmegaConf.to_yaml(OmegaConf.create(config.model_dump(mode="json"))), end="")
    return 0


# --- run -----------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from evalrepro.pipeline import default_cache_dir, run_experiment
    from evalrepro.plan.lockfile import read_lockfile

    locked = None
    if args.lockfile is not None:
        if args.overrides or args.config_dir:
            raise UserError("--lockfile runs the locked config as it is: drop the overrides")
        locked = read_lockfile(args.lockfile)
        config = locked.experiment_config()
    else:
        config = compose(args.overrides, args.config_dir)
    outcome = run_experiment(
        config,
        make_console(),
        run_dir=args.run_dir,
        cache_dir=args.cache_dir or default_cache_dir(),
        locked=locked,
    )
    return EXIT_OK if outcome.report.gate_passed else EXIT_GATE_FAILED


def cmd_lock(args: argparse.Namespace) -> int:
    from evalrepro.pipeline import default_cache_dir, lock_experiment

    config = compose(args.overrides, args.config_dir)
    output = args.output or Path("lockfiles") / f"{config.name}.lock.json"
    lock_experiment(
        config,
        make_console(),
        output=output,
        cache_dir=args.cache_dir or default_cache_dir(),
        update=args.update,
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import is_bundle, run_directory

    if is_bundle(args.run):
        if args.rebuild:
            raise UserError(f"--rebuild: {args.run} is a bundle, whose records are not rewritten")
        with run_directory(args.run) as run:
            return _report(args, run, bundle=args.run)
    return _report(args, args.run, bundle=None)


def _report(args: argparse.Namespace, run: Path, *, bundle: Path | None) -> int:
    from evalrepro.plan.lockfile import read_lockfile
    from evalrepro.report.html import render_run_html
    from evalrepro.report.run_report import build_run_report, markdown_run_report, print_run_report
    from evalrepro.run.rundir import RunDirectory

    directory = RunDirectory(run)
    if not directory.lockfile_path.exists():
        raise UserError(f"{run}: not a run directory (no {directory.lockfile_path.name})")
    if args.rebuild:
        # Not while a run writes into the directory: its results.json would be overwritten.
        with directory.exclusive():
            directory.write_results(directory.rebuild_results())
            directory.write_swebench_layout()
    lockfile = read_lockfile(directory.lockfile_path)
    # A report shows what is wrong with the evidence (and counts it against evidence
    # completeness); `verify` is the check that refuses.
    survey = directory.survey(lockfile)
    report = build_run_report(
        directory.path,
        lockfile,
        survey.results,
        confidence=args.confidence,
        n_resamples=args.n_resamples,
        seed=args.seed,
        evidence_problems=[problem.message for problem in survey.problems],
    )
    if bundle is not None:
        # Named as given: the bundle was unpacked into a folder gone after this command.
        report = report.model_copy(update={"run": str(bundle)})
    if args.html is not None:
        from evalrepro.report.view import relative_link, write_view

        # The page links every trial to its viewer page: (re)write the viewer first
        # (a bundle's beside the page: the bundle is unpacked only for this command).
        view_dir = None if bundle is None else args.html.with_name(args.html.stem + "-view")
        site = write_view(directory.path, report, survey.results, output=view_dir)
        page = render_run_html(
            report,
            title=f"evalrepro: {directory.path.name}",
            viewer=relative_link(site.root, args.html),
        )
        atomic.write_text(args.html, page)
    if args.json:
        print(report.model_dump_json(indent=2))
    elif args.markdown:
        print(markdown_run_report(report), end="")
    elif args.latex:
        from evalrepro.report.latex import render_run_latex

        print(render_run_latex(report), end="")
    else:
        console = make_console()
        print_run_report(console, report)
        if args.html is not None:
            console.print(f"html report: {escape(str(args.html))}", highlight=False)
    return EXIT_OK if report.gate_passed else EXIT_GATE_FAILED


def cmd_compare(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from evalrepro.publish.bundle import run_directory

    with ExitStack() as stack:
        runs = [stack.enter_context(run_directory(path)) for path in args.runs]
        # A bundle's run is named as given (its unpacked folder is gone after this).
        names = {str(run): str(given) for run, given in zip(runs, args.runs, strict=True)}
        return _compare(args, runs, names)


def _compare(args: argparse.Namespace, paths: list[Path], names: dict[str, str]) -> int:
    from evalrepro.report.compare import (
        NotComparable,
        compare_runs,
        load_run,
        print_comparison_report,
    )
    from evalrepro.report.html import render_comparison_html

    try:
        report = compare_runs(
            paths,
            force=args.force,
            n_resamples=args.n_resamples,
            confidence=args.confidence,
            seed=args.seed,
            method=args.method,
        )
    except NotComparable as refusal:
        console = make_console(stderr=True)
        for difference in refusal.differences:
            console.print(f"  {difference.kind}: {escape(difference.detail)}", highlight=False)
        console.print(
            "[bold red]not comparable[/]: the runs measured different experiments "
            "(--force compares them anyway, marked not comparable)"
        )
        return EXIT_CHECK_FAILED
    report = report.model_copy(
        update={
            "pairs": [
                pair.model_copy(
                    update={
                        "a_path": names.get(pair.a_path, pair.a_path),
                        "b_path": names.get(pair.b_path, pair.b_path),
                    }
                )
                for pair in report.pairs
            ]
        }
    )
    if args.html is not None:
        from evalrepro.report.run_report import build_run_report
        from evalrepro.report.view import relative_link, write_view

        runs = [load_run(path) for path in paths]
        reports = [
            build_run_report(
                r.path,
                r.lockfile,
                r.results,
                confidence=args.confidence,
                n_resamples=args.n_resamples,
                seed=args.seed,
            )
            for r in runs
        ]
        # Each instance's cell links to its trial in that run's viewer: (re)write them
        # (a bundle's beside the page: the bundle is unpacked only for this command).
        viewers = [
            relative_link(
                write_view(
                    r.path,
                    run_report,
                    r.results,
                    output=None
                    if given == r.path
                    else args.html.with_name(f"{args.html.stem}-view-{number}"),
                ).root,
                args.html,
            )
            for number, (given, r, run_report) in enumerate(
                zip(args.runs, runs, reports, strict=True), start=1
            )
        ]
        page = render_comparison_html(
            report, reports, title="evalrepro comparison", viewers=viewers
        )
        atomic.write_text(args.html, page)
    if args.json:
        print(report.model_dump_json(indent=2))
    elif args.latex:
        from evalrepro.report.latex import render_comparison_latex

        print(render_comparison_latex(report), end="")
    else:
        print_comparison_report(make_console(), report)
    return EXIT_OK


# --- view ----------------------------------------------------------------------------


def cmd_view(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import is_bundle, run_directory
    from evalrepro.report.view import view_run

    output = args.output
    if output is None and is_bundle(args.run):
        # A bundle is unpacked for this command only: its viewer goes beside it.
        name = args.run.name.removesuffix(".tar.gz").removesuffix(".tgz").removesuffix(".tar")
        output = args.run.with_name(name + "-view")
    with run_directory(args.run) as run:
        site = view_run(
            run,
            output,
            confidence=args.confidence,
            n_resamples=args.n_resamples,
            seed=args.seed,
        )
    removed = f"; {site.removed} stale pages removed" if site.removed else ""
    make_console().print(
        f"trial viewer: {escape(str(site.index))} ({site.pages} trial pages{removed})",
        highlight=False,
    )
    return EXIT_OK


# --- verify --------------------------------------------------------------------------


def cmd_verify(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from evalrepro.publish.bundle import is_bundle, run_directory
    from evalrepro.publish.verify import check_run, compare, print_comparison, print_run_check

    if len(args.paths) > 2:
        raise UserError(
            "verify takes two lockfiles, run directories or bundles, or one run or bundle"
        )
    if len(args.paths) == 1:
        if args.same_target:
            raise UserError("--same-target compares two lockfiles, run directories or bundles")
        if is_bundle(args.paths[0]):
            from evalrepro.publish.bundle_verify import check_bundle, print_bundle_check

            bundle_check = check_bundle(args.paths[0], allowed_signers=args.allowed_signers)
            if args.json:
                print(json.dumps(bundle_check.payload(), indent=2))
            else:
                print_bundle_check(make_console(), bundle_check)
            return EXIT_OK if bundle_check.ok else EXIT_CHECK_FAILED
        if args.allowed_signers is not None:
            raise UserError("--allowed-signers checks a bundle's signature; this is a run")
        check = check_run(args.paths[0])
        if args.json:
            print(json.dumps(check.payload(), indent=2))
        else:
            print_run_check(make_console(), check)
        return 0 if check.ok else 1
    with ExitStack() as stack:
        first, second = (stack.enter_context(run_directory(path)) for path in args.paths)
        comparison = compare(first, second, same_target=args.same_target)
    # Named as given: a bundle's run was unpacked into a folder that is gone now.
    comparison = dataclasses.replace(comparison, first=args.paths[0], second=args.paths[1])
    if args.json:
        print(json.dumps(comparison.payload(), indent=2))
    else:
        print_comparison(make_console(), comparison)
    return 0 if comparison.comparable else 1


# --- bundle --------------------------------------------------------------------------


def cmd_bundle(args: argparse.Namespace) -> int:
    from evalrepro.publish.bundle import write_bundle

    run = Path(args.run)
    output = args.output or run.resolve().with_name(run.resolve().name + ".bundle.tar.gz")
    summary = write_bundle(
        run,
        output,
        with_images=args.with_images,
        with_inputs=args.with_inputs,
        sign_key=args.sign,
        cache_dir=args.cache_dir,
    )
    extras = [
        "signed" if summary.signed else "",
        "with images" if summary.images else "",
        f"{summary.inputs} inputs",
        f"{summary.deduplicated} duplicate files stored once" if summary.deduplicated else "",
    ]
    make_console().print(
        Text(
            f"bundle: {summary.path} ({_size(summary.bytes)}, {summary.files} files; "
            + ", ".join(e for e in extras if e)
            + ")"
        ),
        highlight=False,
    )
    return EXIT_OK


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count} B"


# --- reproduce -----------------------------------------------------------------------


def cmd_reproduce(args: argparse.Namespace) -> int:
    from evalrepro.pipeline import PlanMismatch, default_cache_dir
    from evalrepro.publish.reproduce import print_reproduction, reproduce

    console = make_console()
    try:
        reproduction = reproduce(
            args.bundle,
            console,
            run_dir=args.run_dir,
            cache_dir=args.cache_dir or default_cache_dir(),
            sample=args.sample,
            seed=args.seed,
            reruns=args.reruns,
        )
    except PlanMismatch as mismatch:
        for difference in mismatch.differences:
            console.print(Text(f"  {difference.kind}: {difference.detail}"), highlight=False)
        console.print(
            "[bold red]not reproducible here[/]: the plan made here is not the bundle's "
            "(an image or a locked input differs); nothing ran"
        )
        return EXIT_NOT_REPRODUCIBLE
    if args.json:
        print(reproduction.model_dump_json(indent=2))
    else:
        print_reproduction(console, reproduction)
    return EXIT_OK if reproduction.agreeing == len(reproduction.trials) else EXIT_CHECK_FAILED


# --- regrade -------------------------------------------------------------------------


def cmd_regrade(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from evalrepro.regrade import regrade

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    model = args.model or args.logs.resolve().name
    run_dir = args.run_dir or Path("runs") / f"regrade-{model.replace('/', '__')}-{stamp}"
    summary = regrade(
        args.logs,
        args.dataset,
        run_dir=run_dir,
        parser=args.parser,
        rules="strict" if args.strict else "swebench",
        model=args.model,
        run_id=args.run_id,
    )
    out = make_console()
    out.print(
        f"regraded {summary.graded} logs of {escape(summary.model)} "
        f"(run {escape(summary.run_id)}): {summary.resolved} resolved",
        highlight=False,
    )
    if summary.compared:
        agree = summary.compared - len(summary.differences)
        out.print(f"swebench's report.json: {agree} of {summary.compared} agree", highlight=False)
    if summary.differences:
        table = Table("instance", "ours", "swebench's report.json", title="differences")
        for difference in summary.differences:
            table.add_row(
                *map(escape, (difference.instance_id, difference.ours, difference.theirs))
            )
        out.print(table)
    out.print(f"run directory: {escape(str(Path(run_dir).resolve()))}", highlight=False)
    return EXIT_OK


# --- parsers -------------------------------------------------------------------------


def cmd_parsers(args: argparse.Namespace) -> int:
    table = Table("name", "family", "fail only", "aliases", "runner")
    for name in parser_names():
        parser = get_parser(name)
        table.add_row(
            name,
            str(parser.family),
            "yes" if parser.fail_only else "",
            ", ".join(parser.aliases[:3]) + (" ..." if len(parser.aliases) > 3 else ""),
            parser.description,
        )
    make_console().print(table)
    return 0


# --- main ----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="evalrepro",
        description="Reproducible SWE-bench-style evaluation of code patches.",
    )
    top.add_argument("--version", action="version", version=f"evalrepro {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    grade = sub.add_parser(
        "grade", help="grade one test log against one instance (SWE-bench logs too)"
    )
    grade.add_argument(
        "--instance",
        type=Path,
        required=True,
        metavar="FILE",
        help="an instance JSON, or a JSON/JSONL dataset (with --instance-id)",
    )
    grade.add_argument(
        "--log",
        type=Path,
        required=True,
        metavar="FILE",
        help="the eval log (test_output.txt) with start/end markers",
    )
    grade.add_argument("--instance-id", metavar="ID")
    grade.add_argument("--parser", metavar="NAME", help="override the instance's parser")
    grade.add_argument("--json", action="store_true", help="print one JSON object")
    grade.add_argument(
        "--strict",
        action="store_true",
        help="read the log by the strict rules (one region between whole-line markers, no "
        "fallback to the whole log, duplicate markers unscorable) instead of swebench 5.0.2's",
    )
    grade.set_defaults(handler=cmd_grade)

    config = sub.add_parser("config", help="compose, validate and print the experiment config")
    _config_arguments(config)
    described = config.add_mutually_exclusive_group()
    described.add_argument("--json", action="store_true", help="the composed config as JSON")
    described.add_argument(
        "--schema", action="store_true", help="the JSON Schema of every config (no overrides)"
    )
    described.add_argument(
        "--reference", action="store_true", help="every config field, as Markdown"
    )
    config.set_defaults(handler=cmd_config)

    run = sub.add_parser(
        "run", help="build the environments, run every trial in a container, grade, report"
    )
    _config_arguments(run)
    run.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="where to write the run (default: runs/<experiment>-<time>)",
    )
    _cache_argument(run)
    run.add_argument(
        "--lockfile",
        type=Path,
        metavar="FILE",
        help="run a lockfile's experiment as it is; refuse if the plan no longer matches it",
    )
    run.set_defaults(handler=cmd_run)

    lock = sub.add_parser(
        "lock", help="resolve the config into a lockfile (builds the images, runs no trial)"
    )
    _config_arguments(lock)
    lock.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="where to write it (default: lockfiles/<experiment>.lock.json); a lockfile "
        "already there keeps its pinned inputs",
    )
    lock.add_argument(
        "--update",
        action="store_true",
        help="resolve every pinned input again (newer Debian packages, wheels)",
    )
    _cache_argument(lock)
    lock.set_defaults(handler=cmd_lock)

    report = sub.add_parser(
        "report", help="metrics, intervals and the gate of a run directory (exit 3: gate failed)"
    )
    report.add_argument("run", type=Path, metavar="RUN_DIR")
    report.add_argument(
        "--rebuild", action="store_true", help="rewrite results.json from the trial results"
    )
    output = report.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="one JSON object (with SWE-bench's run-report fields)"
    )
    output.add_argument("--markdown", action="store_true", help="tables for a paper appendix")
    output.add_argument(
        "--latex", action="store_true", help="a booktabs table to \\input{} in a paper"
    )
    report.add_argument(
        "--html", type=Path, metavar="FILE", help="also write a self-contained HTML page"
    )
    _statistics_arguments(report)
    report.set_defaults(handler=cmd_report)

    compare = sub.add_parser(
        "compare",
        help="compare runs: the difference with its interval, McNemar, MDE (each vs the first)",
    )
    compare.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR")
    compare.add_argument(
        "--force", action="store_true", help="compare anyway when not comparable (marked so)"
    )
    compare.add_argument("--method", choices=["BCa", "percentile", "basic"], default="BCa")
    printed = compare.add_mutually_exclusive_group()
    printed.add_argument("--json", action="store_true")
    printed.add_argument(
        "--latex", action="store_true", help="a booktabs table to \\input{} in a paper"
    )
    compare.add_argument(
        "--html", type=Path, metavar="FILE", help="also write a page with a forest plot"
    )
    _statistics_arguments(compare)
    compare.set_defaults(handler=cmd_compare)

    view = sub.add_parser(
        "view",
        help="a static site of a run's trials: patch, eval script, test log, tests (no server)",
        description="Write index.html (every trial, filtered by outcome and reason) and one "
        "page per trial (trials/<label>.html) into DIR. Links are relative: the site reads "
        "the same from a copied folder. Logs and patches are shown cut to their first and "
        "last KiB, escaped, control characters made visible.",
    )
    view.add_argument("run", type=Path, metavar="RUN_DIR")
    view.add_argument(
        "--output", type=Path, metavar="DIR", help="where to write the site (default: RUN_DIR/view)"
    )
    _statistics_arguments(view)
    view.set_defaults(handler=cmd_view)

    verify = sub.add_parser(
        "verify",
        help="are two experiments comparable? (A B); does a run directory hold up? (RUN)",
        description="With two lockfiles or run directories: exit 0 when they are comparable, "
        "1 otherwise, listing each difference by class. With one run directory: check its "
        "lockfile, results, artifact digests, aggregate and re-graded scores; exit 0 when all "
        "hold. With a bundle (archive or unpacked folder): all of that on the run inside, and "
        "its checksums, signature, RO-Crate, attestation and reports; offline, without podman "
        "or Nix.",
    )
    verify.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="A B (lockfiles or run directories), or RUN",
    )
    verify.add_argument(
        "--same-target",
        action="store_true",
        help="a reproduction check: the targets must match too (default: they may differ)",
    )
    verify.add_argument(
        "--allowed-signers",
        type=Path,
        metavar="FILE",
        help="a bundle must be signed by a key this file lists (ssh-keygen's ALLOWED SIGNERS)",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.set_defaults(handler=cmd_verify)

    bundle = sub.add_parser(
        "bundle",
        help="write a run as one archive a reviewer verifies offline and reproduces",
        description="A deterministic .tar.gz holding a BagIt bag: the run directory, its "
        "reports and trial viewer, the dataset and predictions files, an RO-Crate (Process "
        "Run Crate) and an in-toto Test Result statement. The run must pass `verify RUN`.",
    )
    bundle.add_argument("run", type=Path, metavar="RUN_DIR")
    bundle.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="default: RUN_DIR.bundle.tar.gz"
    )
    bundle.add_argument(
        "--with-images",
        action="store_true",
        help="add the images (OCI layout): a reviewer then needs no builder",
    )
    bundle.add_argument(
        "--with-inputs",
        action="store_true",
        help="add every pinned build input (.debs, wheels): the images rebuild offline",
    )
    bundle.add_argument(
        "--sign",
        type=Path,
        metavar="KEY",
        help="sign the manifests with this SSH private key (ssh-keygen -Y sign)",
    )
    _cache_argument(bundle)
    bundle.set_defaults(handler=cmd_bundle)

    reproduce = sub.add_parser(
        "reproduce",
        help="run a bundle's trials again; say trial by trial whether they agree",
        description="Verify the bundle, load its images (or rebuild them from the lockfile's "
        "pins; a digest that differs stops it, naming the input), run all trials or a seeded "
        "sample, and compare outcome, resolution and every test's status with the bundle. A "
        "test that disagrees is classified: harness change, flaky, environment drift. Exit "
        "0: all agree; 1: some disagree; 2: a user error; 4: not reproducible here (nothing "
        "ran).",
    )
    reproduce.add_argument("bundle", type=Path, metavar="BUNDLE")
    reproduce.add_argument(
        "--sample", type=int, metavar="N", help="a random sample of N trials (default: all)"
    )
    reproduce.add_argument("--seed", type=int, default=0, metavar="S", help="the sample's seed")
    reproduce.add_argument(
        "--reruns",
        type=int,
        default=2,
        metavar="K",
        help="run a disagreeing trial K more times to tell flaky from drift (default 2)",
    )
    reproduce.add_argument(
        "--run-dir", type=Path, metavar="DIR", help="default: runs/reproduce-<run>-<time>"
    )
    reproduce.add_argument("--json", action="store_true", help="print the Reproduction record")
    _cache_argument(reproduce)
    reproduce.set_defaults(handler=cmd_reproduce)

    regrade = sub.add_parser(
        "regrade",
        help="grade the logs another harness wrote into a run directory",
        description="LOGS_DIR holds <instance_id>/test_output.txt (with patch.diff and "
        "report.json where present): SWE-bench's logs/run_evaluation/<run_id>/<model>/. One "
        "graded trial per log, in a run directory that report, compare and verify accept.",
    )
    regrade.add_argument("logs", type=Path, metavar="LOGS_DIR")
    regrade.add_argument(
        "--dataset",
        type=Path,
        required=True,
        metavar="FILE",
        help="the instances (JSONL, JSON, Parquet)",
    )
    regrade.add_argument("--parser", metavar="NAME", help="override the instances' parsers")
    regrade.add_argument(
        "--run-dir", type=Path, metavar="DIR", help="default: runs/regrade-<model>-<time>"
    )
    regrade.add_argument("--model", help="default: the logs folder's name (SWE-bench's <model>)")
    regrade.add_argument("--run-id", help="default: the logs folder's parent's name")
    regrade.add_argument(
        "--strict",
        action="store_true",
        help="evalrepro's strict reading (whole-line markers, one region, no fallback) "
        "instead of swebench's",
    )
    regrade.set_defaults(handler=cmd_regrade)

    parsers = sub.add_parser("parsers", help="list the registered log parsers")
    parsers.set_defaults(handler=cmd_parsers)
    return top


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. +experiment=demo")
    # Hydra's sweep flag, refused with a sentence rather than argparse's usage dump.
    parser.add_argument("-m", "--multirun", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--config-dir",
        type=Path,
        metavar="DIR",
        help="a directory of your own configs, searched before the built-in",
    )


def _cache_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="images' build inputs and logs (default: ~/.cache/evalrepro or $EVALREPRO_CACHE)",
    )


def _statistics_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--confidence", type=float, default=0.95, metavar="C")
    parser.add_argument("--n-resamples", type=int, default=10_000, metavar="N")
    parser.add_argument("--seed", type=int, default=0, metavar="S")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        if getattr(args, "multirun", False):
            raise UserError(
                "--multirun: evalrepro runs one experiment per command; sweep with a shell "
                "loop over +experiment=... (each run gets its own run directory)"
            )
        return handler(args)
    except UserError as error:
        print(f"evalrepro: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as error:
        # The machine's, not the code's: a full disk, a read-only or forbidden place.
        # Every record is written atomically, so what was finished stays readable.
        if error.errno not in _ENVIRONMENT_ERRNOS:
            raise
        where = f": {error.filename}" if error.filename else ""
        hint = (
            " (what was recorded before is kept: free space, then run again to resume)"
            if error.errno in (errno.ENOSPC, errno.EDQUOT)
            else ""
        )
        print(f"evalrepro: error: {error.strerror}{where}{hint}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130


_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


if __name__ == "__main__":
    sys.exit(main())
