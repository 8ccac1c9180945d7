"""Regrade: the logs another harness wrote, graded into a run directory of evalrepro's.

``evalrepro regrade LOGS_DIR --dataset FILE`` takes SWE-bench's
``logs/run_evaluation/<run_id>/<model>/`` (a folder per instance with ``test_output.txt``,
and ``patch.diff`` / ``report.json`` where present) and writes one graded trial per log
into a run directory that ``report``, ``compare`` and ``verify`` accept:

* the lockfile records the dataset (the instances that have a log), the ``logs`` target
  (the patches, by digest), a ``recorded`` environment (nothing is known of the images
  the logs came from: their trial ids say so) and the parser and reading rules of each
  instance (its "test spec" here);
* each trial's attempt keeps the log, the patch, swebench's own report.json and
  ``foreign.json`` (where the log came from and how it was read); its Observation says
  ``source: log``, and ``verify`` re-grades it from those files alone;
* ``regrade.json`` lists, per instance, where our verdict differs from the report.json
  swebench wrote beside the log.

Logs are read as files from elsewhere: regular files only, with a size cap.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro import __version__, atomic
from evalrepro.artifact import Artifact
from evalrepro.config import ExperimentConfig
from evalrepro.dataset import DatasetConfig
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.environment import RecordedEnvironment
from evalrepro.errors import UserError
from evalrepro.execute import TrialResult
from evalrepro.files import read_regular_file
from evalrepro.gate import Gate
from evalrepro.harness import code_digest
from evalrepro.lockfile import (
    LockedDataset,
    LockedEnvironment,
    LockedInstance,
    LockedPrediction,
    LockedTarget,
    LockedTrial,
    Lockfile,
    harness,
    portable,
)
from evalrepro.observation import (
    ExecutionStatus,
    Observation,
    ParserStatus,
    PatchStatus,
    observe,
)
from evalrepro.parsers import LogParser, get_parser
from evalrepro.parsers.swebench_repos import SWEBENCH_REPO_PARSERS
from evalrepro.patchcheck import patch_bytes
from evalrepro.record import Record, read_record
from evalrepro.report import aggregate
from evalrepro.rundir import RunDirectory
from evalrepro.sample import Sample, load_samples
from evalrepro.score import score
from evalrepro.target import LogsTarget
from evalrepro.trial import Attempt, Trial, TrialKey

#: Largest log read (SWE-bench's biggest test outputs are tens of MB).
MAX_LOG_BYTES = 256 << 20
LOG_NAME = "test_output.txt"
PATCH_NAME = "patch.diff"
#: Largest patch or report.json read from a logs folder.
MAX_PATCH_BYTES = 64 << 20
#: What a recorded environment's trial ids use for the image nobody here built.
RECORDED_IMAGE = "recorded:unknown"
#: Logs graded at once, by threads of this one process. Each trial writes five records,
#: each atomically with its own fsync, and the disk commits concurrent fsyncs together:
#: 2,294 SWE-bench-sized logs take 15 s instead of 24 s one at a time
#: (``benchmarks/grading_throughput.py``). Parsing holds the GIL; the waits do not.
WRITERS = 8


class ForeignLog(Record):
    """Where an attempt's log came from, and how it was read (``foreign.json``)."""

    record: Literal["ForeignLog"] = "ForeignLog"
    instance_id: str
    #: The log's path when it was regraded (for people: nothing reads it again).
    source: str
    parser: str
    rules: Literal["swebench", "strict"]


