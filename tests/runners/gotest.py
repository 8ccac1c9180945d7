"""Produce the ``go test`` corpus: each case's module run with ``go test -v`` and with
``go test -json``, really.

Each case is one Go module, run twice with the same sources (the tests are
deterministic): ``go test -count=1 -v ./... 2>&1`` (what SWE-bench's Go instances run,
read by the compatible ``gotest`` parser) and ``go test -count=1 -json ./... 2>&1`` (read
by the native ``gotest_json``). Ground truth, for both logs, is the runner's own event
stream, the ``-json`` run's events read here by these rules, independently of the parser:
``pass`` / ``fail`` / ``skip`` events of a test -> PASSED / FAILED / SKIPPED under
``<package>::<test>``; a test that started and has no outcome event -> ERROR; a package
that failed with no failing test, or that did not build (the go command's
``FAIL pkg [build failed]`` line), -> ERROR under its import path.

Where Go's own event stream is wrong (Go before 1.20 misses a result line that follows
unterminated output, and turns a result line a test prints into an event), the case
names the difference. Temp dirs are replaced by ``/corpus`` in the logs.

Run ``python -m tests.runners.gotest`` from the repo root to rewrite tests/corpus/gotest/
(needs ``go``: ``apt-get install golang-go``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.corpus import CorpusLog, write_corpus

RUNNER = "gotest"
COMPAT = ("gotest",)
NATIVE = "gotest_json"
SEPARATOR = "::"
WORKDIR_STAND_IN = "/corpus"
MODULE = "example.com/corpus"
GO_MOD = f"module {MODULE}\n\ngo 1.19\n"

PASSING = {
    "calc/calc_test.go": """\
package calc

import (
	"fmt"
	"testing"
)

func TestAdd(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("math")
	}
}

func TestTable(t *testing.T) {
	for _, name := range []string{"with spaces in name", "ünïcødé", "parens (1)"} {
		t.Run(name, func(t *testing.T) {})
	}
	t.Run("nested", func(t *testing.T) {
		t.Run("deeper", func(t *testing.T) {})
	})
}

func TestParallel(t *testing.T) {
	for _, name := range []string{"one", "two"} {
		name := name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fmt.Println("output from", name)
		})
	}
}

func ExampleHello() {
	fmt.Println("hello")
	// Output: hello
}
""",
}

MIXED = {
    "a/a_test.go": """\
package a

import (
	"fmt"
	"testing"
)

func TestAdd(t *testing.T) {}

func TestFails(t *testing.T) { t.Errorf("fails on purpose") }

func TestSkipped(t *testing.T) { t.Skip("no network") }

func TestSubtests(t *testing.T) {
	t.Run("passes", func(t *testing.T) {})
	t.Run("fails inside", func(t *testing.T) { t.Fatal("sub failure") })
	t.Run("nested", func(t *testing.T) {
		t.Run("skipped deeper", func(t *testing.T) { t.Skip("later") })
	})
}

func TestShared(t *testing.T) {}

func ExampleWrong() {
	fmt.Println("goodbye")
	// Output: hello
}
""",
    "b/b_test.go": """\
package b

import "testing"

func TestShared(t *testing.T) { t.Fatal("same name, other package") }
""",
    "c/c_test.go": """\
package c

import "testing"

func TestBeforePanic(t *testing.T) {}

func TestPanics(t *testing.T) { panic("boom") }

func TestAfterPanic(t *testing.T) {}
""",
    "d/d_test.go": """\
package d

import "testing"

func TestNeverBuilt(t *testing.T) { undefined() }
""",
    "e/e_test.go": """\
package e

import (
	"os"
	"testing"
)

func TestInsideFailingMain(t *testing.T) {}

func TestMain(m *testing.M) {
	m.Run()
	os.Exit(3)
}
""",
}

UNTERMINATED = {
    "u/u_test.go": """\
package u

import (
	"fmt"
	"testing"
)

func TestPrintsNoNewline(t *testing.T) { fmt.Print("no newline at the end") }

func TestFailsNoNewline(t *testing.T) {
	fmt.Print("partial")
	t.Fail()
}

