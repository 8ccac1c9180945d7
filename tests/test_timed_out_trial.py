"""A trial whose tests a timeout (or a limit) stopped: its listed tests the log does not
report are "not run: timeout", never "failed / not in the status map", on its viewer page;
the console, Markdown and HTML reports call it "not run: timeout" (a runner the harness
killed), not "runner exit abnormal"; the Markdown flagged-trial table keeps the column that
says why a trial is flagged.

The run is the demo in the fake environment (``tests/fake_backend.py``): demo__calc-1's
tests are killed by the timeout after its first PASS_TO_PASS test passed, the way the
supervisor reports it (no exit code, SIGKILL, no normal shutdown of the runner);
demo__calc-2's by the memory limit before any test reported; the others resolve.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.cli import main
from evalrepro.config.experiment import compose
from evalrepro.grade.score import score
from evalrepro.pipeline import run_experiment
from evalrepro.records.observation import Observation
from evalrepro.report.view import view_run
from evalrepro.sample import load_samples
from tests.fake_backend import Tests, fake_backend, gold_scenario
from tests.test_view import listed_tests, page_of


@pytest.fixture(scope="module")
def samples():
    config = compose(["+experiment=demo"])
    return {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory, samples):
    root = tmp_path_factory.mktemp("stopped")
    gold = gold_scenario(samples)

    def scenario(instance_id: str, patch: str) -> Tests:
        if instance_id == "demo__calc-1":
            return Tests(passed=tuple(samples[instance_id].pass_to_pass[:1]), stopped="timeout")
        if instance_id == "demo__calc-2":
            return Tests(stopped="memory")
        return gold(instance_id, patch)

    config = compose(["+experiment=demo", "environment=fake"])
    outcome = run_experiment(
        config,
        Console(file=io.StringIO()),
        run_dir=root / "run",
        cache_dir=root / "cache",
        backend=fake_backend(scenario),
    )
    reasons = {line.instance_id: line.reason for line in outcome.results.trials}
    assert reasons["demo__calc-1"] == "timeout" and reasons["demo__calc-2"] == "limit_memory"
    return root / "run"


def report(capsys, run: Path, *args: str) -> str:
    assert main(["report", str(run), *args, "--n-resamples", "200"]) in (0, 3)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.out


def test_the_viewer_shows_the_tests_a_timeout_stopped_as_not_run(stopped_run, samples):
    site = view_run(stopped_run, n_resamples=200)
    page = page_of(site, "demo__calc-1")
    tests = listed_tests(page)
    sample = samples["demo__calc-1"]
    listed = [("FAIL_TO_PASS", t) for t in sample.fail_to_pass]
    listed += [("PASS_TO_PASS", t) for t in sample.pass_to_pass]
    # pytest's log without its totals line is not trusted: nothing parsed, nothing ran to
    # its end as far as the grading knows.
    assert tests == dict.fromkeys(listed, ("not run", "not run: timeout"))
    assert "not in the status map" not in page
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert f"0 failed; {len(listed)} not run" in text
    assert "Stopped: timeout (the tests ran longer than 300 s)" in text


def test_the_viewer_names_the_limit_that_stopped_the_tests(stopped_run, samples):
    site = view_run(stopped_run, n_resamples=200)
    tests = listed_tests(page_of(site, "demo__calc-2"))
    assert tests and set(tests.values()) == {("not run", "not run: memory limit")}


def test_the_console_report_says_not_run_timeout_not_runner_exit_abnormal(stopped_run, capsys):
    text = report(capsys, stopped_run)
    flagged = text.split("flagged trials")[1]
    row = next(line for line in flagged.splitlines() if "demo__calc-1" in line)
    assert "not run: timeout" in row
    assert "runner exit abnormal" not in text
    row = next(line for line in flagged.splitlines() if "demo__calc-2" in line)
    assert "not run: memory limit" in row


def test_the_markdown_flagged_table_keeps_the_reason_column(stopped_run, capsys):
    text = report(capsys, stopped_run, "--markdown")
    header = next(line for line in text.splitlines() if line.startswith("| flagged trial"))
    assert header.count("|") == 4 and "runner exit" in header
    assert "| demo__calc-1 (sample 0) | invalid (timeout) | not run: timeout |" in text
    assert "| demo__calc-2 (sample 0) | invalid (limit_memory) | not run: memory limit |" in text


def test_the_html_report_says_not_run_timeout(stopped_run, capsys, tmp_path):
    page = tmp_path / "r.html"
    report(capsys, stopped_run, "--html", str(page))
    flagged = page.read_text().split('id="flagged-section"')[1].split("</section>")[0]
    assert "not run: timeout" in flagged and "not run: memory limit" in flagged
    assert "abnormal" not in flagged


def test_the_json_report_records_what_stopped_a_flagged_trial(stopped_run, capsys):
    import json

    flagged = json.loads(report(capsys, stopped_run, "--json"))["flagged"]
    assert {f["instance_id"]: f["stopped"] for f in flagged} == {
        "demo__calc-1": "timeout",
        "demo__calc-2": "memory",
    }


def test_a_timeout_before_the_tests_reported_is_not_run_not_a_parser_status(stopped_run, tmp_path):
    # The host's deadline ended the container before the supervisor said the tests had
    # finished: nothing was parsed. The page names the stop, not the parser's status.
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(stopped_run, run)
    (result_file,) = run.glob("trials/demo__calc-1--*/result.json")
    result = json.loads(result_file.read_text())
    observation = result["attempts"][-1]["observation"]
    assert observation["execution_status"] == "timeout"
    observation.update(tests=None, parser_status="not_parsed")
    result_file.write_text(json.dumps(result))
    text = " ".join(
        re.sub(r"<[^>]+>", " ", page_of(view_run(run, n_resamples=200), "demo__calc-1")).split()
    )
    assert "Not run: timeout" in text and "nothing was graded" in text
    assert "parser status" not in text


def test_a_tampered_runner_s_re_runs_are_not_called_flaky(stopped_run, tmp_path):
    # A must-fail canary passed alone too (runner_tampered): a listed test that "passed
    # alone" on re-run is no sign of flakiness, and the page does not call it flaky.
    import json
    import shutil

    run = tmp_path / "run"
    shutil.copytree(stopped_run, run)
    (result_file,) = run.glob("trials/demo__calc-3--*/result.json")
    result = json.loads(result_file.read_text())
    attempt = result["attempts"][-1]
    test = attempt["observation"]["tests"]["fail_to_pass"]["success"][0]
    attempt["observation"].update(
        rerun_times=2,
        reruns=[{"test": test, "group": "fail_to_pass", "outcomes": ["failed", "passed"]}],
        rerun_canary={"test": "test_canary", "expect": "fail", "outcome": "passed"},
    )
    # The score the grader gives that observation, as a run would have recorded it.
    scored = score(Observation.model_validate(attempt["observation"]))
    assert scored.reason == "runner_tampered"
    attempt["score"] = result["score"] = scored.model_dump(mode="json")
    result_file.write_text(json.dumps(result))
    page = page_of(view_run(run, n_resamples=200), "demo__calc-3")
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "Not flaky: a must-fail canary also passed" in text
    assert "flaky: passed alone" not in text and "Flaky:" not in text
    assert "passed alone on re-run 2 of 2, not judged: the runner was tampered with" in text
