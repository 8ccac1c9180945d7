"""Verify: are two experiments comparable, and does a run directory hold up on its own?

``evalrepro verify A B`` compares two lockfiles (or the lockfiles of two run directories)
with :func:`evalrepro.plan.lockfile.differences`. Comparing two models, the targets differ by
design: that difference is information, not a failure. ``--same-target`` makes it a
reproduction check, in which the target must match too.

``evalrepro verify RUN`` checks one run directory end to end, from its files alone, and
reports every problem it finds rather than the first:

1. the lockfile is well-formed: each digest it holds agrees with what it digests;
2. every planned trial has a result, and every trial folder belongs to the plan;
3. every result is the locked trial's, and every artifact still has its digest;
4. ``results.json`` equals the aggregate rebuilt from the trial results;
5. each trial's final log, re-graded with the instance's parser, gives the recorded score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.markup import escape

from evalrepro.build.images import package_manifest_name
from evalrepro.console import Table
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.grade.foreign import recorded_spec_digest
from evalrepro.grade.parsers import LogParser, get_parser
from evalrepro.grade.score import score
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.plan.harness import code_digest
from evalrepro.plan.lockfile import (
    LOCKFILE_NAME,
    differences,
    lockfile_problems,
    read_lockfile,
    short_digest,
)
from evalrepro.plan.plugin_code import installed
from evalrepro.records.base import read_record
from evalrepro.records.foreign import ForeignLog
from evalrepro.records.lockfile import Difference, Lockfile
from evalrepro.records.report import RunResults
from evalrepro.records.score import Score
from evalrepro.records.trial import TrialResult, trial_label
from evalrepro.report.run_report import aggregate
from evalrepro.run.evidence import reobserve, survey
from evalrepro.run.rundir import RunDirectory
from evalrepro.sample import Sample

RecordT = TypeVar("RecordT", bound=BaseModel)

# --- two experiments -------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    first: Path
    second: Path
    same_target: bool
    #: What makes the two incomparable.
    differences: list[Difference]
    #: What differs by design (the targets, when comparing two models).
    information: list[Difference]

    @property
    def comparable(self) -> bool:
        return not self.differences

    def payload(self) -> dict:
        return {
            "comparable": self.comparable,
            "first": str(self.first),
            "second": str(self.second),
            "same_target": self.same_target,
            "differences": [d.model_dump() for d in self.differences],
            "information": [d.model_dump() for d in self.information],
        }


def locate_lockfile(path: Path, *, checked: bool = True) -> Lockfile:
    """The lockfile at ``path``: a lockfile itself, or a run directory's."""
    if path.is_dir():
        return RunDirectory.open(path, checked=checked)[1]
    if not path.exists():
        raise UserError(f"{path}: no such lockfile or run directory")
    return read_lockfile(path, checked=checked)


def compare(first: Path, second: Path, *, same_target: bool) -> Comparison:
    # Always compare the targets, so that a difference the user expects is still shown.
    found = differences(locate_lockfile(first), locate_lockfile(second), same_target=True)
    # Comparing two models, the trials (which instances each answered) follow the target.
    information = [] if same_target else [d for d in found if d.kind in ("target", "trials")]
    return Comparison(
        first=first,
        second=second,
        same_target=same_target,
        differences=[d for d in found if d not in information],
        information=information,
    )


# --- one run directory -----------------------------------------------------------------


