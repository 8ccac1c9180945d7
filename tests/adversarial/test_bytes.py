"""Bytes are bytes: a file name that is not UTF-8, made by the patch or by the code under
test, and bytes that are not UTF-8 in the test log, end in a recorded, scored trial.

Every name from the sandbox reaches ``supervisor.json`` as Unicode text, escaped by the one
rule of ``quote_name`` (docs/threat-model.md: names that are not UTF-8 are quoted as git
quotes them, ``"\\377.py"``): never a lone surrogate, which no JSON writer takes (it used
to kill ``evalrepro run`` with a traceback). Each attack runs for real in podman, beside
the instance's gold patch (which still resolves); the run completes.

The host's defences in depth are tested without a container: a stream whose event carries
a lone surrogate is a recorded stream problem (``StreamReader``), a report or record that
still holds one is written escaped (the recorder), a log with invalid UTF-8 in its test
names gives a status map that can be written and a score.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalrepro.records.supervision import SupervisorReport
from evalrepro.runtimes.supervision import StreamReader
from evalrepro.sandbox.protocol import (
    FRAME,
    KIND_EVENT,
    as_text,
    quote_name,
    shown,
    unquote_name,
)
from tests.adversarial.attacks import Attack
from tests.adversarial.test_inodes import run_small
from tests.podman_support import needs_podman

#: A library module that writes files whose names are not UTF-8 while the tests run (the
#: names built from pieces, so the static scan sees nothing), prints a test name that is
#: not UTF-8 (at exit: pytest captures what is printed at import), and forges a guard
#: record whose JSON holds a lone surrogate.
RUNTIME_NAMES = (
    "\nimport os as _o\n"
    "for _n in (b'/testbed/\\xff' + b'.p' + b'th', b'/tmp/\\xfe\\xff', b'/testbed/ok\\xc3'):\n"
    "    try:\n"
    "        _o.close(_o.open(_n, _o.O_CREAT | _o.O_WRONLY, 0o644))\n"
    "    except OSError:\n"
    "        pass\n"
    "import atexit as _a\n"
    "_a.register(_o.write, 1, b'PASS' + b'ED tests/test_\\xff.py::test_bytes\\n')\n"
    "try:\n"
    '    _o.write(1017, b\'X 1 {"replaced": [{"target": "\\\\ud800", \'\n'
    '             b\'"file": "/testbed/textkit/slug.py"}]}\\n\')\n'
    "except OSError:\n"
    "    pass\n"
)

#: A traditional patch whose names are raw bytes that are not UTF-8 (git with
#: core.quotePath=false writes such names as they are).
RAW_NAME_PATCH = (
    b"diff --git a/textkit/\xfe\xff.py b/textkit/\xfe\xff.py\n"
    b"new file mode 100644\n"
    b"--- /dev/null\n"
    b"+++ b/textkit/\xfe\xff.py\n"
    b"@@ -0,0 +1 @@\n"
    b"+VALUE = 1\n"
)

ATTACKS = (
    Attack(
        "patch-creates-a-non-utf8-name",
        "input",
        "demo__calc-1",
        "the gold fix plus a module whose name is not UTF-8 (git quotes it in the diff)",
        ("resolved", "tests_passed"),
        {"calc/\udcff_extra.py": "X = 1\n"},
        append=False,
        with_gold=True,
    ),
    Attack(
        "patch-protected-non-utf8-name",
        "input",
        "demo__ledger-1",
        "the gold fix plus a file in the tests folder whose name is not UTF-8 (restored)",
        ("resolved", "tests_passed"),
        {"tests/\udcfe\udcff.py": "Y = 2\n"},
        append=False,
        with_gold=True,
    ),
    Attack(
        "patch-raw-name-bytes",
        "input",
        "demo__textkit-2",
        "a patch whose names are raw bytes that are not UTF-8",
        ("unresolved", "tests_failed"),
        raw=RAW_NAME_PATCH,
    ),
    Attack(
        "run-creates-non-utf8-names",
        "input",
        "demo__textkit-1",
        "code under test creates files named with bytes that are not UTF-8, prints such a "
        "test name and forges a guard record holding a lone surrogate",
        ("invalid", "suspect_patch"),
        {"textkit/slug.py": RUNTIME_NAMES},
    ),
)


def _assert_text(value: object) -> None:
    """Valid JSON of Unicode text only: what any UTF-8 writer takes."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")


