"""Canary tests: the effect of tampering, not its pattern.

A patch that rewrites how the test runner reports (a replaced ``runtest``, a shadowed
``unittest``, no-op test methods, a forged summary and an early exit) changes what the
runner says of *every* test. So each trial's run holds a few tests whose true outcome
the harness knows, drawn per trial, in the styles the instance's runner collects
(module functions, methods of a class). Some must fail, some must pass. A must-fail
canary reported passing, or a canary the log does not report as expected, makes the
trial invalid (``runner_tampered``), whatever the status map says of the instance's
tests.

Each is shaped like one of the run's own tests (``evalrepro.grade.twins.make_shaped``):
placed beside it (a must-fail canary right above it, a must-pass one right after it),
with its decorators, its calls and a name in its file's convention, so that neither its
place, its shape nor what it calls tells it apart.
Where no test of the run can be shaped after, the canaries are appended to the test
patch's file that holds most FAIL_TO_PASS tests instead (one shape, calling nothing).
Twins (``evalrepro.grade.twins``) are drawn beside them.

What it does not catch: code that tells the canaries from the instance's tests (it can
read the test file) and forges only the instance's named tests. That forgery is
targeted, not wholesale; see docs/threat-model.md.

Canaries are drawn only where they cannot change an honest verdict: a runner whose
parser declares the styles it collects (``LogParser.canary_styles``), a Python test file
the test command runs as a whole, and a command that does not select tests or stop at a
first failure (a must-fail canary would stop it, or be deselected).

The above is Python's (:class:`PythonCanaries`). Each language is one
:class:`~evalrepro.grade.canary_languages.CanaryLanguage` in :data:`_LANGUAGES`, keyed
by the parser's ``canary_language``: Go, Rust, Java, PHP, Ruby and JavaScript write
their canaries in the file's conventions (``evalrepro.grade.canary_languages``).
"""

from __future__ import annotations

import builtins
import keyword
import random
import re
import secrets
import shlex
from collections.abc import Mapping, Sequence
from typing import ClassVar

from evalrepro.grade.canary_languages import LANGUAGES, CanaryLanguage
from evalrepro.grade.parsers import LogParser
from evalrepro.grade.twins import make_canaries
from evalrepro.records.canary import PASSING, Canary, CanaryCheck, TwinPair
from evalrepro.records.testspec import TestSpec
from evalrepro.sample import Sample

#: Files outside the test patch a trial draws canaries in (among those the plan kept).
OUTSIDE_PER_TRIAL = 4
#: Options that select tests, or stop the run at a failure: no canary with them.
_SELECTING = (
    "-x",
    "--exitfirst",
    "--maxfail",
    "-k",
    "-m",
    "--lf",
    "--last-failed",
    "--ff",
    "--failed-first",
    "--sw",
    "--stepwise",
    "--failfast",
    "-f",
    "--tag",
    "--exclude-tag",
    "--deselect",
)
#: Words that read like test names anywhere, for instances with few names of their own.
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
    "none",
    "order",
    "repr",
    "roundtrip",
    "simple",
    "single",
    "small",
    "unicode",
    "values",
    "keys",
)
_WORD = re.compile(r"[a-z][a-z0-9]{2,11}")