class Problem(BaseModel):
    """One check a run directory failed, naming the file or trial at fault."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal[
        "lockfile",  # a digest in the lockfile disagrees with what it digests
        "missing",  # a planned trial without a result, or results.json absent
        "unplanned",  # a trial folder the plan does not have
        "result",  # a trial or attempt record unreadable, or not the locked trial's
        "artifact",  # a file missing or changed since its digest was recorded
        "results",  # results.json differs from the aggregate of the trial results
        "regrade",  # the final log re-graded does not give the recorded score
        "dataset",  # the instances to re-grade with are unavailable or changed
        "plan",  # the lockfile's trials are not the plan its own config and dataset give
        "plugin",  # a kind of another package is not installed here as the run used it
        # A bundle's own checks (bundle_verify):
        "checksum",  # a file against the bag's manifests
        "signature",  # the manifests' signature
        "bundle",  # the bundle's index and its inputs
        "attestation",  # the in-toto statement's subjects
        "crate",  # the RO-Crate metadata
        "predictions",  # the bundled predictions against the locked patches
        "report",  # a report or viewer page against the one the trial results give
    ]
    detail: str


@dataclass
class RunCheck:
    run: Path
    planned: int = 0
    #: Trials whose result was read and checked.
    checked: int = 0
    #: Trials whose final log was re-graded.
    regraded: int = 0
    #: The instances' test specs were compiled again and matched the lockfile's. Only a
    #: run of this harness code can be: a spec holds the harness's sandbox digest and the
    #: shape of its protection, so another harness compiles other specs from the same data.
    specs_rechecked: bool = True
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, kind: str, detail: str) -> None:
        self.problems.append(Problem(kind=kind, detail=detail))  # type: ignore[arg-type]

    def payload(self) -> dict:
        return {
            "ok": self.ok,
            "run": str(self.run),
            "planned": self.planned,
            "checked": self.checked,
            "regraded": self.regraded,
            "test_specs_rechecked": self.specs_rechecked,
            "problems": [p.model_dump() for p in self.problems],
        }


def check_run(
    path: Path, *, config_paths: Mapping[str, str] | None = None, bundled: bool = False
) -> RunCheck:
    """Every problem of the run directory at ``path``; a corrupt lockfile is a UserError.

    ``config_paths``: the config's files elsewhere (a bundle's copy of the dataset), by
    dotted key, as :meth:`Lockfile.experiment_config` takes them. ``bundled``: the run
    inside a bundle, which is made only from a finished run that verifies: a file it
    lacks is missing from the bundle, not a trial that did not finish."""
    directory, lockfile = RunDirectory.open(path, checked=False)
    check = RunCheck(run=directory.path, planned=len(lockfile.trials))
    _check_lockfile(check, lockfile)
    _check_plan(check, lockfile, config_paths)
    _check_plugins(check, lockfile)
    _check_sessions(check, directory)
    why = "missing from the bundle" if bundled else None
    results = _check_trials(check, directory, lockfile, why or "the trial did not finish")
    _check_image_manifests(check, directory, lockfile)
    _check_aggregate(check, directory, lockfile, results, why or "the run did not finish")
    _regrade(check, directory, lockfile, results, config_paths)
    return check


def _check_lockfile(check: RunCheck, lockfile: Lockfile) -> None:
    for problem in lockfile_problems(lockfile):
        check.add("lockfile", f"{LOCKFILE_NAME}: {problem}")


def _check_plan(
    check: RunCheck, lockfile: Lockfile, config_paths: Mapping[str, str] | None
) -> None:
    """The lockfile's trials against the plan its own config and dataset give: a run
    whose lockfile, results and reports were rewritten together to drop a trial keeps
    its config and dataset, and they name the trial (docs/threat-model.md, "The author")."""
    from evalrepro.plan.plan import plan_shape, trimmed

    try:
        shape = plan_shape(lockfile.experiment_config(config_paths))
    except UserError as error:
        check.add("plan", f"cannot make the plan its config and dataset give: {error}")
        return
    locked = [(t.key.instance_id, t.key.sample_index) for t in lockfile.trials]
    for line in trimmed(shape, locked):
        check.add("plan", f"{LOCKFILE_NAME}: {line}")


def _check_plugins(check: RunCheck, lockfile: Lockfile) -> None:
    """Each kind of another package the run used, against the one installed here: its
    trials' ids hold its code, and a log re-graded by other code may read otherwise."""
    for locked in lockfile.harness.plugins:
        try:
            here = installed(locked.group, locked.kind)  # type: ignore[arg-type]
        except (UserError, ImportError):
            found = "it is not installed here"
        else:
            if here == locked:
                continue
            found = f"here it is {here.describe()}" if here else "here it is evalrepro's own"
        check.add("plugin", f"the run used {locked.describe()}; {found}")


