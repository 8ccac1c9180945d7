"""A stand-in for the container harness, for checking the demo dataset locally.

It does what the eval script does in a container (semantics.md, "Running one trial"):
apply the model patch, reset the files the test patch touches to the base commit,
apply the test patch, run the spec's test command on those files, parse, grade.

Differences from a container trial, each on purpose:
* the network is "off" through a dead HTTP proxy (a container runs with --network none);
* the caller passes a short timeout for a patch known to loop forever;
* the runner also records its own ground truth, through a pytest plugin or a unittest
  result class that print nothing, so the log is what the plain test command prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evalrepro.errors import UserError
from evalrepro.grade.parsers import LogParser, ParsedLog, Status, get_parser
from evalrepro.sources.demo_repos import build_repo, repo_names

#: What conf/dataset/demo.yaml says per repo: the test command (run on the files the
#: test patch touches) and the native parser reading its output.
SPECS: dict[str, dict[str, object]] = {
    "demo/calc": {
        "test_cmd": ["pytest", "-rA", "-v", "-p", "no:cacheprovider"],
        "parser": "pytest_full",
    },
    "demo/textkit": {
        "test_cmd": ["pytest", "-rA", "-v", "-p", "no:cacheprovider"],
        "parser": "pytest_full",
    },
    "demo/ledger": {"test_cmd": ["python", "-m", "unittest", "-v"], "parser": "unittest"},
}
TEST_TIMEOUT = 60
#: Statuses that count as passed (semantics.md, "Grading").
PASSING = frozenset({Status.PASSED, Status.XFAIL})
BIN = Path(sys.executable).parent


# pytest plugin: records {node id: status} as the runner sees it, prints nothing.
_PYTEST_TRUTH_PLUGIN = """
import json, os
_STATUSES = {}
def pytest_runtest_logreport(report):
    wasxfail = hasattr(report, "wasxfail")
    if report.when == "call":
        status = {"passed": "XPASS" if wasxfail else "PASSED",
                  "failed": "FAILED",
                  "skipped": "XFAIL" if wasxfail else "SKIPPED"}[report.outcome]
    elif report.failed:
        status = "ERROR"
    elif report.skipped:
        status = "SKIPPED"
    else:
        return
    if _STATUSES.get(report.nodeid) not in ("FAILED", "ERROR"):
        _STATUSES[report.nodeid] = status
def pytest_sessionfinish(session):
    with open(os.environ["DEMO_TRUTH"], "w") as f:
        json.dump(_STATUSES, f)
"""
# `python -m unittest -v ...` with a result class that also records {test id: status}.
_UNITTEST_TRUTH_MAIN = """
import json, os, unittest
class Result(unittest.TextTestResult):
    statuses = {}
    def _record(self, test, status):
        self.statuses[test.id()] = status
    def addSuccess(self, test):
        super().addSuccess(test); self._record(test, "PASSED")
    def addFailure(self, test, err):
        super().addFailure(test, err); self._record(test, "FAILED")
    def addError(self, test, err):
        super().addError(test, err); self._record(test, "ERROR")
    def addSkip(self, test, reason):
        super().addSkip(test, reason); self._record(test, "SKIPPED")
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err); self._record(test, "XFAIL")
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test); self._record(test, "XPASS")
class Runner(unittest.TextTestRunner):
    resultclass = Result
try:
    unittest.main(module=None, testRunner=Runner)
finally:
    with open(os.environ["DEMO_TRUTH"], "w") as f:
        json.dump(Result.statuses, f)
"""


@dataclass(frozen=True)
class RunOutput:
    log: str
    exit_code: int
    #: {test id: status} as the runner itself recorded it.
    truth: dict[str, str]


def touched_files(patch: str) -> list[str]:
    """The files a git diff touches (the test directives, for a test patch)."""
    return re.findall(r"^diff --git a/\S+ b/(\S+)$", patch, flags=re.MULTILINE)


#: git without the user's or the system's config (autocrlf and the like change files).
_GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env=_GIT_ENV,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def build_all(root: Path) -> dict[str, Path]:
    """Every demo repo built under ``root``, by SWE-bench repo name (``demo/calc``)."""
    for name in repo_names():
        build_repo(name, root / name)
    return {f"demo/{name}": root / name for name in repo_names()}


def checkout(repos: dict[str, Path], instance: dict, dest: Path) -> Path:
    """A fresh clone of the instance's repo at its base commit."""
    source = repos[instance["repo"]]
    assert git(source, "clone", "--quiet", str(source), str(dest)).returncode == 0
    assert git(dest, "checkout", "--quiet", "--detach", instance["base_commit"]).returncode == 0
    return dest


