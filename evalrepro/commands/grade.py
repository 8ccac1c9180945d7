"""``evalrepro grade``: grade one test log against one instance (SWE-bench logs too)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from evalrepro.commands._arguments import json_argument, parser_argument, strict_argument
from evalrepro.commands._common import make_console
from evalrepro.console import Table
from evalrepro.errors import UserError
from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import LogParser, get_parser
from evalrepro.grade.parsers.swebench_repos import SWEBENCH_REPO_PARSERS
from evalrepro.grade.score import score
from evalrepro.records.observation import Observation, TestGroup
from evalrepro.records.score import Score
from evalrepro.sample import Sample, load_samples


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    grade = subparsers.add_parser(
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
        help="the eval log (test_output.txt) with start/end markers, or a runner's own "
        "output with no marker and no '>>>>>' line at all: read whole (not with --strict)",
    )
    grade.add_argument("--instance-id", metavar="ID")
    parser_argument(grade, "override the instance's parser")
    json_argument(grade, "print one JSON object")
    strict_argument(
        grade,
        "read the log by the strict rules (one region between whole-line markers, no "
        "fallback to the whole log, duplicate markers unscorable) instead of swebench 5.0.2's",
    )
    return grade


def main(args: argparse.Namespace) -> int:
    sample = _pick_sample(args.instance, args.instance_id)
    parser = _pick_parser(sample, args.parser)
    # A plain log (no marker, no harness line) is read whole, and the Observation says
    # so: it is the user's own log, not a harness's cut short (regrade never does this).
    observation = observe(
        _read_log(args.log),
        sample,
        parser,
        rules="strict" if args.strict else "swebench",
        plain="whole_log",
    )
    result = score(observation)
    if args.json:
        print(json.dumps(grade_payload(observation, result), indent=2, ensure_ascii=False))
        return 0
    _print_grade(make_console(), observation, result)
    return 0


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
        # The score's: one truth. The tests' own report (``observation.tests``) still
        # holds what the lists came to when the log was not scorable.
        "resolution": str(result.resolution) if result.resolution is not None else None,
        "score": result.model_dump(mode="json", exclude={"record", "schema_version"}),
        "observation": observation.model_dump(mode="json"),
    }


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
    if result.resolution is not None:
        console.print(f"resolution: [bold]{result.resolution}[/]")
    elif observation.tests is not None:
        # The lists above are what the log showed; the score did not come from them.
        console.print("resolution: none (the tests are not what decided the score)")
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
