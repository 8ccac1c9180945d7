"""Print the agreement table of docs/grading.md: our parsers against swebench and ground truth.

    .venv/bin/python -m tests.agreement

For each runner of the committed corpus: how many (log, compatible parser) maps equal
swebench 5.0.2's key for key, and how many native maps equal the runner's own ground
truth; deliberate differences are counted apart, by name. Then the real eval logs in
SWE-bench's layout: how many derived instances our swebench rules grade exactly as
swebench does (found, status map, lists, resolution), and on how many the strict rules
give another verdict.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import get_parser
from evalrepro.grade.score import score
from evalrepro.records.observation import ParserStatus
from evalrepro.records.score import Outcome
from evalrepro.sample import Sample
from tests.corpus import all_corpus
from tests.corpus_checks import truth_shown_to
from tests.corpus_swebench import load_eval_logs
from tests.reference import (
    instance_variants,
    swebench_grade,
    swebench_logs_eval,
    swebench_status_map,
)


def main() -> None:
    rows: dict[str, dict[str, list[int]]] = defaultdict(
        lambda: {"compat": [0, 0], "native": [0, 0], "named": [0, 0]}
    )
    for log in all_corpus():
        row = rows[log.runner]
        for name in log.compat:
            ours = {k: str(v) for k, v in get_parser(name).parse(log.text).statuses.items()}
            bucket = "named" if name in log.known_differences else "compat"
            row[bucket][0] += ours == swebench_status_map(name, log.text)
            row[bucket][1] += 1
        if log.native and log.truth is not None:
            native = get_parser(log.native)
            ours = {k: str(v) for k, v in native.parse(log.text).statuses.items()}
            truth = truth_shown_to(native, log.truth)
            bucket = "named" if log.native in log.known_differences else "native"
            row[bucket][0] += ours == truth
            row[bucket][1] += 1
    print("| runner | logs | compatible = swebench | native = ground truth | named differences |")
    print("| --- | --- | --- | --- | --- |")
    logs = defaultdict(int)
    for log in all_corpus():
        logs[log.runner] += 1
    for runner, row in sorted(rows.items()):
        cells = [f"{ok}/{total}" if total else "-" for ok, total in (row["compat"], row["native"])]
        cells.append(str(row["named"][1]) if row["named"][1] else "-")
        print(f"| {runner} | {logs[runner]} | " + " | ".join(cells) + " |")
    print()
    eval_logs_table()


def _same_as_swebench(observation, reference) -> bool:
    if reference is None:
        return observation.parser_status is not ParserStatus.OK
    tests = observation.tests
    return (
        observation.parser_status is ParserStatus.OK
        and observation.status_map == reference["status_map"]
        and tests is not None
        and tests.fail_to_pass.model_dump() == reference["fail_to_pass"]
        and tests.pass_to_pass.model_dump() == reference["pass_to_pass"]
        and str(tests.resolution) == reference["resolution"]
    )


def eval_logs_table() -> None:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # logs, same, total, strict
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for log in load_eval_logs():
            rows[log.runner][0] += 1
            fail_only = log.eval_type == "fail_only"
            for name in log.compat:
                parser = get_parser(name)
                statuses, _ = swebench_logs_eval(log.text, name, folder, fail_only=fail_only)
                for _, f2p, p2p in instance_variants(statuses):
                    sample = Sample(
                        instance_id="ref__ref-1",
                        repo="ref/ref",
                        base_commit="abc",
                        test_patch="",
                        FAIL_TO_PASS=f2p,
                        PASS_TO_PASS=p2p,
                        eval_type=log.eval_type,
                    )
                    reference = swebench_grade(
                        log.text, name, f2p, p2p, folder, fail_only=fail_only
                    )
                    ours = observe(log.text, sample, parser)
                    rows[log.runner][1] += _same_as_swebench(ours, reference)
                    rows[log.runner][2] += 1
                    strict = observe(log.text, sample, parser, rules="strict")
                    resolved = bool(reference and reference["resolved"])
                    rows[log.runner][3] += (score(strict).outcome is Outcome.RESOLVED) != resolved
    print("| runner | eval logs | instances: swebench rules = swebench | strict verdict differs |")
    print("| --- | --- | --- | --- |")
    for runner, (count, same, total, strict) in sorted(rows.items()):
        print(f"| {runner} | {count} | {same}/{total} | {strict or '-'} |")


if __name__ == "__main__":
    main()
