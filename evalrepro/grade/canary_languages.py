"""Canaries in the test files of Go, Rust, Java, PHP, Ruby and JavaScript.

Each language is a :class:`BlockLanguage`: how a test is written there (the head of a
test and where its block ends), how a canary of either expectation is written in a
file's conventions, and what of a test command would make a canary change an honest
verdict (selecting tests, stopping at a first failure). The host knows a test file only
through the test patch's hunks (``evalrepro.grade.twins.post_images``), so:

* **beside a neighbour**: where a hunk shows a test whole (one the instance's lists
  name, so not one a skipped group holds), a must-fail canary goes right above it and a
  must-pass one right after it, at its indentation, in its block (a Rust ``mod tests``,
  a Java or PHP class, an RSpec ``describe``, a JavaScript ``describe``), written as it
  is written (its parameter name, its brace style, its quotes, its kind of check:
  testify or ``t.Errorf``, ``assertEquals`` or ``AssertionError``, ``expect`` or
  ``assert``), under a name drawn per trial from the words of the instance's test names
  in the file's convention; the supervisor places it only where the neighbour's lines
  hash as the host saw them (``Canary.anchor``);
* **appended**: where no test is shown whole, at the end of the file, where the language
  allows a test there (a Go ``func Test``, a Rust ``#[test] fn``, a JavaScript ``it``,
  an RSpec ``describe`` group, a minitest class); Java and PHP methods must be inside
  their class, and get no appended canary.

A canary's check does not depend on the code under test (a sum of a few numbers drawn
per trial against a total that is, or is not, theirs), so the runner's honest report of
it is known. A runner that names tests by a title (RSpec, JavaScript, PHPUnit's testdox)
gets the title the status map shows (``Canary.title``).
"""

from __future__ import annotations

import hashlib
import random
import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from evalrepro.grade.twins import post_images
from evalrepro.records.canary import Canary
from evalrepro.records.testspec import TestSpec
from evalrepro.sample import Sample

if TYPE_CHECKING:
    from evalrepro.grade.parsers import LogParser

#: Files of a trial that get canaries, and canaries per file (one must-fail, one
#: must-pass).
FILES_PER_TRIAL = 4
#: A neighbour whose text may skip or expect a failure: a canary beside it could be
#: skipped with it (a ``describe.skip`` block is never shown by its tests' lists).
_MAY_SKIP = re.compile(
    r"\bskip|\bxit\b|\bpending\b|#\[ignore|#\[should_panic|@Ignore|@Disabled|expected\s*=|"
    r"\.todo\b|\.only\b|markTestSkipped|markTestIncomplete|@depends|@dataProvider|"
    r"DataProvider|t\.Skip",
    re.IGNORECASE,
)
#: A focused test (``it.only``, ``fit``, ``fdescribe``, ``focus: true``) makes the runner
#: run it alone: a canary in that file would be lost honestly.
_FOCUSED = re.compile(r"\.only\(|\b(fit|fdescribe|fcontext|fspecify|fexample)\b|\bfocus: *true")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_COMMON = (
    "basic",
    "copy",
    "default",
    "empty",
    "invalid",
    "large",
    "missing",
    "mixed",
    "multiple",
    "nested",
    "order",
    "simple",
    "single",
    "small",
    "unicode",
    "values",
    "keys",
)
#: Words no canary name is made of: a language's keywords and the test words themselves.
_STOP = frozenset(
    {
        "test",
        "tests",
        "it",
        "should",
        "spec",
        "fn",
        "func",
        "self",
        "this",
        "new",
        "let",
        "var",
        "const",
        "if",
        "else",
        "for",
        "do",
        "end",
        "def",
        "class",
        "return",
        "true",
        "false",
        "nil",
        "null",
        "none",
        "void",
        "public",
        "private",
        "static",
        "function",
        "async",
        "await",
        "type",
        "mod",
        "use",
        "impl",
        "struct",
        "go",
        "map",
        "range",
        "int",
        "string",
        "array",
        "and",
        "or",
        "not",
        "in",
        "is",
        "the",
        "a",
        "an",
        "of",
        "to",
        "with",
        "when",
        "on",
        "by",
    }
)


@dataclass
class TestBlock:
    """One test whose whole text a hunk of the test patch shows."""

    file: str
    #: Its function or method name, or its title (RSpec, JavaScript).
    name: str
    #: 1-based lines, in the file after the test patch, of its first (attributes and
    #: annotations included) and last line.
    first: int
    last: int
    lines: list[str]
    indent: str

    @property
    def text(self) -> str:
        return "".join(self.lines)

    @property
    def inner(self) -> str:
        """The indentation of its body."""
        for line in self.lines[1:]:
            if line.strip() and line.startswith(self.indent):
                own = line[: len(line) - len(line.lstrip())]
                if len(own) > len(self.indent):
                    return own
        return self.indent + "    "


