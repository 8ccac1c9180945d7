"""The validated dataset: the instances that came in, in the format they came in (JSONL,
JSON or Parquet), with the derived test lists.

Each instance whose verdict is ``valid`` or ``flaky_tests`` is written as it was read
(every field kept, in its order), with ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` replaced by
the derived lists and ``FLAKY`` holding the flaky tests, which are in neither list; a
list is written as the dataset wrote its lists (a JSON-encoded string, as SWE-bench ships
them, or a list). Instances of any other verdict are left out: the report names them and
why. Beside it, ``FILE.validation.json`` is the ``ValidationReport`` (the provenance:
both sides' lockfile digests, the repeats, the harness version).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from evalrepro import atomic
from evalrepro.errors import UserError
from evalrepro.jsonfile import read_records
from evalrepro.records.validation import ValidationReport

#: The verdicts whose instances go into the validated dataset.
USABLE = ("valid", "flaky_tests")


def report_path(output: Path) -> Path:
    return output.with_name(output.name + ".validation.json")


def _format(path: Path) -> str:
    if path.suffix == ".parquet":
        return "parquet"
    if path.suffix == ".jsonl":
        return "jsonl"
    return "json"


def check_output(source: Path, output: Path) -> None:
    """Refuse, before anything runs, an output in another format than the dataset's."""
    if _format(output) != _format(source):
        raise UserError(
            f"--output {output}: the dataset is {_format(source)} ({source.name}); "
            f"write the validated one in the same format"
        )


def write_validated(source: Path, report: ValidationReport, output: Path) -> int:
    """Write the validated dataset (and its report) to ``output``; the instances written."""
    check_output(source, output)
    by_id = {i.instance_id: i for i in report.instances if i.verdict in USABLE}
    rows = []
    for _, raw in read_records(source):
        found = by_id.get(raw.get("instance_id")) if isinstance(raw, dict) else None
        if found is None:
            continue
        as_text = isinstance(raw.get("FAIL_TO_PASS"), str)
        row = dict(raw)
        for name, tests in (
            ("FAIL_TO_PASS", found.fail_to_pass),
            ("PASS_TO_PASS", found.pass_to_pass),
            ("FLAKY", found.flaky),
        ):
            row[name] = json.dumps(tests) if as_text else list(tests)
        rows.append(row)
    atomic.write_bytes(output, _encoded(rows, _format(output)))
    atomic.write_text(report_path(output), report.model_dump_json(indent=2) + "\n")
    return len(rows)


def _encoded(rows: list[dict[str, Any]], kind: str) -> bytes:
    if kind == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    if kind == "json":
        return (json.dumps(rows, ensure_ascii=False, indent=1) + "\n").encode()
    try:
        import pyarrow
        import pyarrow.parquet as parquet
    except ImportError:
        raise UserError("writing Parquet needs pyarrow: pip install 'evalrepro[parquet]'") from None
    buffer = io.BytesIO()
    parquet.write_table(pyarrow.Table.from_pylist(rows), buffer)
    return buffer.getvalue()
