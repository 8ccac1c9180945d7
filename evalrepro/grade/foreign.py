"""Logs another harness wrote (SWE-bench's ``test_output.txt``), observed as it reads them.

A regrade's attempt keeps the log, the patch beside it, swebench's own report.json and a
:class:`ForeignLog` record (``foreign.json``): where the log came from and by which rules
it is read. Its Observation says ``source: log``.
"""

from __future__ import annotations

from evalrepro.digest import sha256_json
from evalrepro.grade.observation import observe
from evalrepro.grade.parsers import LogParser
from evalrepro.records.foreign import ForeignLog
from evalrepro.records.observation import ExecutionStatus, Observation, ParserStatus, PatchStatus
from evalrepro.sample import Sample

#: Largest log read (SWE-bench's biggest test outputs are tens of MB).
MAX_LOG_BYTES = 256 << 20
#: Largest patch or report.json read from a logs folder.
MAX_PATCH_BYTES = 64 << 20


def recorded_spec_digest(sample: Sample, parser: LogParser, rules: str) -> str:
    """What evalrepro 0.2's regrade recorded as a log's "test spec" (what it is graded
    against and how it is read): kept to check the runs it wrote."""
    return sha256_json(
        {
            "parser": parser.name,
            "rules": rules,
            "fail_only": parser.fail_only or sample.fail_only,
            "FAIL_TO_PASS": sample.fail_to_pass,
            "PASS_TO_PASS": sample.pass_to_pass,
        }
    )


def observe_foreign(
    log: bytes, patch: bytes | None, foreign: ForeignLog, sample: Sample, parser: LogParser
) -> Observation:
    """The Observation of a foreign log; ``patch``: the patch kept beside it, if any."""
    if patch is not None and not patch.strip():
        # swebench never evaluates an empty patch (its "empty_patch_ids"): neither do we,
        # whatever log lies beside it.
        return Observation(
            instance_id=sample.instance_id,
            source="log",
            log_rules=foreign.rules,
            parser=parser.name,
            patch_status=PatchStatus.INVALID,
            patch_problem="empty",
            execution_status=ExecutionStatus.NOT_RUN,
            parser_status=ParserStatus.NOT_PARSED,
            status_map={},
        )
    return observe(log.decode("utf-8", errors="replace"), sample, parser, rules=foreign.rules)