@dataclass(frozen=True)
class Written:
    """A canary's code, as the supervisor places it, and what the parser calls it."""

    name: str
    source: str
    style: str
    title: str | None = None
    test_class: str | None = None


class CanaryLanguage(ABC):
    """How canaries are written in one language's test files, and when there are none.

    Registered in ``evalrepro.grade.canary._LANGUAGES`` under :attr:`name`, the value of
    ``LogParser.canary_language`` of the parsers whose runner runs that language's tests.
    """

    #: The key of ``evalrepro.grade.canary._LANGUAGES`` (``LogParser.canary_language``).
    name: ClassVar[str]
    #: How canaries stand beside the file's own tests: "shaped" (like a neighbour, with
    #: its calls: Python), "written" (in the file's conventions, beside a neighbour, else
    #: appended). docs/threat-model.md says what each leaves.
    placement: ClassVar[str] = "written"

    @abstractmethod
    def selects(self, command: str) -> bool:
        """The test command selects tests or stops at a first failure (a canary could
        change an honest verdict there), or lacks an option canaries need."""

    @abstractmethod
    def draw(
        self,
        spec: TestSpec,
        parser: LogParser,
        sample: Sample,
        rng: random.Random,
        outside: Mapping[str, bytes] | None,
    ) -> list[Canary]:
        """The trial's canaries in this language's files (none where none can be)."""


class BlockLanguage(CanaryLanguage):
    """A language whose tests are blocks of lines a hunk can show whole."""

    #: Options of the test command that select tests or stop at a first failure.
    selecting: ClassVar[tuple[str, ...]] = ()
    #: Words one of which the command must hold, exactly (cargo stops after the first test
    #: binary that fails unless told ``--no-fail-fast``): none, no canary.
    required: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def test_file(self, path: str) -> bool:
        """A test file of this language, as its runner finds test files."""

    @abstractmethod
    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        """The tests a hunk (its post-image lines, the first at line ``start``) shows whole."""

    @abstractmethod
    def write(
        self,
        expect: str,
        neighbour: TestBlock | None,
        name_words: list[str],
        rng: random.Random,
        shown: str,
        path: str,
    ) -> Written | None:
        """A canary of ``expect`` written beside ``neighbour`` (None: appended to the file
        whose hunks show ``shown``), named from ``name_words``; None where it cannot be."""

    # -- what the test command allows -------------------------------------------------

    def selects(self, command: str) -> bool:
        """The command selects tests or stops at a first failure (a canary could change
        an honest verdict), or lacks an option it needs."""
        try:
            tokens = shlex.split(command)
        except ValueError:
            return True
        for token in tokens:
            if any(token == o or token.startswith(f"{o}=") for o in self.selecting):
                return True
        if self.required and not any(token in self.required for token in tokens):
            return True
        return False

    def runs(self, path: str, directives: Sequence[str]) -> bool:
        """The command runs the whole file: no directives, or a directive naming it or a
        folder (or Go package pattern) holding it."""
        if not directives:
            return True
        for directive in directives:
            d = directive.removeprefix("./").rstrip("/")
            if d.endswith("/...") or d == "...":
                d = d.removesuffix("...").rstrip("/")
                if not d or path.startswith(f"{d}/"):
                    return True
                continue
            if ":" in d or "#" in d or "[" in d:
                continue  # one test of a file (file:line, Class#method)
            if d in {"", "."} or path == d or path.startswith(f"{d}/"):
                return True
        return False

    def title_of(self, written: Written, parser: str) -> str | None:
        """The canary as the parser's status map names it, where that is not its name."""
        return written.title

    # -- drawing ------------------------------------------------------------------------

    def draw(
        self,
        spec: TestSpec,
        parser: LogParser,
        sample: Sample,
        rng: random.Random,
        outside: Mapping[str, bytes] | None,
    ) -> list[Canary]:
        """The test patch's files of this language the command runs whole, and their
        canaries (``outside``, the base's other test files, is Python's only)."""
        files = [
            p
            for p in spec.eval_script.test_files
            if self.test_file(p) and self.runs(p, spec.test_directives)
        ]
        listed = [*sample.fail_to_pass, *sample.pass_to_pass]
        return self.written(files, post_images(sample.test_patch), listed, parser.name, rng)

    def written(
        self,
        files: Sequence[str],
        images: Mapping[str, list[tuple[int, list[str], bool]]],
        listed: Sequence[str],
        parser: str,
        rng: random.Random,
    ) -> list[Canary]:
        """Per file (at most ``FILES_PER_TRIAL``, drawn), a must-fail and a must-pass
        canary, beside a neighbour the lists name where a hunk shows one, else appended."""
        words = vocabulary(listed)
        taken: set[str] = set()
        chosen = [p for p in files if self.test_file(p) and images.get(p)]
        chosen = rng.sample(chosen, min(FILES_PER_TRIAL, len(chosen)))
        canaries: list[Canary] = []
        for path in chosen:
            hunks = images[path]
            shown = "".join(line for _, post, _ in hunks for line in post)
            if _FOCUSED.search(shown):
                continue  # a focused test: the runner runs only it, never a canary
            blocks = [
                block
                for start, post, end in hunks
                for block in self.tests(path, post, start, end)
                if block.lines[-1].endswith("\n")
                and not _MAY_SKIP.search(block.text)
                and any(self.names(block.name, key) for key in listed)
            ]
            for expect in ("fail", "pass"):
                pool = list(blocks)
                rng.shuffle(pool)
                made = None
                for block in pool or [None]:
                    name_words = _drawn(words, shown, taken, rng)
                    made = self.write(expect, block, name_words, rng, shown, path)
                    if made is not None:
                        canaries.append(self._canary(made, expect, block, path, parser, rng))
                        taken.add(made.name)
                        break
        return canaries

    def names(self, name: str, key: str) -> bool:
        """A status-map key names the test ``name`` (a function's name as a word of it)."""
        return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", key) is not None

    def _canary(
        self,
        made: Written,
        expect: str,
        block: TestBlock | None,
        path: str,
        parser: str,
        rng: random.Random,
    ) -> Canary:
        newline = "\r\n" if block is not None and block.lines[-1].endswith("\r\n") else "\n"
        source = made.source if newline == "\n" else re.sub(r"(?<!\r)\n", "\r\n", made.source)
        common = {
            "name": made.name,
            "expect": expect,
            "file": path,
            "style": made.style,
            "defines": [made.name],
            "title": self.title_of(made, parser),
            "test_class": made.test_class,
        }
        if block is None:
            return Canary(source=newline + source, **common)  # type: ignore[arg-type]
        # A must-fail canary right above its neighbour (a test patch's new tests are often
        # the file's last), a must-pass one right after it, one blank line between.
        above = expect == "fail" and block.first >= 2
        return Canary(
            source=source + newline if above else newline + source,
            beside=block.name,
            after_line=block.last,
            anchor=hashlib.sha256(block.text.encode()).hexdigest(),
            first_line=block.first,
            at_line=block.first - 1 if above else None,
            **common,  # type: ignore[arg-type]
        )


