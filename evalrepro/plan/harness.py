"""The harness that runs, observes and grades a trial: its version and its code digest.

A trial id includes the harness, so that a change to what decides a verdict gives new
trial ids even without a version bump. The version alone does not do that (a development
checkout changes every day under one version), so the harness is also identified by
``code_digest()``: sha256 over the canonical JSON of ``{path: sha256 of the file's
bytes}`` for every module that can change a result (:data:`RESULT_CODE`: the log
parsers, grading and scoring, the observation and test-log models, how an attempt's
output and a foreign log are observed, the test specs, the patch checks and protection
rules, and the scripts that run inside the container).
The rest (reports, the CLI, builders) can change freely without new trial ids.
A kind that another package installs (a parser, a runtime, ...) is covered per trial,
with its distribution, version and code digest: ``evalrepro.plan.plugin_code``.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from pathlib import Path

from evalrepro import PACKAGE_DIR, __version__
from evalrepro.digest import sha256_json
from evalrepro.records.sessions import HarnessSource

#: The modules (files, or packages taken whole) whose code can change a trial's result.
RESULT_CODE = (
    "grade/canary.py",
    "grade/canary_languages.py",
    "grade/foreign.py",
    "grade/fresh.py",
    "grade/grading.py",
    "grade/observation.py",
    "grade/parsers",
    "grade/rerun.py",
    "grade/score.py",
    "grade/testlog.py",
    "grade/twins.py",
    "plan/testspec.py",
    # The records a result is judged from: what they hold is what is judged.
    "records/canary.py",
    "records/foreign.py",
    "records/fresh.py",
    "records/observation.py",
    "records/rerun.py",
    "records/score.py",
    "records/supervision.py",
    "records/testspec.py",
    "records/words.py",
    "rules/evalscript.py",
    "rules/patchcheck.py",
    "rules/protection.py",
    "run/recorder.py",
    "runtimes/supervision.py",
    "sandbox",
)

#: evalrepro's modules that the result code imports but that cannot change a verdict:
#: plumbing (files, digests, errors, text shown), the records' base and the records of
#: what a trial was (its identity, artifacts, usage: in the trial id or its digests
#: already), and the configs and targets whose values reach a result only through the
#: test spec or the target digest, which the trial id holds. A module the result code
#: comes to import is in one tuple or the other (tests/test_harness.py holds it).
RESULT_NEUTRAL = (
    "__init__.py",
    "atomic.py",
    "digest.py",
    "errors.py",
    "files.py",
    "jsonfile.py",
    "npmnames.py",
    "plugins.py",
    "sample.py",
    "text.py",
    "records/agent.py",
    "records/artifact.py",
    "records/base.py",
    "records/timing.py",
    "records/trial.py",
    "records/usage.py",
    "config/agents.py",
    "config/builders.py",
    "config/ecosystems.py",
    "config/environment.py",
    "config/program.py",
    "config/protection.py",
    "config/spec.py",
    "runtimes/attempt.py",
    "targets/agent.py",
    "targets/base.py",
)


def code_files(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """The files :func:`code_digest` covers, by their path relative to the package."""
    files: dict[str, Path] = {}
    for name in RESULT_CODE:
        path = root / name
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in found:
            if "__pycache__" not in file.parts:
                files[file.relative_to(root).as_posix()] = file
    return files


def code_digest(root: Path | None = None) -> str:
    """sha256 over the canonical JSON of {relative path: "sha256:<hex> of its bytes"}
    (of the running evalrepro's code, unless ``root`` names another copy)."""
    return _running_digest() if root is None else _digest(root)


@cache
def _running_digest() -> str:
    # Once per process: the code that is running does not change under it.
    return _digest(PACKAGE_DIR)


def _digest(root: Path) -> str:
    return sha256_json(
        {
            rel: "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
            for rel, path in code_files(root).items()
        }
    )


@cache
def source() -> HarnessSource:
    checkout = PACKAGE_DIR.parent
    if not (checkout / ".git").exists() or not (checkout / "pyproject.toml").exists():
        return HarnessSource(version=__version__)
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    commit = done.stdout.strip() if done.returncode == 0 else None
    return HarnessSource(version=__version__, commit=commit, editable=True)
