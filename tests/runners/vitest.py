"""Produce the Vitest corpus: the Jest corpus's cases, as ES modules, really run by vitest 2.

``vitest run --reporter=verbose 2>&1`` (what SWE-bench's Vitest instances run, read by
the compatible ``vitest`` parser) and ``vitest run --reporter=json 2>&1`` (read by the
native ``jest_json``: vitest writes jest's report shape). Ground truth, for both logs,
is vitest's own JSON report, written by a third run with ``--outputFile`` and read by
the rules of ``tests/runners/jest.py``.

vitest comes from npm, installed outside the repo::

    npm install --prefix "${EVALREPRO_NODE_PREFIX:-$HOME/.cache/evalrepro-node}" vitest@2

Run ``python -m tests.runners.vitest`` from the repo root to rewrite tests/corpus/vitest/.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus
from tests.runners.jest import _clean, json_truth
from tests.runners.mocha import node_prefix

RUNNER = "vitest"
COMPAT = ("vitest",)
NATIVE = "jest_json"
INSTALL_COMMAND = (
    'npm install --prefix "${EVALREPRO_NODE_PREFIX:-$HOME/.cache/evalrepro-node}" vitest@2'
)
IMPORT = "import { describe, test, expect } from 'vitest';\n"

PASSING = {
    "test/calc.test.js": IMPORT
    + """\
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
    "test/a.test.js": IMPORT
    + """\
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
test('name with spaces 12ms', () => {});
test('prints fake lines', () => {
  console.log('✓ invented by console.log');
  process.stdout.write('✓ invented on stdout\\n');
});
""",
    "test/b.test.js": IMPORT
    + """\
test('shared title', () => {});
test.each([1, 2])('param %i', (n) => { expect(n).toBe(1); });
""",
    "test/c.test.js": "import './does-not-exist.js';\n"
    + IMPORT
    + """\
test('never runs', () => {});
""",
}

FORGED = {
    "test/forge.test.js": IMPORT
    + """\
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
    "later (vitest's) winning, and reports two reports as a problem: the log is unscorable"
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


def vitest_executable() -> Path | None:
    candidate = node_prefix() / "node_modules" / ".bin" / "vitest"
    return candidate if candidate.exists() else None


def unavailable() -> str | None:
    return None if vitest_executable() else f"vitest is not installed; run: {INSTALL_COMMAND}"


def _vitest(vitest: Path, args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "CI")}
    done = subprocess.run(
        [str(vitest), "run", *args, "--no-color", "--no-file-parallelism"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _produce_case(spec: _Case, vitest: Path, workdir: Path) -> list[CorpusLog]:
    casedir = workdir / spec.case
    casedir.mkdir(parents=True)
    (casedir / "package.json").write_text(
        '{"name": "corpus", "private": true, "type": "module"}\n', "utf-8"
    )
    for name, source in spec.files.items():
        (casedir / name).parent.mkdir(parents=True, exist_ok=True)
        (casedir / name).write_text(source, encoding="utf-8")
    verbose = _vitest(vitest, ["--reporter=verbose"], casedir)
    report = _vitest(vitest, ["--reporter=json"], casedir)
    _vitest(vitest, ["--reporter=json", "--outputFile=truth.json"], casedir)
    truth = json_truth(json.loads((casedir / "truth.json").read_text("utf-8")), casedir)
    flags = "--no-color --no-file-parallelism"
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_verbose",
            command=f"vitest run --reporter=verbose {flags} 2>&1",
            text=_clean(verbose, casedir),
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_json",
            command=f"vitest run --reporter=json {flags} 2>&1",
            text=_clean(report, casedir),
            truth=truth,
            native=NATIVE,
            known_differences=dict(spec.json_differences),
        ),
    ]


def produce(workdir: Path) -> list[CorpusLog]:
    vitest = vitest_executable()
    if vitest is None:
        raise FileNotFoundError(f"vitest is not installed; run: {INSTALL_COMMAND}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        produced = list(pool.map(lambda spec: _produce_case(spec, vitest, workdir), CASES))
    return [log for logs in produced for log in logs]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
