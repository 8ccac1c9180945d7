"""RUN/swebench/: a run in SWE-bench's output layout, read back by swebench's own code.

The run is built from real records without containers: Observations that ``observe``
makes of the real eval logs in SWE-bench's layout (``tests/corpus/swebench_eval/``),
some given the facts of an attempt that went otherwise (a rejected patch, a timeout, an
infrastructure error, suspect code), wrapped into Attempts and TrialResults with their
artifacts on disk, and a Lockfile of a small dataset (sample 0 and 1 of one instance,
an unfinished trial, an empty patch, an instance with no prediction). Then swebench
5.0.2's ``make_run_report`` reads the tree we wrote and must find the same instances
resolved, unresolved, in error, empty, completed and incomplete; its ``get_eval_report``
re-grading each copied ``test_output.txt`` must write our ``report.json`` byte for byte.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from swebench.harness.grading import get_eval_report
from swebench.harness.reporting import make_run_report

from evalrepro.config.environment import Limits
from evalrepro.config.gate import Gate
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import get_parser
from evalrepro.grade.score import score
from evalrepro.records.artifact import Artifact
from evalrepro.records.lockfile import (
    Harness,
    LockedDataset,
    LockedEnvironment,
    LockedInstance,
    LockedPrediction,
    LockedTarget,
    LockedTrial,
    Lockfile,
)
from evalrepro.records.observation import ExecutionStatus, Observation, PatchStatus, SuspectFinding
from evalrepro.records.trial import Attempt, Trial, TrialKey, TrialResult
from evalrepro.run.swebench_layout import write_swebench_layout
from evalrepro.sample import Sample
from tests.corpus_swebench import load_eval_logs
from tests.reference import reference_spec

MODEL = "org/model-x"
MODEL_DIR = "org__model-x"
RUN_ID = "layout-test"
LOGS = {log.instance_id: log for log in load_eval_logs()}
PATCH = (
    "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n x\n+y\n"
)


#: What observe_attempt records for a patch refused before any container.
REFUSED_EMPTY = {
    "patch_status": PatchStatus.INVALID,
    "patch_problem": "empty",
    "execution_status": ExecutionStatus.NOT_RUN,
}
SUSPECT_CODE = {
    "suspects": [SuspectFinding.of("hard_exit", "calc.py", 3, "os._exit(0)")],
    "suspect_policy": "invalid",
}


@dataclass(frozen=True)
class Planned:
    """One trial of the test run: an eval log, the instance, and how its attempt went."""

    instance_id: str
    parser: str
    f2p: tuple[str, ...]
    p2p: tuple[str, ...] = ()
    #: Keyword arguments of observe() (the rules, facts of the attempt).
    observed: dict = field(default_factory=dict)
    #: Facts observe() cannot be told, as the attempt's Observation would record them.
    recorded: dict = field(default_factory=dict)
    sample_index: int = 0
    patch: str = PATCH
    log: str | None = None  # default: the eval log of instance_id
    finished: bool = True

    @property
    def fail_only(self) -> bool:
        return get_parser(self.parser).fail_only

    @property
    def honest(self) -> bool:
        """Graded from its log alone, nothing else known of the attempt."""
        return self.finished and not self.observed and not self.recorded


TB = "tests/test_tb.py"
CALC = "tests/test_calc.py"
PLANNED = (
    Planned("corpus__pytest-tb_no", "pytest", (f"{TB}::test_pass",), (f"{TB}::test_pairs[e[f]]",)),
    Planned(
        "corpus__pytest-pass_fail",
        "pytest",
        ("tests/test_calc.py::test_add", "tests/test_calc.py::test_message_with_dash"),
        ("tests/test_calc.py::test_add_negative",),
    ),
    Planned(
        "corpus__django-mixed",
        "django",
        ("Usernames are unique.",),
        ("test_duplicate_username (shop.tests.Accounts.test_duplicate_username)",),
    ),
    Planned("corpus__mocha-min_passing", "eslint", ("math adds",)),
    Planned(
        "corpus__sympy-mixed",
        "sympy",
        ("test_expand",),
        observed={"patch_status": PatchStatus.REJECTED},
    ),
    Planned(
        "corpus__pytest-forged_markers",
        "pytest",
        (f"{CALC}::test_fixed",),
        observed={"rules": "strict"},
    ),
    Planned(
        "corpus__pytest-install_forgery",
        "pytest",
        (f"{CALC}::test_fixed",),
        observed={"infrastructure_error": "podman: container runtime died"},
    ),
    Planned(
        "corpus__mocha-min_failures",
        "eslint",
        ("math adds",),
        observed={"execution_status": ExecutionStatus.TIMEOUT},
    ),
    Planned(
        "corpus__pytest-collection_error",
        "pytest",
        ("tests/test_ok.py::test_one",),
        recorded=SUSPECT_CODE,
    ),
    Planned("corpus__pytest-param_ids", "pytest", ("x",), finished=False),
    Planned("corpus__pytest-skip_xfail", "pytest", ("x",), recorded=REFUSED_EMPTY, patch=""),
    # Two samples: sample 0 resolves; sample 1 (another log) is not in the layout.
    Planned(
        "corpus__django-passing",
        "django",
        ("Balances add up.",),
        ("test_empty (ledger.tests.Balances.test_empty)",),
    ),
    Planned(
        "corpus__django-passing",
        "django",
        ("Balances add up.",),
        ("test_empty (ledger.tests.Balances.test_empty)",),
        observed={"infrastructure_error": "image build failed"},
        sample_index=1,
        log="sample 1 never got as far as its tests\n",
    ),
)
#: In the dataset, with no prediction at all.
UNPREDICTED = "corpus__absent-1"


def instance(planned: Planned) -> Sample:
    return Sample(
        instance_id=planned.instance_id,
        repo="corpus/corpus",
        base_commit="abc123",
        test_patch="",
        FAIL_TO_PASS=list(planned.f2p),
        PASS_TO_PASS=list(planned.p2p),
        eval_type="fail_only" if planned.fail_only else None,
    )


def log_text(planned: Planned) -> str:
    return planned.log if planned.log is not None else LOGS[planned.instance_id].text


def observation_of(planned: Planned) -> Observation:
    parser = get_parser(planned.parser)
    seen = observe(log_text(planned), instance(planned), parser, **planned.observed)
    return seen.model_copy(update=planned.recorded)


def trial_key(planned: Planned) -> TrialKey:
    return TrialKey(
        instance_id=planned.instance_id,
        target_id=MODEL,
        repository_commit="abc123",
        image_digest="sha256:" + "1" * 64,
        test_spec_digest="sha256:" + "2" * 64,
        harness_version="0.2.0",
        harness_digest="sha256:" + "3" * 64,
        sample_index=planned.sample_index,
    )


def write_attempt(run_dir: Path, planned: Planned, trial: Trial) -> Attempt:
    folder = run_dir / "trials" / trial.label / "attempt-1"
    folder.mkdir(parents=True)
    (folder / "patch.diff").write_text(planned.patch, encoding="utf-8")
    (folder / "test_output.txt").write_text(log_text(planned), encoding="utf-8")
    observation = observation_of(planned)
    now = datetime(2024, 1, 1, tzinfo=UTC)
    return Attempt(
        trial_id=trial.trial_id,
        number=1,
        started_at=now,
        finished_at=now,
        artifacts=[
            Artifact.of_file(folder / "patch.diff", run_dir, "text/x-diff"),
            Artifact.of_file(folder / "test_output.txt", run_dir, "text/plain"),
        ],
        observation=observation,
        score=score(observation),
    )


def build_run(run_dir: Path) -> tuple[Lockfile, dict[str, TrialResult]]:
    """A run's lockfile and trial results, as a finished run directory holds them."""
    results: dict[str, TrialResult] = {}
    trials, predictions, instances = [], [], {}
    for planned in PLANNED:
        trial = Trial.of(trial_key(planned))
        trials.append(LockedTrial(trial_id=trial.trial_id, key=trial.key, image_key=""))
        predictions.append(
            LockedPrediction(
                instance_id=planned.instance_id,
                sample_index=planned.sample_index,
                patch_digest=sha256_bytes(planned.patch.encode()),
            )
        )
        instances[planned.instance_id] = LockedInstance(
            instance_id=planned.instance_id,
            repo="corpus/corpus",
            base_commit="abc123",
            digest=instance(planned).digest(),
            test_spec_digest="sha256:" + "2" * 64,
            parser=planned.parser,
        )
        if planned.finished:
            attempt = write_attempt(run_dir, planned, trial)
            results[trial.trial_id] = TrialResult(
                trial=trial,
                instance_id=planned.instance_id,
                target_id=MODEL,
                sample_index=planned.sample_index,
                score=attempt.score,
                attempts=[attempt],
                limits={},
            )
    instances[UNPREDICTED] = LockedInstance(
        instance_id=UNPREDICTED,
        repo="corpus/corpus",
        base_commit="abc123",
        digest="sha256:" + "3" * 64,
        test_spec_digest="sha256:" + "2" * 64,
        parser="pytest",
    )
    lockfile = Lockfile(
        experiment="layout",
        harness=Harness(version="0.2.0", code_digest="sha256:" + "3" * 64),
        config={},
        config_digest=sha256_json({}),
        dataset=LockedDataset(
            name="corpus",
            test_ids="swebench",
            digest=sha256_json([i.digest for i in instances.values()]),
            instances=list(instances.values()),
        ),
        target=LockedTarget(
            kind="predictions",
            target_id=MODEL,
            samples=2,
            digest=sha256_json([p.model_dump(mode="json") for p in predictions]),
            predictions=predictions,
        ),
        environment=LockedEnvironment(
            kind="podman",
            digest=sha256_json({}),
            limits=Limits(),
            timeout=600,
            network="none",
            images=[],
        ),
        gate=Gate(),
        trials=trials,
    )
    return lockfile, results