class PythonCanaries(CanaryLanguage):
    """Python's runners (pytest, unittest, Django, SymPy): canaries shaped like a
    neighbour with twins beside them (``evalrepro.grade.twins``), in the styles the
    parser declares (``LogParser.canary_styles``), else appended to the test patch's file
    that holds most FAIL_TO_PASS tests."""

    name: ClassVar[str] = "python"
    placement: ClassVar[str] = "shaped"

    def selects(self, command: str) -> bool:
        return _selects_tests(command)

    def draw(
        self,
        spec: TestSpec,
        parser: LogParser,
        sample: Sample,
        rng: random.Random,
        outside: Mapping[str, bytes] | None,
    ) -> list[Canary]:
        if not parser.canary_styles:
            return []
        target = _target_file(spec, sample)
        if target is None:
            return []
        words = _vocabulary([*sample.fail_to_pass, *sample.pass_to_pass])
        # Twins of the run's own tests, and canaries shaped like them, in every test file
        # of the test patch the command runs.
        files = [
            p
            for p in spec.eval_script.test_files
            if _test_module(p) and _runs(p, spec.test_directives)
        ]
        # And in a few of the files the command runs outside the test patch, drawn per
        # trial (a file the trial's tests never name gives no canary: none is kept of it).
        others = sorted(p for p in outside or {} if _test_module(p) and p not in files)
        others = rng.sample(others, min(OUTSIDE_PER_TRIAL, len(others)))
        twins, shaped = make_canaries(
            files,
            sample.test_patch,
            sample.fail_to_pass,
            sample.pass_to_pass,
            parser.canary_styles,
            rng,
            outside={p: (outside or {})[p] for p in others},
        )
        canaries = shaped or _appended(target, parser.canary_styles, words, rng)
        rng.shuffle(canaries)
        return canaries + twins


#: Each language's canaries, by ``LogParser.canary_language``.
_LANGUAGES: dict[str, CanaryLanguage] = {
    language.name: language for language in (PythonCanaries(), *LANGUAGES)
}


def canary_language(name: str | None) -> CanaryLanguage | None:
    """The registered language ``name`` (a parser's ``canary_language``), or None."""
    return _LANGUAGES.get(name or "")


def draw_canaries(
    spec: TestSpec,
    parser: LogParser,
    sample: Sample,
    rng: random.Random | None = None,
    outside: Mapping[str, bytes] | None = None,
) -> list[Canary]:
    """The canaries of one trial, or none where they could change an honest verdict.

    ``outside``: the bytes at the base of test files the command runs outside the test
    patch (``TestSpec.outside_files``); Python's canaries and twins go into a few of them,
    drawn per trial (``OUTSIDE_PER_TRIAL``), as into the test patch's files."""
    language = canary_language(parser.canary_language)
    if not spec.eval_script.protection.canaries or language is None:
        return []
    if language.selects(spec.eval_script.test_command):
        return []
    if parser.fail_only or sample.fail_only:
        # A failures-only log never names a passing test: it cannot show that a runner
        # which ran the file lost a canary.
        return []
    rng = rng or random.SystemRandom(secrets.randbits(64))
    return language.draw(spec, parser, sample, rng, outside)


def _appended(
    target: str, styles: Sequence[str], words: list[str], rng: random.Random
) -> list[Canary]:
    """The canaries appended to one file, where no test of the run is shown whole to
    shape one after: per style, one that must fail and one that must pass."""
    taken: set[str] = set()
    canaries = []
    for style in styles:
        for expect in ("fail", "pass"):
            name = _name(rng, words, taken)
            source, defines = _source(rng, name, style, expect, words, taken)
            canaries.append(
                Canary(
                    name=name,
                    expect=expect,  # type: ignore[arg-type]
                    file=target,
                    style=style,  # type: ignore[arg-type]
                    source=source,
                    defines=defines,
                )
            )
    return canaries


def _selects_tests(command: str) -> bool:
    try:
        tokens = shlex.split(command)
    except ValueError:
        return True
    for index, token in enumerate(tokens):
        before = tokens[index - 1].rsplit("/", 1)[-1] if index else ""
        if token == "-m" and before.startswith("python"):
            continue  # python -m RUNNER, not pytest's marker selection
        if any(token == option or token.startswith(f"{option}=") for option in _SELECTING):
            return True
    return False


def _runs(path: str, directives: Sequence[str]) -> bool:
    """Whether the test command runs the file ``path`` whole."""
    if not directives:
        return True
    dotted = path.removesuffix(".py").replace("/", ".")
    for directive in directives:
        if "::" in directive:
            continue  # one node of a file: the rest of it (and a canary) is not run
        d = directive.rstrip("/")
        if path == d or path.startswith(f"{d}/"):
            return True
        if dotted == d or dotted.endswith(f".{d}"):
            return True
    return False