class RegradeDifference(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    #: Our outcome (resolved / unresolved / invalid) and reason.
    ours: str
    #: What swebench's report.json beside the log says.
    theirs: str


class RegradeSummary(Record):
    record: Literal["RegradeSummary"] = "RegradeSummary"
    logs: str
    dataset: str
    model: str
    run_id: str
    graded: int
    resolved: int
    #: Instances whose folder held a report.json of swebench's.
    compared: int
    differences: list[RegradeDifference]


def recorded_spec_digest(sample: Sample, parser: LogParser, rules: str) -> str:
    """A recorded log's "test spec": what it is graded against and how it is read."""
    return sha256_json(
        {
            "parser": parser.name,
            "rules": rules,
            "fail_only": parser.fail_only or sample.fail_only,
            "FAIL_TO_PASS": sample.fail_to_pass,
            "PASS_TO_PASS": sample.pass_to_pass,
        }
    )


def read_foreign_log(path: Path) -> bytes:
    """A log from elsewhere: a regular file, at most MAX_LOG_BYTES."""
    return read_regular_file(path, MAX_LOG_BYTES, "log")


def observe_foreign(folder: Path, sample: Sample) -> Observation:
    """An attempt of a regrade, observed again from its artifacts alone."""
    foreign = read_record(folder / "foreign.json", ForeignLog)
    parser = get_parser(foreign.parser)
    patch = folder / PATCH_NAME
    if patch.is_file() and not read_regular_file(patch, MAX_PATCH_BYTES, "patch").strip():
        # swebench never evaluates an empty patch (its "empty_patch_ids"): neither do we,
        # whatever log lies beside it.
        return Observation(
            instance_id=sample.instance_id,
            source="log",
            log_rules=foreign.rules,
            parser=parser.name,
            patch_status=PatchStatus.INVALID,
            patch_problem="empty",
            execution_status=ExecutionStatus.NOT_RUN,
            parser_status=ParserStatus.NOT_PARSED,
            status_map={},
        )
    text = read_foreign_log(folder / LOG_NAME).decode("utf-8", errors="replace")
    return observe(text, sample, parser, rules=foreign.rules)


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
        data: Any = json.loads(report_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
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


def regrade(
    logs_dir: Path,
    dataset_file: Path,
    *,
    run_dir: Path,
    parser: str | None = None,
    rules: Literal["swebench", "strict"] = "swebench",
    model: str | None = None,
    run_id: str | None = None,
) -> RegradeSummary:
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
    model = model or logs_dir.resolve().name
    run_id = run_id or logs_dir.resolve().parent.name
    graded = [samples[folder.name] for folder in folders]
    parsers = {sample.instance_id: _parser_for(sample, parser) for sample in graded}
    families = {p.family for p in parsers.values()}
    if len(families) > 1:
        raise UserError(
            f"{logs_dir}: the instances' parsers come from both families: pass --parser"
        )

    config = ExperimentConfig(
        name=f"regrade-{model}",
        dataset=DatasetConfig(
            name=dataset_file.stem,
            instances=dataset_file.resolve(),
            test_ids=families.pop(),
            instance_ids=[sample.instance_id for sample in graded],
        ),
        target=LogsTarget(name=model, path=logs_dir.resolve(), missing="empty"),
        environment=RecordedEnvironment(),
        gate=Gate.model_validate(
            {"name": "default", "rules": [{"metric": "invalid_rate", "op": "<=", "threshold": 0.2}]}
        ),
    )
    predictions = {p.instance_id: p for p in config.target.patches(graded)}
    trials: list[tuple[Sample, Trial]] = []
    for sample in graded:
        key = TrialKey(
            instance_id=sample.instance_id,
            target_id=model,
            repository_commit=sample.base_commit,
            image_digest=RECORDED_IMAGE,
            test_spec_digest=recorded_spec_digest(sample, parsers[sample.instance_id], rules),
            harness_version=__version__,
            harness_digest=code_digest(),
        )
        trials.append((sample, Trial.of(key)))
    lockfile = _lockfile(config, trials, predictions, parsers)

    directory = RunDirectory(run_dir)
    with directory.exclusive():
        if directory.lockfile_path.exists():
            raise UserError(f"{directory.path}: holds a run already; regrade into a new folder")
        directory.begin(lockfile, config.model_dump_json(indent=2) + "\n", {"kind": "recorded"})
        results: dict[str, TrialResult] = {}
        differences: list[RegradeDifference] = []
        compared = 0

        def grade(item: tuple[Sample, Trial]) -> TrialResult:
            sample, trial = item
            source = logs_dir / sample.instance_id
            return _grade_one(directory, source, sample, trial, parsers, rules)

        with ThreadPoolExecutor(WRITERS) as pool:
            graded_results = list(pool.map(grade, trials))
        for (sample, trial), result in zip(trials, graded_results, strict=True):
            results[trial.trial_id] = result
            report_file = logs_dir / sample.instance_id / "report.json"
            theirs = _their_verdict(report_file, sample.instance_id)
            if theirs is not None:
                compared += 1
                ours = f"{result.score.outcome} ({result.score.reason})"
                if not _agrees(str(result.score.outcome), theirs):
                    differences.append(
                        RegradeDifference(instance_id=sample.instance_id, ours=ours, theirs=theirs)
                    )
        ordered = [results[t.trial_id] for t in lockfile.trials]
        directory.write_results(aggregate(lockfile.experiment, model, ordered))
        summary = RegradeSummary(
            logs=str(logs_dir.resolve()),
            dataset=str(dataset_file.resolve()),
            model=model,
            run_id=run_id,
            graded=len(ordered),
            resolved=sum(r.score.outcome == "resolved" for r in ordered),
            compared=compared,
            differences=differences,
        )
        atomic.write_text(directory.path / "regrade.json", summary.model_dump_json(indent=2) + "\n")
        # Under the logs' own run id: the tree reads as the one it was made from.
        directory.write_swebench_layout(run_id)
    return summary


def _lockfile(
    config: ExperimentConfig,
    trials: list[tuple[Sample, Trial]],
    predictions: dict,
    parsers: dict[str, LogParser],
) -> Lockfile:
    config_data = portable(config.model_dump(mode="json"))
    instances = [
        LockedInstance(
            instance_id=sample.instance_id,
            repo=sample.repo,
            base_commit=sample.base_commit,
            digest=sample.digest(),
            fields=sample.field_digests(),
            test_spec_digest=trial.key.test_spec_digest,
            parser=parsers[sample.instance_id].name,
        )
        for sample, trial in trials
    ]
    locked_predictions = [
        LockedPrediction(
            instance_id=sample.instance_id,
            sample_index=0,
            patch_digest=sha256_bytes(patch_bytes(predictions[sample.instance_id].model_patch)),
        )
        for sample, _ in trials
    ]
    environment = {k: v for k, v in config_data["environment"].items() if k != "build"}
    return Lockfile(
        experiment=config.name,
        harness=harness(),
        config=config_data,
        config_digest=sha256_json(config_data),
        dataset=LockedDataset(
            name=config.dataset.name,
            test_ids=str(config.dataset.test_ids),
            digest=sha256_json([instance.digest for instance in instances]),
            instances=instances,
        ),
        target=LockedTarget(
            kind="logs",
            target_id=config.target.name,  # type: ignore[union-attr]
            samples=1,
            digest=sha256_json([p.model_dump(mode="json") for p in locked_predictions]),
            predictions=locked_predictions,
        ),
        environment=LockedEnvironment(kind="recorded", digest=sha256_json(environment), images=[]),
        gate=config.gate,
        trials=[
            LockedTrial(trial_id=trial.trial_id, key=trial.key, image_key="") for _, trial in trials
        ],
    )


def _grade_one(
    directory: RunDirectory,
    source: Path,
    sample: Sample,
    trial: Trial,
    parsers: dict[str, LogParser],
    rules: Literal["swebench", "strict"],
) -> TrialResult:
    folder = directory.trials_dir / trial.label / "attempt-1"
    started = datetime.now(UTC)
    atomic.write_bytes(folder / LOG_NAME, read_foreign_log(source / LOG_NAME))
    for name, copy in ((PATCH_NAME, PATCH_NAME), ("report.json", "swebench_report.json")):
        if (source / name).exists() or (source / name).is_symlink():
            data = read_regular_file(source / name, MAX_PATCH_BYTES, name)
            atomic.write_bytes(folder / copy, data)
    foreign = ForeignLog(
        instance_id=sample.instance_id,
        source=str((source / LOG_NAME).resolve()),
        parser=parsers[sample.instance_id].name,
        rules=rules,
    )
    atomic.write_text(folder / "foreign.json", foreign.model_dump_json(indent=2) + "\n")
    observation = observe_foreign(folder, sample)
    media = {
        LOG_NAME: "text/plain",
        "patch.diff": "text/x-diff",
        "swebench_report.json": "application/json",
        "foreign.json": "application/json",
    }
    attempt = Attempt(
        trial_id=trial.trial_id,
        number=1,
        reason="planned",
        started_at=started,
        finished_at=datetime.now(UTC),
        artifacts=[
            Artifact.of_file(folder / name, directory.path, kind)
            for name, kind in media.items()
            if (folder / name).exists()
        ],
        observation=observation,
        score=score(observation),
    )
    atomic.write_text(folder / "result.json", attempt.model_dump_json(indent=2) + "\n")
    result = TrialResult(
        trial=trial,
        instance_id=sample.instance_id,
        target_id=trial.key.target_id,
        sample_index=0,
        score=attempt.score,
        attempts=[attempt],
        limits={},
    )
    atomic.write_text(folder.parent / "result.json", result.model_dump_json(indent=2) + "\n")
    return result
