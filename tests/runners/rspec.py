"""Produce the RSpec corpus: small spec files really run by RSpec 3.12 (Debian's).

Each case runs twice: ``rspec --format json | jq -r '.examples[] |
"\\(.full_description) - \\(.status)"'`` (SWE-bench's transformed-JSON shape, read by
the compatible ``rspec_transformed_json``) and ``rspec --format json 2>&1`` (read by the
native ``rspec_json``). Ground truth, for both logs, is RSpec's JSON report from a third
run (``--out FILE``), read here by these rules: ``<file_path>::<full_description>`` ->
passed PASSED, failed FAILED, pending SKIPPED; errors outside of examples -> ERROR under
``rspec::errors outside of examples``.

Run ``python -m tests.runners.rspec`` from the repo root to rewrite tests/corpus/rspec/
(needs ``apt-get install ruby-rspec jq``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.corpus import CorpusLog, write_corpus

RUNNER = "rspec"
COMPAT = ("rspec_transformed_json",)
NATIVE = "rspec_json"
WORKDIR_STAND_IN = "/corpus"
JQ = "jq -r '.examples[] | \"\\(.full_description) - \\(.status)\"'"
TRANSFORMED = f"rspec --format json --no-color | {JQ}"

PASSING = {
    "spec/math_spec.rb": """\
RSpec.describe 'Math' do
  it('adds') { expect(1 + 1).to eq(2) }
  context 'nested' do
    it('multiplies') { expect(2 * 2).to eq(4) }
  end
end
""",
}

MIXED = {
    "spec/calc_spec.rb": """\
RSpec.describe 'Calc' do
  it('adds') { expect(1 + 1).to eq(2) }
  it('fails') { expect(1 + 1).to eq(3) }
  it('errors') { raise 'boom' }
  xit('is skipped') { }
  it('is pending and fails as expected') { pending('later'); expect(1).to eq(2) }
  it('is pending but passes') { pending('later'); expect(1).to eq(1) }
  context 'nested' do
    it('adds') { expect(2 + 2).to eq(5) }
  end
  it('has - passed in its name - failed') { expect(1).to eq(1) }
end
""",
    "spec/other_spec.rb": """\
RSpec.describe 'Calc' do
  it('adds') { expect(1).to eq(2) }
end
""",
}

PRINTS = {
    "spec/prints_spec.rb": """\
RSpec.describe 'Printer' do
  it('prints') { print 'no newline'; expect(1).to eq(1) }
  it('fails') { expect(1).to eq(2) }
end
""",
}

LOAD_ERROR = {
    "spec/fine_spec.rb": """\
RSpec.describe 'Fine' do
  it('passes') { expect(1).to eq(1) }
end
""",
    "spec/broken_spec.rb": """\
require 'a_gem_that_is_not_installed'
RSpec.describe('Broken') { it('never runs') { } }
""",
}


@dataclass(frozen=True)
class _Case:
    case: str
    files: dict[str, str]


CASES = (
    _Case("passing", PASSING),
    _Case("mixed", MIXED),
    _Case("prints", PRINTS),
    _Case("load_error", LOAD_ERROR),
)
CASE_NAMES = [f"{spec.case}_{kind}" for spec in CASES for kind in ("transformed", "json")]


def unavailable() -> str | None:
    missing = [tool for tool in ("rspec", "jq") if shutil.which(tool) is None]
    return f"the live RSpec run needs {', '.join(missing)} on PATH" if missing else None


def json_truth(report: dict[str, Any]) -> dict[str, str]:
    truth: dict[str, str] = {}
    seen: Counter[str] = Counter()
    statuses = {"passed": "PASSED", "failed": "FAILED", "pending": "SKIPPED"}
    for example in report["examples"]:
        test_id = f"{example['file_path']}::{example['full_description']}"
        seen[test_id] += 1
        if seen[test_id] > 1:
            test_id = f"{test_id} [#{seen[test_id]}]"
        truth[test_id] = statuses[example["status"]]
    if report["summary"]["errors_outside_of_examples_count"]:
        truth["rspec::errors outside of examples"] = "ERROR"
    return truth


def _sh(command: str, cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _produce_case(spec: _Case, workdir: Path) -> list[CorpusLog]:
    casedir = workdir / spec.case
    for name, source in spec.files.items():
        (casedir / name).parent.mkdir(parents=True, exist_ok=True)
        (casedir / name).write_text(source, encoding="utf-8")
    transformed = _sh(TRANSFORMED, casedir)
    report = _sh("rspec --format json --no-color", casedir)
    _sh("rspec --format json --no-color --out truth.json", casedir)
    truth = json_truth(json.loads((casedir / "truth.json").read_text("utf-8")))
    clean = [text.replace(str(casedir), WORKDIR_STAND_IN) for text in (transformed, report)]
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_transformed",
            command=f"{TRANSFORMED} 2>&1",
            text=clean[0],
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_json",
            command="rspec --format json --no-color 2>&1",
            text=clean[1],
            truth=truth,
            native=NATIVE,
        ),
    ]


def produce(workdir: Path) -> list[CorpusLog]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        produced = list(pool.map(lambda spec: _produce_case(spec, workdir), CASES))
    return [log for logs in produced for log in logs]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
