"""SWE-bench's output layout for a run: what its harness would write, from our verdicts.

Tools built for SWE-bench read its run directory, so a run (or a re-grade) also writes
``RUN/swebench/`` the way swebench 5.0.2's ``run_evaluation`` lays out its working
directory::

    RUN/swebench/
      logs/run_evaluation/<run_id>/<model>/<instance_id>/
        report.json        swebench's schema (``get_eval_report``), our verdict
        test_output.txt    the final attempt's, byte for byte
        patch.diff         the final attempt's, byte for byte
      <model>.<run_id>.json   the run report, every key of ``make_run_report``

``<model>`` is the prediction's ``model_name_or_path`` with "/" replaced by "__", as
swebench names it (``run_instance`` and ``make_run_report``), and the run report is
named by the first prediction's (swebench: the first in its predictions file; here, in
the instances' order). A ``target.name`` that renames the predictions names the target
in evalrepro's trial ids, results and reports, never here: a SWE-bench user's own
``make_run_report``, fed the predictions file, looks where the predictions say.

Our verdict, said in swebench's terms (``score.Outcome`` and its reason decide):

* resolved -> ``report.json`` with ``resolved: true`` and the F2P/P2P lists;
* unresolved -> ``report.json`` with ``resolved: false``: the lists when the tests were
  graded (``tests_failed``), else (a patch rejected, unsafe or whitespace only) no
  ``tests_status`` and ``patch_successfully_applied: false``;
* invalid -> no ``report.json``: what swebench's harness leaves for an instance whose
  evaluation errored (timeout, broken environment), so ``make_run_report`` counts it
  in ``error_ids``; the test output and patch are still there for a reader; but an
  unscorable log (``log_unparseable``) -> ``report.json`` with ``resolved: false`` and
  no ``tests_status``: swebench grades every log its run finished, and that is what its
  ``get_eval_report`` writes for one its reader finds nothing in (``make_run_report``:
  completed, unresolved);
* an empty patch (``""`` or none, swebench's rule; the final attempt's ``patch.diff``
  when there is one, else the plan's; an agent that left none) -> nothing at all:
  swebench never runs one, and
  lists it in ``empty_patch_ids``; a patch nobody kept (a regraded log whose folder held
  no ``patch.diff``: swebench ran a patch, its log says so) -> its verdict, without a
  ``patch.diff``; a trial without a result yet -> nothing (an error, as a crashed
  instance is there); an instance without a prediction -> ``incomplete_ids``.

The run report lists what ``make_run_report`` computes from that tree (it is tested
against it: same ids). Only its advisory classification of failures (swebench #586:
``infra_failure_*``, ``ambiguous_failure_*``, ``failure_reasons``) comes from our
verdict instead of swebench's log regexes, because ours knows what happened: an
``infrastructure_error`` is an environment fault; a trial the patch made invalid
(suspect code, changed test infrastructure, an abnormal runner exit) is the patch's
doing and is not classified; every other invalid trial (timeout, limit, sandbox died,
reset not verified, unscorable log) is ambiguous. ``failure_reasons`` names our reason.
Resolved and unresolved trials are never classified, so every ``report.json`` says
``infra_failure: false``.

A target with several samples per instance: swebench keys predictions by instance id
and has no convention for more than one, so only sample 0 is written.

Every file is written atomically; what an earlier call wrote and this call would not
write is removed: a file of a verdict changed by a re-grade, and a tree or run report
under another run id or model name (the layout holds one run: a rebuild replaces it).
The run id is the caller's: a run's is the one its layout was first written under
(``RunDirectory.swebench_run_id``), so renaming the run's folder does not rename it.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from evalrepro import atomic
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.grade.score import TEST_REASONS
from evalrepro.records.artifact import Artifact
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.score import Outcome
from evalrepro.records.trial import Attempt, TrialResult
from evalrepro.text import inside

#: Under the run directory.
LAYOUT_DIR = "swebench"
#: swebench's RUN_EVALUATION_LOG_DIR, under LAYOUT_DIR.
RUN_EVALUATION = PurePosixPath("logs/run_evaluation")
#: The attempt artifacts swebench keeps per instance, by the names it gives them.
COPIED_ARTIFACTS = ("test_output.txt", "patch.diff")
REPORT = "report.json"
#: make_run_report's schema_version in swebench 5.0.2.
RUN_REPORT_SCHEMA_VERSION = 2
_EMPTY_PATCH = sha256_bytes(b"")

#: Our reasons for an invalid trial, in swebench's failure tiers (see the docstring).
_ENVIRONMENT_REASONS = frozenset({"infrastructure_error"})
_PATCH_REASONS = frozenset({"suspect_patch", "test_infrastructure_changed", "runner_exit_abnormal"})
#: An agent's trial that left no patch to test (its own answer: an empty one).
_AGENT_NO_PATCH = frozenset({"agent_no_diff", "agent_budget_exhausted", "agent_error"})
#: Reasons that come from graded tests: swebench's "found" (its patch applied).
_GRADED_REASONS = frozenset(TEST_REASONS)
#: Files written at once: each is fsynced, and the disk commits concurrent fsyncs
#: together (three files per instance; with the run's survey, 2,294 instances take 3.8 s
#: instead of 7.1 s one file at a time: ``benchmarks/grading_throughput.py``).
_WRITERS = 8


def swebench_model_dir(model: str) -> str:
    """The folder (and run-report prefix) swebench gives ``model_name_or_path``."""
    return model.replace("/", "__")


class Verdicts:
    """Each instance of a run in swebench's terms: the id lists of its run report, and the
    result whose files its layout keeps (one definition for the files and the report)."""

    def __init__(self, lockfile: Lockfile, results: dict[str, TrialResult]) -> None:
        predictions = {p.instance_id: p for p in lockfile.target.predictions if p.sample_index == 0}
        #: instance id -> its prediction's model_name_or_path (swebench's folder name).
        self.models = {
            instance_id: prediction.model_name_or_path or lockfile.target.target_id
            for instance_id, prediction in predictions.items()
        }
        trials = {t.key.instance_id: t for t in lockfile.trials if t.key.sample_index == 0}
        self.dataset = [instance.instance_id for instance in lockfile.dataset.instances]
        self.submitted = sorted(predictions)
        self.ids: dict[str, set[str]] = {
            kind: set()
            for kind in ("completed", "resolved", "unresolved", "error", "incomplete", "empty")
        }
        self.tiers: dict[str, set[str]] = {"environment": set(), "ambiguous": set()}
        self.reasons: dict[str, str] = {}
        #: instance id -> its final result, for every instance that keeps files.
        self.kept: dict[str, TrialResult] = {}
        for instance_id in self.dataset:
            prediction = predictions.get(instance_id)
            if prediction is None:
                self.ids["incomplete"].add(instance_id)
                continue
            trial = trials.get(instance_id)
            result = results.get(trial.trial_id) if trial is not None else None
            # An agent's patch is made in its trial: none is in the plan.
            planned = None if lockfile.target.kind == "agent" else prediction.patch_digest
            if _empty_patch(planned, result):
                self.ids["empty"].add(instance_id)
                continue
            if result is None:
                self.ids["error"].add(instance_id)
                continue
            self.kept[instance_id] = result
            if result.score.outcome is Outcome.INVALID:
                tier = _tier(result.score.reason)
                if tier is not None:
                    self.tiers[tier].add(instance_id)
                    self.reasons[instance_id] = result.score.reason
                if not unreadable_log(result):
                    self.ids["error"].add(instance_id)
                    continue
            self.ids["completed"].add(instance_id)
            outcome = "resolved" if result.score.outcome is Outcome.RESOLVED else "unresolved"
            self.ids[outcome].add(instance_id)

    def verdict(self, instance_id: str) -> str:
        """The instance in swebench's terms: the run report list that holds it
        (resolved, unresolved, error, empty, incomplete)."""
        for kind in ("resolved", "unresolved", "error", "empty", "incomplete"):
            if instance_id in self.ids[kind]:
                return kind
        return "not in the dataset"

    def run_report(self) -> dict[str, Any]:
        return run_report(self.dataset, self.submitted, self.ids, self.tiers, self.reasons)

    def report_model(self, default: str) -> str:
        """The model the run report is named by: swebench takes its first prediction's
        (in its predictions' order; here, the instances' order); ``default`` without
        predictions."""
        return next(iter(sorted(self.models.items())), ("", default))[1]


def write_swebench_layout(
    run_dir: Path,
    lockfile: Lockfile,
    results: dict[str, TrialResult],
    *,
    run_id: str,
    model: str,
    intact: bool = False,
) -> Path:
    """Write ``RUN/swebench/`` for the trials of ``lockfile`` (``results`` by trial id).

    Each instance's folder is named by its prediction's ``model_name_or_path`` (the
    lockfile's, else ``model``, the target's id), as swebench names it.
    ``intact``: the caller knows every artifact still has its digest (the run that just
    recorded or checked them), so they are not hashed again. Returns the run report's
    path, ``RUN/swebench/<model>.<run_id>.json``.
    """
    _check_name(run_id, "run id")
    root = run_dir / LAYOUT_DIR
    runs_dir = root / RUN_EVALUATION / run_id
    verdicts = Verdicts(lockfile, results)
    model_dirs = {
        instance_id: swebench_model_dir(name) for instance_id, name in verdicts.models.items()
    }
    for name in {*model_dirs.values(), swebench_model_dir(model)}:
        _check_name(name, "model name")
    # Everything is checked before anything is written: a refused artifact leaves the
    # previous tree as it was.
    copies: list[tuple[Path, Artifact]] = []
    reports: list[tuple[Path, dict[str, Any]]] = []
    #: model folder -> instance id -> the names written there.
    written: dict[str, dict[str, set[str]]] = {}
    for instance_id in verdicts.dataset:
        _check_name(instance_id, "instance id")
    for instance_id, result in verdicts.kept.items():
        folder = runs_dir / model_dirs[instance_id] / instance_id
        names = written.setdefault(model_dirs[instance_id], {}).setdefault(instance_id, set())
        for name in COPIED_ARTIFACTS:
            artifact = _artifact(result.attempts[-1], name)
            if artifact is not None:
                _check_artifact(run_dir, artifact, intact)
                copies.append((folder / name, artifact))
                names.add(name)
        if result.score.outcome is not Outcome.INVALID or unreadable_log(result):
            reports.append((folder / REPORT, instance_report(instance_id, result)))
            names.add(REPORT)

    # Every folder written to (or removed from) resolves inside the run directory: a link
    # planted at swebench/ or below cannot send a write or a removal elsewhere.
    for folder in {root, *(target.parent for target, _ in [*copies, *reports])}:
        inside(run_dir, folder.relative_to(run_dir), "SWE-bench layout folder")
    for model_dir in {*model_dirs.values(), swebench_model_dir(model)}:
        inside(run_dir, (runs_dir / model_dir).relative_to(run_dir), "SWE-bench layout folder")

    def copy(item: tuple[Path, Artifact]) -> None:
        target, artifact = item
        atomic.write_bytes(target, (run_dir / artifact.path).read_bytes())

    def write_report(item: tuple[Path, dict[str, Any]]) -> None:
        target, report = item
        # swebench writes json.dumps(report, indent=4), without a final newline.
        atomic.write_text(target, json.dumps(report, indent=4))

    with ThreadPoolExecutor(_WRITERS) as pool:
        # list(): the first failed write raises here.
        list(pool.map(copy, copies))
        list(pool.map(write_report, reports))
    for model_dir in {*model_dirs.values(), swebench_model_dir(model)}:
        _remove_stale(runs_dir / model_dir, written.get(model_dir, {}))

    path = root / f"{swebench_model_dir(verdicts.report_model(model))}.{run_id}.json"
    # swebench prints json.dumps(report, indent=4) into the file: one final newline.
    atomic.write_text(path, json.dumps(verdicts.run_report(), indent=4) + "\n")
    # The layout is one run's: a tree or run report an earlier call wrote under another
    # run id (a folder renamed since) or model name (the target's id) would be a second
    # run to whoever reads it. Ours alone are under RUN/swebench/.
    trees = root / RUN_EVALUATION
    for tree in trees.iterdir() if trees.is_dir() else ():
        if tree.name != run_id:
            _remove(tree)
    for report in root.glob("*.json"):
        if report != path:
            _remove(report)
    return path


def instance_report(instance_id: str, result: TrialResult) -> dict[str, Any]:
    """``report.json`` of a resolved or unresolved trial, in swebench 5.0.2's schema."""
    observation = result.attempts[-1].observation
    graded = result.score.reason in _GRADED_REASONS and observation.tests is not None
    entry: dict[str, Any] = {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": graded,
        "resolved": result.score.outcome is Outcome.RESOLVED,
        "infra_failure": False,
    }
    if graded and observation.tests is not None:
        # FAIL_TO_FAIL / PASS_TO_FAIL stay empty, as swebench's harness leaves them.
        entry["tests_status"] = {
            "FAIL_TO_PASS": observation.tests.fail_to_pass.model_dump(),
            "PASS_TO_PASS": observation.tests.pass_to_pass.model_dump(),
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        }
    return {instance_id: entry}


