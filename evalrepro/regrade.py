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

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import ValidationError
from rich.console import Console

from evalrepro import atomic
from evalrepro.config.dataset import DatasetConfig
from evalrepro.config.environment import RecordedEnvironment
from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.config.experiment import ExperimentConfig, _resolve_paths, default_gate
from evalrepro.config.spec import RepoSpec
from evalrepro.errors import UserError, validation_message
from evalrepro.files import read_regular_file
from evalrepro.grade.foreign import MAX_PATCH_BYTES
from evalrepro.grade.parsers import Family, LogParser, get_parser
from evalrepro.grade.parsers.swebench_repos import SWEBENCH_REPO_PARSERS
from evalrepro.pipeline import run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.records.regrade import RegradeDifference, RegradeSummary
from evalrepro.records.report import SwebenchFields
from evalrepro.sample import Sample, load_samples
from evalrepro.targets.logs import LogsTarget

#: Logs graded at once, by threads of this one process. Each trial writes five records,
#: each atomically with its own fsync, and the disk commits concurrent fsyncs together:
#: 2,294 SWE-bench-sized logs take 15 s instead of 24 s one at a time
#: (``benchmarks/grading_throughput.py``). Parsing holds the GIL; the waits do not.
WRITERS = 8
LOG_NAME = "test_output.txt"
#: The test command a recorded log's spec names: nothing of ours runs it.
RECORDED_COMMAND = "(run by the harness that wrote the log)"


def _load_dataset(path: Path) -> tuple[DatasetConfig | None, list[Sample]]:
    """An instances file (JSON, JSONL, Parquet), or a dataset config (YAML, as under
    ``conf/dataset/``: its instances and its specs, whose parsers are taken per repo and
    version as ``run`` takes them)."""
    if path.suffix not in (".yaml", ".yml"):
        return None, load_samples(path)
    if not path.is_file():
        raise UserError(f"--dataset {path}: no such file")
    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    except (OmegaConfBaseException, yaml.YAMLError, UnicodeDecodeError, OSError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"--dataset {path}: not a dataset config ({first})") from None
    if not isinstance(raw, dict):
        raise UserError(
            f"--dataset {path}: not a dataset config (a mapping: name, instances, test_ids, specs)"
        )
    try:
        # Relative paths are the config's neighbours, as --config-dir's are.
        dataset = DatasetConfig.model_validate(_resolve_paths(raw, path.resolve().parent))
    except ValidationError as error:
        raise UserError(
            f"--dataset {path}: {validation_message(error, model=DatasetConfig)}"
        ) from None
    return dataset, dataset.load()


def _parser_for(sample: Sample, name: str | None, dataset: DatasetConfig | None) -> LogParser:
    """As ``run`` picks it: the instance's own (``log_parser``), else ``--parser``, else
    the dataset config's spec for its repo and version, else SWE-bench's for its repo."""
    if sample.parser is not None:
        own = get_parser(sample.parser)
        if name is not None and get_parser(name).name != own.name:
            # The run reads the instance's own field first: an override would be ignored.
            raise UserError(
                f"instance '{sample.instance_id}' names its own parser '{own.name}' "
                f"(its log_parser field), which --parser {name} cannot override: drop one"
            )
        return own
    if name is not None:
        return get_parser(name)
    spec = (dataset.specs.get(sample.repo) or {}).get(sample.version) if dataset else None
    chosen = spec.parser if spec is not None else SWEBENCH_REPO_PARSERS.get(sample.repo)
    if chosen is None:
        raise UserError(
            f"instance '{sample.instance_id}' names no log parser (log_parser), no spec "
            f"names one for '{sample.repo}' version '{sample.version}' and '{sample.repo}' "
            "is not a SWE-bench repo; give it one, or pass --parser (see 'evalrepro parsers')"
        )
    return get_parser(chosen)


def _one_family(parsers: dict[str, LogParser], dataset: DatasetConfig | None) -> Family:
    """The family the regrade's test ids come from: one per dataset, as for ``run``."""
    if dataset is not None:
        for instance_id, parser in parsers.items():
            if parser.family is not dataset.test_ids:
                raise UserError(
                    f"dataset '{dataset.name}': instance '{instance_id}' uses parser "
                    f"'{parser.name}' ({parser.family} family) but the dataset's test ids "
                    f"come from the {dataset.test_ids} family"
                )
        return dataset.test_ids
    first_id, first = next(iter(parsers.items()))
    for instance_id, parser in parsers.items():
        if parser.family is not first.family:
            raise UserError(
                f"instance '{first_id}' uses parser '{first.name}' ({first.family} family) "
                f"and '{instance_id}' '{parser.name}' ({parser.family}): one dataset's test "
                "ids come from one family; name parsers of one family (per instance: "
                "log_parser; per repo and version: a dataset config's specs)"
            )
    return first.family


def _their_verdict(report_file: Path, instance_id: str) -> str | None:
    """What swebench's report.json says of the instance (None: no readable report). A
    report.json is swebench's sign of a completed instance: resolved or not, never an
    error (``make_run_report``)."""
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
    """``ours``: the instance in swebench's terms, as our layout lists it (its run
    report's resolved / unresolved / error / empty ids): agreement is the same list."""
    if theirs == "resolved":
        return ours == "resolved"
    return ours == "unresolved"


def _swebench_terms(fields: SwebenchFields) -> dict[str, str]:
    """Each instance's list in the run report our layout wrote (``RUN/swebench/``)."""
    lists = {
        "resolved": fields.resolved_ids,
        "unresolved": fields.unresolved_ids,
        "error": fields.error_ids,
        "empty patch": fields.empty_patch_ids,
    }
    return {instance_id: kind for kind, ids in lists.items() for instance_id in ids}


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
    dataset, loaded = _load_dataset(dataset_file)
    samples = {sample.instance_id: sample for sample in loaded}
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
    parsers = {s.instance_id: _parser_for(s, parser, dataset) for s in graded}
    family = _one_family(parsers, dataset)
    # Each log's spec names the parser of the instances of its repo and version that name
    # none of their own (an instance's own ``log_parser`` is read first, as in ``run``).
    specs: dict[str, dict[str, RepoSpec]] = {}
    for sample in sorted(graded, key=lambda s: s.parser is None):
        specs.setdefault(sample.repo, {})[sample.version] = RepoSpec(
            test_cmd=RECORDED_COMMAND, parser=parsers[sample.instance_id].name
        )
    return ExperimentConfig(
        name=f"regrade-{model}",
        dataset=DatasetConfig(
            name=dataset.name if dataset else dataset_file.stem,
            instances=Path(dataset.instances).resolve() if dataset else dataset_file.resolve(),
            test_ids=family,
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
    # Compared as the layout says it (one definition): an instance our layout lists as
    # an error disagrees with a report.json of theirs, whatever both call "not resolved".
    listed = _swebench_terms(outcome.report.swebench)
    for line in outcome.results.trials:
        if line.sample_index != 0:
            continue
        theirs = _their_verdict(logs_dir / line.instance_id / "report.json", line.instance_id)
        if theirs is None:
            continue
        compared += 1
        ours = listed.get(line.instance_id, "not listed")
        if not _agrees(ours, theirs):
            differences.append(
                RegradeDifference(
                    instance_id=line.instance_id,
                    ours=f"{ours} ({line.outcome}: {line.reason})",
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
