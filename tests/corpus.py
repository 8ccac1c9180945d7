"""The corpus of real test-runner logs that the parsers are checked against.

Layout, one folder per runner (``tests/corpus/<runner>/``):

* ``<case>.log``: the test command's combined stdout+stderr, exactly as the runner
  printed it (what an eval script prints between its start and end markers);
* ``<case>.truth.json``: the ground truth the runner itself wrote for that run
  (pytest's JUnit XML, unittest's result object, ...), as ``{test id: status}``;
* ``cases.json``: per case the command that produced it and which parsers apply.

Logs are produced by really running the runners (``tests/runners/<runner>.py``); the
committed copies keep the checks deterministic when runner versions move on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class CorpusLog:
    runner: str
    case: str
    command: str
    text: str
    #: Ground truth written by the runner itself; None when the runner writes none.
    truth: dict[str, str] | None
    #: swebench-family parser names whose maps must equal swebench's on this log.
    compat: tuple[str, ...] = ()
    #: native parser whose map must equal ``truth`` (None: no native parser applies).
    native: str | None = None
    #: parser name -> reason, for a named, deliberate difference from the reference.
    known_differences: dict[str, str] = field(default_factory=dict)


def write_corpus(runner: str, logs: list[CorpusLog]) -> Path:
    """Write ``logs`` as the committed corpus of ``runner`` (replacing what was there)."""
    folder = CORPUS_DIR / runner
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    cases = []
    for log in logs:
        (folder / f"{log.case}.log").write_text(log.text, encoding="utf-8")
        if log.truth is not None:
            (folder / f"{log.case}.truth.json").write_text(
                json.dumps(log.truth, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                encoding="utf-8",
            )
        cases.append(
            {
                "case": log.case,
                "command": log.command,
                "compat": list(log.compat),
                "native": log.native,
                "known_differences": log.known_differences,
            }
        )
    (folder / "cases.json").write_text(
        json.dumps({"runner": runner, "cases": cases}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return folder


def load_corpus(runner: str) -> list[CorpusLog]:
    folder = CORPUS_DIR / runner
    meta = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    logs = []
    for entry in meta["cases"]:
        truth_file = folder / f"{entry['case']}.truth.json"
        logs.append(
            CorpusLog(
                runner=runner,
                case=entry["case"],
                command=entry["command"],
                text=(folder / f"{entry['case']}.log").read_text(encoding="utf-8"),
                truth=json.loads(truth_file.read_text(encoding="utf-8"))
                if truth_file.exists()
                else None,
                compat=tuple(entry["compat"]),
                native=entry["native"],
                known_differences=entry.get("known_differences", {}),
            )
        )
    return logs


def all_corpus() -> list[CorpusLog]:
    """Every committed log of every runner."""
    return [
        log
        for folder in sorted(CORPUS_DIR.iterdir())
        if (folder / "cases.json").exists()
        for log in load_corpus(folder.name)
    ]
