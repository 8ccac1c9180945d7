"""Canaries in every language: drawn in the file's conventions, placed by the supervisor's
own code, accepted by the language's real toolchain, and named in the registered
parser's status map as the grader expects.

Each case is a tiny project: a test file at the base, a test patch that adds a test (the
FAIL_TO_PASS one), the runner's command and parser. A test here draws the trial's
canaries, places them with ``evalrepro.sandbox.writes.with_canaries`` (the
supervisor's code), checks the file with the toolchain (``gofmt -e``, ``rustc --test``,
``javac``, ``php -l``, ``ruby -c``, ``node --check``), then runs the real runner on
the project and parses its output with the parser the case names: each canary is
reported, must-fail ones failing and must-pass ones passing, so an honest run is never
judged tampered, and a run whose report is made to say "passed" of everything is. A
toolchain this machine lacks skips its case, saying what to install (scripts/setup
installs them).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalrepro.config.environment import Limits
from evalrepro.config.protection import TestProtection
from evalrepro.grade.canary import _LANGUAGES, check_canaries, draw_canaries
from evalrepro.grade.fresh import RUNNERS, alone, draw_fresh_runs, lone_canary
from evalrepro.grade.parsers import get_parser, parser_names
from evalrepro.grade.rerun import plan_reruns, select_reruns
from evalrepro.plan import testspec
from evalrepro.records.base import parse_record
from evalrepro.records.canary import Canary
from evalrepro.records.supervision import TrialProgram
from evalrepro.sample import Sample
from evalrepro.sandbox.writes import with_canaries


@dataclass(frozen=True)
class Case:
    """A tiny project of one language and the runner that runs its tests."""

    id: str
    parser: str
    test_cmd: str
    #: The test file, at the base and after the test patch.
    path: str
    base: str
    after: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    #: Other files of the project (not the test patch's).
    project: dict[str, str] = field(default_factory=dict)
    #: The toolchain's check of the file with its canaries: argv, {file} replaced.
    check: tuple[str, ...] = ()
    #: Executables the check and the run need.
    needs: tuple[str, ...] = ()
    #: The real runner on the project (a shell command run in it), if it can run here.
    run: str | None = None
    #: A sed-free "forgery" of the runner's report: the output with every failure said to
    #: pass (regex, replacement), as a patch that rewrites the reporting makes it.
    forge: tuple[str, str] | None = None
    #: The canary styles it should get.
    styles: frozenset[str] = frozenset()
    env: dict[str, str] = field(default_factory=dict)
    #: The spec's directives (``RepoSpec.test_directives``): the test patch's files
    #: appended to the command, or none (a command that runs the whole suite).
    directives: list[str] | str = "test_patch"


GO_BASE = """package calc

import "testing"

func TestAdd(t *testing.T) {
\tif Add(1, 2) != 3 {
\t\tt.Errorf("Add(1, 2) = %d", Add(1, 2))
\t}
}
"""
GO_AFTER = (
    GO_BASE
    + """
func TestAddNegative(t *testing.T) {
\tif Add(-1, -2) != -3 {
\t\tt.Errorf("Add(-1, -2) = %d", Add(-1, -2))
\t}
}
"""
)
RUST_BASE = """pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_small() {
        assert_eq!(add(1, 2), 3);
    }
}
"""
RUST_AFTER = RUST_BASE.replace(
    "        assert_eq!(add(1, 2), 3);\n    }\n",
    "        assert_eq!(add(1, 2), 3);\n    }\n\n"
    "    #[test]\n    fn adds_negative() {\n        assert_eq!(add(-1, -2), -3);\n    }\n",
)
JAVA_BASE = """package calc;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class CalcTest {
    @Test
    public void addsSmall() {
        assertEquals(3, 1 + 2);
    }
}
"""
JAVA_AFTER = JAVA_BASE.replace(
    "        assertEquals(3, 1 + 2);\n    }\n",
    "        assertEquals(3, 1 + 2);\n    }\n\n"
    "    @Test\n    public void addsNegative() {\n        assertEquals(-3, -1 + -2);\n    }\n",
)
PHP_BASE = """<?php

namespace Tests;

use PHPUnit\\Framework\\TestCase;

final class CalcTest extends TestCase
{
    public function testAddsSmall(): void
    {
        $this->assertSame(3, 1 + 2);
    }
}
"""
PHP_AFTER = PHP_BASE.replace(
    "        $this->assertSame(3, 1 + 2);\n    }\n",
    "        $this->assertSame(3, 1 + 2);\n    }\n\n"
    "    public function testAddsNegative(): void\n    {\n"
    "        $this->assertSame(-3, -1 + -2);\n    }\n",
)
RSPEC_BASE = """RSpec.describe "Calc" do
  it "adds small numbers" do
    expect(1 + 2).to eq(3)
  end