def apply_model_patch(repo: Path, patch: str) -> bool:
    """Apply as the harness does (git apply, else patch --fuzz=5); False: rejected."""
    if not patch.strip():
        return False
    if git(repo, "apply", "--check", "-", stdin=patch).returncode == 0:
        return git(repo, "apply", "-", stdin=patch).returncode == 0
    fuzzy = ["patch", "--batch", "--fuzz=5", "-p1", "--no-backup-if-mismatch"]
    if shutil.which("patch") is None:
        return False
    dry = subprocess.run(
        [*fuzzy, "--dry-run"], cwd=repo, input=patch, text=True, capture_output=True
    )
    if dry.returncode != 0:
        return False
    return (
        subprocess.run(fuzzy, cwd=repo, input=patch, text=True, capture_output=True).returncode == 0
    )


def reset_and_apply_test_patch(repo: Path, instance: dict) -> None:
    """Reset the files the test patch touches to the base commit, then apply it."""
    for path in touched_files(instance["test_patch"]):
        if git(repo, "cat-file", "-e", f"{instance['base_commit']}:{path}").returncode == 0:
            assert git(repo, "checkout", instance["base_commit"], "--", path).returncode == 0
        else:
            (repo / path).unlink(missing_ok=True)
    done = git(repo, "apply", "-", stdin=instance["test_patch"])
    assert done.returncode == 0, done.stderr


def run_tests(repo: Path, instance: dict, timeout: float = TEST_TIMEOUT) -> RunOutput:
    """Run the spec's test command on the test patch's files (stdout+stderr as one log)."""
    files = touched_files(instance["test_patch"])
    truth_path = repo.parent / f"{repo.name}.truth.json"
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(repo.parent),
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        # Plugins installed in this venv (xdist...) do not exist in the demo's env image.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        # A dead proxy: any HTTP request fails at once, as under --network none.
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "no_proxy": "",
        "DEMO_TRUTH": str(truth_path),
    }
    command = SPECS[instance["repo"]]["test_cmd"]
    assert isinstance(command, list)
    if command[0] == "pytest":
        plugin_dir = repo.parent / f"{repo.name}.plugin"
        plugin_dir.mkdir(exist_ok=True)
        (plugin_dir / "demo_truth_plugin.py").write_text(_PYTEST_TRUTH_PLUGIN)
        env["PYTHONPATH"] = str(plugin_dir)
        argv = [str(BIN / "pytest"), *command[1:], "-p", "demo_truth_plugin", *files]
    else:
        argv = [str(BIN / "python"), "-c", _UNITTEST_TRUTH_MAIN, *command[3:], *files]
    done = subprocess.run(
        argv,
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    return RunOutput(done.stdout, done.returncode, truth)


def native_parser(instance: dict) -> LogParser | None:
    try:
        return get_parser(str(SPECS[instance["repo"]]["parser"]))
    except UserError:
        return None


def parse(instance: dict, run: RunOutput) -> ParsedLog:
    """The native parser's reading of the log; the runner's own record if it is missing."""
    parser = native_parser(instance)
    if parser is None:
        # TODO(lead): the native parser is not registered yet; grading falls back to the
        # runner's own record. Remove once pytest_full / unittest exist.
        return ParsedLog({k: Status(v) for k, v in run.truth.items()}, bool(run.truth))
    return parser.parse(run.log)


def grade(parsed: ParsedLog, instance: dict) -> str:
    """semantics.md, "Grading" (after the patch was applied and the run finished)."""
    if parsed.problems or not (parsed.statuses or parsed.suite_ran):
        return "invalid"
    passed = {t for t, s in parsed.statuses.items() if s in PASSING}
    kept = passed | {t for t, s in parsed.statuses.items() if s == Status.SKIPPED}
    f2p_ok = all(t in passed for t in instance["FAIL_TO_PASS"])
    p2p_ok = all(t in kept for t in instance["PASS_TO_PASS"])
    return "resolved" if f2p_ok and p2p_ok else "unresolved"


@dataclass(frozen=True)
class Trial:
    outcome: str  # resolved | unresolved | invalid
    applied: bool
    #: None when the patch was not applied or the run timed out.
    run: RunOutput | None = None
    parsed: ParsedLog | None = None


def run_trial(
    repos: dict[str, Path], instance: dict, patch: str, workdir: Path, timeout: float = TEST_TIMEOUT
) -> Trial:
    """One trial of ``patch`` on ``instance``, graded in the order of semantics.md."""
    repo = checkout(repos, instance, workdir / "repo")
    if not apply_model_patch(repo, patch):
        return Trial("unresolved", applied=False)
    reset_and_apply_test_patch(repo, instance)
    try:
        run = run_tests(repo, instance, timeout)
    except subprocess.TimeoutExpired:
        return Trial("invalid", applied=True)
    parsed = parse(instance, run)
    return Trial(grade(parsed, instance), applied=True, run=run, parsed=parsed)