# --- words and names ----------------------------------------------------------------------


def vocabulary(names: Sequence[str]) -> list[str]:
    """The lower-case words of the instance's test names (camelCase, snake_case, titles),
    and common ones when they are few."""
    found: dict[str, None] = {}
    for key in names:
        # The test's own name: not its package, file or class (``pkg::TestX``,
        # ``a.b.Class#method``).
        own = key.rsplit("::", 1)[-1].rsplit("#", 1)[-1]
        for word in _WORD.findall(own):
            lower = word.lower()
            if 3 <= len(lower) <= 12 and lower not in _STOP:
                found[lower] = None
    words = list(found)
    return words + [w for w in _COMMON if w not in found] if len(words) < 8 else words


def _drawn(words: list[str], shown: str, taken: set[str], rng: random.Random) -> list[str]:
    """Three words whose joinings are not in the file's shown text nor taken."""
    for _attempt in range(100):
        chosen = rng.sample(words, min(3, len(words)))
        joined = {"_".join(chosen), "".join(w.capitalize() for w in chosen), " ".join(chosen)}
        if not any(j in shown or j in taken for j in joined):
            return chosen
    return [*rng.sample(words, min(2, len(words))), f"{rng.choice(words)}{rng.randrange(2, 99)}"]


def camel(words: Sequence[str]) -> str:
    return "".join(w.capitalize() for w in words)


def _numbers(rng: random.Random, expect: str) -> tuple[list[int], int]:
    values = [rng.randrange(1, 1000) for _ in range(rng.randrange(2, 5))]
    return values, sum(values) + (0 if expect == "pass" else rng.randrange(1, 9))


def _brace_end(
    post: list[str], index: int, reaches_end: bool, line_comment: str = "//"
) -> int | None:
    """The index of the line after the block whose first ``{`` is on or after line
    ``index`` (strings, characters and comments skipped); None if the hunk ends first."""
    depth = 0
    opened = False
    in_block_comment = False
    for at in range(index, len(post)):
        text = post[at]
        i = 0
        while i < len(text):
            char = text[i]
            if in_block_comment:
                if text.startswith("*/", i):
                    in_block_comment = False
                    i += 2
                    continue
                i += 1
                continue
            if text.startswith(line_comment, i):
                break
            if text.startswith("/*", i):
                in_block_comment = True
                i += 2
                continue
            if char in "\"'`":
                close = text.find(char, i + 1)
                while close != -1 and text[close - 1] == "\\" and text[close - 2] != "\\":
                    close = text.find(char, close + 1)
                if close == -1:
                    if char == "'":  # a Rust lifetime or a char we cannot read: move on
                        i += 1
                        continue
                    return None  # a string over several lines: not read
                i = close + 1
                continue
            if char == "{":
                depth += 1
                opened = True
            elif char == "}":
                depth -= 1
                if opened and depth == 0:
                    return at + 1
            i += 1
    return None


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _attributes_start(post: list[str], index: int, indent: str, marks: tuple[str, ...]) -> int:
    """The first line of the attributes (``#[...]``, ``@...``, doc comments) right above
    line ``index`` at the same indentation."""
    first = index
    for earlier in range(index - 1, -1, -1):
        text = post[earlier]
        if _indent(text) == indent and text.lstrip().startswith(marks):
            first = earlier
        else:
            break
    return first


