"""`evalrepro grade` grades one real log against one instance, as text or JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.corpus import load_corpus

PYTEST_LOG = next(log for log in load_corpus("pytest") if log.case == "pass_fail")


def evalrepro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *args], capture_output=True, text=True, check=False
    )


def wrap(region: str, exit_code: int) -> str:
    return (
        "+ git apply -v /tmp/test.patch\n>>>>> Start Test Output\n"
        f"{region}\n>>>>> End Test Output\n>>>>> Test Exit Code: {exit_code}\n"
    )


def native_statuses(log) -> dict[str, str]:
    assert log.truth is not None
    return log.truth


@pytest.fixture
def graded_files(tmp_path):
    truth = native_statuses(PYTEST_LOG)
    passed = sorted(t for t, s in truth.items() if s == "PASSED")
    failed = sorted(t for t, s in truth.items() if s == "FAILED")
    instances = [
        {
            "instance_id": "demo__pf-1",
            "repo": "demo/pf",
            "base_commit": "abc",
            "test_patch": "",
            "FAIL_TO_PASS": json.dumps(passed[:1]),
            "PASS_TO_PASS": json.dumps(passed[1:]),
            "log_parser": "pytest_full",
        },
        {
            "instance_id": "demo__pf-2",
            "repo": "demo/pf",
            "base_commit": "abc",
            "test_patch": "",
            "FAIL_TO_PASS": passed[:1] + failed[:1],
            "PASS_TO_PASS": passed[1:],
            "log_parser": "pytest_full",
        },
    ]
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances))
    log = tmp_path / "test_output.txt"
    log.write_text(wrap(PYTEST_LOG.text, 1))
    return SimpleNamespace(dataset=dataset, log=log, passed=passed, failed=failed)


def grade(
    files: SimpleNamespace, *args: str, log: Path | None = None
) -> subprocess.CompletedProcess:
    """`evalrepro grade` of the fixture's instances and log (or ``log``), with ``args``."""
    return evalrepro(
        "grade", "--instance", str(files.dataset), "--log", str(log or files.log), *args
    )


def test_json_output_has_the_documented_keys_and_verdicts(graded_files):
    files = graded_files
    done = grade(files, "--instance-id", "demo__pf-1", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"status_map", "fail_to_pass", "pass_to_pass", "resolution", "score"} <= set(result)
    assert result["status_map"] == PYTEST_LOG.truth
    assert result["fail_to_pass"] == {"success": files.passed[:1], "failure": []}
    assert result["resolution"] == "RESOLVED_FULL"
    assert result["score"]["outcome"] == "resolved"


def test_a_failing_fail_to_pass_test_makes_it_partial_and_unresolved(graded_files):
    files = graded_files
    done = grade(files, "--instance-id", "demo__pf-2", "--json")
    result = json.loads(done.stdout)
    assert result["fail_to_pass"]["failure"] == files.failed[:1]
    assert result["resolution"] == "RESOLVED_PARTIAL"
    assert result["score"]["outcome"] == "unresolved"


def test_text_output_shows_status_map_reports_resolution_and_score(graded_files):
    files = graded_files
    done = grade(files, "--instance-id", "demo__pf-2")
    assert done.returncode == 0, done.stderr
    assert "status map" in done.stdout
    assert "FAIL_TO_PASS: 1/2 ok" in done.stdout
    assert "resolution: RESOLVED_PARTIAL" in done.stdout
    assert "score: unresolved (tests_failed)" in done.stdout


def test_parser_flag_overrides_the_instances_parser(graded_files):
    files = graded_files
    done = grade(files, "--instance-id", "demo__pf-1", "--parser", "pytest", "--json")
    result = json.loads(done.stdout)
    assert result["parser"] == "pytest"