def _check_sessions(check: RunCheck, directory: RunDirectory) -> None:
    """The lockfile's sha256 against the one run.json recorded at the first session."""
    from evalrepro.run.sessions import lockfile_drift

    drift = lockfile_drift(directory.path)
    if drift is not None:
        check.add("lockfile", drift)


def _check_trials(
    check: RunCheck, directory: RunDirectory, lockfile: Lockfile, why: str
) -> dict[str, TrialResult]:
    """The results that could be read, by trial id; each problem on the way is recorded
    (the one trust check resume refuses on: ``evalrepro.run.evidence``)."""
    found = survey(directory.path, lockfile)
    for problem in found.problems:
        check.add(problem.kind, problem.message)
    for trial in lockfile.trials:
        label = trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)
        if not (directory.trials_dir / label / "result.json").is_file():
            if why == "missing from the bundle":
                check.add("missing", f"trials/{label}: {why} (no result.json)")
            else:
                check.add("missing", f"trials/{label}: no result.json ({why})")
    check.checked = len(found.readable)
    # Every result that is the locked trial's goes on to the aggregate and regrade
    # checks, trusted or not, so that every problem is listed.
    return found.readable


def _check_image_manifests(check: RunCheck, directory: RunDirectory, lockfile: Lockfile) -> None:
    """Each base image's package list, kept beside the results, against its locked digest."""
    for image in lockfile.environment.images:
        if image.package_manifest_digest is None:
            continue
        manifest = directory.path / package_manifest_name(image.key)
        where = _rel(directory, manifest)
        if not manifest.is_file():
            check.add("artifact", f"{where}: missing (the base image's package list)")
        elif sha256_bytes(manifest.read_bytes()) != image.package_manifest_digest:
            check.add(
                "artifact",
                f"{where}: changed since it was locked "
                f"(sha256 {short_digest(image.package_manifest_digest)})",
            )


def _check_aggregate(
    check: RunCheck,
    directory: RunDirectory,
    lockfile: Lockfile,
    results: dict[str, TrialResult],
    why: str,
) -> None:
    # report.results.rebuild_results stops at the first tampered trial; this is the same
    # aggregate over the results that could be read, so every other check still runs.
    ordered = [results[t.trial_id] for t in lockfile.trials if t.trial_id in results]
    rebuilt = aggregate(
        lockfile.experiment,
        lockfile.target.target_id,
        ordered,
        planned=len(lockfile.trials),
        lockfile=lockfile,
    )
    results_file = directory.path / "results.json"
    if not results_file.is_file():
        check.add("missing", f"results.json: missing ({why})")
        return
    recorded = _read(results_file, RunResults, check, directory)
    if recorded is not None and recorded.pass_at_k is None and recorded.pass_hat_k is None:
        # A results.json of schema 2 recorded no pass@k: nothing claimed, nothing to check.
        rebuilt = rebuilt.model_copy(update={"pass_at_k": None, "pass_hat_k": None})
    if recorded is None or recorded == rebuilt:
        return
    ours, theirs = recorded.model_dump(mode="json"), rebuilt.model_dump(mode="json")
    for name in ours:
        if name != "trials" and ours[name] != theirs[name]:
            check.add(
                "results",
                f"results.json: {name} is {json.dumps(ours[name])}, the trial results give "
                f"{json.dumps(theirs[name])}",
            )
    lines = {line["trial_id"]: line for line in ours["trials"]}
    rebuilt_lines = {line["trial_id"]: line for line in theirs["trials"]}
    for trial in lockfile.trials:
        line, rebuilt_line = lines.get(trial.trial_id), rebuilt_lines.get(trial.trial_id)
        if line != rebuilt_line:
            label = trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)
            listed = f"lists {_line(line)}" if line else "does not list it"
            truth = f"says {_line(rebuilt_line)}" if rebuilt_line else "is missing"
            check.add("results", f"results.json: trial {label}: {listed}, its trial result {truth}")