def swebench_predictions() -> dict[str, dict]:
    return {
        p.instance_id: {
            "instance_id": p.instance_id,
            "model_name_or_path": MODEL,
            "model_patch": p.patch,
        }
        for p in PLANNED
        if p.sample_index == 0
    }


def instance_dir(run_dir: Path, instance_id: str) -> Path:
    return run_dir / "swebench" / "logs" / "run_evaluation" / RUN_ID / MODEL_DIR / instance_id


@pytest.fixture
def run(tmp_path):
    run_dir = tmp_path / "run"
    lockfile, results = build_run(run_dir)
    report_path = write_swebench_layout(run_dir, lockfile, results, run_id=RUN_ID, model=MODEL)
    return run_dir, lockfile, results, report_path


ADVISORY = {
    "infra_failure_instances",
    "ambiguous_failure_instances",
    "infra_failure_ids",
    "ambiguous_failure_ids",
    "failure_reasons",
}


def test_swebench_make_run_report_reads_our_tree_as_our_verdicts(run, tmp_path, monkeypatch):
    run_dir, _, _, report_path = run
    assert report_path == run_dir / "swebench" / f"{MODEL_DIR}.{RUN_ID}.json"
    ours = json.loads(report_path.read_text(encoding="utf-8"))

    monkeypatch.chdir(run_dir / "swebench")  # swebench reads logs/run_evaluation/ from here
    dataset = [{"instance_id": i} for i in dict.fromkeys([p.instance_id for p in PLANNED])]
    dataset.append({"instance_id": UNPREDICTED})
    theirs_path = make_run_report(
        swebench_predictions(), dataset, RUN_ID, client=None, report_dir=str(tmp_path / "theirs")
    )
    theirs = json.loads(Path(theirs_path).read_text(encoding="utf-8"))

    assert Path(theirs_path).name == report_path.name
    assert list(ours) == list(theirs)  # every key, in swebench's order
    assert {k: v for k, v in ours.items() if k not in ADVISORY} == {
        k: v for k, v in theirs.items() if k not in ADVISORY
    }
    assert ours["resolved_ids"] == [
        "corpus__django-passing",
        "corpus__mocha-min_passing",
        "corpus__pytest-tb_no",
    ]
    # An unscorable log (forged markers) is, as swebench's harness writes it, a
    # report.json saying "not resolved": completed and unresolved, never an error.
    assert ours["unresolved_ids"] == [
        "corpus__django-mixed",
        "corpus__pytest-forged_markers",
        "corpus__pytest-pass_fail",
        "corpus__sympy-mixed",
    ]
    assert ours["error_ids"] == [
        "corpus__mocha-min_failures",
        "corpus__pytest-collection_error",
        "corpus__pytest-install_forgery",
        "corpus__pytest-param_ids",
    ]
    assert ours["empty_patch_ids"] == ["corpus__pytest-skip_xfail"]
    assert ours["incomplete_ids"] == [UNPREDICTED]
    assert (ours["total_instances"], ours["submitted_instances"]) == (13, 12)
    assert ours["schema_version"] == 2