@pytest.fixture(scope="module")
def bytes_run(tmp_path_factory):
    return run_small(tmp_path_factory.mktemp("bytes"), ATTACKS)


class TestInContainers:
    pytestmark = needs_podman

    def test_every_trial_is_recorded_and_scored_as_documented(self, bytes_run):
        assert bytes_run.wrong() == []
        assert bytes_run.complete()

    def test_a_name_the_patch_created_reaches_supervisor_json_escaped(self, bytes_run):
        report = bytes_run.supervisor_json("patch-creates-a-non-utf8-name")
        _assert_text(report)
        assert '"calc/\\377_extra.py"' in report["patch"]["changed"]
        raw = bytes_run.supervisor_json("patch-raw-name-bytes")
        assert '"textkit/\\376\\377.py"' in raw["patch"]["changed"]

    def test_a_protected_name_that_is_not_utf8_is_restored_and_named_escaped(self, bytes_run):
        result = bytes_run.result("patch-protected-non-utf8-name")
        report = bytes_run.supervisor_json("patch-protected-non-utf8-name")
        _assert_text(report)
        touched = [item["path"] for item in report["protect"]["touched"]]
        assert touched == ['"tests/\\376\\377.py"']
        assert [p.path for p in result.attempts[-1].observation.protected] == touched

    def test_names_the_run_created_are_named_escaped(self, bytes_run):
        result = bytes_run.result("run-creates-non-utf8-names")
        report = bytes_run.supervisor_json("run-creates-non-utf8-names")
        _assert_text(report)
        assert report["tests"]["changed_during_run"] == ['"\\377.pth" (test infrastructure)']
        assert {"target": '"\\355\\240\\200"', "file": "textkit/slug.py"} in report["tests"][
            "replaced"
        ]
        # The test output is bytes: what the tests printed is kept as it was, and graded.
        log = next(
            a.path for a in result.attempts[-1].artifacts if a.path.endswith("/test_output.txt")
        )
        assert b"PASSED tests/test_\xff.py::test_bytes\n" in (bytes_run.run_dir / log).read_bytes()
        result.attempts[-1].observation.model_dump_json()

    def test_the_gold_patch_beside_every_attack_still_resolves(self, bytes_run):
        assert bytes_run.gold_outcomes() == {"resolved"}


# --- the one escaping ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"calc/ops.py", "calc/ops.py"),
        ("d\u00e9j\u00e0/\u00fc.py".encode(), "d\u00e9j\u00e0/\u00fc.py"),
        (b"a\\b c.py", "a\\b c.py"),  # UTF-8 names keep their backslashes and spaces
        (b"\xff.py", '"\\377.py"'),
        (b"caf\xc3\xa9\xff", '"caf\u00e9\\377"'),
        (b"\xed\xa0\x80", '"\\355\\240\\200"'),  # an encoded surrogate is not UTF-8
        (b"a\nb\tc\x7f", '"a\\nb\\tc\\177"'),
        (b'"quoted".py', '"\\"quoted\\".py"'),  # a leading quote is always quoted
        (b'x"\\\xff', '"x\\"\\\\\\377"'),
    ],
)
def test_a_name_is_itself_when_it_is_plain_utf8_and_quoted_as_git_does_otherwise(raw, text):
    assert quote_name(raw) == text
    assert unquote_name(text) == raw
    text.encode("utf-8")


def test_the_escaping_is_lossless_and_unambiguous_for_every_short_name():
    alphabet = b'a"\\\n\x00\x7f\x80\xc3\xa9\xff/'
    names = [b""]
    for _ in range(4):
        names = [n + bytes([c]) for n in names for c in alphabet] + [b""]
    shown_names = {}
    for raw in set(names):
        text = quote_name(raw)
        text.encode("utf-8")
        assert unquote_name(text) == raw
        assert shown_names.setdefault(text, raw) == raw


