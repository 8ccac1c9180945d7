"""The recorded runtime: an attempt whose tests ran elsewhere, brought in from its log.

``evalrepro regrade`` plans a run over the logs another harness wrote (SWE-bench's
``logs/run_evaluation/<run_id>/<model>/<instance_id>/``); each attempt's output is that
instance's ``test_output.txt`` (recorded with its digest, as any attempt's output) and the
swebench ``report.json`` beside it, with a :class:`ForeignLog` saying how the log is
read. Logs are files from elsewhere: regular files only, read with a size cap.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from evalrepro.config.environment import RecordedEnvironment
from evalrepro.errors import UserError
from evalrepro.files import read_regular_file
from evalrepro.grade.foreign import MAX_LOG_BYTES, MAX_PATCH_BYTES
from evalrepro.records.foreign import ForeignLog
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.base import Runtime


class RecordedRuntime(Runtime):
    kind: ClassVar[str] = "recorded"

    def __init__(self, config: RecordedEnvironment, cache_dir: Path) -> None:
        self.config = config

    def check(self) -> None:
        if self.config.logs is None or not self.config.logs.is_dir():
            raise UserError(f"environment.logs: {self.config.logs}: no such logs folder")

    def describe(self) -> dict[str, str]:
        return {"kind": self.kind, "harness": self.config.harness}

    def run(self, spec: AttemptSpec) -> AttemptOutput:
        assert spec.image is not None and self.config.logs is not None
        folder = self.config.logs / spec.instance_id
        # A log that is not a regular file is the user's input at fault, not the
        # infrastructure: one line, as every such file evalrepro reads.
        log = read_regular_file(folder / "test_output.txt", MAX_LOG_BYTES, "log")
        artifacts = {"test_output.txt": log}
        report = folder / "report.json"
        if report.exists() or report.is_symlink():
            # As the log: a report.json that is not a regular file is one line.
            artifacts["swebench_report.json"] = read_regular_file(
                report, MAX_PATCH_BYTES, "report.json"
            )
        foreign = ForeignLog(
            instance_id=spec.instance_id,
            source=str((folder / "test_output.txt").resolve()),
            parser=spec.test_spec.parser,
            rules=self.config.rules,
        )
        return AttemptOutput(artifacts=artifacts, foreign=foreign)