def _test_module(path: str) -> bool:
    """A file every Python runner collects tests from by its name (not a conftest, an
    ``__init__``, a models or helpers module that a directive's folder also holds)."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (
        name.startswith("test") or name.endswith(("_test.py", "_tests.py")) or name == "tests.py"
    )


def _target_file(spec: TestSpec, sample: Sample) -> str | None:
    """The test patch's Python test file the command runs, holding most FAIL_TO_PASS tests
    (a skip of the whole file then skips the instance's tests too)."""
    candidates = [
        path
        for path in spec.eval_script.test_files
        if _test_module(path) and _runs(path, spec.test_directives)
    ]
    if not candidates:
        return None

    def named(path: str) -> int:
        dotted = path.removesuffix(".py").replace("/", ".")
        return sum(1 for test in sample.fail_to_pass if path in test or dotted in test)

    return max(candidates, key=lambda path: (named(path), -candidates.index(path)))


def _vocabulary(names: Sequence[str]) -> list[str]:
    words: dict[str, None] = {}
    for name in names:
        for word in _WORD.findall(name.rsplit("::", 1)[-1].lower()):
            # Not a keyword or a built-in: a word is also a canary's local name.
            if word not in {"test", "tests", "self", "py"} and not _reserved(word):
                words[word] = None
    found = list(words)
    return found + [w for w in _COMMON if w not in words] if len(found) < 8 else found


def _reserved(word: str) -> bool:
    return keyword.iskeyword(word) or keyword.issoftkeyword(word) or hasattr(builtins, word)


def _name(rng: random.Random, words: list[str], taken: set[str]) -> str:
    while True:
        name = "test_" + "_".join(rng.sample(words, 2)) + "_" + rng.choice(_COMMON)
        if name not in taken:
            taken.add(name)
            return name


def _source(
    rng: random.Random, name: str, style: str, expect: str, words: list[str], taken: set[str]
) -> tuple[str, list[str]]:
    """The canary's code, and the top-level names it defines (each new to the trial's
    canaries; the supervisor checks them against the file)."""
    values = [rng.randrange(1, 1000) for _ in range(rng.randrange(2, 5))]
    total = sum(values) + (0 if expect == "pass" else rng.randrange(1, 9))
    local = rng.choice(words) + "_values"
    if style == "function":
        body = f"    {local} = {values!r}\n    assert sum({local}) == {total}\n"
        return f"\n\ndef {name}():\n{body}", [name]
    module = f"_{rng.choice(words)}_case"
    while True:
        cls = "Test" + "".join(w.capitalize() for w in rng.sample(words, 2))
        if cls not in taken:
            taken.add(cls)
            break
    source = (
        f"\n\nimport unittest as {module}\n\n\n"
        f"class {cls}({module}.TestCase):\n"
        f"    def {name}(self):\n"
        f"        {local} = {values!r}\n"
        f"        self.assertEqual(sum({local}), {total})\n"
    )
    return source, [module, cls, name]


def check_canaries(
    canaries: Sequence[Canary],
    placed: Sequence[str],
    statuses: Mapping[str, str],
    instance_tests: Sequence[str],
) -> tuple[list[CanaryCheck], dict[str, str]]:
    """What the log reported of each placed canary, and the status map without them (a
    canary is the harness's, not the instance's: it is not compared across runs).

    ``instance_tests``: the instance's FAIL_TO_PASS and PASS_TO_PASS, which stand for the
    canary's file when no status-map key names a file (SymPy's runner keys by name)."""
    remaining = dict(statuses)
    found: dict[str, dict[str, str]] = {}
    for canary in canaries:
        if canary.name in placed:
            found[canary.name] = {key: s for key, s in statuses.items() if _names(canary, key)}
            for key in found[canary.name]:
                remaining.pop(key, None)
    reported_styles = {c.style for c in canaries if found.get(c.name) and c.twin_of is None}
    checks = []
    for canary in canaries:
        if canary.name not in placed:
            continue
        reported = set(found[canary.name].values())
        pairs = _pairs(canary, found[canary.name], remaining) if canary.twin_of else []
        checks.append(
            CanaryCheck(
                name=canary.name,
                expect=canary.expect,
                reported="absent"
                if not reported
                else reported.pop()
                if len(reported) == 1
                else _parametrised(canary, found[canary.name])
                if canary.twin_of is None
                else "mixed",
                file_passing=_file_passing(canary.file, remaining, instance_tests),
                style_collected=not reported_styles or canary.style in reported_styles,
                twin_of=canary.twin_of,
                pairs=pairs,
            )
        )
    return checks, remaining


def _names(canary: Canary, key: str) -> bool:
    """A status-map key names the canary: its name as a word of the key, or (a runner that
    names tests by a title) the key is its title or ends with it after a separator."""
    if canary.title is not None:
        title = canary.title
        return key == title or any(key.endswith(f"{sep}{title}") for sep in (" ", ">", ":"))
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(canary.name)}(?![A-Za-z0-9_])", key) is not None