def test_failures_are_classified_from_our_verdict_not_from_log_patterns(run):
    ours = json.loads(run[3].read_text(encoding="utf-8"))
    assert ours["infra_failure_ids"] == ["corpus__pytest-install_forgery"]
    # A timeout and an unscorable log could be either side's; suspect code is the patch's.
    assert ours["ambiguous_failure_ids"] == [
        "corpus__mocha-min_failures",
        "corpus__pytest-forged_markers",
    ]
    assert ours["failure_reasons"] == {
        "corpus__mocha-min_failures": "timeout",
        "corpus__pytest-forged_markers": "log_unparseable",
        "corpus__pytest-install_forgery": "infrastructure_error",
    }
    assert (ours["infra_failure_instances"], ours["ambiguous_failure_instances"]) == (1, 2)


@pytest.mark.parametrize(
    "planned",
    [p for p in PLANNED if p.sample_index == 0 and p.honest],
    ids=lambda p: p.instance_id,
)
def test_report_json_is_what_swebench_writes_when_it_grades_the_copied_log(run, planned):
    run_dir = run[0]
    folder = instance_dir(run_dir, planned.instance_id)
    spec = reference_spec(
        parser=planned.parser,
        fail_to_pass=list(planned.f2p),
        pass_to_pass=list(planned.p2p),
        instance_id=planned.instance_id,
        eval_type="fail_only" if planned.fail_only else "pass_and_fail",
    )
    prediction = swebench_predictions()[planned.instance_id]
    theirs = get_eval_report(spec, prediction, str(folder / "test_output.txt"), True)
    assert (folder / "report.json").read_text(encoding="utf-8") == json.dumps(theirs, indent=4)