end
"""
RSPEC_AFTER = RSPEC_BASE.replace(
    "    expect(1 + 2).to eq(3)\n  end\n",
    "    expect(1 + 2).to eq(3)\n  end\n\n"
    '  it "adds negative numbers" do\n    expect(-1 + -2).to eq(-3)\n  end\n',
)
MINITEST_BASE = """require "minitest/autorun"

class CalcTest < Minitest::Test
  def test_adds_small
    assert_equal 3, 1 + 2
  end
end
"""
MINITEST_AFTER = MINITEST_BASE.replace(
    "    assert_equal 3, 1 + 2\n  end\n",
    "    assert_equal 3, 1 + 2\n  end\n\n"
    "  def test_adds_negative\n    assert_equal(-3, -1 + -2)\n  end\n",
)
JS_BASE = """const { describe, it } = require('node:test');
const assert = require('node:assert');

describe('calc', () => {
  it('adds small numbers', () => {
    assert.strictEqual(1 + 2, 3);
  });
});
"""
JS_AFTER = JS_BASE.replace(
    "    assert.strictEqual(1 + 2, 3);\n  });\n",
    "    assert.strictEqual(1 + 2, 3);\n  });\n\n"
    "  it('adds negative numbers', () => {\n    assert.strictEqual(-1 + -2, -3);\n  });\n",
)
JEST_BASE = """describe('calc', () => {
  test('adds small numbers', () => {
    expect(1 + 2).toBe(3);
  });
});
"""
JEST_AFTER = JEST_BASE.replace(
    "    expect(1 + 2).toBe(3);\n  });\n",
    "    expect(1 + 2).toBe(3);\n  });\n\n"
    "  test('adds negative numbers', () => {\n    expect(-1 + -2).toBe(-3);\n  });\n",
)

GO_MOD = "module example.com/calc\n\ngo 1.19\n"
GO_SRC = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
JUNIT = "/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar:/usr/share/java/hamcrest.jar"

CASES = [
    Case(
        "go",
        "gotest_json",
        "go test -json ./... 2>&1",
        "calc_test.go",
        GO_BASE,
        GO_AFTER,
        ("example.com/calc::TestAddNegative",),
        ("example.com/calc::TestAdd",),
        project={"go.mod": GO_MOD, "calc.go": GO_SRC},
        check=("gofmt", "-e", "-l", "{file}"),
        needs=("go", "gofmt"),
        run="go vet ./... && go test -json ./... 2>&1",
        forge=(r'"Action":"fail"', '"Action":"pass"'),
        styles=frozenset({"go_test"}),
        env={"GOFLAGS": "-mod=mod", "GOCACHE": "{base}/gocache", "GOPATH": "{base}/gopath"},
        directives=[],
    ),
    Case(
        "go-verbose",
        "gotest",
        "go test -v ./...",
        "calc_test.go",
        GO_BASE,
        GO_AFTER,
        ("TestAddNegative",),
        ("TestAdd",),
        project={"go.mod": GO_MOD, "calc.go": GO_SRC},
        check=("gofmt", "-e", "-l", "{file}"),
        needs=("go", "gofmt"),
        run="go test -v ./... 2>&1",
        forge=(r"--- FAIL", "--- PASS"),
        styles=frozenset({"go_test"}),
        env={"GOCACHE": "{base}/gocache", "GOPATH": "{base}/gopath"},
        directives=[],
    ),
    Case(
        "rust",
        "cargo",
        "cargo test --no-fail-fast",
        "src/lib.rs",
        RUST_BASE,
        RUST_AFTER,
        ("tests::adds_negative",),
        ("tests::adds_small",),
        project={"Cargo.toml": CARGO_TOML},
        check=(
            "rustc",
            "--edition",
            "2021",
            "--test",
            "--crate-name",
            "calc",
            "-o",
            "{tmp}/calc-test",
            "{file}",
        ),
        needs=("rustc", "cargo"),
        run="cargo test --offline --no-fail-fast 2>&1",
        forge=(r"\.\.\. FAILED", "... ok"),
        styles=frozenset({"rust_test"}),
        env={"CARGO_TARGET_DIR": "{tmp}/target"},
        directives=[],
    ),
    Case(
        "rust-json",
        "cargo_json",
        "cargo test --no-fail-fast -- -Z unstable-options --format json 2>&1",
        "src/lib.rs",
        RUST_BASE,
        RUST_AFTER,
        ("calc:src/lib.rs::tests::adds_negative",),
        ("calc:src/lib.rs::tests::adds_small",),
        project={"Cargo.toml": CARGO_TOML},
        needs=("cargo",),
        run="cargo test --offline --no-fail-fast -- -Z unstable-options --format json 2>&1",
        forge=(r'"event": ?"failed"', '"event": "ok"'),
        styles=frozenset({"rust_test"}),
        env={"CARGO_TARGET_DIR": "{tmp}/target", "RUSTC_BOOTSTRAP": "1"},
        directives=[],
    ),
    Case(
        "java",
        "junit_xml",
        "mvn -o test -Dmaven.test.failure.ignore=true",
        "src/test/java/calc/CalcTest.java",
        JAVA_BASE,
        JAVA_AFTER,
        ("calc.CalcTest#addsNegative",),
        ("calc.CalcTest#addsSmall",),
        check=("javac", "-cp", JUNIT, "-d", "{tmp}/classes", "{file}"),
        needs=("javac", "java"),
        # JUnit 4's own runner, its report as Surefire's XML (the parser's input).
        run=None,
        styles=frozenset({"junit_method"}),
        directives=[],
    ),
    Case(
        "php",
        "phpunit",
        "phpunit --testdox tests",
        "tests/CalcTest.php",
        PHP_BASE,
        PHP_AFTER,
        ("Calc > Adds negative",),
        ("Calc > Adds small",),
        check=("php", "-l", "{file}"),
        needs=("php", "phpunit"),
        run="phpunit --testdox --colors=never tests 2>&1",
        forge=("✘", "✔"),
        styles=frozenset({"phpunit_method"}),
    ),
    Case(
        "php-junit",
        "junit_xml",
        "phpunit --log-junit report.xml tests",
        "tests/CalcTest.php",
        PHP_BASE,
        PHP_AFTER,
        ("Tests.CalcTest#testAddsNegative",),
        ("Tests.CalcTest#testAddsSmall",),
        check=("php", "-l", "{file}"),
        needs=("php", "phpunit"),
        run="phpunit --log-junit {tmp}/report.xml tests >/dev/null 2>&1; cat {tmp}/report.xml",
        styles=frozenset({"phpunit_method"}),
    ),
    Case(
        "rspec",
        "rspec_json",
        "rspec --format json",
        "spec/calc_spec.rb",
        RSPEC_BASE,
        RSPEC_AFTER,
        ("./spec/calc_spec.rb::Calc adds negative numbers",),
        ("./spec/calc_spec.rb::Calc adds small numbers",),
        check=("ruby", "-c", "{file}"),
        needs=("ruby", "rspec"),
        run="rspec --format json 2>&1",
        forge=(r'"status":"failed"', '"status":"passed"'),
        styles=frozenset({"rspec_it"}),
    ),
    Case(
        "rspec-jq",
        "rspec_transformed_json",
        "rspec --format json",
        "spec/calc_spec.rb",
        RSPEC_BASE,
        RSPEC_AFTER,
        ("Calc adds negative numbers",),
        ("Calc adds small numbers",),
        needs=("ruby", "rspec", "jq"),
        run="rspec --format json | jq -r '.examples[] | \"\\(.full_description) - \\(.status)\"'",
        forge=(r" - failed", " - passed"),
        styles=frozenset({"rspec_it"}),
    ),
    Case(
        "minitest",
        "rspec_transformed_json",  # no minitest parser: placement and syntax only
        "ruby -Itest test/calc_test.rb",
        "test/calc_test.rb",
        MINITEST_BASE,
        MINITEST_AFTER,
        ("test_adds_negative",),
        ("test_adds_small",),
        check=("ruby", "-c", "{file}"),
        needs=("ruby",),
        run=None,
        styles=frozenset({"minitest_method"}),
    ),
    Case(
        "node",
        "tap_full",
        "node --test --test-reporter=tap",
        "test/calc.test.js",
        JS_BASE,
        JS_AFTER,
        ("calc > adds negative numbers",),
        ("calc > adds small numbers",),
        check=("node", "--check", "{file}"),
        needs=("node",),
        run="node --test --test-reporter=tap test/ 2>&1",
        styles=frozenset({"js_it"}),
    ),
    Case(
        "jest",
        "jest",
        "npx jest --verbose",
        "src/calc.test.js",
        JEST_BASE,
        JEST_AFTER,
        ("adds negative numbers",),
        ("adds small numbers",),
        check=("node", "--check", "{file}"),
        needs=("node",),
        run=None,
        styles=frozenset({"js_test"}),
    ),
]
BY_ID = {case.id: case for case in CASES}


def _missing(case: Case) -> str | None:
    absent = [tool for tool in case.needs if shutil.which(tool) is None]
    if absent:
        return f"{', '.join(absent)} not installed (scripts/setup installs them)"
    if case.id == "java" and not Path(JUNIT.split(":")[0]).exists():
        return "junit4 not installed (scripts/setup installs it)"
    return None


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def patch_of(tmp_path: Path, case: Case) -> str:
    """The test patch, as real git writes it."""
    repo = tmp_path / "patchrepo"
    (repo / case.path).parent.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / case.path).write_text(case.base)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / case.path).write_text(case.after)
    return _git(repo, "diff")


def draw(case: Case, patch: str, seed: int, *, test_cmd: str | None = None) -> list[Canary]:
    sample = Sample(
        instance_id=f"demo__{case.id}-1",
        repo=f"demo/{case.id}",
        base_commit="0" * 40,
        test_patch=patch,
        fail_to_pass=list(case.fail_to_pass),
        pass_to_pass=list(case.pass_to_pass),
        patch="",
    )
    repo = testspec.RepoSpec(
        test_cmd=test_cmd or case.test_cmd, parser=case.parser, test_directives=case.directives
    )
    spec = testspec.compile_test_spec(
        sample, repo, parser=case.parser, fail_only=False, protection=TestProtection()
    )
    return draw_canaries(spec, get_parser(case.parser), sample, random.Random(seed))


def placed_file(case: Case, canaries: list[Canary]) -> tuple[str, list[str]]:
    """The test file after the reset's writes with the canaries: the supervisor's code."""
    operations = [(case.path, "file", 0o644, case.after.encode())]
    written, placed = with_canaries(operations, [c.model_dump() for c in canaries])
    return written[0][3].decode(), placed


def _project(tmp_path: Path, case: Case, text: str) -> Path:
    root = tmp_path / "project"
    for path, content in {**case.project, case.path: text}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content)
    return root


def _env(case: Case, tmp_path: Path) -> dict[str, str]:
    """The case's environment: ``{tmp}`` the test's folder, ``{base}`` the session's (Go's
    build cache, shared by the tests: a cold one costs seconds per test)."""
    return {
        **os.environ,
        **{
            k: v.replace("{tmp}", str(tmp_path)).replace("{base}", str(tmp_path.parent))
            for k, v in case.env.items()
        },
    }


# --- drawn in the file's conventions --------------------------------------------------------


def test_every_parser_names_a_registered_canary_language_or_none():
    for name in parser_names():
        language = get_parser(name).canary_language
        assert language is None or language in _LANGUAGES, name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_run_gets_a_must_fail_and_a_must_pass_canary_beside_the_new_test(tmp_path, case):
    patch = patch_of(tmp_path, case)
    canaries = draw(case, patch, seed=3)
    assert sorted(c.expect for c in canaries) == ["fail", "pass"]
    assert {c.style for c in canaries} == case.styles
    assert {c.file for c in canaries} == {case.path}
    # Beside a test the lists name, anchored to its lines, the must-fail one above it.
    assert all(c.beside and c.anchor and c.after_line for c in canaries)
    fail = next(c for c in canaries if c.expect == "fail")
    assert fail.at_line == fail.first_line - 1
    text, placed = placed_file(case, canaries)
    assert sorted(placed) == sorted(c.name for c in canaries)
    for canary in canaries:
        assert canary.source.strip() in text


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_canary_names_are_drawn_per_trial_in_the_files_convention(tmp_path, case):
    patch = patch_of(tmp_path, case)
    names = {c.name for seed in range(6) for c in draw(case, patch, seed)}
    assert len(names) >= 8  # no fixed name, no marker
    convention = {
        "go_test": r"Test[A-Z][a-z0-9]+([A-Z][a-z0-9]+)+",
        "rust_test": r"[a-z0-9]+(_[a-z0-9]+)+",
        "junit_method": r"[a-z]+([A-Z][a-z0-9]+)+",
        "phpunit_method": r"test([A-Z][a-z0-9]+)+",
        "rspec_it": r"[a-z0-9]+( [a-z0-9]+)+",
        "minitest_method": r"test(_[a-z0-9]+)+",
        "js_it": r"[a-z0-9]+( [a-z0-9]+)+",
        "js_test": r"[a-z0-9]+( [a-z0-9]+)+",
    }
    (style,) = case.styles
    assert all(re.fullmatch(convention[style], name) for name in names), names


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_file_with_its_canaries_is_accepted_by_the_languages_toolchain(tmp_path, case):
    if not case.check:
        pytest.skip("the same file as another case's, checked there")
    if reason := _missing(case):
        pytest.skip(reason)
    patch = patch_of(tmp_path, case)
    for seed in (1, 2):
        text, placed = placed_file(case, draw(case, patch, seed))
        assert len(placed) == 2
        root = _project(tmp_path / str(seed), case, text)
        argv = [a.replace("{file}", str(root / case.path)) for a in case.check]
        argv = [a.replace("{tmp}", str(tmp_path / str(seed))) for a in argv]
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        if case.check[:1] == ("gofmt",):
            # gofmt -l names a file it would change: the canaries are laid out as Go's own.
            assert done.stdout == "", text


APPENDED = {
    # Where no test the lists name is shown whole: Go, Rust, RSpec, minitest and
    # JavaScript append (a JavaScript file whose tests are called at its top level).
    "go": ("go_test", "func Test"),
    "rust": ("rust_test", "#[test]"),
    "rspec": ("rspec_it", "RSpec.describe"),
    "minitest": ("minitest_method", "class Test"),
    "node-top": ("js_test", "test('"),
}
NODE_TOP = Case(
    "node-top",
    "tap_full",
    "node --test --test-reporter=tap",
    "test/calc.test.js",
    "const test = require('node:test');\nconst assert = require('node:assert');\n\n"
    "test('adds small numbers', () => {\n  assert.strictEqual(1 + 2, 3);\n});\n",
    "const test = require('node:test');\nconst assert = require('node:assert');\n\n"
    "test('adds small numbers', () => {\n  assert.strictEqual(1 + 2, 3);\n});\n\n"
    "test('adds negative numbers', () => {\n  assert.strictEqual(-1 + -2, -3);\n});\n",
    ("adds negative numbers",),
    ("adds small numbers",),
    check=("node", "--check", "{file}"),
    needs=("node",),
    styles=frozenset({"js_test"}),
)


@pytest.mark.parametrize("case_id", sorted(APPENDED))
def test_where_no_test_the_lists_name_is_shown_whole_canaries_are_appended(tmp_path, case_id):
    case = NODE_TOP if case_id == "node-top" else BY_ID[case_id]
    # The lists name tests of the file the hunks do not show (the whole file is shown).
    unnamed = Case(**{**case.__dict__, "fail_to_pass": ("TestOther",), "pass_to_pass": ()})
    canaries = draw(unnamed, _git_patch_with_context(tmp_path, case, context=20), seed=5)
    style, shape = APPENDED[case_id]
    assert sorted(c.expect for c in canaries) == ["fail", "pass"]
    assert all(c.style == style and c.after_line is None for c in canaries)
    text, placed = placed_file(case, canaries)
    assert len(placed) == 2 and text.startswith(case.after) and shape in text[len(case.after) :]
    if _missing(case):
        return
    root = _project(tmp_path / "appended", case, text)
    argv = [a.replace("{file}", str(root / case.path)) for a in case.check]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _git_patch_with_context(tmp_path: Path, case: Case, context: int) -> str:
    repo = tmp_path / "patchrepo0"
    (repo / case.path).parent.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / case.path).write_text(case.base)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / case.path).write_text(case.after)
    return _git(repo, "diff", f"-U{context}")


@pytest.mark.parametrize(("case_id", "focus"), [("jest", "test.only("), ("rspec", "fit ")])
def test_no_canary_in_a_file_with_a_focused_test(tmp_path, case_id, focus):
    # The runner runs the focused test alone: a canary there would be lost honestly.
    case = BY_ID[case_id]
    keyword = "test(" if case_id == "jest" else "it "
    focused = Case(**{**case.__dict__, "after": case.after.replace(keyword, focus, 1)})
    assert draw(focused, patch_of(tmp_path, focused), 3) == []
    assert draw(case, patch_of(tmp_path / "plain", case), 3) != []


def test_java_and_php_methods_are_never_appended_outside_their_class(tmp_path):
    for case_id in ("java", "php"):
        case = BY_ID[case_id]
        unnamed = Case(**{**case.__dict__, "fail_to_pass": ("Other#x",), "pass_to_pass": ()})
        patch = _git_patch_with_context(tmp_path / case_id, case, context=20)
        assert draw(unnamed, patch, 5) == []


@pytest.mark.parametrize(
    ("case_id", "test_cmd"),
    [
        ("go", "go test -json -run TestAdd ./..."),
        ("go", "go test -json -failfast ./..."),
        ("rust", "cargo test"),  # stops at the first test binary that fails
        ("rust", "cargo test --no-fail-fast adds"),  # a filter
        ("rust", "cargo test --no-fail-fast -- --exact tests::adds_small"),
        ("java", "mvn -o test"),  # a failing module stops the reactor
        ("java", "mvn -o test -Dmaven.test.failure.ignore=false"),
        ("java", "mvn -o test -Dtest=CalcTest -Dmaven.test.failure.ignore=true"),
        ("php", "phpunit --testdox --stop-on-failure tests"),
        ("php", "phpunit --testdox --filter testAdds tests"),
        ("rspec", "rspec --format json --fail-fast"),
        ("rspec", "rspec --format json spec/calc_spec.rb:2"),
        ("jest", "npx jest --verbose --bail"),
        ("jest", "npx jest --verbose -t adds"),
        ("php-junit", "vendor/bin/simple-phpunit --log-junit r.xml"),  # no runner it knows
    ],
)
def test_no_canary_where_the_command_selects_tests_or_stops_at_a_failure(
    tmp_path, case_id, test_cmd
):
    case = BY_ID[case_id]
    assert draw(case, patch_of(tmp_path, case), 3, test_cmd=test_cmd) == []


# --- named in the status map as the grader expects ------------------------------------------


RUNS = [c for c in CASES if c.run is not None]


@pytest.mark.parametrize("case", RUNS, ids=lambda c: c.id)
def test_the_real_runner_reports_each_canary_as_the_grader_expects(tmp_path, case):
    if reason := _missing(case):
        pytest.skip(reason)
    patch = patch_of(tmp_path, case)
    canaries = draw(case, patch, seed=11)
    text, placed = placed_file(case, canaries)
    root = _project(tmp_path, case, text)
    command = case.run.replace("{tmp}", str(tmp_path))  # type: ignore[union-attr]
    done = subprocess.run(
        ["sh", "-c", command],
        cwd=root,
        env=_env(case, tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    parsed = get_parser(case.parser).parse(done.stdout)
    statuses = {k: str(v) for k, v in parsed.statuses.items()}
    listed = [*case.fail_to_pass, *case.pass_to_pass]
    checks, remaining = check_canaries(canaries, placed, statuses, listed)
    reported = {c.name: (c.expect, c.reported) for c in checks}
    assert reported == {
        c.name: (c.expect, "FAILED" if c.expect == "fail" else "PASSED") for c in canaries
    }, done.stdout[-3000:]
    assert not any(c.tampered for c in checks)
    # The canaries are the harness's: what remains is the project's own tests.
    assert set(remaining) >= set(listed) and not set(remaining) & set(reported)
    assert all(remaining[t] == "PASSED" for t in listed)
    if case.forge is not None:
        # A patch that rewrites the runner's reporting to say "passed" of every test.
        forged = re.sub(case.forge[0], case.forge[1], done.stdout)
        parsed = get_parser(case.parser).parse(forged)
        statuses = {k: str(v) for k, v in parsed.statuses.items()}
        checks, _ = check_canaries(canaries, placed, statuses, listed)
        assert any(c.tampered for c in checks)


# --- fresh runs and re-runs: one test alone, by each runner's rules --------------------------


@pytest.mark.parametrize(
    ("runner", "key", "command"),
    [
        (
            "go",
            "example.com/calc::TestAdd/sub_case",
            "go test -json example.com/calc -run '^TestAdd$/^sub_case$'",
        ),
        ("go", "TestAdd", "go test -json ./... -run '^TestAdd$'"),
        ("cargo", "tests::adds_small", "cargo test --no-fail-fast -- --exact tests::adds_small"),
        (
            "cargo",
            "calc:src/lib.rs::tests::adds",
            "cargo test --no-fail-fast -- --exact tests::adds",
        ),
        (
            "maven",
            "calc.CalcTest#addsSmall",
            "mvn test -Dtest='CalcTest#addsSmall' -Dmaven.test.failure.ignore=false"
            " -Dsurefire.failIfNoSpecifiedTests=false",
        ),
        ("rspec", "./spec/calc_spec.rb::Calc adds", "rspec -e 'Calc adds'"),
        (
            "phpunit",
            "Tests.CalcTest#testAdds",
            "phpunit --filter '/\\bCalcTest::testAdds( with data set .*)?$/'",
        ),
        (
            "jest",
            "/t/src/a.test.js::calc > adds small",
            "jest --testNamePattern '(^| )calc\\ adds\\ small$' --passWithNoTests",
        ),
        ("vitest", "src/a.test.js > calc > adds", "vitest run -t '(^| )calc\\ adds$'"),
        ("mocha", "calc adds small:", "mocha --grep '(^| )calc\\ adds\\ small$'"),
        ("ctest", "Suite.Test", "ctest -R '^Suite\\.Test$'"),
    ],
)
def test_each_runner_selects_one_test_alone(runner, key, command):
    base = command.split(" -", 1)[0] if runner != "vitest" else "vitest run"
    base = {"cargo": "cargo test --no-fail-fast", "go": "go test -json"}.get(runner, base)
    chosen = RUNNERS[runner]
    argument = chosen.select(key)
    assert argument is not None
    assert chosen.command(base, argument) == command


@pytest.mark.parametrize(
    ("runner", "passed", "failed"),
    [
        ("go", [0], [1, 2]),
        ("cargo", [0], [101, 1]),
        ("maven", [0], [1]),
        ("rspec", [0], [1]),
        ("phpunit", [0], [1, 2]),
        ("jest", [0], [1]),
        ("mocha", [0], [1, 3]),
        ("ctest", [0], [8]),
    ],
)
def test_each_runners_exit_status_reads_as_passed_only_when_zero(runner, passed, failed):
    for code in passed:
        assert RUNNERS[runner].outcome(code) == "passed"
    for code in failed:
        assert RUNNERS[runner].outcome(code) == "failed"


def test_a_canary_alone_is_selected_strictly_a_miss_must_not_read_as_passing():
    # jest exits 1 when nothing ran unless --passWithNoTests: a test gets it, a canary not.
    jest = RUNNERS["jest"]
    assert "--passWithNoTests" in jest.command("jest", "a b")
    assert "--passWithNoTests" not in jest.command("jest", "a b", expect="fail")
    maven = RUNNERS["maven"]
    assert "failIfNoSpecifiedTests=false" not in maven.command("mvn test", "C#m", expect="fail")
    assert "--no-tests=error" in RUNNERS["ctest"].command("ctest", "S.T", expect="fail")


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in {"minitest", "node"}],
                         ids=lambda c: c.id)  # fmt: skip
def test_fresh_runs_run_a_must_fail_canary_alone_with_the_runners_selection(tmp_path, case):
    patch = patch_of(tmp_path, case)
    sample = Sample(
        instance_id=f"demo__{case.id}-1",
        repo=f"demo/{case.id}",
        base_commit="0" * 40,
        test_patch=patch,
        fail_to_pass=list(case.fail_to_pass),
        pass_to_pass=list(case.pass_to_pass),
        patch="",
    )
    repo = testspec.RepoSpec(
        test_cmd=case.test_cmd, parser=case.parser, test_directives=case.directives
    )
    spec = testspec.compile_test_spec(
        sample,
        repo,
        parser=case.parser,
        fail_only=False,
        protection=TestProtection(fresh_runs=1),
    )
    parser = get_parser(case.parser)
    canaries = draw_canaries(spec, parser, sample, random.Random(2))
    runs, note = draw_fresh_runs(spec, parser, sample, canaries, random.Random(2))
    if parser.runner is None:
        assert runs == [] and "names no runner" in note
        return
    if case.parser == "phpunit":
        # testdox's words of a method's name do not give the method back to --filter.
        assert runs == [] and "no FAIL_TO_PASS test is named" in note
        return
    lone = [r for r in runs if r.expect == "fail"]
    assert len(lone) == 1 and lone[0].runner == parser.runner
    canary = next(c for c in canaries if c.name == lone[0].test)
    assert canary.expect == "fail"
    assert lone[0].command.startswith(case.test_cmd)


LONE = ["go", "go-verbose", "rust", "php", "rspec"]


@pytest.mark.parametrize("case_id", LONE)
def test_alone_a_must_fail_canary_fails_and_a_passing_test_passes_by_the_runners_rules(
    tmp_path, case_id
):
    """The fresh run's commands, run by the real runner on the project with its canaries:
    its exit status read by the runner's rules."""
    case = BY_ID[case_id]
    if reason := _missing(case):
        pytest.skip(reason)
    patch = patch_of(tmp_path, case)
    canaries = draw(case, patch, seed=13)
    text, _ = placed_file(case, canaries)
    root = _project(tmp_path, case, text)
    spec = _spec(case, patch)
    runner = RUNNERS[get_parser(case.parser).runner or ""]
    lone = lone_canary(runner, canaries, spec)
    assert lone is not None
    runs = [lone]
    argument = runner.select(case.fail_to_pass[0])
    if argument is not None:  # testdox's keys do not give the method back
        runs.append(alone(spec.test_cmd, runner, case.fail_to_pass[0], argument))
        # A selection that matches nothing reads as passed: never a disagreement.
        runs.append(alone(spec.test_cmd, runner, "missing", runner.select(_missing_key(case))))
    outcomes = []
    for run in runs:
        done = subprocess.run(
            ["sh", "-c", run.command],
            cwd=root,
            env=_env(case, tmp_path),
            capture_output=True,
            text=True,
            timeout=600,
        )
        outcomes.append(runner.outcome(done.returncode))
    assert outcomes == ["failed", "passed", "passed"][: len(runs)], [r.command for r in runs]


