"""The committed eval logs in SWE-bench's layout: what its harness writes per instance.

Layout (``tests/corpus/swebench_eval/``), one folder per instance, named and filled as
swebench 5.0.2's ``run_instance`` fills ``logs/run_evaluation/<run>/<model>/<id>/``:

* ``eval.sh``: the eval script, as swebench 5.0.2 runs it (``set -uxo pipefail``, the
  ``: '>>>>> Start Test Output'`` marker commands, the exit-code lines it adds);
* ``test_output.txt``: what ``bash eval.sh`` printed, stdout and stderr on one pipe
  (the ``set -x`` trace included), with machine paths replaced by stand-ins;

and ``index.json``: per instance the runner, the case it runs, the compatible parsers
that apply, its ``eval_type`` and what it shows. The logs are produced by really running
the scripts (``tests/runners/swebench_eval.py``); the committed copies keep the checks
deterministic when runner versions move on.

Unlike ``tests/corpus/<runner>/cases.json`` folders, this one holds whole eval logs, not
test-command output, so :func:`tests.corpus.all_corpus` does not list it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tests.corpus import CORPUS_DIR

EVAL_DIR = CORPUS_DIR / "swebench_eval"
INDEX = "index.json"


@dataclass(frozen=True)
class EvalLog:
    instance_id: str
    runner: str
    #: The runner's corpus case the instance runs (or the attack it stages).
    case: str
    #: swebench-family parser names that read this runner's output.
    compat: tuple[str, ...]
    eval_type: Literal["pass_and_fail", "fail_only"]
    test_command: str
    #: What the log shows, in one line.
    shows: str
    eval_script: str
    text: str


def write_eval_logs(logs: list[EvalLog]) -> Path:
    """Write ``logs`` as the committed eval logs (replacing what was there)."""
    if EVAL_DIR.exists():
        shutil.rmtree(EVAL_DIR)
    EVAL_DIR.mkdir(parents=True)
    entries = []
    for log in logs:
        folder = EVAL_DIR / log.instance_id
        folder.mkdir()
        (folder / "eval.sh").write_text(log.eval_script, encoding="utf-8")
        (folder / "test_output.txt").write_text(log.text, encoding="utf-8")
        entries.append(
            {
                "instance_id": log.instance_id,
                "runner": log.runner,
                "case": log.case,
                "compat": list(log.compat),
                "eval_type": log.eval_type,
                "test_command": log.test_command,
                "shows": log.shows,
            }
        )
    (EVAL_DIR / INDEX).write_text(
        json.dumps({"instances": entries}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return EVAL_DIR


def load_eval_logs() -> list[EvalLog]:
    """Every committed eval log, in the index's order."""
    index = json.loads((EVAL_DIR / INDEX).read_text(encoding="utf-8"))
    logs = []
    for entry in index["instances"]:
        folder = EVAL_DIR / entry["instance_id"]
        logs.append(
            EvalLog(
                instance_id=entry["instance_id"],
                runner=entry["runner"],
                case=entry["case"],
                compat=tuple(entry["compat"]),
                eval_type=entry["eval_type"],
                test_command=entry["test_command"],
                shows=entry["shows"],
                eval_script=(folder / "eval.sh").read_text(encoding="utf-8"),
                # newline="" keeps any "\r" the runner printed: the rules under test decide.
                text=(folder / "test_output.txt").open(encoding="utf-8", newline="").read(),
            )
        )
    return logs
