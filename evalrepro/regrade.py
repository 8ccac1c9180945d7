"""Regrade: the logs another harness wrote, graded into a run directory of evalrepro's.

``evalrepro regrade LOGS_DIR --dataset FILE`` takes SWE-bench's
``logs/run_evaluation/<run_id>/<model>/`` (a folder per instance with ``test_output.txt``,
and ``patch.diff`` / ``report.json`` where present) and runs it as any experiment runs:
plan -> lock -> execute -> report, with

* the dataset: the instances that have a log, each with a "spec" that names its parser
  (what its log is graded against and how it is read: its TestSpec);
* the ``logs`` target: the patches kept beside the logs, by digest;
* a ``recorded`` environment: its builder pins each log by digest (nothing is known of
  the images the logs came from: the trial ids say so), its runtime brings the log in
  with a ``ForeignLog`` record saying how it is read; the Observation says ``source: log``
  and ``verify`` re-grades it from the files alone;
* the default gate.

``regrade.json`` then lists, per instance, where our verdict differs from the report.json
swebench wrote beside the log. Logs are read as files from elsewhere: regular files
only, with a size cap.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from evalrepro import atomic
from evalrepro.config.dataset import DatasetConfig
from evalrepro.config.environment import RecordedEnvironment
from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.config.experiment import ExperimentConfig, default_gate
from evalrepro.config.sample import Sample, load_samples
from evalrepro.errors import UserError
from evalrepro.files import read_regular_file
from evalrepro.grade.foreign import MAX_PATCH_BYTES
from evalrepro.grade.parsers import LogParser, get_parser
from evalrepro.grade.parsers.swebench_repos import SWEBENCH_REPO_PARSERS
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.plan.testspec import RepoSpec
from evalrepro.records.regrade import RegradeDifference, RegradeSummary
from evalrepro.targets.logs import LogsTarget

#: Logs graded at once, by threads of this one process. Each trial writes five records,
#: each atomically with its own fsync, and the disk commits concurrent fsyncs together:
#: 2,294 SWE-bench-sized logs take 15 s instead of 24 s one at a time
#: (``benchmarks/grading_throughput.py``). Parsing holds the GIL; the waits do not.
WRITERS = 8
LOG_NAME = "test_output.txt"
#: The test command a recorded log's spec names: nothing of ours runs it.
RECORDED_COMMAND = "(run by the harness that wrote the log)"


def _parser_for(sample: Sample, name: str | None) -> LogParser:
    chosen = name or sample.parser or SWEBENCH_REPO_PARSERS.get(sample.repo)
    if chosen is None:
        raise UserError(
            f"instance '{sample.instance_id}' names no log parser and '{sample.repo}' is not "
            "a SWE-bench repo; pass --parser (see 'evalrepro parsers')"
        )
    return get_parser(chosen)


def _their_verdict(report_file: Path, instance_id: str) -> str | None:
    """What swebench's report.json says of the instance (None: no readable report)."""
    try:
        data: Any = json.loads(read_regular_file(report_file, MAX_PATCH_BYTES, "report.json"))
    except (UserError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    entry = data.get(instance_id) if isinstance(data, dict) else None
    if not isinstance(entry, dict):
        return None
    if entry.get("resolved") is True:
        return "resolved"
    if not entry.get("patch_successfully_applied", True):
        return "not applied or no test output"
    return "not resolved"


def _agrees(ours: str, theirs: str) -> bool:
    if theirs == "resolved":
        return ours == "resolved"
    return ours != "resolved"


def regrade_config(
    logs_dir: Path,
    dataset_file: Path,
    *,
    parser: str | None = None,
    rules: Literal["swebench", "strict"] = "swebench",
    model: str | None = None,
) -> ExperimentConfig:
    """The experiment a regrade of ``logs_dir`` runs (refused in one line when the logs
    and the dataset do not fit together)."""
    if not logs_dir.is_dir():
        raise UserError(f"{logs_dir}: no such logs folder")
    samples = {sample.instance_id: sample for sample in load_samples(dataset_file)}
    folders = sorted(p for p in logs_dir.iterdir() if (p / LOG_NAME).exists())
    if not folders:
        raise UserError(f"{logs_dir}: no <instance_id>/{LOG_NAME} in it")
    unknown = [folder.name for folder in folders if folder.name not in samples]
    if unknown:
        listed = ", ".join(unknown[:3]) + (" ..." if len(unknown) > 3 else "")
        raise UserError(
            f"{logs_dir}: {len(unknown)} log folder(s) name instances not in {dataset_file}: "
            f"{listed}"
        )
    for folder in folders:
        log = folder / LOG_NAME
        if log.is_symlink() or not log.is_file():
            # Refused before anything is written; the runtime reads it again, bounded.
            raise UserError(f"{log}: cannot read the log: not a regular file")
    model = model or logs_dir.resolve().name
    graded = [samples[folder.name] for folder in folders]
    parsers = {sample.instance_id: _parser_for(sample, parser) for sample in graded}
    families = {p.family for p in parsers.values()}
    if len(families) > 1:
        raise UserError(
            f"{logs_dir}: the instances' parsers come from both families: pass --parser"
        )
    # Each log's spec: its parser (an instance's own ``parser`` field takes precedence).
    specs: dict[str, dict[str, RepoSpec]] = {}
    for sample in graded:
        specs.setdefault(sample.repo, {})[sample.version] = RepoSpec(
            test_cmd=RECORDED_COMMAND, parser=parsers[sample.instance_id].name
        )
    return ExperimentConfig(
        name=f"regrade-{model}",
        dataset=DatasetConfig(
            name=dataset_file.stem,
            instances=dataset_file.resolve(),
            test_ids=families.pop(),
            instance_ids=[sample.instance_id for sample in graded],
            specs=specs,
        ),
        target=LogsTarget(name=model, path=logs_dir.resolve(), missing="empty"),
        environment=RecordedEnvironment(logs=logs_dir.resolve(), rules=rules),
        executor=LocalExecutorConfig(max_workers=WRITERS, max_attempts=1),
        gate=default_gate(),
    )


def regrade(
    logs_dir: Path,
    dataset_file: Path,
    *,
    run_dir: Path,
    parser: str | None = None,
    rules: Literal["swebench", "strict"] = "swebench",
    model: str | None = None,
    run_id: str | None = None,
    console: Console | None = None,
    cache_dir: Path | None = None,
) -> RegradeSummary:
    """Regrade ``logs_dir`` into ``run_dir`` (a new folder); the comparison with the
    report.json files swebench wrote beside the logs."""
    config = regrade_config(logs_dir, dataset_file, parser=parser, rules=rules, model=model)
    if (run_dir / LOCKFILE_NAME).exists():
        raise UserError(f"{run_dir.resolve()}: holds a run already; regrade into a new folder")
    run_id = run_id or logs_dir.resolve().parent.name
    outcome = run_experiment(
        config,
        console or Console(file=io.StringIO()),
        run_dir=run_dir,
        cache_dir=cache_dir or run_dir / ".cache",
        # Under the logs' own run id: the tree reads as the one it was made from.
        swebench_run_id=run_id,
    )
    differences: list[RegradeDifference] = []
    compared = 0
    for line in outcome.results.trials:
        theirs = _their_verdict(logs_dir / line.instance_id / "report.json", line.instance_id)
        if theirs is None:
            continue
        compared += 1
        if not _agrees(str(line.outcome), theirs):
            differences.append(
                RegradeDifference(
                    instance_id=line.instance_id,
                    ours=f"{line.outcome} ({line.reason})",
                    theirs=theirs,
                )
            )
    summary = RegradeSummary(
        logs=str(logs_dir.resolve()),
        dataset=str(dataset_file.resolve()),
        model=config.target.target_id([]),
        run_id=run_id,
        graded=outcome.results.planned,
        resolved=outcome.results.resolved,
        compared=compared,
        differences=differences,
        no_patch=sorted(
            line.instance_id
            for line in outcome.results.trials
            if not (logs_dir / line.instance_id / "patch.diff").exists()
        ),
    )
    atomic.write_text(outcome.run_dir / "regrade.json", summary.model_dump_json(indent=2) + "\n")
    return summary
