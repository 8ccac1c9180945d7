"""Produce the mocha corpus: ``mocha --reporter min`` logs, as eslint's test command runs.

The min reporter prints only counts and failures, which is what SWE-bench's eslint
parser (FAIL_ONLY) reads. mocha 10 takes one reporter per run, so the ground truth
comes from a second run of the same files with mocha's own ``json`` reporter
(``--reporter-option output=FILE``): ``passes`` -> PASSED, ``failures`` -> FAILED
(a failing hook is listed there under its hook title), ``pending`` -> SKIPPED, keyed
by mocha's ``fullTitle``. The tests are deterministic, so both runs see the same
outcomes.

mocha comes from npm, installed outside the repo::

    npm install --prefix "${EVALREPRO_NODE_PREFIX:-$HOME/.cache/evalrepro-node}" mocha@10

Run ``python -m tests.runners.mocha`` from the repo root to rewrite
tests/corpus/mocha/.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus

RUNNER = "mocha"
COMPAT = ("eslint",)
WORKDIR_STAND_IN = "/corpus"
INSTALL_COMMAND = (
    'npm install --prefix "${EVALREPRO_NODE_PREFIX:-$HOME/.cache/evalrepro-node}" mocha@10'
)

MIN_PASSING = {
    "tests/math.spec.js": """\
const assert = require('assert');

describe('math', () => {
  it('adds', () => assert.strictEqual(1 + 1, 2));
  describe('nested', () => {
    it('multiplies', () => assert.strictEqual(2 * 2, 4));
  });
  it.skip('pending one', () => {});
});
""",
}

MIN_FAILURES = {
    "tests/a-strings.spec.js": """\
const assert = require('assert');

describe('strings', () => {
  it('concats', () => assert.strictEqual('a' + 'b', 'ab'));
  it('fails equality', () => assert.strictEqual('a', 'b'));
  describe('deeper', () => {
    it('throws TypeError on bad input', () => { throw new TypeError('bad'); });
    it('custom error class', () => {
      class Oops extends Error {}
      const error = new Oops('oops');
      error.name = 'Oops';
      throw error;
    });
  });
  it('fails after the custom error', () => assert.deepStrictEqual([1], [2]));
});
""",
    "tests/b-errors.spec.js": """\
const assert = require('assert');

describe('Errors are reported', () => {
  it('with a name containing the word', () => assert.ok(false));
  it('ünïcødé title passes', () => {});
});
""",
}

MIN_HOOK_ERROR = {
    "tests/hooks.spec.js": """\
const assert = require('assert');

describe('with a before hook', () => {
  before(() => { throw new Error('hook exploded'); });
  it('never runs', () => {});
});
describe('with a beforeEach hook', () => {
  beforeEach(function () { if (this.currentTest.title === 'second') throw new Error('each'); });
  it('first', () => {});
  it('second', () => {});
});
describe('fine suite', () => {
  it('works', () => assert.ok(true));
});
""",
}


@dataclass(frozen=True)
class _Case:
    case: str
    files: dict[str, str]


CASES = (
    _Case("min_passing", MIN_PASSING),
    _Case("min_failures", MIN_FAILURES),
    _Case("min_hook_error", MIN_HOOK_ERROR),
)


def node_prefix() -> Path:
    default = Path.home() / ".cache" / "evalrepro-node"
    return Path(os.environ.get("EVALREPRO_NODE_PREFIX") or default)


def mocha_executable() -> Path | None:
    """mocha from the npm cache prefix, or None when it is not installed."""
    candidate = node_prefix() / "node_modules" / ".bin" / "mocha"
    return candidate if candidate.exists() else None


def json_truth(report: dict) -> dict[str, str]:
    truth: dict[str, str] = {}
    for key, status in (("passes", "PASSED"), ("failures", "FAILED"), ("pending", "SKIPPED")):
        for test in report[key]:
            truth[test["fullTitle"]] = status
    return truth


def _mocha(mocha: Path, args: list[str], cwd: Path) -> str:
    # Colours depend on the terminal; FORCE_COLOR would add escapes the parsers never saw.
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    done = subprocess.run(
        [str(mocha), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _produce_case(spec: _Case, mocha: Path, workdir: Path) -> CorpusLog:
    casedir = workdir / spec.case
    for name, source in spec.files.items():
        (casedir / name).parent.mkdir(parents=True, exist_ok=True)
        (casedir / name).write_text(source, encoding="utf-8")
    files = sorted(spec.files)
    text = _mocha(mocha, ["--reporter", "min", *files], casedir)
    _mocha(mocha, ["--reporter", "json", "--reporter-option", "output=truth.json", *files], casedir)
    truth = json_truth(json.loads((casedir / "truth.json").read_text(encoding="utf-8")))
    for path in (str(casedir.resolve()), str(casedir)):
        text = text.replace(path, WORKDIR_STAND_IN)
    return CorpusLog(
        runner=RUNNER,
        case=spec.case,
        command="mocha --reporter min " + " ".join(files) + " 2>&1",
        text=text,
        truth=truth,
        compat=COMPAT,
    )


def produce(workdir: Path) -> list[CorpusLog]:
    mocha = mocha_executable()
    if mocha is None:
        raise FileNotFoundError(f"mocha is not installed; run: {INSTALL_COMMAND}")
    # The cases are independent processes; running them side by side keeps the live
    # tests within a second or so.
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda spec: _produce_case(spec, mocha, workdir), CASES))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