def _line(line: dict) -> str:
    attempts = line["attempts"]
    return f"{line['outcome']} ({line['reason']}; {attempts} attempt{'' if attempts == 1 else 's'})"


def _regrade(
    check: RunCheck,
    directory: RunDirectory,
    lockfile: Lockfile,
    results: dict[str, TrialResult],
    config_paths: Mapping[str, str] | None = None,
) -> None:
    """Re-grade each final log with the locked parser; the score must be the recorded one."""
    if not results:
        return
    samples = _locked_samples(check, lockfile, config_paths)
    if samples is None:
        return
    parsers: dict[str, LogParser | None] = {}
    for instance in lockfile.dataset.instances:
        try:
            parsers[instance.instance_id] = get_parser(instance.parser)
        except UserError as error:
            check.add("dataset", f"{instance.instance_id}: {error}")
            parsers[instance.instance_id] = None
    for trial in lockfile.trials:
        result = results.get(trial.trial_id)
        sample, parser = samples.get(trial.key.instance_id), parsers.get(trial.key.instance_id)
        if result is None or sample is None or parser is None:
            continue
        number = len(result.attempts)
        final = result.attempts[-1]
        folder = directory.trials_dir / trial_label(
            trial.key.instance_id, trial.key.sample_index, trial.trial_id
        )
        attempt_dir = folder / f"attempt-{number}"
        log_file = attempt_dir / "test_output.txt"
        recorded = final.observation
        try:
            observation = reobserve(attempt_dir, sample, parser)
        except (OSError, ValueError, UserError) as error:
            check.add("regrade", f"{_rel(directory, attempt_dir)}: cannot re-observe ({error})")
            continue
        check.regraded += 1
        where = _rel(directory, log_file)
        if _legacy_regrade(lockfile):
            recorded_spec = _recorded_spec_digest(attempt_dir, sample, parser)
            if recorded_spec != trial.key.test_spec_digest:
                check.add(
                    "regrade",
                    f"{where}: graded against test spec {short_digest(recorded_spec)}, the "
                    f"lockfile recorded {short_digest(trial.key.test_spec_digest)}",
                )
        regraded = score(observation)
        if regraded != result.score:
            check.add(
                "regrade",
                f"{where}: re-graded {_outcome(regraded)}, recorded {_outcome(result.score)}",
            )
        elif observation != recorded:
            changed = [
                name
                for name, value in observation.model_dump().items()
                if recorded.model_dump()[name] != value
            ]
            check.add(
                "regrade",
                f"{where}: same score, but the observation differs in {', '.join(changed)}",
            )


def _locked_samples(
    check: RunCheck, lockfile: Lockfile, config_paths: Mapping[str, str] | None = None
) -> dict[str, Sample] | None:
    """The dataset's instances, each as the lockfile recorded it (by digest), and with
    the TestSpec it recorded (by digest): what a log is re-graded against."""
    try:
        dataset = lockfile.experiment_config(config_paths).dataset
        loaded = {sample.instance_id: sample for sample in dataset.load()}
    except UserError as error:
        check.add("dataset", f"cannot re-grade: {error}")
        return None
    samples = {}
    same_harness = lockfile.harness.code_digest == code_digest()
    check.specs_rechecked = same_harness
    for instance in lockfile.dataset.instances:
        sample = loaded.get(instance.instance_id)
        if sample is None:
            check.add("dataset", f"{instance.instance_id}: not in the dataset any more")
            continue
        if sample.digest() != instance.digest:
            check.add(
                "dataset", f"{instance.instance_id}: the instance changed since it was locked"
            )
            continue
        if same_harness and not _legacy_regrade(lockfile):
            # A recorded log's spec also names its reading rules: checked per log.
            try:
                spec = instance_test_spec(dataset, sample).model_copy(
                    update={
                        "outside_files": instance.outside_files,
                        "outside_left": instance.outside_left,
                    }
                )
                spec_digest = spec.digest()
            except UserError as error:
                check.add("dataset", f"{instance.instance_id}: no test spec ({error})")
                continue
            if spec_digest != instance.test_spec_digest:
                check.add(
                    "dataset",
                    f"{instance.instance_id}: its test spec is {short_digest(spec_digest)} "
                    f"here, the lockfile recorded {short_digest(instance.test_spec_digest)}",
                )
                continue
        samples[instance.instance_id] = sample
    return samples