def _sum_expression(language: str, local: str) -> str:
    return {
        "go": "",
        "rust": f"{local}.iter().sum::<i64>()",
        "java": "",
        "php": f"array_sum(${local})",
        "ruby": f"{local}.sum",
        "javascript": f"{local}.reduce((a, b) => a + b, 0)",
    }[language]


# --- Go -------------------------------------------------------------------------------------

_GO_HEAD = re.compile(r"^func (Test[A-Za-z0-9_]*)\((\w+) \*testing\.T\) \{\s*$")


class GoCanaries(BlockLanguage):
    """``func TestXxx(t *testing.T)`` in a ``_test.go`` file of the test patch's package,
    at the top level (beside a neighbour, or at the end of a file whose hunks show a
    ``*testing.T``: the file imports ``testing`` under its name)."""

    name: ClassVar[str] = "go"
    selecting: ClassVar[tuple[str, ...]] = (
        "-run",
        "-test.run",
        "-skip",
        "-test.skip",
        "-failfast",
        "-test.failfast",
        "-list",
    )

    def test_file(self, path: str) -> bool:
        return path.endswith("_test.go")

    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        for index, line in enumerate(post):
            head = _GO_HEAD.match(line)
            if head is None:
                continue
            end = _brace_end(post, index, reaches_end)
            if end is None:
                continue
            yield TestBlock(
                path, head.group(1), start + index, start + end - 1, post[index:end], ""
            )

    def write(self, expect, neighbour, name_words, rng, shown, path):
        if neighbour is None:
            if not re.search(r"\b\w+ \*testing\.T\b", shown):
                return None
            text, param, tab = "", "t", "\t"
        else:
            text = neighbour.text
            param = _GO_HEAD.match(neighbour.lines[0]).group(2)  # type: ignore[union-attr]
            tab = neighbour.inner
        names = [n for n in re.findall(r"^func (Test\w*)\(", shown, re.M)]
        snake = sum("_" in n for n in names) * 2 > len(names) > 0
        name = "Test" + (
            "_".join(w.capitalize() for w in name_words) if snake else camel(name_words)
        )
        values, total = _numbers(rng, expect)
        local = rng.choice(("values", "items", "input", "nums"))
        sum_local = rng.choice(("sum", "total", "got"))
        listed = ", ".join(map(str, values))
        body = [
            f"{local} := []int{{{listed}}}",
            f"{sum_local} := 0",
            f"for _, v := range {local} {{",
            f"\t{sum_local} += v",
            "}",
        ]
        if re.search(rf"\bassert\.Equal\({param}, ", text):
            body.append(f"assert.Equal({param}, {total}, {sum_local})")
        elif re.search(rf"\brequire\.Equal\({param}, ", text):
            body.append(f"require.Equal({param}, {total}, {sum_local})")
        else:
            call = (
                "Fatalf"
                if f"{param}.Fatalf(" in text and f"{param}.Errorf(" not in text
                else "Errorf"
            )
            body += [
                f"if {sum_local} != {total} {{",
                f'\t{param}.{call}("{sum_local} = %d, want %d", {sum_local}, {total})',
                "}",
            ]
        lines = "".join(f"{tab}{b.replace(chr(9), tab)}\n" for b in body)
        source = f"func {name}({param} *testing.T) {{\n{lines}}}\n"
        return Written(name=name, source=source, style="go_test")


# --- Rust -----------------------------------------------------------------------------------

_RUST_HEAD = re.compile(
    r"^(\s*)(?:pub(?:\([a-z]+\))?\s+)?fn\s+([a-z_][a-z0-9_]*)\s*\(\s*\)\s*\{\s*$"
)