def run_report(
    dataset: list[str],
    submitted: list[str],
    ids: dict[str, set[str]],
    tiers: dict[str, set[str]],
    reasons: dict[str, str],
) -> dict[str, Any]:
    """The run report with make_run_report's keys, in its order (no container keys: a
    run of ours leaves no container behind for it to list)."""
    return {
        "total_instances": len(dataset),
        "submitted_instances": len(submitted),
        "completed_instances": len(ids["completed"]),
        "resolved_instances": len(ids["resolved"]),
        "unresolved_instances": len(ids["unresolved"]),
        "infra_failure_instances": len(tiers["environment"]),
        "ambiguous_failure_instances": len(tiers["ambiguous"]),
        "empty_patch_instances": len(ids["empty"]),
        "error_instances": len(ids["error"]),
        "completed_ids": sorted(ids["completed"]),
        "incomplete_ids": sorted(ids["incomplete"]),
        "empty_patch_ids": sorted(ids["empty"]),
        "submitted_ids": sorted(submitted),
        "resolved_ids": sorted(ids["resolved"]),
        "unresolved_ids": sorted(ids["unresolved"]),
        "infra_failure_ids": sorted(tiers["environment"]),
        "ambiguous_failure_ids": sorted(tiers["ambiguous"]),
        "failure_reasons": dict(sorted(reasons.items())),
        "error_ids": sorted(ids["error"]),
        "schema_version": RUN_REPORT_SCHEMA_VERSION,
    }