def test_names_as_the_supervisor_holds_them_are_shown_by_their_bytes():
    assert shown(os.fsdecode(b"dir/\xff")) == '"dir/\\377"'
    assert shown("plain.py") == "plain.py"
    assert as_text({"a": ["ok", "x\udcff"], "b": "\ud800"}) == {
        "a": ["ok", '"x\\377"'],
        "b": '"\\355\\240\\200"',
    }


# --- the host's defences in depth -------------------------------------------------------


def _event(payload: bytes) -> bytes:
    return FRAME.pack(KIND_EVENT, len(payload)) + payload


def test_an_event_with_a_lone_surrogate_is_a_recorded_stream_problem():
    reader = StreamReader(1 << 20)
    start = b'{"event": "start", "protocol": 1, "python": "3.11", "uid": 0, "pid": 1}'
    patch = (
        b'{"event": "patch", "status": "applied", "method": "git apply", '
        b'"changed": ["\\udcff.py"], "changed_total": 1, "seconds": 0.1}'
    )
    reader.feed(_event(start) + _event(patch))
    assert reader.problem is not None and "lone surrogate" in reader.problem
    assert reader.report.patch is None
    reader.report.model_dump_json()  # the report can be written


def test_the_recorder_writes_a_report_holding_a_lone_surrogate_escaped(tmp_path):
    from evalrepro.run.recorder import _json, _text_only

    report = SupervisorReport.model_validate(
        {"error": {"event": "error", "phase": "trial", "detail": "OSError: x\udcff"}}
    )
    fixed = _text_only(report)
    assert fixed.error.detail == '"OSError: x\\377"'
    assert fixed.stream_problem is not None and "not Unicode text" in fixed.stream_problem
    written = json.loads(_json(report))
    assert written["error"]["detail"] == '"OSError: x\\377"'


def test_a_log_with_invalid_utf8_in_test_names_is_scored():
    from evalrepro.grade.score import score
    from evalrepro.records.supervision import RuntimeFacts
    from evalrepro.runtimes.supervision import region_text
    from tests.test_score import F2P, P2P, grade
    from tests.test_supervision import DONE, PATCH, RESET, START, STARTED, event, finished, output

    tests = (
        f"PASSED {F2P}\nPASSED {P2P}\n".encode()
        + b"PASSED tests/test_\xff.py::test_x\nFAILED tests/test_a.py::t\xfe\xc3\n"
    )
    stream = b"".join(
        [
            *(event(e) for e in (START, PATCH, RESET, STARTED)),
            output(tests),
            *(event(e) for e in (finished(len(tests), exit_code=1), DONE)),
        ]
    )
    reader = StreamReader(1 << 20)
    reader.feed(stream)
    report = reader.finish(RuntimeFacts(exit_code=0))
    text = region_text(reader.output, report.region)
    observation, result = grade(f">>>>> Start Test Output\n{text}>>>>> End Test Output\n")
    assert result == score(observation)
    observation.model_dump_json()  # the status map can be written
    assert observation.status_map["tests/test_\ufffd.py::test_x"] == "PASSED"


def test_a_patch_check_names_a_file_that_is_not_utf8_escaped():
    from evalrepro.rules.patchcheck import check_patch
    from tests.test_patchcheck import DEFAULT

    check = check_patch(RAW_NAME_PATCH, DEFAULT)
    assert check.files == ('"textkit/\\376\\377.py"',)
    quoted = (
        b'diff --git "a/lib_\\377.py" "b/lib_\\377.py"\nnew file mode 100644\n'
        b'--- /dev/null\n+++ "b/lib_\\377.py"\n@@ -0,0 +1,2 @@\n+import os\n+os._exit(0)\n'
    )
    found = check_patch(quoted, DEFAULT)
    assert found.files == ('"lib_\\377.py"',)
    assert {s.path for s in found.suspects} == {'"lib_\\377.py"'}


def test_paths_here_are_text(tmp_path):
    # The supervisor's own view of a tree with such a name: bytes back, shown escaped.
    Path(os.fsdecode(bytes(tmp_path) + b"/\xff")).write_bytes(b"")
    names = [entry.name for entry in os.scandir(tmp_path)]
    assert [shown(name) for name in names] == ['"\\377"']
