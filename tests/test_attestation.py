"""A bundle's in-toto Statement: the Test Result predicate over every payload file,
deterministic, readable by the in-toto bindings, and checked against the files present:
any tampering (a digest, a missing or an extra file, the type) is a problem line."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

from evalrepro.publish.attestation import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    check_statement,
    test_result_statement,
)

LOCK, CONFIG, RESULTS, LOG = "a" * 64, "b" * 64, "c" * 64, "d" * 64
FILES = {
    "lockfile.json": LOCK,
    "config.json": CONFIG,
    "results.json": RESULTS,
    "trials/t1/test_output.txt": LOG,
}


def statement(**changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "result": "FAILED",
        "configuration": {"lockfile.json": LOCK, "config.json": CONFIG},
        "passed": ["demo__b-2", "demo__a-1"],
        "failed": ["demo__c-3"],
        "warned": [],
    }
    arguments.update(changes)
    return test_result_statement(dict(FILES), **arguments)


def test_the_statement_has_the_published_shape():
    made = statement()
    assert made["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert made["predicateType"] == PREDICATE_TYPE
    assert made["subject"] == [
        {"name": path, "digest": {"sha256": digest}} for path, digest in sorted(FILES.items())
    ]
    assert made["predicate"] == {
        "result": "FAILED",
        "configuration": [
            {"name": "config.json", "digest": {"sha256": CONFIG}},
            {"name": "lockfile.json", "digest": {"sha256": LOCK}},
        ],
        "passedTests": ["demo__a-1", "demo__b-2"],
        "failedTests": ["demo__c-3"],
        "warnedTests": [],  # said, even when empty
    }
    with_url = statement(url="https://example.org/runs/a")
    assert with_url["predicate"]["url"] == "https://example.org/runs/a"


def test_the_same_inputs_give_the_same_statement():
    shuffled = dict(reversed(FILES.items()))
    one = statement()
    two = test_result_statement(
        shuffled,
        result="FAILED",
        configuration={"config.json": CONFIG, "lockfile.json": LOCK},
        passed=["demo__a-1", "demo__b-2", "demo__a-1"],
        failed=["demo__c-3"],
        warned=[],
    )
    assert one == two
    assert json.dumps(one) == json.dumps(two)  # key order too


def test_a_sha256_prefix_is_dropped():
    made = test_result_statement(
        {"x": "sha256:" + LOG}, result="PASSED", configuration={}, passed=[], failed=[], warned=[]
    )
    assert made["subject"] == [{"name": "x", "digest": {"sha256": LOG}}]


def test_round_trip_through_json_and_the_bindings():
    read = json.loads(json.dumps(statement()))
    assert check_statement(read, FILES) == []
    parsed = Statement.copy_from_pb(json_format.ParseDict(read, statement_pb2.Statement()))
    parsed.validate()
    assert [subject.name for subject in parsed.pb.subject] == sorted(FILES)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"result": "OK"}, "not one of PASSED, WARNED, FAILED"),
        ({"configuration": {"lockfile.json": "not-a-digest"}}, "not a sha256 digest"),
    ],
)
def test_bad_arguments_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        statement(**arguments)


def test_no_subject_is_refused():
    with pytest.raises(ValueError, match="subject"):
        test_result_statement(
            {}, result="PASSED", configuration={}, passed=[], failed=[], warned=[]
        )


def tampered(edit: Any) -> dict[str, Any]:
    document = copy.deepcopy(statement())
    edit(document)
    return document


def set_digest(path: str, digest: str) -> Any:
    def edit(document: dict[str, Any]) -> None:
        for subject in document["subject"]:
            if subject["name"] == path:
                subject["digest"]["sha256"] = digest

    return edit


def drop_subject(path: str) -> Any:
    def edit(document: dict[str, Any]) -> None:
        document["subject"] = [each for each in document["subject"] if each["name"] != path]

    return edit


def add_subject(path: str, digest: str) -> Any:
    return lambda document: document["subject"].append({"name": path, "digest": {"sha256": digest}})


def put(key: str, value: Any) -> Any:
    return lambda document: document.__setitem__(key, value)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            set_digest("results.json", "e" * 64),
            [
                f"attestation: results.json: sha256 {'e' * 64} in the statement, "
                f"the file has {RESULTS}"
            ],
        ),
        (
            drop_subject("results.json"),
            ["attestation: results.json: a file not among the statement's subjects"],
        ),
        (
            add_subject("trials/t2/patch.diff", "f" * 64),
            ["attestation: trials/t2/patch.diff: in the statement, but no such file"],
        ),
        (
            add_subject("results.json", RESULTS),
            ["attestation: results.json: a subject twice"],
        ),
        (
            set_digest("config.json", "SHA-NOPE"),
            [
                "attestation: config.json: no sha256 hex digest in the statement",
                "attestation: config.json: a file not among the statement's subjects",
            ],
        ),
        (
            put("_type", "https://in-toto.io/Statement/v0.1"),
            [
                "attestation: _type is 'https://in-toto.io/Statement/v0.1', "
                "not https://in-toto.io/Statement/v1"
            ],
        ),
        (
            put("predicateType", "https://slsa.dev/provenance/v1"),
            [
                "attestation: predicateType is 'https://slsa.dev/provenance/v1', "
                f"not {PREDICATE_TYPE}"
            ],
        ),
        (
            lambda document: document["predicate"].__setitem__("result", "MAYBE"),
            ["attestation: predicate result 'MAYBE' is not one of PASSED, WARNED, FAILED"],
        ),
        (
            lambda document: document["predicate"]["configuration"][1]["digest"].__setitem__(
                "sha256", "0" * 64
            ),
            [
                f"attestation: configuration lockfile.json: sha256 {'0' * 64} in the statement, "
                f"the file has {LOCK}"
            ],
        ),
    ],
    ids=[
        "digest-differs",
        "file-not-attested",
        "subject-without-file",
        "subject-twice",
        "digest-not-hex",
        "wrong-type",
        "wrong-predicate-type",
        "bad-result",
        "configuration-digest-differs",
    ],
)
def test_each_tampering_is_a_problem(edit, expected):
    assert check_statement(tampered(edit), FILES) == expected


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        "statement",
        {},
        {"_type": 3},
        {"_type": STATEMENT_TYPE, "subject": "all of them"},
        {"_type": STATEMENT_TYPE, "subject": [], "predicateType": PREDICATE_TYPE},
        {**statement(), "predicate": []},
        {**statement(), "predicate": {}},
        {**statement(), "predicate": {"result": 1}},
    ],
    ids=[
        "null",
        "list",
        "string",
        "empty",
        "type-not-string",
        "subject-not-list",
        "no-subject",
        "predicate-list",
        "predicate-empty",
        "result-not-string",
    ],
)
def test_a_malformed_statement_is_one_problem_line(document):
    problems = check_statement(document, FILES)
    assert len(problems) == 1
    assert problems[0].startswith("attestation: ") and "\n" not in problems[0]


def test_unknown_fields_are_ignored_as_in_toto_asks():
    document = statement()
    document["comment"] = "added by a later tool"
    document["subject"][0]["annotations_v2"] = {"x": 1}
    assert check_statement(document, FILES) == []