class RustCanaries(BlockLanguage):
    """``#[test] fn`` in the test patch's ``.rs`` file: in its test module beside a
    neighbour, or appended at the file's top level (an integration test file's, or a
    source file's, which ``cargo test`` compiles with ``cfg(test)``)."""

    name: ClassVar[str] = "rust"
    selecting: ClassVar[tuple[str, ...]] = ("--exact", "--skip", "--ignored", "--include-ignored")
    required: ClassVar[tuple[str, ...]] = ("--no-fail-fast",)

    def selects(self, command: str) -> bool:
        if super().selects(command):
            return True
        # A filter: a word after ``cargo test`` that is no option (a test name).
        try:
            tokens = shlex.split(command)
        except ValueError:
            return True
        for index, token in enumerate(tokens[:-1]):
            if token == "cargo" and tokens[index + 1] == "test":
                rest = tokens[index + 2 :]
                valued = {"--test", "--lib", "--bin", "--package", "-p", "--features", "-F",
                          "--target", "--manifest-path", "--jobs", "-j", "--profile",
                          "--color", "--message-format", "--example", "--bench", "--config",
                          "-Z", "--target-dir", "--test-threads", "--format"}  # fmt: skip
                skip = False
                for word in rest:
                    if skip:
                        skip = False
                    elif word in {"&&", "||", ";", "|"} or re.match(r"\d*[<>]", word):
                        break  # the command's end, a redirection (``2>&1``)
                    elif word in valued:
                        skip = True
                    elif not word.startswith("-"):
                        return True
        return False

    def test_file(self, path: str) -> bool:
        return path.endswith(".rs")

    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        for index, line in enumerate(post):
            head = _RUST_HEAD.match(line)
            if head is None:
                continue
            indent = head.group(1)
            first = _attributes_start(post, index, indent, ("#[", "///"))
            attributes = "".join(post[first:index])
            if "#[test]" not in attributes:
                continue
            end = _brace_end(post, index, reaches_end)
            if end is None:
                continue
            yield TestBlock(
                path, head.group(2), start + first, start + end - 1, post[first:end], indent
            )

    def write(self, expect, neighbour, name_words, rng, shown, path):
        if neighbour is None and "#[test]" not in shown and "/tests/" not in f"/{path}":
            return None
        indent = neighbour.indent if neighbour else ""
        inner = neighbour.inner if neighbour else "    "
        name = "_".join(name_words)
        values, total = _numbers(rng, expect)
        local = rng.choice(("values", "items", "input", "nums"))
        listed = ", ".join(map(str, values))
        check = rng.choice(("assert_eq!({s}, {t});", "assert!({s} == {t});"))
        body = [
            f"let {local}: [i64; {len(values)}] = [{listed}];",
            check.format(s=_sum_expression("rust", local), t=total),
        ]
        lines = "".join(f"{inner}{b}\n" for b in body)
        source = f"{indent}#[test]\n{indent}fn {name}() {{\n{lines}{indent}}}\n"
        return Written(name=name, source=source, style="rust_test")

    def names(self, name: str, key: str) -> bool:
        return key.rsplit("::", 1)[-1] == name


# --- Java (JUnit 4 and 5 via Surefire or Gradle) ---------------------------------------------

_JAVA_HEAD = re.compile(
    r"^(\s+)((?:public\s+)?(?:final\s+)?)void\s+([a-zA-Z_]\w*)\s*\(\s*\)\s*(throws\s+[\w.,\s]+)?\{\s*$"
)


class JavaCanaries(BlockLanguage):
    """``@Test public void name()`` methods in the test class, beside a neighbour (a
    method must be inside its class: no appended canary). The check is the neighbour's
    ``assertEquals`` where it calls one, else a thrown ``AssertionError``."""

    name: ClassVar[str] = "java"
    selecting: ClassVar[tuple[str, ...]] = (
        "-Dtest",
        "-Dit.test",
        "-Dgroups",
        "-DexcludedGroups",
        "-Dsurefire.skipAfterFailureCount",
        "--tests",
    )
    required: ClassVar[tuple[str, ...]] = (
        "-Dmaven.test.failure.ignore",
        "-Dmaven.test.failure.ignore=true",
        "--continue",
    )

    def test_file(self, path: str) -> bool:
        return path.endswith(".java")

    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        for index, line in enumerate(post):
            head = _JAVA_HEAD.match(line)
            if head is None:
                continue
            indent = head.group(1)
            first = _attributes_start(post, index, indent, ("@",))
            annotations = [post[i].strip() for i in range(first, index)]
            if annotations != ["@Test"]:
                continue  # parameters, timeouts, expected exceptions: not a plain test
            end = _brace_end(post, index, reaches_end)
            if end is None:
                continue
            yield TestBlock(
                path, head.group(3), start + first, start + end - 1, post[first:end], indent
            )

    def write(self, expect, neighbour, name_words, rng, shown, path):
        if neighbour is None:
            return None
        head = _JAVA_HEAD.match(neighbour.lines[1])
        modifiers = head.group(2) if head else "public "
        first = name_words[0]
        name = (
            ("test" + camel(name_words))
            if neighbour.name.startswith("test")
            else (first + camel(name_words[1:]))
        )
        values, total = _numbers(rng, expect)
        local = rng.choice(("values", "items", "input", "numbers"))
        sum_local = rng.choice(("sum", "total", "actual"))
        inner, i = neighbour.inner, neighbour.indent
        step = inner[len(i) :]
        body = [
            f"int[] {local} = {{{', '.join(map(str, values))}}};",
            f"int {sum_local} = 0;",
            f"for (int v : {local}) {{",
            f"{step}{sum_local} += v;",
            "}",
        ]
        text = neighbour.text
        if re.search(r"(?<![.\w])assertEquals\(", text):
            body.append(f"assertEquals({total}, {sum_local});")
        elif "Assert.assertEquals(" in text or "Assertions.assertEquals(" in text:
            owner = "Assert" if "Assert.assertEquals(" in text else "Assertions"
            body.append(f"{owner}.assertEquals({total}, {sum_local});")
        else:
            body += [
                f"if ({sum_local} != {total}) {{",
                f'{step}throw new AssertionError("expected {total}, got " + {sum_local});',
                "}",
            ]
        lines = "".join(f"{inner}{b}\n" for b in body)
        source = f"{i}@Test\n{i}{modifiers}void {name}() {{\n{lines}{i}}}\n"
        cls = path.rsplit("/", 1)[-1].removesuffix(".java")
        return Written(name=name, source=source, style="junit_method", test_class=cls)

    def names(self, name: str, key: str) -> bool:
        method = key.rsplit("#", 1)[-1].split("(", 1)[0].split("[", 1)[0]
        return method == name