def _parametrised(canary: Canary, reported: Mapping[str, str]) -> str:
    """One status for a canary reported under several keys: "conflicting" (a forged
    duplicate) unless each key is a parameter set of it (a canary shaped like a
    parametrised neighbour), whose sets may end apart honestly (one errors, one fails).
    Then a passing set is what counts (a must-fail canary passed, a must-pass one ran),
    else a failed one, else what the sets were."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(canary.name)}\[")
    if not all(pattern.search(key) for key in reported):
        return "conflicting"
    statuses = set(reported.values())
    for wanted in (*sorted(statuses & PASSING), "FAILED", "ERROR"):
        if wanted in statuses:
            return wanted
    return sorted(statuses)[0]


def _pairs(
    canary: Canary, reported: Mapping[str, str], statuses: Mapping[str, str]
) -> list[TwinPair]:
    """Each reported instance of a twin's original (its key names the original where the
    twin's key names the twin: a parametrised test's parameter sets pair up one by one)
    beside the twin's status there ("absent": the log does not report it)."""
    original = canary.twin_of or ""
    parts = canary.file.removesuffix(".py").split("/")
    forms = [canary.file] + [".".join(parts[i:]) for i in range(len(parts) - 1)]
    keys = [key for key in statuses if _counterpart(key, original, canary.name) != key]
    in_file = [key for key in keys if any(form in key for form in forms)]
    return [
        TwinPair(
            test=key,
            original=statuses[key],
            twin=reported.get(_counterpart(key, original, canary.name), "absent"),
        )
        for key in in_file or keys
    ]


def _counterpart(key: str, original: str, twin: str) -> str:
    """The key with the test's name in it (not a path's, a module's, a parameter's part)
    made the twin's: ``f.py::C::test_x[p]``, ``m.C.test_x``, ``test_x (m.C.test_x)``."""
    head, bracket, parameters = key.partition("[")
    head = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(original)}(?![A-Za-z0-9_./])", twin, head)
    return head + bracket + parameters


def _file_passing(path: str, statuses: Mapping[str, str], instance_tests: Sequence[str]) -> bool:
    parts = path.removesuffix(".py").split("/")
    # The file as a key names it: its path (pytest), its module, or the tail of the
    # module that a runner started inside the tests folder sees (Django, unittest).
    forms = [path] + [".".join(parts[i:]) for i in range(len(parts) - 1) if len(parts) - i > 1]
    named = [key for key in statuses if any(form in key for form in forms)]
    pool = named or [key for key in statuses if key in set(instance_tests)]
    return any(statuses[key] in PASSING for key in pool)