def _empty_patch(locked_digest: str | None, result: TrialResult | None) -> bool:
    """Whether swebench would call the instance's patch empty (``""`` or none).

    The patch is the one the final attempt recorded (``patch.diff``), when there is a
    result: a patch made in the run (an agent's) is not in the plan. An attempt without
    a ``patch.diff`` had no patch to show: an agent that left none (no diff, its budget
    or itself gave out) gave an empty answer; a foreign log whose folder kept no patch
    did not: swebench never runs an empty patch, so a log is the sign of one that was
    not, and its verdict is the log's. Without a result, the plan's patch decides
    (``locked_digest``; None: the plan holds none, as for an agent).
    """
    if result is None:
        return locked_digest == _EMPTY_PATCH
    recorded = _artifact(result.attempts[-1], "patch.diff")
    if recorded is not None:
        return recorded.sha256 == _EMPTY_PATCH
    return result.score.reason in _AGENT_NO_PATCH


def unreadable_log(result: TrialResult) -> bool:
    """A trial made invalid by a log no reader could score (``log_unparseable``): swebench
    grades every log its run finished and, when ``get_logs_eval`` finds nothing, writes a
    ``report.json`` saying ``resolved: false`` (the patch not applied): ``make_run_report``
    counts it completed and unresolved, and so does the layout. Our verdict (invalid)
    stays in the run's own records, and in ``failure_reasons``."""
    return result.score.reason == "log_unparseable"