def _legacy_regrade(lockfile: Lockfile) -> bool:
    """A regrade of evalrepro 0.2: its "test spec" digests the parser, the reading rules and
    the test lists (no TestSpec of ours), checked per log. A regrade since is planned like
    any run, and its test specs are checked like any run's."""
    return lockfile.environment.kind == "recorded" and not lockfile.environment.builder


def _recorded_spec_digest(attempt_dir: Path, sample: Sample, parser: LogParser) -> str:
    try:
        rules = read_record(attempt_dir / "foreign.json", ForeignLog).rules
    except UserError as error:
        return f"unreadable ({error})"
    return recorded_spec_digest(sample, parser, rules)


def _read(
    path: Path, model: type[RecordT], check: RunCheck, directory: RunDirectory
) -> RecordT | None:
    try:
        return read_record(path, model)
    except UserError as error:
        check.add("result", str(error).replace(str(path), _rel(directory, path), 1))
    return None


def _rel(directory: RunDirectory, path: Path) -> str:
    return path.relative_to(directory.path).as_posix()


def _outcome(result: Score) -> str:
    return f"{result.outcome} ({result.reason})"


# --- output for people ---------------------------------------------------------------


def print_comparison(console: Console, comparison: Comparison) -> None:
    rows = [(d, "red") for d in comparison.differences] + [
        (d, "dim") for d in comparison.information
    ]
    if rows:
        table = Table("class", "difference", title_justify="left")
        for difference, style in rows:
            # Details quote ids, paths and tags from the records: text, never markup.
            table.add_row(difference.kind, escape(difference.detail), style=style)
        console.print(table, highlight=False)
    if comparison.information:
        console.print("[dim]targets differ by design (compare models); --same-target to fail[/]")
    if comparison.comparable:
        console.print(
            f"[bold green]comparable[/]: {escape(str(comparison.first))} and "
            f"{escape(str(comparison.second))}",
            highlight=False,
        )
    else:
        console.print(
            f"[bold red]not comparable[/]: {_count(len(comparison.differences), 'difference')} "
            f"between {escape(str(comparison.first))} and {escape(str(comparison.second))}",
            highlight=False,
        )


def print_run_check(console: Console, check: RunCheck) -> None:
    if check.problems:
        table = Table("check", "problem", title=escape(str(check.run)), title_justify="left")
        for problem in check.problems:
            table.add_row(problem.kind, escape(problem.detail), style="red")
        console.print(table, highlight=False)
    summary = (
        f"{check.planned} planned trials, {check.checked} results checked, "
        f"{check.regraded} logs re-graded"
    )
    if not check.specs_rechecked:
        summary += "; test specs not recompiled (the run's harness code is not this evalrepro's)"
    if check.ok:
        console.print(f"[bold green]ok[/]: {escape(str(check.run))}: {summary}", highlight=False)
    else:
        console.print(
            f"[bold red]{_count(len(check.problems), 'problem')}[/] in "
            f"{escape(str(check.run))}: {summary}",
            highlight=False,
        )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