def test_a_swebench_instance_without_parser_field_gets_swebenchs_parser_for_its_repo(tmp_path):
    instance = tmp_path / "django.json"
    instance.write_text(
        json.dumps(
            {
                "instance_id": "django__django-1",
                "repo": "django/django",
                "base_commit": "abc",
                "test_patch": "",
                "FAIL_TO_PASS": "[]",
                "PASS_TO_PASS": "[]",
                "version": "5.0",
            }
        )
    )
    django_log = load_corpus("django")[0]
    log = tmp_path / "test_output.txt"
    log.write_text(wrap(django_log.text, 0))
    done = evalrepro("grade", "--instance", str(instance), "--log", str(log), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["parser"] == "django"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--instance-id", "nope"], "no instance 'nope'"),
        ([], "holds 2 instances; pick one with --instance-id"),
        (["--instance-id", "demo__pf-1", "--parser", "nosuch"], "unknown log parser 'nosuch'"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(graded_files, args, message):
    files = graded_files
    done = grade(files, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr


def test_a_missing_log_file_is_one_line(graded_files, tmp_path):
    files = graded_files
    done = grade(files, "--instance-id", "demo__pf-1", log=tmp_path / "absent.txt")
    assert done.returncode == 2
    assert "--log" in done.stderr and done.stderr.count("\n") == 1


def test_text_output_prints_test_ids_full_of_rich_markup_as_they_are(tmp_path):
    """Parametrized pytest ids hold paths in brackets ("[/tmp/x]"), and a log may hold
    anything: printed as text in the status map and the failure list, never as markup."""
    ids = [
        "tests/test_io.py::test_read[/tmp/data]",
        "tests/test_io.py::test_style[[bold red]boom[/]]",
        "tests/test_io.py::test_close[/]",
    ]
    region = "\n".join([f"PASSED {ids[0]}", f"FAILED {ids[1]} - x", f"FAILED {ids[2]} - y"])
    instance = {
        "instance_id": "demo__[bold]m[not bold]-1",
        "repo": "demo/m",
        "base_commit": "abc",
        "test_patch": "",
        "FAIL_TO_PASS": ids[1:],
        "PASS_TO_PASS": ids[:1],
        "log_parser": "pytest",
    }
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text(json.dumps(instance) + "\n")
    log = tmp_path / "test_output.txt"
    log.write_text(wrap(region, 1))
    done = evalrepro(
        "grade",
        "--instance",
        str(dataset),
        "--log",
        str(log),
        "--instance-id",
        instance["instance_id"],
    )
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "demo__[bold]m[not bold]-1" in out
    for test_id in ids:
        assert test_id in out or test_id in done.stdout.replace("\n", "")
    assert f"x {ids[1]}" in out and f"x {ids[2]}" in out


def test_the_resolution_of_an_unscorable_log_is_the_scores_none_not_the_parsed_lists(tmp_path):
    """A TAP log whose test command exited 1 while every line says ``ok`` is unscorable
    (the exit code contradicts the lines): its top-level resolution is the score's, none,
    not the RESOLVED_FULL the forged lines add up to."""
    instance = {
        "instance_id": "demo__tap-1",
        "repo": "demo/tap",
        "base_commit": "abc",
        "test_patch": "",
        "FAIL_TO_PASS": ["- adds"],
        "PASS_TO_PASS": ["- subtracts"],
        "log_parser": "tap",
    }
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text(json.dumps(instance) + "\n")
    log = tmp_path / "test_output.txt"
    log.write_text(wrap("TAP version 13\nok 1 - adds\nok 2 - subtracts\n1..2\n# tests 2", 1))
    done = evalrepro("grade", "--instance", str(dataset), "--log", str(log), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["score"]["outcome"] == "invalid"
    assert result["score"]["reason"] == "log_unparseable"
    assert result["resolution"] is None
    assert result["resolution"] == result["score"]["resolution"]
    text = evalrepro("grade", "--instance", str(dataset), "--log", str(log))
    assert "RESOLVED_FULL" not in text.stdout
    assert "score: invalid (log_unparseable" in " ".join(text.stdout.split())


def test_a_plain_pytest_log_without_markers_is_graded_whole_and_says_so(graded_files, tmp_path):
    files = graded_files
    plain = tmp_path / "pytest.log"
    plain.write_text(PYTEST_LOG.text)
    done = grade(files, "--instance-id", "demo__pf-1", "--json", log=plain)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["score"]["outcome"] == "resolved"
    assert result["observation"]["whole_log"] is True
    assert "whole log" in result["observation"]["parser_detail"]
    text = grade(files, "--instance-id", "demo__pf-1", log=plain)
    assert "no markers: the whole log was read" in " ".join(text.stdout.split())
    strict = json.loads(
        grade(files, "--instance-id", "demo__pf-1", "--json", "--strict", log=plain).stdout
    )
    assert strict["score"]["reason"] == "log_unparseable"