def _missing_key(case: Case) -> str:
    key = case.fail_to_pass[0]
    return re.sub(r"[Nn]egative", "Nowhere", key)


def _spec(case: Case, patch: str):
    sample = Sample(
        instance_id=f"demo__{case.id}-1",
        repo=f"demo/{case.id}",
        base_commit="0" * 40,
        test_patch=patch,
        fail_to_pass=list(case.fail_to_pass),
        pass_to_pass=list(case.pass_to_pass),
        patch="",
    )
    repo = testspec.RepoSpec(
        test_cmd=case.test_cmd, parser=case.parser, test_directives=case.directives
    )
    return testspec.compile_test_spec(
        sample, repo, parser=case.parser, fail_only=False, protection=TestProtection()
    )


def test_a_failing_go_test_is_re_run_alone_with_gos_selection_beside_the_lone_canary(tmp_path):
    """Re-runs pick the failing tests from the real run's log and select each as fresh
    runs do; run by go, the failing test fails again and the canary fails alone."""
    case = BY_ID["go"]
    if reason := _missing(case):
        pytest.skip(reason)
    patch = patch_of(tmp_path, case)
    canaries = draw(case, patch, seed=17)
    text, _ = placed_file(case, canaries)
    buggy = GO_SRC.replace("return a + b", "if a < 0 {\n\t\treturn 0\n\t}\n\treturn a + b")
    root = _project(
        tmp_path, Case(**{**case.__dict__, "project": {**case.project, "calc.go": buggy}}), text
    )
    env = _env(case, tmp_path)
    log = subprocess.run(
        ["sh", "-c", "go test -json ./... 2>&1"], cwd=root, env=env, capture_output=True, text=True
    ).stdout
    spec = _spec(case, patch)
    sample = Sample(
        instance_id="demo__go-1",
        repo="demo/go",
        base_commit="0" * 40,
        test_patch=patch,
        fail_to_pass=list(case.fail_to_pass),
        pass_to_pass=list(case.pass_to_pass),
        patch="",
    )
    plan, note = plan_reruns(spec, get_parser(case.parser), sample, canaries, times=2)
    assert plan is not None, note
    runs = select_reruns(plan, canaries, log, random.Random(1))
    assert sorted(r.test for r in runs if r.expect == "pass") == list(case.fail_to_pass)
    outcomes = {}
    for run in runs:
        code = subprocess.run(["sh", "-c", run.command], cwd=root, env=env, capture_output=True)
        outcomes[run.expect] = RUNNERS[run.runner].outcome(code.returncode)
    assert outcomes == {"pass": "failed", "fail": "failed"}


def test_a_program_of_schema_1_reads_and_one_of_schema_2_carries_every_languages_canaries(
    tmp_path,
):
    case = BY_ID["rspec"]
    canaries = draw(case, patch_of(tmp_path, case), seed=2)
    script = _spec(case, patch_of(tmp_path / "again", case)).eval_script
    program = TrialProgram.of(script, Limits(), 60, canaries=canaries)
    raw = json.loads(program.model_dump_json())
    assert raw["schema_version"] == 2
    assert parse_record(raw, TrialProgram, where="p").canaries == canaries
    # A program an older evalrepro wrote (Python's canaries only) reads as it is.
    older = {**raw, "schema_version": 1, "canaries": []}
    assert parse_record(older, TrialProgram, where="p").schema_version == 2