def test_a_rejected_patch_has_a_report_without_tests_and_an_error_has_none(run):
    run_dir = run[0]
    rejected = json.loads(
        (instance_dir(run_dir, "corpus__sympy-mixed") / "report.json").read_text()
    )
    assert rejected == {
        "corpus__sympy-mixed": {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": False,
            "resolved": False,
            "infra_failure": False,
        }
    }
    timed_out = instance_dir(run_dir, "corpus__mocha-min_failures")
    assert sorted(p.name for p in timed_out.iterdir()) == ["patch.diff", "test_output.txt"]
    for absent in ("corpus__pytest-param_ids", "corpus__pytest-skip_xfail", UNPREDICTED):
        assert not instance_dir(run_dir, absent).exists()


def test_the_copied_artifacts_are_the_final_attempts_of_sample_0(run):
    run_dir, _, results, _ = run
    for result in results.values():
        folder = instance_dir(run_dir, result.instance_id)
        if result.sample_index != 0 or not folder.exists():
            continue
        for artifact in result.attempts[-1].artifacts:
            name = Path(artifact.path).name
            assert (folder / name).read_bytes() == (run_dir / artifact.path).read_bytes()
    passing = instance_dir(run_dir, "corpus__django-passing") / "test_output.txt"
    assert passing.read_text(encoding="utf-8") == LOGS["corpus__django-passing"].text


def test_a_regrade_that_changes_a_verdict_leaves_no_stale_file(run):
    run_dir, lockfile, results, report_path = run
    trial_id = next(
        t.trial_id for t in lockfile.trials if t.key.instance_id == "corpus__pytest-tb_no"
    )
    result = results[trial_id]
    attempt = result.attempts[-1]
    broken = attempt.observation.model_copy(update={"infrastructure_error": "podman died"})
    attempt = attempt.model_copy(update={"observation": broken, "score": score(broken)})
    changed = {
        **results,
        trial_id: result.model_copy(update={"attempts": [attempt], "score": attempt.score}),
    }
    write_swebench_layout(run_dir, lockfile, changed, run_id=RUN_ID, model=MODEL)
    folder = instance_dir(run_dir, "corpus__pytest-tb_no")
    assert not (folder / "report.json").exists()
    assert (folder / "test_output.txt").exists()
    again = json.loads(report_path.read_text(encoding="utf-8"))
    assert "corpus__pytest-tb_no" in again["error_ids"]
    assert "corpus__pytest-tb_no" not in again["resolved_ids"]