func TestAfter(t *testing.T) {}
""",
}

FORGED = {
    "f/f_test.go": """\
package f

import (
	"fmt"
	"testing"
)

func TestForges(t *testing.T) {
	fmt.Println("--- PASS: TestInvented (0.00s)")
}

func TestFails(t *testing.T) { t.Fatal("really fails") }
""",
}

UNTERMINATED_DIFFERENCE = (
    "go 1.19's test2json misses a result line that follows unterminated output, so its "
    "event stream has no outcome for the test; gotest_json reads the result from the "
    "test's own output"
)
FORGED_DIFFERENCE = (
    "the test prints a forged result line, which go 1.19's test2json turns into a pass "
    "event; gotest_json keeps it but reports an outcome for a test that never started, "
    "so the log is unscorable"
)


@dataclass(frozen=True)
class _Case:
    case: str
    files: dict[str, str]
    #: parser -> reason, for the -json log
    json_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    _Case("passing", PASSING),
    _Case("mixed", MIXED),
    _Case("unterminated", UNTERMINATED, {NATIVE: UNTERMINATED_DIFFERENCE}),
    _Case("forged", FORGED, {NATIVE: FORGED_DIFFERENCE}),
)
CASE_NAMES = [f"{spec.case}_{kind}" for spec in CASES for kind in ("v", "json")]

_NOT_BUILT = re.compile(r"FAIL\t(\S+) \[(?:build|setup) failed\]")


def missing_tools() -> list[str]:
    return [] if shutil.which("go") else ["go"]


def json_truth(text: str) -> dict[str, str]:
    """The ``-json`` run's events as ``{id: status}``, by the rules of the module doc."""
    truth: dict[str, str] = {}
    ended: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            if match := _NOT_BUILT.fullmatch(line):
                truth[match.group(1)] = "ERROR"
            continue
        event: dict[str, Any] = json.loads(line)
        package, test, action = event["Package"], event.get("Test"), event["Action"]
        if test is None:
            if action in ("pass", "fail", "skip"):
                ended[package] = action
            continue
        key = f"{package}{SEPARATOR}{test}"
        if action == "run":
            truth.setdefault(key, "ERROR")
        elif action in ("pass", "fail", "skip"):
            truth[key] = {"pass": "PASSED", "fail": "FAILED", "skip": "SKIPPED"}[action]
    for package, action in ended.items():
        own = [s for k, s in truth.items() if k.startswith(f"{package}{SEPARATOR}")]
        if action == "fail" and not any(s in ("FAILED", "ERROR") for s in own):
            truth[package] = "ERROR"
    return truth


def _go(args: list[str], cwd: Path, home: Path) -> str:
    env = {
        **os.environ,
        "GOCACHE": str(home / "cache"),
        "GOPATH": str(home / "path"),
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
    }
    done = subprocess.run(
        ["go", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _clean(text: str, casedir: Path) -> str:
    for path in (str(casedir.resolve()), str(casedir)):
        text = text.replace(path, WORKDIR_STAND_IN)
    return text


def _produce_case(spec: _Case, workdir: Path) -> list[CorpusLog]:
    casedir = workdir / spec.case
    (casedir / "src").mkdir(parents=True)
    src = casedir / "src"
    (src / "go.mod").write_text(GO_MOD, encoding="utf-8")
    for name, source in spec.files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(source, encoding="utf-8")
    verbose = _go(["test", "-count=1", "-v", "./..."], src, casedir)
    events = _go(["test", "-count=1", "-json", "./..."], src, casedir)
    truth = json_truth(events)
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_v",
            command="go test -count=1 -v ./... 2>&1",
            text=_clean(verbose, src),
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_json",
            command="go test -count=1 -json ./... 2>&1",
            text=_clean(events, src),
            truth=truth,
            native=NATIVE,
            known_differences=dict(spec.json_differences),
        ),
    ]


def produce(workdir: Path) -> list[CorpusLog]:
    # Each case is its own module and build cache; two at a time keeps the machine usable.
    with ThreadPoolExecutor(max_workers=2) as pool:
        produced = list(pool.map(lambda spec: _produce_case(spec, workdir), CASES))
    return [log for logs in produced for log in logs]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