def _tier(reason: str) -> str | None:
    if reason in _ENVIRONMENT_REASONS:
        return "environment"
    if reason in _PATCH_REASONS:
        return None
    return "ambiguous"


def _check_name(name: str, what: str) -> None:
    # Each becomes one folder or file name: nothing that could leave the layout.
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UserError(f"swebench layout: {what} {name!r} cannot be a folder name")


def _artifact(attempt: Attempt, name: str) -> Artifact | None:
    return next((a for a in attempt.artifacts if PurePosixPath(a.path).name == name), None)


def _check_artifact(run_dir: Path, artifact: Artifact, intact: bool) -> None:
    """Refuse an artifact outside the run directory, or not the bytes its attempt recorded."""
    relative = PurePosixPath(artifact.path)
    if relative.is_absolute() or ".." in relative.parts:
        raise UserError(f"{run_dir}: artifact path {artifact.path} leaves the run directory")
    if not intact and not artifact.matches(run_dir):
        raise UserError(
            f"{run_dir / relative}: missing or changed since it was recorded "
            f"(sha256 {artifact.sha256[7:19]}...)"
        )


def _remove_stale(instances_dir: Path, written: dict[str, set[str]]) -> None:
    if not instances_dir.is_dir():
        return
    for entry in instances_dir.iterdir():
        if entry.name not in written:
            _remove(entry)
            continue
        for item in entry.iterdir():
            if item.name not in written[entry.name]:
                _remove(item)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
