"""``evalrepro regrade``: a SWE-bench logs tree graded into a run directory of ours.

The logs are the real eval logs of ``tests/corpus/swebench_eval`` (SWE-bench 5.0.2's
layout, ``set -x`` trace markers), laid out as swebench's ``logs/run_evaluation/<run_id>/
<model>/``, each with the report.json swebench's own ``get_eval_report`` writes for it.
The regrade must grade as swebench does, say so in its records, list where it differs
from a report.json, and give a run directory that report, verify and compare accept.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from swebench.harness.grading import get_eval_report
from swebench.harness.reporting import make_run_report

from evalrepro.records.trial import read_trial_result
from tests.reference import reference_spec
from tests.test_swebench_layout import LOGS, PLANNED, Planned, instance

HONEST = [p for p in PLANNED if p.honest and p.sample_index == 0]
MODEL = "org/model-x"
MODEL_DIR = MODEL.replace("/", "__")
RUN_ID = "corpus-run"


def evalrepro(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def _spec(planned: Planned):
    return reference_spec(
        parser=planned.parser,
        fail_to_pass=list(planned.f2p),
        pass_to_pass=list(planned.p2p),
        instance_id=planned.instance_id,
        eval_type="fail_only" if planned.fail_only else "pass_and_fail",
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, Path, dict[str, bool], str]:
    """(logs dir, dataset file, swebench's resolved per instance, the doctored instance)."""
    root = tmp_path_factory.mktemp("regrade")
    logs = root / "logs" / "run_evaluation" / RUN_ID / MODEL.replace("/", "__")
    theirs: dict[str, bool] = {}
    for planned in HONEST:
        folder = logs / planned.instance_id
        folder.mkdir(parents=True)
        (folder / "test_output.txt").write_text(LOGS[planned.instance_id].text)
        prediction = {"instance_id": planned.instance_id, "model_patch": planned.patch,
                      "model_name_or_path": MODEL}  # fmt: skip
        (folder / "patch.diff").write_text(planned.patch)
        report = get_eval_report(_spec(planned), prediction, str(folder / "test_output.txt"), True)
        theirs[planned.instance_id] = report[planned.instance_id]["resolved"]
        (folder / "report.json").write_text(json.dumps(report, indent=4))
    # One report.json that does not say what its log says: the regrade must list it.
    doctored = next(p.instance_id for p in HONEST if not theirs[p.instance_id])
    report = json.loads((logs / doctored / "report.json").read_text())
    report[doctored]["resolved"] = True
    (logs / doctored / "report.json").write_text(json.dumps(report))
    dataset = root / "instances.jsonl"
    rows = [
        {**instance(p).model_dump(mode="json", by_alias=True), "log_parser": p.parser}
        for p in HONEST
    ]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return logs, dataset, theirs, doctored


@pytest.fixture(scope="module")
def regraded(tree, tmp_path_factory) -> Path:
    logs, dataset, _, _ = tree
    run_dir = tmp_path_factory.mktemp("runs") / "regraded"
    done = evalrepro("regrade", logs, "--dataset", dataset, "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    return run_dir


def _results(run_dir: Path) -> dict[str, object]:
    return {
        result.instance_id: result
        for result in map(read_trial_result, (run_dir / "trials").glob("*/result.json"))
    }


def test_each_log_is_one_trial_graded_as_swebench_grades_it(tree, regraded):
    _, _, theirs, _ = tree
    results = _results(regraded)
    assert set(results) == {p.instance_id for p in HONEST}
    for instance_id, result in results.items():
        observation = result.attempts[0].observation
        assert observation.source == "log" and observation.log_rules == "swebench"
        expected = theirs[instance_id]
        assert (result.score.outcome == "resolved") == expected, instance_id


def test_where_swebenchs_report_json_differs_it_is_listed(tree, regraded):
    _, _, _, doctored = tree
    summary = json.loads((regraded / "regrade.json").read_text())
    assert summary["compared"] == len(HONEST)
    assert [d["instance_id"] for d in summary["differences"]] == [doctored]
    assert summary["differences"][0]["theirs"] == "resolved"


def test_the_run_directory_is_one_that_report_and_verify_accept(regraded):
    report = evalrepro("report", regraded, "--json")
    assert report.returncode in (0, 3), report.stderr
    metrics = json.loads(report.stdout)["metrics"]
    assert metrics["planned"] == len(HONEST) and metrics["missing"] == 0
    verified = evalrepro("verify", regraded)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_two_regrades_of_the_same_logs_are_comparable(tree, regraded, tmp_path):
    logs, dataset, _, _ = tree
    other = tmp_path / "other"
    done = evalrepro("regrade", logs, "--dataset", dataset, "--run-dir", other, "--model", "b")
    assert done.returncode == 0, done.stderr
    compared = evalrepro("compare", regraded, other, "--n-resamples", "200")
    assert compared.returncode == 0, compared.stdout + compared.stderr


def test_the_regrade_writes_swebenchs_layout_under_the_logs_run_id(tree, regraded):
    report = regraded / "swebench" / f"{MODEL.replace('/', '__')}.{RUN_ID}.json"
    data = json.loads(report.read_text())
    results = _results(regraded)
    resolved = sorted(i for i, r in results.items() if r.score.outcome == "resolved")
    assert data["resolved_ids"] == resolved


def test_a_log_of_an_instance_the_dataset_lacks_is_one_line(tree, tmp_path):
    logs, dataset, _, _ = tree
    strays = tmp_path / "logs"
    shutil.copytree(logs, strays)
    (strays / "not__in-dataset").mkdir()
    (strays / "not__in-dataset" / "test_output.txt").write_text("x\n")
    done = evalrepro("regrade", strays, "--dataset", dataset, "--run-dir", tmp_path / "r")
    assert done.returncode == 2
    assert "name instances not in" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_log_that_is_not_a_regular_file_is_one_line(tree, tmp_path):
    logs, dataset, _, _ = tree
    odd = tmp_path / "logs"
    shutil.copytree(logs, odd)
    first = sorted(odd.iterdir())[0] / "test_output.txt"
    first.unlink()
    first.symlink_to("/etc/passwd")
    done = evalrepro("regrade", odd, "--dataset", dataset, "--run-dir", tmp_path / "r")
    assert done.returncode == 2
    assert "cannot read the log" in done.stderr or "not a regular file" in done.stderr


def test_a_report_json_that_is_a_link_is_one_line_not_a_traceback(tree, tmp_path):
    logs, dataset, _, _ = tree
    odd = tmp_path / "logs"
    shutil.copytree(logs, odd)
    report = sorted(odd.iterdir())[0] / "report.json"
    report.unlink(missing_ok=True)
    report.symlink_to("/etc/passwd")
    done = evalrepro("regrade", odd, "--dataset", dataset, "--run-dir", tmp_path / "r")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "report.json" in done.stderr


def test_an_empty_patch_is_reported_as_empty_whatever_log_lies_beside_it(tree, tmp_path):
    logs, dataset, _, _ = tree
    emptied = tmp_path / "logs"
    shutil.copytree(logs, emptied)
    first = sorted(emptied.iterdir())[0]
    (first / "patch.diff").write_text("")
    run_dir = tmp_path / "r"
    done = evalrepro("regrade", emptied, "--dataset", dataset, "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    score = _results(run_dir)[first.name].score
    assert (score.outcome, score.reason) == ("unresolved", "patch_empty")
    (report,) = (run_dir / "swebench").glob("*.json")
    assert first.name in json.loads(report.read_text())["empty_patch_ids"]


def test_a_patch_that_is_a_fifo_is_one_line_not_a_hang(tree, tmp_path):
    logs, dataset, _, _ = tree
    odd = tmp_path / "logs"
    shutil.copytree(logs, odd)
    patch = sorted(odd.iterdir())[0] / "patch.diff"
    patch.unlink()
    os.mkfifo(patch)
    done = evalrepro("regrade", odd, "--dataset", dataset, "--run-dir", tmp_path / "r")
    assert done.returncode == 2
    assert "not a regular file" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_regrade_bundles_and_verifies_but_has_nothing_to_reproduce(regraded, tmp_path):
    bundle = tmp_path / "regraded.bundle.tar.gz"
    done = evalrepro("bundle", regraded, "-o", bundle)
    assert done.returncode == 0, done.stdout + done.stderr
    verified = evalrepro("verify", bundle)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    refused = evalrepro("bundle", regraded, "-o", tmp_path / "x.tar.gz", "--with-images")
    assert refused.returncode == 2 and "another harness" in refused.stderr
    again = evalrepro("reproduce", bundle, "--run-dir", tmp_path / "again")
    assert again.returncode == 2 and "no environment to run" in again.stderr
    assert again.stderr.count("\n") == 1


def test_logs_without_patches_are_graded_from_the_log_and_never_called_empty(
    tree, tmp_path, monkeypatch
):
    """swebench runs no empty patch (it lists it in empty_patch_ids and writes no log), so
    a log is the sign of a patch that was not empty: one whose folder kept no patch.diff
    is graded from its log, its patch unknown (no patch.diff in the trial or the layout),
    and the SWE-bench summary lists it by its verdict, as swebench's own
    make_run_report does, fed the predictions the logs came from."""
    logs, dataset, theirs, _ = tree
    bare = tmp_path / "logs"
    shutil.copytree(logs, bare)
    for patch in bare.glob("*/patch.diff"):
        patch.unlink()
    run_dir = tmp_path / "r"
    done = evalrepro("regrade", bare, "--dataset", dataset, "--run-dir", run_dir,
                     "--model", MODEL, "--run-id", RUN_ID)  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = _results(run_dir)
    for instance_id, result in results.items():
        assert (result.score.outcome == "resolved") == theirs[instance_id], instance_id
        observation = result.attempts[-1].observation
        assert observation.patch_status is None and observation.patch_problem is None
        assert not any(a.path.endswith("patch.diff") for a in result.attempts[-1].artifacts)
    resolved = sorted(i for i, r in results.items() if r.score.outcome == "resolved")
    assert resolved and len(resolved) < len(results)
    summary = json.loads((run_dir / "regrade.json").read_text())
    assert summary["no_patch"] == sorted(results)
    assert f"{len(results)} logs without a patch.diff" in done.stdout

    ours = json.loads((run_dir / "swebench" / f"{MODEL_DIR}.{RUN_ID}.json").read_text())
    assert ours["empty_patch_ids"] == []
    assert ours["resolved_ids"] == resolved
    kept = run_dir / "swebench" / "logs" / "run_evaluation" / RUN_ID / MODEL_DIR
    assert not list(kept.glob("*/patch.diff")) and len(list(kept.glob("*/report.json")))

    predictions = {
        p.instance_id: {
            "instance_id": p.instance_id,
            "model_name_or_path": MODEL,
            "model_patch": p.patch,
        }
        for p in HONEST
    }
    monkeypatch.chdir(run_dir / "swebench")
    theirs_path = make_run_report(
        predictions, [{"instance_id": i} for i in predictions], RUN_ID,
        report_dir=str(tmp_path / "theirs"),
    )  # fmt: skip
    swebench = json.loads(Path(theirs_path).read_text())
    for key in ("empty_patch_ids", "resolved_ids", "unresolved_ids", "error_ids"):
        assert swebench[key] == ours[key], key


def _mixed_projects(root: Path, *, own_parsers: bool = False) -> tuple[Path, list[dict]]:
    """A logs folder of a pytest project and a unittest project (native ids, real logs of
    ``tests/corpus``), and their instances (each naming its parser when ``own_parsers``)."""
    from tests.corpus import load_corpus

    logs = root / "logs" / "run_evaluation" / "mixed" / "model"
    cases = {
        ("demo__pyt-1", "demo/pyt", "pytest_full"): next(
            log for log in load_corpus("pytest") if log.case == "pass_fail"
        ),
        ("demo__unit-1", "demo/unit", "unittest"): next(
            log for log in load_corpus("unittest") if log.case == "passing_verbose"
        ),
    }
    rows = []
    for (instance_id, repo, parser), log in cases.items():
        assert log.truth is not None
        passed = sorted(t for t, s in log.truth.items() if s == "PASSED")
        folder = logs / instance_id
        folder.mkdir(parents=True)
        (folder / "test_output.txt").write_text(
            ">>>>> Start Test Output\n" + log.text + "\n>>>>> End Test Output\n"
        )
        (folder / "patch.diff").write_text(HONEST[0].patch)
        rows.append(
            {
                "instance_id": instance_id,
                "repo": repo,
                "version": "1.0",
                "base_commit": "abc",
                "test_patch": "",
                "FAIL_TO_PASS": passed[:1],
                "PASS_TO_PASS": passed[1:],
                **({"log_parser": parser} if own_parsers else {}),
            }
        )
    return logs, rows


def test_a_folder_of_pytest_and_unittest_projects_regrades_in_one_call_by_the_specs(tmp_path):
    logs, rows = _mixed_projects(tmp_path)
    (tmp_path / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "mixed.yaml"
    config.write_text(
        "name: mixed\ninstances: instances.jsonl\ntest_ids: native\nspecs:\n"
        "  demo/pyt:\n    '1.0': {test_cmd: pytest -rA -v, parser: pytest_full}\n"
        "  demo/unit:\n    '1.0': {test_cmd: python -m unittest -v, parser: unittest}\n"
    )
    run_dir = tmp_path / "r"
    done = evalrepro("regrade", logs, "--dataset", config, "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    results = _results(run_dir)
    parsers = {i: r.attempts[-1].observation.parser for i, r in results.items()}
    assert parsers == {"demo__pyt-1": "pytest_full", "demo__unit-1": "unittest"}
    assert {i: r.score.outcome for i, r in results.items()} == {
        "demo__pyt-1": "resolved",
        "demo__unit-1": "resolved",
    }
    lock = json.loads((run_dir / "lockfile.lock.json").read_text())
    assert lock["dataset"]["name"] == "mixed" and lock["dataset"]["test_ids"] == "native"

    # Without the specs, the instances name no parser and are no SWE-bench repo's.
    bare = evalrepro("regrade", logs, "--dataset", tmp_path / "instances.jsonl",
                     "--run-dir", tmp_path / "r2")  # fmt: skip
    assert bare.returncode == 2 and len(bare.stderr.splitlines()) == 1
    assert "names no log parser" in bare.stderr


def test_each_instances_own_parser_field_is_read_and_never_silently_overridden(tmp_path):
    logs, rows = _mixed_projects(tmp_path, own_parsers=True)
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_dir = tmp_path / "r"
    done = evalrepro("regrade", logs, "--dataset", dataset, "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    assert {r.attempts[-1].observation.parser for r in _results(run_dir).values()} == {
        "pytest_full",
        "unittest",
    }
    # The run reads an instance's own field first: a --parser that differs would be
    # ignored for it, so it is refused, naming the instance.
    refused = evalrepro("regrade", logs, "--dataset", dataset, "--parser", "pytest_full",
                        "--run-dir", tmp_path / "r2")  # fmt: skip
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert "demo__unit-1" in refused.stderr and "cannot override" in refused.stderr
    assert not (tmp_path / "r2").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "not a dataset config"),
        ("name: x\ninstances: instances.jsonl\n", "test_ids"),
        ("name: [unclosed\n", "not a dataset config"),
    ],
)
def test_a_dataset_config_that_is_not_one_is_one_line(tmp_path, text, message):
    from evalrepro.errors import UserError
    from evalrepro.regrade import regrade_config

    logs, rows = _mixed_projects(tmp_path)
    (tmp_path / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(UserError) as error:
        regrade_config(logs, config)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_parsers_of_two_families_are_refused_naming_both_instances(tmp_path):
    from evalrepro.errors import UserError
    from evalrepro.regrade import regrade_config

    logs, rows = _mixed_projects(tmp_path, own_parsers=True)
    rows[0]["log_parser"] = "pytest"  # swebench's family, beside the native unittest
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(UserError) as error:
        regrade_config(logs, dataset)
    assert "demo__pyt-1" in str(error.value) and "demo__unit-1" in str(error.value)
    assert "one family" in str(error.value)


def _crashed_after_passing(text: str) -> str:
    """A log whose tests all printed PASSED/ok, its runner then exiting 1: swebench's
    get_logs_eval reads nothing of it ({}, not found), since the exit code contradicts."""
    return text.replace("Test Exit Code: 0'", "Test Exit Code: 1'").replace(
        ">>>>> Test Exit Code: 0", ">>>>> Test Exit Code: 1"
    )


def test_a_log_swebench_cannot_read_is_completed_and_unresolved_in_every_output(
    tree, tmp_path, monkeypatch
):
    """swebench writes report.json ``resolved: false`` for a log its reader finds nothing
    in, and make_run_report counts it completed and unresolved: our layout, our
    regrade's agreement and ``grade --json`` say what swebench says, key for key. A log
    swebench's own run made an error (its timeout line) is an error in our layout, and
    a report.json beside it that says "not resolved" is a difference, not agreement."""
    logs, dataset, resolved, doctored = tree
    odd = tmp_path / "logs" / "run_evaluation" / RUN_ID / MODEL_DIR
    shutil.copytree(logs, odd)
    unreadable = odd / "corpus__django-passing"
    log = unreadable / "test_output.txt"
    log.write_text(_crashed_after_passing(log.read_text()))
    planned = next(p for p in HONEST if p.instance_id == unreadable.name)
    prediction = {"instance_id": planned.instance_id, "model_patch": planned.patch,
                  "model_name_or_path": MODEL}  # fmt: skip
    theirs = get_eval_report(_spec(planned), prediction, str(log), True)
    assert theirs[planned.instance_id]["resolved"] is False
    assert theirs[planned.instance_id]["patch_successfully_applied"] is False
    (unreadable / "report.json").write_text(json.dumps(theirs, indent=4))
    # A log swebench's own run killed, beside a report.json someone left saying
    # "not resolved": swebench would list the instance in error_ids.
    killed = odd / next(
        i for i, yes in resolved.items() if not yes and i not in (doctored, unreadable.name)
    )
    (killed / "test_output.txt").write_text(
        (killed / "test_output.txt").read_text() + "\n\nTimeout error: 1800 seconds exceeded."
    )

    run_dir = tmp_path / "r"
    done = evalrepro("regrade", odd, "--dataset", dataset, "--run-dir", run_dir)
    assert done.returncode == 0, done.stderr
    results = _results(run_dir)
    assert results[unreadable.name].score.reason == "log_unparseable"  # ours: invalid
    layout = run_dir / "swebench"
    ours = json.loads((layout / f"{MODEL_DIR}.{RUN_ID}.json").read_text())
    assert unreadable.name in ours["completed_ids"] and unreadable.name in ours["unresolved_ids"]
    assert unreadable.name not in ours["error_ids"]
    assert killed.name in ours["error_ids"] and killed.name not in ours["completed_ids"]
    folder = layout / "logs" / "run_evaluation" / RUN_ID / MODEL_DIR / unreadable.name
    assert (folder / "report.json").read_text() == json.dumps(theirs, indent=4)

    # swebench's own reporting of our tree: the same lists.
    monkeypatch.chdir(layout)
    predictions = {
        p.instance_id: {
            "instance_id": p.instance_id,
            "model_name_or_path": MODEL,
            "model_patch": p.patch,
        }
        for p in HONEST
    }
    made = make_run_report(
        predictions, [{"instance_id": p.instance_id} for p in HONEST], RUN_ID, client=None,
        report_dir=str(tmp_path / "theirs"),
    )  # fmt: skip
    swebench_says = json.loads(Path(made).read_text())
    for key in ("completed_ids", "resolved_ids", "unresolved_ids", "error_ids"):
        assert ours[key] == swebench_says[key], key

    summary = json.loads((run_dir / "regrade.json").read_text())
    differing = {d["instance_id"]: d for d in summary["differences"]}
    assert unreadable.name not in differing
    assert differing[killed.name]["ours"].startswith("error (invalid: timeout")
    assert differing[killed.name]["theirs"] == "not resolved"
    assert "agree" in done.stdout and f"of {summary['compared']} agree" in done.stdout

    graded = evalrepro(
        "grade", "--instance", dataset, "--instance-id", unreadable.name, "--log", log, "--json"
    )
    assert graded.returncode == 0, graded.stderr
    payload = json.loads(graded.stdout)
    assert payload["status_map"] == {}  # swebench's get_logs_eval: ({}, False)
    assert payload["fail_to_pass"] == {"success": [], "failure": []}
    assert payload["score"]["reason"] == "log_unparseable"