# --- PHP (PHPUnit) ----------------------------------------------------------------------------

_PHP_HEAD = re.compile(
    r"^(\s+)((?:public\s+)?)function\s+(test\w*)\s*\(\s*\)\s*(:\s*void\s*)?(\{)?\s*$"
)


def testdox(method: str) -> str:
    """PHPUnit's testdox name of a method of letters (``testAddsValues`` -> ``Adds
    values``)."""
    words = re.findall(r"[A-Z][a-z]*|[a-z]+", method.removeprefix("test"))
    text = " ".join(w.lower() for w in words)
    return text[:1].upper() + text[1:]


class PhpCanaries(BlockLanguage):
    """``public function testXxx(): void`` methods of the test class, beside a neighbour
    (no appended canary: a method must be inside its class), checked with the
    neighbour's ``$this->assertSame`` or ``self::assertSame``."""

    name: ClassVar[str] = "php"
    selecting: ClassVar[tuple[str, ...]] = (
        "--filter",
        "--group",
        "--exclude-group",
        "--testsuite",
        "--stop-on-failure",
        "--stop-on-error",
        "--stop-on-defect",
        "--testdox-text",
    )

    def test_file(self, path: str) -> bool:
        return path.endswith("Test.php")

    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        for index, line in enumerate(post):
            head = _PHP_HEAD.match(line)
            if head is None:
                continue
            indent = head.group(1)
            first = _attributes_start(post, index, indent, ("#[", "/**", "*", "*/"))
            if first != index:
                continue  # attributes and docblocks (data providers, depends): not plain
            end = _brace_end(post, index, reaches_end, line_comment="//")
            if end is None:
                continue
            yield TestBlock(
                path, head.group(3), start + first, start + end - 1, post[first:end], indent
            )

    def write(self, expect, neighbour, name_words, rng, shown, path):
        if neighbour is None:
            return None
        head = _PHP_HEAD.match(neighbour.lines[0])
        if head is None:
            return None
        i, inner = neighbour.indent, neighbour.inner
        name = "test" + camel(name_words)
        values, total = _numbers(rng, expect)
        local = rng.choice(("values", "items", "input", "numbers"))
        owner = "self::" if "self::assert" in neighbour.text else "$this->"
        body = [
            f"${local} = [{', '.join(map(str, values))}];",
            f"{owner}assertSame({total}, {_sum_expression('php', local)});",
        ]
        lines = "".join(f"{inner}{b}\n" for b in body)
        void = ": void" if head.group(4) else ""
        brace = " {\n" if head.group(5) else f"\n{i}{{\n"
        source = f"{i}{head.group(2)}function {name}(){void}{brace}{lines}{i}}}\n"
        cls = path.rsplit("/", 1)[-1].removesuffix(".php")
        return Written(name=name, source=source, style="phpunit_method", test_class=cls)

    def title_of(self, written: Written, parser: str) -> str | None:
        # testdox names a method by its words; JUnit XML by its name.
        return testdox(written.name) if parser == "phpunit" else None

    def names(self, name: str, key: str) -> bool:
        if key.rsplit("#", 1)[-1].split(" ", 1)[0] == name:
            return True
        return key.endswith(f" > {testdox(name)}")


# --- Ruby (RSpec, minitest) ------------------------------------------------------------------

_RUBY_IT = re.compile(r"""^(\s*)(it|specify|example)\s*\(?\s*(['"])([^'"#\\]*)\3\s*\)?\s+do\s*$""")
_RUBY_DEF = re.compile(r"^(\s*)def\s+(test_\w+)\s*$")
_RUBY_CLASS = re.compile(r"^class\s+\w+\s*<\s*((?:[A-Z]\w*::)*[A-Z]\w*)\s*$", re.M)


