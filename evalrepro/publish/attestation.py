"""A result bundle's in-toto attestation: a Statement with the Test Result predicate.

The Statement (https://in-toto.io/Statement/v1) names every payload file by path and
sha256 (its subjects) and says what the run found (predicate
https://in-toto.io/attestation/test-result/v0.1): the overall result, the
configuration it ran with (the lockfile and the config, by digest) and the passed,
failed and warned tests. It is built and read back with the ``in_toto_attestation``
bindings: their protobuf messages define the shape, their validators check it.

The Statement is not signed here; a DSSE envelope around it is another layer.
"""

from __future__ import annotations

import re
from typing import Any

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
RESULTS = ("PASSED", "WARNED", "FAILED")

_HEX = re.compile(r"[0-9a-f]{64}")


def test_result_statement(
    subjects: dict[str, str],
    *,
    result: str,
    configuration: dict[str, str],
    passed: list[str],
    failed: list[str],
    warned: list[str],
    url: str | None = None,
) -> dict[str, Any]:
    """The Statement as JSON-ready dict: ``subjects`` (path -> sha256) attested.

    ``configuration`` maps a name (the lockfile's, the config's path) to its sha256.
    Digests are hex (a ``sha256:`` prefix is dropped). Deterministic: subjects and
    configuration sorted by name, test lists sorted and without duplicates. Raises
    ``ValueError`` for an unknown result, a bad digest or no subject at all.
    """
    from google.protobuf import json_format
    from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
    from in_toto_attestation.v1.statement import Statement

    if result not in RESULTS:
        raise ValueError(f"test result {result!r} is not one of {', '.join(RESULTS)}")
    predicate = test_result_pb2.TestResult(
        result=result,
        configuration=[
            _descriptor(name, digest, "configuration").pb
            for name, digest in sorted(configuration.items())
        ],
        url=url or "",
        passed_tests=sorted(set(passed)),
        warned_tests=sorted(set(warned)),
        failed_tests=sorted(set(failed)),
    )
    fields = json_format.MessageToDict(predicate)
    # Protobuf's JSON leaves empty lists out; the three lists are always there, so a
    # reader sees "none failed", not "not said".
    fields["passedTests"] = list(predicate.passed_tests)
    fields["warnedTests"] = list(predicate.warned_tests)
    fields["failedTests"] = list(predicate.failed_tests)
    statement = Statement(
        [_descriptor(path, digest, "subject").pb for path, digest in sorted(subjects.items())],
        PREDICATE_TYPE,
        fields,
    )
    statement.validate()
    document = json_format.MessageToDict(statement.pb)
    # A protobuf Struct keeps no key order: the predicate's keys in a fixed one.
    document["predicate"] = dict(sorted(document["predicate"].items()))
    return document


# pytest would collect a function named test_* imported into a test module as a test.
test_result_statement.__test__ = False  # type: ignore[attr-defined]


def check_statement(statement: object, files: dict[str, str]) -> list[str]:
    """Problems of ``statement`` (parsed JSON, any shape) against ``files`` (path ->
    sha256 hex of the files actually present), one line each; empty when it holds.

    The statement must be an in-toto v1 Statement with the Test Result predicate, and
    its subjects must be exactly ``files`` with their digests. A configuration entry
    named like one of ``files`` must carry that file's digest too.
    """
    from google.protobuf import json_format
    from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    if not isinstance(statement, dict):
        return [f"attestation: not a JSON object but {type(statement).__name__}"]
    # Unknown fields are ignored, as the in-toto spec asks of consumers.
    try:
        parsed = Statement.copy_from_pb(
            json_format.ParseDict(statement, statement_pb2.Statement(), ignore_unknown_fields=True)
        )
    except (json_format.ParseError, TypeError, ValueError) as error:
        return [f"attestation: malformed statement: {_one_line(error)}"]
    if parsed.pb.type != STATEMENT_TYPE:
        return [f"attestation: _type is {parsed.pb.type!r}, not {STATEMENT_TYPE}"]
    if parsed.pb.predicate_type != PREDICATE_TYPE:
        return [f"attestation: predicateType is {parsed.pb.predicate_type!r}, not {PREDICATE_TYPE}"]
    try:
        parsed.validate()
        fields = statement.get("predicate")
        if not isinstance(fields, dict):
            raise ValueError("the predicate is not an object")
        predicate = json_format.ParseDict(
            fields, test_result_pb2.TestResult(), ignore_unknown_fields=True
        )
    except (json_format.ParseError, TypeError, ValueError) as error:
        return [f"attestation: malformed statement: {_one_line(error)}"]

    problems: list[str] = []
    if predicate.result not in RESULTS:
        problems.append(
            f"attestation: predicate result {predicate.result!r} is not one of {', '.join(RESULTS)}"
        )
    present = {path: _bare(digest) for path, digest in files.items()}
    for configured in predicate.configuration:
        name, digest = configured.name, configured.digest.get("sha256")
        if not name or digest is None or not _HEX.fullmatch(digest):
            problems.append(
                f"attestation: configuration {name or '(unnamed)'}: no sha256 hex digest"
            )
        elif name in present and digest != present[name]:
            problems.append(
                f"attestation: configuration {name}: sha256 {digest} in the statement, "
                f"the file has {present[name]}"
            )

    attested: dict[str, str] = {}
    for index, subject in enumerate(parsed.pb.subject):
        path, digest = subject.name, subject.digest.get("sha256")
        where = path or f"subject {index}"
        if not path:
            problems.append(f"attestation: {where}: no name")
            continue
        if path in attested:
            problems.append(f"attestation: {path}: a subject twice")
            continue
        if digest is None or not _HEX.fullmatch(digest):
            problems.append(f"attestation: {path}: no sha256 hex digest in the statement")
            continue
        attested[path] = digest
        if path not in present:
            problems.append(f"attestation: {path}: in the statement, but no such file")
        elif digest != present[path]:
            problems.append(
                f"attestation: {path}: sha256 {digest} in the statement, "
                f"the file has {present[path]}"
            )
    for path in sorted(set(present) - set(attested)):
        problems.append(f"attestation: {path}: a file not among the statement's subjects")
    return problems


def _descriptor(name: str, digest: str, what: str) -> Any:
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor

    value = _bare(digest)
    if not name:
        raise ValueError(f"{what}: no name")
    if not _HEX.fullmatch(value):
        raise ValueError(f"{what} {name}: {digest!r} is not a sha256 digest")
    descriptor = ResourceDescriptor(name=name, digest={"sha256": value})
    descriptor.validate()
    return descriptor


def _bare(digest: str) -> str:
    """A sha256 digest as in-toto writes it: lowercase hex, no ``sha256:`` prefix."""
    return digest.removeprefix("sha256:")


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