def test_an_artifact_changed_since_its_attempt_recorded_it_is_refused_before_any_write(run):
    run_dir, lockfile, results, _ = run
    before = {p: p.read_bytes() for p in (run_dir / "swebench").rglob("*") if p.is_file()}
    tb_no = next(r for r in results.values() if r.instance_id == "corpus__pytest-tb_no")
    artifact = next(a for a in tb_no.attempts[-1].artifacts if a.path.endswith("test_output.txt"))
    (run_dir / artifact.path).write_text("PASSED everything\n", encoding="utf-8")
    with pytest.raises(UserError, match="missing or changed since it was recorded"):
        write_swebench_layout(run_dir, lockfile, results, run_id=RUN_ID, model=MODEL)
    after = {p: p.read_bytes() for p in (run_dir / "swebench").rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("run_id", ["", "..", "a/b"])
def test_a_run_id_that_is_no_folder_name_is_a_user_error(run, run_id):
    run_dir, lockfile, results, _ = run
    with pytest.raises(UserError, match="cannot be a folder name"):
        write_swebench_layout(run_dir, lockfile, results, run_id=run_id, model=MODEL)


def test_the_layout_is_named_by_the_predictions_model_not_the_targets_name(tmp_path, monkeypatch):
    """A ``target.name`` renames the target in evalrepro's reports; swebench names its
    folders and its run report by the predictions' ``model_name_or_path``. So a SWE-bench
    user's own make_run_report, fed the predictions file, finds our tree where it looks."""
    run_dir = tmp_path / "run"
    lockfile, results = build_run(run_dir)
    # What the plan locks for a predictions target whose target.name is "my-renamed-run".
    renamed = lockfile.model_copy(
        update={
            "target": lockfile.target.model_copy(
                update={
                    "target_id": "my-renamed-run",
                    "predictions": [
                        p.model_copy(update={"model_name_or_path": MODEL})
                        for p in lockfile.target.predictions
                    ],
                }
            )
        }
    )
    # An earlier layout under the target's name is stale: it goes.
    stale = run_dir / "swebench" / f"my-renamed-run.{RUN_ID}.json"
    write_swebench_layout(run_dir, lockfile, results, run_id=RUN_ID, model="my-renamed-run")
    stale.write_text("{}")
    report_path = write_swebench_layout(
        run_dir, renamed, results, run_id=RUN_ID, model="my-renamed-run"
    )
    assert report_path == run_dir / "swebench" / f"{MODEL_DIR}.{RUN_ID}.json"
    assert not stale.exists()
    runs = run_dir / "swebench" / "logs" / "run_evaluation" / RUN_ID
    assert [p.name for p in runs.iterdir()] == [MODEL_DIR]

    monkeypatch.chdir(run_dir / "swebench")
    dataset = [{"instance_id": i} for i in dict.fromkeys([p.instance_id for p in PLANNED])]
    dataset.append({"instance_id": UNPREDICTED})
    theirs_path = make_run_report(
        swebench_predictions(), dataset, RUN_ID, client=None, report_dir=str(tmp_path / "theirs")
    )
    theirs = json.loads(Path(theirs_path).read_text(encoding="utf-8"))
    ours = json.loads(report_path.read_text(encoding="utf-8"))
    assert Path(theirs_path).name == report_path.name
    assert {k: v for k, v in ours.items() if k not in ADVISORY} == {
        k: v for k, v in theirs.items() if k not in ADVISORY
    }
    assert ours["resolved_ids"] and ours["unresolved_ids"]


def test_a_locked_prediction_names_its_model_only_when_the_target_renames_it():
    # Left out otherwise: lockfiles without it, and their target digests, are unchanged.
    plain = LockedPrediction(instance_id="a", sample_index=0, patch_digest="sha256:0")
    assert "model_name_or_path" not in plain.model_dump(mode="json")
    named = plain.model_copy(update={"model_name_or_path": MODEL})
    assert named.model_dump(mode="json")["model_name_or_path"] == MODEL
    assert LockedPrediction.model_validate(named.model_dump(mode="json")) == named


def test_a_run_whose_target_name_renames_its_predictions_lays_out_by_their_model(tmp_path):
    """End to end (the fake environment): the plan locks the predictions' own model when
    ``target.name`` differs, the layout and its run report are named by it; the target's
    name stays evalrepro's (results, trial ids)."""
    import io

    from rich.console import Console

    from evalrepro.config.experiment import compose
    from evalrepro.pipeline import run_experiment
    from evalrepro.plan.lockfile import read_lockfile

    config = compose(["+experiment=model_a", "environment=fake", "target.name=renamed"])
    outcome = run_experiment(
        config, Console(file=io.StringIO()), run_dir=tmp_path / "run",
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    assert outcome.results.target_id == "renamed"
    lockfile = read_lockfile(tmp_path / "run")
    assert {p.model_name_or_path for p in lockfile.target.predictions} == {"model_a"}
    layout = tmp_path / "run" / "swebench"
    assert [p.name for p in layout.glob("*.json")] == ["model_a.run.json"]
    (model_dir,) = (layout / "logs" / "run_evaluation" / "run").iterdir()
    assert model_dir.name == "model_a"


def test_a_patch_made_in_the_run_is_the_one_its_attempt_recorded_not_the_plans(run):
    """An agent's predictions are locked without a patch (the empty digest): its trials
    are listed by the patch their attempt recorded, never as empty patches for it."""
    run_dir, lockfile, results, _ = run
    unplanned = lockfile.model_copy(
        update={
            "target": lockfile.target.model_copy(
                update={
                    "kind": "agent",
                    "predictions": [
                        p.model_copy(update={"patch_digest": sha256_bytes(b"")})
                        for p in lockfile.target.predictions
                    ],
                }
            )
        }
    )
    path = write_swebench_layout(run_dir, unplanned, results, run_id=RUN_ID, model=MODEL)
    again = json.loads(path.read_text(encoding="utf-8"))
    assert again["empty_patch_ids"] == ["corpus__pytest-skip_xfail"]  # its patch.diff: ""
    assert "corpus__pytest-param_ids" in again["error_ids"]  # not run yet: no patch known
    assert again["resolved_ids"] == [
        "corpus__django-passing",
        "corpus__mocha-min_passing",
        "corpus__pytest-tb_no",
    ]


def test_a_rebuild_of_a_renamed_run_folder_replaces_its_layout_under_the_runs_own_id(tmp_path):
    """The layout is named by the run's own identity (the run id it was first written
    under), not by whatever the folder is called today; a rebuild replaces it whole:
    one run report, one run_evaluation tree."""
    import io
    import subprocess
    import sys

    from rich.console import Console

    from evalrepro.config.experiment import compose
    from evalrepro.pipeline import run_experiment

    config = compose(["+experiment=model_b", "environment=fake"])
    run_experiment(
        config, Console(file=io.StringIO()), run_dir=tmp_path / "model_b",
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    layout = tmp_path / "model_b" / "swebench"
    before = sorted(p.name for p in layout.glob("*.json"))
    assert before == ["model_b.model_b.json"]
    renamed = tmp_path / "renamed"
    (tmp_path / "model_b").rename(renamed)
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", "report", str(renamed), "--rebuild"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr
    layout = renamed / "swebench"
    assert sorted(p.name for p in layout.glob("*.json")) == before
    assert [p.name for p in (layout / "logs" / "run_evaluation").iterdir()] == ["model_b"]

    # A layout an older evalrepro duplicated under the folder's new name: the rebuild
    # keeps the first-written tree and removes the other tree and run report.
    stale = layout / "logs" / "run_evaluation" / "renamed"
    shutil.copytree(layout / "logs" / "run_evaluation" / "model_b", stale)
    shutil.copy(layout / "model_b.model_b.json", layout / "model_b.renamed.json")
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", "report", str(renamed), "--rebuild"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr
    assert sorted(p.name for p in layout.glob("*.json")) == before
    assert [p.name for p in (layout / "logs" / "run_evaluation").iterdir()] == ["model_b"]