class RubyCanaries(BlockLanguage):
    """RSpec ``it`` blocks (in a ``_spec.rb`` file: beside a neighbour in its group, or
    appended as an ``RSpec.describe`` group of their own) and minitest ``def test_``
    methods (beside a neighbour, or appended as a class of the superclass the hunks show
    the file's tests use)."""

    name: ClassVar[str] = "ruby"
    selecting: ClassVar[tuple[str, ...]] = (
        "-e",
        "--example",
        "-E",
        "--example-matches",
        "-t",
        "--tag",
        "--fail-fast",
        "--only-failures",
        "--next-failure",
        "-n",
        "--name",
        "--bail",
    )

    def selects(self, command: str) -> bool:
        # ``spec/a_spec.rb:12`` runs one example of the file.
        return super().selects(command) or bool(re.search(r"\.rb:\d", command))

    def test_file(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return name.endswith(("_spec.rb", "_test.rb")) or (
            name.startswith("test_") and name.endswith(".rb")
        )

    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        for index, line in enumerate(post):
            head = _RUBY_IT.match(line) or _RUBY_DEF.match(line)
            if head is None:
                continue
            indent = head.group(1)
            name = head.group(4) if head.re is _RUBY_IT else head.group(2)
            end = None
            for later in range(index + 1, len(post)):
                text = post[later]
                if text.strip() and len(_indent(text)) <= len(indent):
                    end = later + 1 if text.strip() == "end" and _indent(text) == indent else None
                    break
            if end is None:
                continue
            yield TestBlock(path, name, start + index, start + end - 1, post[index:end], indent)

    def write(self, expect, neighbour, name_words, rng, shown, path):
        values, total = _numbers(rng, expect)
        local = rng.choice(("values", "items", "input", "numbers"))
        listed = ", ".join(map(str, values))
        spec = path.endswith("_spec.rb")
        if neighbour is None:
            if spec:
                group = " ".join(
                    w.capitalize() if not i else w for i, w in enumerate(name_words[:2])
                )
                title = " ".join(name_words)
                source = (
                    f'RSpec.describe "{group}" do\n  it "{title}" do\n    {local} = [{listed}]\n'
                    f"    expect({local}.sum).to eq({total})\n  end\nend\n"
                )
                return Written(name=title, source=source, style="rspec_it", title=title)
            base = _RUBY_CLASS.search(shown)
            if base is None:
                return None
            cls = "Test" + camel(name_words[:2])
            name = "test_" + "_".join(name_words)
            source = (
                f"class {cls} < {base.group(1)}\n  def {name}\n    {local} = [{listed}]\n"
                f"    assert_equal {total}, {local}.sum\n  end\nend\n"
            )
            return Written(name=name, source=source, style="minitest_method", test_class=cls)
        i, inner = neighbour.indent, neighbour.inner
        if _RUBY_IT.match(neighbour.lines[0]):
            quote = _RUBY_IT.match(neighbour.lines[0]).group(3)  # type: ignore[union-attr]
            keyword = _RUBY_IT.match(neighbour.lines[0]).group(2)  # type: ignore[union-attr]
            title = " ".join(name_words)
            if "expect(" in neighbour.text or spec:
                check = f"expect({local}.sum).to eq({total})"
            else:
                check = f"assert_equal {total}, {local}.sum"
            source = (
                f"{i}{keyword} {quote}{title}{quote} do\n{inner}{local} = [{listed}]\n"
                f"{inner}{check}\n{i}end\n"
            )
            return Written(name=title, source=source, style="rspec_it", title=title)
        name = "test_" + "_".join(name_words)
        source = (
            f"{i}def {name}\n{inner}{local} = [{listed}]\n{inner}assert_equal {total}, "
            f"{local}.sum\n{i}end\n"
        )
        return Written(name=name, source=source, style="minitest_method")

    def names(self, name: str, key: str) -> bool:
        if name.startswith("test_"):
            return super().names(name, key)
        return _titled(name, key)


# --- JavaScript and TypeScript (mocha, jest, vitest) ------------------------------------------

_JS_TEST = re.compile(
    r"""^(\s*)(it|test)\(\s*(['"])([^'"`\\]*)\3\s*,\s*(async\s+)?(\(\s*\)\s*=>|function\s*\(\s*\))\s*\{\s*$"""
)
_JS_TOP = re.compile(r"^(it|test)\(", re.M)


def _titled(title: str, key: str) -> bool:
    """A key names a test by a title: the key is the title, or ends with it after a
    separator (a group's words, `` > ``, ``::``)."""
    return key == title or any(key.endswith(f"{sep}{title}") for sep in (" ", ">", ":"))


class JavaScriptCanaries(BlockLanguage):
    """``it(...)`` / ``test(...)`` calls: beside a neighbour (inside its ``describe``,
    written with its function, quotes and kind of check: jest's ``expect().toBe``, chai's
    ``expect().to.equal``, ``assert.strictEqual``, else a thrown ``Error``), or appended
    at the top level of a file whose hunks call ``it`` or ``test`` there."""

    name: ClassVar[str] = "javascript"
    selecting: ClassVar[tuple[str, ...]] = (
        "-t",
        "--testNamePattern",
        "--grep",
        "-g",
        "--fgrep",
        "-f",
        "--bail",
        "-b",
        "--onlyChanged",
        "-o",
        "--testPathPattern",
        "--testPathIgnorePatterns",
        "--shard",
        "--changed",
        "--related",
        "--findRelatedTests",
    )

    def test_file(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return bool(
            re.search(r"\.(test|spec)\.[cm]?[jt]sx?$", name)
            or (
                re.search(r"\.[cm]?[jt]sx?$", name)
                and re.search(r"(^|/)(test|tests|__tests__)/", path)
            )
        )

    def tests(
        self, path: str, post: list[str], start: int, reaches_end: bool
    ) -> Iterator[TestBlock]:
        for index, line in enumerate(post):
            head = _JS_TEST.match(line)
            if head is None:
                continue
            end = _brace_end(post, index, reaches_end)
            if end is None or not re.match(r"^\s*\}\s*\)\s*;?\s*$", post[end - 1]):
                continue
            yield TestBlock(
                path, head.group(4), start + index, start + end - 1, post[index:end], head.group(1)
            )

    def write(self, expect, neighbour, name_words, rng, shown, path):
        values, total = _numbers(rng, expect)
        local = rng.choice(("values", "items", "input", "numbers"))
        sum_local = rng.choice(("sum", "total", "actual"))
        title = " ".join(name_words)
        if neighbour is None:
            top = _JS_TOP.findall(shown)  # a test called at the top level: in scope there
            if not top:
                return None
            keyword, quote, function, i, inner, text, semi = (
                top[0],
                "'",
                "() =>",
                "",
                "  ",
                shown,
                ";",
            )
        else:
            head = _JS_TEST.match(neighbour.lines[0])
            assert head is not None
            keyword, quote = head.group(2), head.group(3)
            function = "function ()" if head.group(6).startswith("function") else "() =>"
            i, inner, text = neighbour.indent, neighbour.inner, neighbour.text
            semi = ";" if neighbour.lines[-1].rstrip().endswith(";") else ""
        if re.search(r"\bexpect\([^)]*\)\.to\.", text):
            check = f"expect({sum_local}).to.equal({total}){semi}"
        elif re.search(r"\bexpect\([^)]*\)\.(toBe|toEqual)\(", text):
            check = f"expect({sum_local}).toBe({total}){semi}"
        elif "assert.strictEqual(" in text or "assert.equal(" in text:
            check = f"assert.strictEqual({sum_local}, {total}){semi}"
        else:
            check = (
                f"if ({sum_local} !== {total}) {{\n{inner}  throw new Error("
                f"'expected {total}, got ' + {sum_local}){semi}\n{inner}}}"
            )
        source = (
            f"{i}{keyword}({quote}{title}{quote}, {function} {{\n"
            f"{inner}const {local} = [{', '.join(map(str, values))}]{semi}\n"
            f"{inner}const {sum_local} = {_sum_expression('javascript', local)}{semi}\n"
            f"{inner}{check}\n{i}}}){semi}\n"
        )
        return Written(name=title, source=source, style=f"js_{keyword}", title=title)

    def names(self, name: str, key: str) -> bool:
        return _titled(name, key)


class JUnitXmlCanaries(CanaryLanguage):
    """JUnit XML reports, which several runners write: Java's canaries where the command
    runs Maven or Gradle, PHPUnit's where it runs ``phpunit`` (its ``--log-junit``
    report), none for any other (ctest, jest-junit)."""

    name: ClassVar[str] = "junit"

    def __init__(self, java: JavaCanaries, php: PhpCanaries) -> None:
        self.java, self.php = java, php

    def _of(self, command: str) -> BlockLanguage | None:
        if re.search(r"(^|[/\s])phpunit(\s|$)", command):
            return self.php
        if re.search(r"(^|[/\s])(mvn|mvnw|gradle|gradlew)(\s|$)", command):
            return self.java
        return None

    def selects(self, command: str) -> bool:
        language = self._of(command)
        return language is None or language.selects(command)

    def draw(
        self,
        spec: TestSpec,
        parser: LogParser,
        sample: Sample,
        rng: random.Random,
        outside: Mapping[str, bytes] | None,
    ) -> list[Canary]:
        language = self._of(spec.eval_script.test_command)
        return [] if language is None else language.draw(spec, parser, sample, rng, outside)


_JAVA, _PHP = JavaCanaries(), PhpCanaries()
LANGUAGES: tuple[CanaryLanguage, ...] = (
    GoCanaries(),
    RustCanaries(),
    _JAVA,
    _PHP,
    RubyCanaries(),
    JavaScriptCanaries(),
    JUnitXmlCanaries(_JAVA, _PHP),
)
