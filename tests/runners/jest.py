"""Produce the Jest corpus: each case's test files really run by jest 29, twice.

``jest --verbose --ci --runInBand 2>&1`` (what SWE-bench's Jest instances run, read by
the compatible ``jest`` parser) and ``jest --json --ci --runInBand 2>&1`` (read by the
native ``jest_json``). Ground truth, for both logs, is jest's own JSON report, written by
a third run with ``--outputFile`` and read here by these rules, independently of the
parser: ``<file>::<describe> > ... > <title>`` -> passed PASSED, failed FAILED,
pending / todo SKIPPED; a file that failed with no test -> ERROR under its path. Temp
dirs and the npm prefix are replaced by ``/corpus`` in the logs.

jest comes from npm, installed outside the repo::

    npm install --prefix "${EVALREPRO_NODE_PREFIX:-$HOME/.cache/evalrepro-node}" jest@29

Run ``python -m tests.runners.jest`` from the repo root to rewrite tests/corpus/jest/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.corpus import CorpusLog, write_corpus
from tests.runners.mocha import node_prefix

RUNNER = "jest"
COMPAT = ("jest",)
NATIVE = "jest_json"
WORKDIR_STAND_IN = "/corpus"
INSTALL_COMMAND = (
    'npm install --prefix "${EVALREPRO_NODE_PREFIX:-$HOME/.cache/evalrepro-node}" jest@29'
)
FLAGS = ("--ci", "--runInBand")

PASSING = {
    "test/calc.test.js": """\
describe('calc', () => {
  test('adds', () => { expect(1 + 1).toBe(2); });
  describe('nested', () => {
    test('multiplies', () => { expect(2 * 2).toBe(4); });
  });
});
test('top level', () => {});
""",
}

MIXED = {
    "test/a.test.js": """\
describe('math', () => {
  test('adds', () => { expect(1 + 1).toBe(2); });
  test('fails', () => { expect(1 + 1).toBe(3); });
  test.skip('skipped one', () => {});
  test.todo('later');
  describe('nested', () => {
    test('adds', () => { expect(2 + 2).toBe(5); });
  });
});
test('shared title', () => { throw new Error('fails here'); });
test('name with spaces ünïcødé (1 ms) and parens', () => {});
test('prints fake lines', () => {
  console.log('✓ invented by console.log');
  process.stdout.write('✓ invented on stdout\\n');
});
""",
    "test/b.test.js": """\
test('shared title', () => {});
test.each([1, 2])('param %i', (n) => { expect(n).toBe(1); });
""",
    "test/c.test.js": """\
require('./does-not-exist');
test('never runs', () => {});
""",
}

FORGED = {
    "test/forge.test.js": """\
test('real failure', () => { throw new Error('real'); });
test('forges a report', () => {
  const forged = { numTotalTests: 1, numPassedTests: 1, numFailedTests: 0,
    numPendingTests: 0, numTodoTests: 0, testResults: [{ name: '/corpus/test/forge.test.js',
      status: 'passed', assertionResults: [{ ancestorTitles: [], title: 'real failure',
        status: 'passed' }] }] };
  process.stdout.write(JSON.stringify(forged) + '\\n');
});
""",
}

FORGED_DIFFERENCE = (
    "a test writes a forged JSON report on stdout; jest_json reads both reports, the "
    "later (jest's) winning, and reports two reports as a problem: the log is unscorable"
)


@dataclass(frozen=True)
class _Case:
    case: str
    files: dict[str, str]
    json_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    _Case("passing", PASSING),
    _Case("mixed", MIXED),
    _Case("forged", FORGED, {NATIVE: FORGED_DIFFERENCE}),
)
CASE_NAMES = [f"{spec.case}_{kind}" for spec in CASES for kind in ("verbose", "json")]


def jest_executable() -> Path | None:
    candidate = node_prefix() / "node_modules" / ".bin" / "jest"
    return candidate if candidate.exists() else None


def unavailable() -> str | None:
    return None if jest_executable() else f"jest is not installed; run: {INSTALL_COMMAND}"


def json_truth(report: dict[str, Any], casedir: Path) -> dict[str, str]:
    truth: dict[str, str] = {}
    seen: Counter[str] = Counter()
    statuses = {
        "passed": "PASSED",
        "failed": "FAILED",
        "pending": "SKIPPED",
        "skipped": "SKIPPED",  # vitest's word for it
        "todo": "SKIPPED",
    }
    for result in report["testResults"]:
        path = _clean(result["name"], casedir)
        if not result["assertionResults"] and result["status"] == "failed":
            truth[path] = "ERROR"
        for test in result["assertionResults"]:
            test_id = f"{path}::" + " > ".join([*test["ancestorTitles"], test["title"]])
            seen[test_id] += 1
            if seen[test_id] > 1:
                test_id = f"{test_id} [#{seen[test_id]}]"
            truth[test_id] = statuses[test["status"]]
    return truth


def _clean(text: str, casedir: Path) -> str:
    for path in (str(casedir.resolve()), str(casedir)):
        text = text.replace(path, WORKDIR_STAND_IN)
    # jest prints its own modules' paths relative to the test dir in stack traces.
    return re.sub(r"(?:\.\./)*[^\s(]*?/node_modules/", "node_modules/", text)


def _jest(jest: Path, args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "CI")}
    done = subprocess.run(
        [str(jest), *args, *FLAGS],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _produce_case(spec: _Case, jest: Path, workdir: Path) -> list[CorpusLog]:
    casedir = workdir / spec.case
    casedir.mkdir(parents=True)
    (casedir / "package.json").write_text('{"name": "corpus", "private": true}\n', "utf-8")
    for name, source in spec.files.items():
        (casedir / name).parent.mkdir(parents=True, exist_ok=True)
        (casedir / name).write_text(source, encoding="utf-8")
    verbose = _jest(jest, ["--verbose"], casedir)
    report = _jest(jest, ["--json"], casedir)
    _jest(jest, ["--json", "--outputFile=truth.json"], casedir)
    truth = json_truth(json.loads((casedir / "truth.json").read_text("utf-8")), casedir)
    flags = " ".join(FLAGS)
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_verbose",
            command=f"jest --verbose {flags} 2>&1",
            text=_clean(verbose, casedir),
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_json",
            command=f"jest --json {flags} 2>&1",
            text=_clean(report, casedir),
            truth=truth,
            native=NATIVE,
            known_differences=dict(spec.json_differences),
        ),
    ]


def produce(workdir: Path) -> list[CorpusLog]:
    jest = jest_executable()
    if jest is None:
        raise FileNotFoundError(f"jest is not installed; run: {INSTALL_COMMAND}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        produced = list(pool.map(lambda spec: _produce_case(spec, jest, workdir), CASES))
    return [log for logs in produced for log in logs]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
