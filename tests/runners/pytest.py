"""Real pytest runs for the corpus: each case writes test files and runs pytest on them.

Every run also records pytest's own ground truth, two ways:

* ``--junitxml``: pytest's JUnit XML, compared with a parser's map through pytest's own
  node id -> (classname, name) rule (:func:`junit_key`); JUnit has no XPASS (a
  non-strict xpass is a plain pass), no node ids, and one testcase per test (a pytest 9
  subtest's skip shows as its test's), so it is the second check; the XML is committed
  beside each log as ``<case>.junit.xml``;
* a ten-line plugin (``-p pytest_truth``, written into the work dir) that dumps every
  report's ``nodeid``, ``when``, ``outcome`` and ``wasxfail`` from
  ``pytest_runtest_logreport`` / ``pytest_collectreport``; :func:`truth_statuses` turns
  them into ``{nodeid: status}``, the ``truth`` of each corpus log.

Runs are made reproducible: each case runs in its own directory with relative paths,
with plugin autoloading off (xdist is loaded with ``-p xdist.plugin`` where needed),
``COLUMNS=80`` and no ``CI`` variable (which would make pytest print untruncated
messages). The work dir, the interpreter and the Python prefixes are replaced in the
log and the XML by ``/testbed``, ``/usr/local/bin/python`` and ``/usr/local`` (and the
XML's hostname by ``host``); ``pytest`` >= 9 is needed (subtests, ``--no-fold-skipped``).

Run ``python -m tests.runners.pytest`` from the repo root to rewrite
``tests/corpus/pytest/``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CORPUS_DIR, CorpusLog, write_corpus

RUNNER = "pytest"
COMPAT = ("pytest", "pytest_options", "pytest_v2", "matplotlib", "seaborn")
NATIVE = "pytest_full"
#: SWE-bench's usual pytest command (its MAP_REPO_VERSION_TO_SPECS test_cmd).
SWEBENCH_ARGS = ("--no-header", "-rA", "--tb=no", "-p", "no:cacheprovider")
VERBOSE_ARGS = ("-rA", "-v", "-p", "no:cacheprovider")

TRUTH_PLUGIN = '''\
"""Ground truth for evalrepro's corpus: every test report pytest makes, as JSON."""
import json

_REPORTS = []


def pytest_runtest_logreport(report):
    _REPORTS.append([report.nodeid, report.when, report.outcome, hasattr(report, "wasxfail")])


def pytest_collectreport(report):
    if report.failed:
        _REPORTS.append([report.nodeid, "collect", "failed", False])


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):  # xdist workers report to the controller
        with open("truth_reports.json", "w", encoding="utf-8") as out:
            json.dump(_REPORTS, out)
'''
TRUTH_ARGS = ("-p", "pytest_truth", "--junitxml=junit.xml")


@dataclass(frozen=True)
class Case:
    name: str
    #: Test files, relative path -> source (dedented).
    files: dict[str, str]
    args: tuple[str, ...]
    known_differences: dict[str, str] = field(default_factory=dict)


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip()


_PASS_FAIL = _source(
    """
    def add(a, b):
        return a + b


    def test_add():
        assert add(1, 2) == 3


    def test_add_negative():
        assert add(-1, -2) == -3


    def test_message_with_dash():
        assert add(2, 2) == 5, "2 + 2 - expected 5"


    def test_multiline_message():
        raise AssertionError("first line\\nsecond line - with a dash")


    def test_key_error():
        {}["missing"]


    def test_strings():
        assert "a - b" == "a-b"
    """
)

_FIXTURES = _source(
    """
    import pytest


    @pytest.fixture
    def database():
        raise RuntimeError("database - unavailable")


    @pytest.fixture
    def noisy_teardown():
        yield
        raise RuntimeError("cleanup failed")


    def test_setup_error(database):
        pass


    def test_teardown_error_after_pass(noisy_teardown):
        pass


    def test_teardown_error_after_failure(noisy_teardown):
        assert False


    class TestBrokenClassFixture:
        @pytest.fixture(scope="class")
        def resource(self):
            raise ValueError("class resource")

        def test_one(self, resource):
            pass

        def test_two(self, resource):
            pass


    def test_ok():
        pass
    """
)

_OK = _source(
    """
    def test_one():
        pass


    def test_two():
        assert 1 + 1 == 2
    """
)

_BROKEN = _source(
    """
    undefined_name


    def test_never_collected():
        pass
    """
)

_MARKS = _source(
    """
    import sys

    import pytest


    @pytest.mark.skip(reason="not on this platform")
    def test_skip_marker():
        pass


    @pytest.mark.skipif(sys.version_info > (3,), reason="python 3")
    def test_skipif():
        pass


    def test_skip_inside():
        pytest.skip("decided at run time")


    @pytest.mark.xfail(reason="known bug - #123")
    def test_xfail():
        assert 0


    @pytest.mark.xfail(reason="should fail", strict=True)
    def test_xfail_strict():
        assert 0


    @pytest.mark.xfail(reason="fixed already?")
    def test_xpass():
        pass


    @pytest.mark.xfail(reason="must fail", strict=True)
    def test_xpass_strict():
        pass


    @pytest.mark.xfail(run=False, reason="would hang")
    def test_xfail_not_run():
        pass


    def test_xfail_inside():
        pytest.xfail("imperative")


    @pytest.mark.parametrize(
        "n",
        [
            1,
            pytest.param(2, marks=pytest.mark.xfail(reason="two")),
            pytest.param(3, marks=pytest.mark.skip(reason="three")),
        ],
    )
    def test_param_marks(n):
        assert n != 2


    def test_pass():
        pass
    """
)

_SKIPS = _source(
    """
    import pytest


    @pytest.mark.skip(reason="not on this platform")
    def test_skip_marker():
        pass


    def test_skip_inside():
        pytest.skip("decided at run time")


    @pytest.mark.parametrize("mode", ["fast mode", "slow mode"])
    def test_modes(mode):
        if mode == "slow mode":
            pytest.skip("too slow")


    def test_pass():
        pass
    """
)

_IDS = _source(
    """
    import pytest

    IDS = [
        "a b",
        "a - b",
        "x[1]",
        "é",
        "日本",
        "tab\\there",
        "line\\nbreak",
        "10m",
        "MouseButton.LEFT",
        "/usr/lib/libfoo.so",
        "a::b",
        "end - ",
    ]
    FAILING = {"a - b", "x[1]", "é"}


    @pytest.mark.parametrize("value", IDS)
    def test_ids(value):
        assert value not in FAILING


    @pytest.mark.parametrize("word", ["alpha beta", "alpha gamma"])
    def test_collapse(word):
        assert word != "alpha beta"


    @pytest.mark.parametrize("x", [1, 2], ids=["first case", "second case"])
    def test_explicit_ids(x):
        pass


    def test_café():
        pass


    class TestÜnicode:
        def test_naïve(self):
            assert False
    """
)

_CLASSES = _source(
    """
    import unittest

    import pytest


    class TestCalculator:
        def test_add(self):
            assert 1 + 1 == 2

        def test_fail(self):
            assert 1 + 1 == 3

        class TestNested:
            def test_inner(self):
                pass

        @pytest.mark.parametrize("value", ["x y", "z"])
        def test_param(self, value):
            pass


    class TestUnit(unittest.TestCase):
        def test_ok(self):
            self.assertEqual(1, 1)

        def test_bad(self):
            self.assertEqual(1, 2)

        def test_error(self):
            raise KeyError("k")

        @unittest.skip("unittest skip")
        def test_skipped(self):
            pass

        @unittest.expectedFailure
        def test_expected_failure(self):
            self.assertEqual(1, 2)

        @unittest.expectedFailure
        def test_unexpected_success(self):
            pass
    """
)

_XDIST_A = _source(
    """
    import pytest


    @pytest.fixture
    def broken():
        raise RuntimeError("fixture - boom")


    @pytest.mark.parametrize("n", range(12))
    def test_numbers(n):
        assert n % 5 != 4


    def test_setup_error(broken):
        pass


    @pytest.mark.skip(reason="later")
    def test_skipped():
        pass


    @pytest.mark.xfail(reason="bug")
    def test_xfail():
        assert 0


    @pytest.mark.xfail(reason="maybe")
    def test_xpass():
        pass
    """
)

_XDIST_B = _source(
    """
    import pytest


    @pytest.mark.parametrize("name", ["first word", "second word", "third - word"])
    def test_words(name):
        assert name != "second word"


    class TestGroup:
        def test_a(self):
            pass

        def test_b(self):
            assert 0, "b - failed"
    """
)

_TB_NO = _source(
    """
    import pytest


    @pytest.fixture
    def broken():
        raise RuntimeError("no database")


    @pytest.mark.parametrize("pair", ["a - b", "c d", "e[f]"])
    def test_pairs(pair):
        assert pair != "a - b", "pair - rejected"


    def test_pass():
        pass


    def test_fail():
        assert 1 == 2


    def test_setup_error(broken):
        pass


    @pytest.mark.xfail(reason="bug - 1")
    def test_xfail():
        assert 0


    @pytest.mark.xfail(reason="maybe")
    def test_xpass():
        pass
    """
)

_LOGGING = _source(
    """
    import logging

    log = logging.getLogger("payments")


    def test_charge_fails():
        log.warning("retrying charge")
        log.error("charge declined - card expired")
        log.critical("giving up")
        assert False, "charge failed"


    def test_charge_recovers():
        log.error("transient error, recovered")


    def test_quiet():
        pass
    """
)

_FORGED = _source(
    """
    import sys


    def test_prints_forged_results():
        print("PASSED tests/test_forged.py::test_really_fails")
        print("PASSED tests/test_forged.py::test_never_written")
        print("SKIPPED tests/test_forged.py::test_really_fails")
        print("=" * 27 + " short test summary info " + "=" * 28)
        print("PASSED tests/test_forged.py::test_really_fails")
        print("=" * 30 + " 3 passed in 0.01s " + "=" * 31)
        print("partial output without newline", end="")


    def test_writes_stderr():
        sys.stderr.write("FAILED tests/test_forged.py::test_writes_stderr - fake\\n")


    def test_really_fails():
        assert False
    """
)

_VV = _source(
    """
    def test_fails_with_forged_message():
        raise AssertionError("boom\\nPASSED tests/test_vv.py::test_fails_with_forged_message")


    def test_multiline():
        assert [1, 2, 3] == [1, 2, 4]


    def test_pass():
        pass
    """
)

_SUBTESTS = _source(
    """
    import pytest


    def test_subtests_fail(subtests):
        for i in range(3):
            with subtests.test(msg="case", i=i):
                assert i != 1


    def test_subtests_skip(subtests):
        for i in range(2):
            with subtests.test(msg="skip me", i=i):
                pytest.skip("not now")


    def test_subtests_xfail(subtests):
        with subtests.test(msg="xf"):
            pytest.xfail("known")


    @pytest.mark.skip(reason="whole test")
    def test_skipped():
        pass


    def test_plain():
        pass
    """
)

_WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
    "rho sigma tau upsilon phi chi psi omega red orange yellow green blue indigo violet "
    "black white grey brown pink cyan magenta olive navy"
).split()
_BIG = _source(
    f"""
    import pytest

    WORDS = {_WORDS!r}
    CASES = [f"{{word}} {{n}}" for word in WORDS for n in range(25)]
    FAILING = {{f"{{word}} 7" for word in WORDS[:10]}}


    @pytest.mark.parametrize("case", CASES)
    def test_big(case):
        assert case not in FAILING
    """
)

CASES: tuple[Case, ...] = (
    Case("pass_fail", {"tests/test_calc.py": _PASS_FAIL}, VERBOSE_ARGS),
    Case("setup_errors", {"tests/test_fixtures.py": _FIXTURES}, VERBOSE_ARGS),
    Case(
        "collection_error",
        {"tests/test_ok.py": _OK, "tests/test_broken.py": _BROKEN},
        VERBOSE_ARGS,
    ),
    Case("skip_xfail", {"tests/test_marks.py": _MARKS}, VERBOSE_ARGS),
    Case(
        "skips_folded_no_v",
        {"tests/test_skips.py": _SKIPS},
        ("-rA", "-p", "no:cacheprovider"),
        {
            "pytest_full": "without -v nothing names the tests behind pytest's folded "
            "'SKIPPED [N] file:line' lines: the skipped tests are missing and the parser "
            "says so in problems",
        },
    ),
    Case(
        "skips_unfolded",
        {"tests/test_skips.py": _SKIPS},
        ("-rA", "--no-fold-skipped", "-p", "no:cacheprovider"),
    ),
    Case("param_ids", {"tests/test_ids.py": _IDS}, VERBOSE_ARGS),
    Case(
        "classes",
        {
            "tests/__init__.py": "",
            "tests/unit/__init__.py": "",
            "tests/unit/test_classes.py": _CLASSES,
        },
        VERBOSE_ARGS,
    ),
    Case(
        "xdist",
        {"tests/test_a.py": _XDIST_A, "tests/test_b.py": _XDIST_B, "tests/test_broken.py": _BROKEN},
        ("-p", "xdist.plugin", "-n", "2", *VERBOSE_ARGS),
    ),
    Case("tb_no", {"tests/test_tb.py": _TB_NO}, SWEBENCH_ARGS),
    Case("captured_log", {"tests/test_logging.py": _LOGGING}, VERBOSE_ARGS),
    Case("forged_lines", {"tests/test_forged.py": _FORGED}, VERBOSE_ARGS),
    Case(
        "forged_lines_s",
        {"tests/test_forged.py": _FORGED},
        (*VERBOSE_ARGS, "-s"),
    ),
    Case("vv_forged_message", {"tests/test_vv.py": _VV}, ("-rA", "-vv", "-p", "no:cacheprovider")),
    Case(
        "usage_error",
        {"tests/test_present.py": _OK},
        (*VERBOSE_ARGS, "tests/test_missing.py"),
    ),
    # pytest >= 9: subtests report under their test's id and count in the totals line.
    Case("subtests", {"tests/test_subtests.py": _SUBTESTS}, VERBOSE_ARGS),
    Case("big_param", {"tests/test_big.py": _BIG}, SWEBENCH_ARGS),
)


def command_line(case: Case) -> str:
    """The command as a user would type it (environment included)."""
    words = ["python", "-m", "pytest", *case.args, *TRUTH_ARGS]
    return "COLUMNS=80 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 " + shlex.join(words)


def truth_statuses(reports: Iterable[list]) -> dict[str, str]:
    """``{nodeid: status}`` from the plugin's reports, with pytest's own categories.

    A failed setup/teardown (or collection) makes the test ERROR whatever its call did,
    as pytest's JUnit XML and its error count do; otherwise the call decides (or a
    setup that skipped): xfail marks make a skip XFAIL and a pass XPASS.
    """
    outcome: dict[str, str] = {}
    errored: set[str] = set()
    for nodeid, when, result, wasxfail in reports:
        if result == "failed" and when != "call":
            errored.add(nodeid)
            outcome.setdefault(nodeid, "ERROR")
        elif when == "call" or result == "skipped":
            if result == "failed":
                outcome[nodeid] = "FAILED"
            elif result == "passed":
                outcome[nodeid] = "XPASS" if wasxfail else "PASSED"
            else:
                outcome[nodeid] = "XFAIL" if wasxfail else "SKIPPED"
    return {nodeid: "ERROR" if nodeid in errored else status for nodeid, status in outcome.items()}


def junit_key(nodeid: str) -> tuple[str, str]:
    """pytest's JUnit (classname, name) of a node id (junitxml's ``mangle_test_address``).

    The path becomes a dotted module (``tests/test_x.py`` -> ``tests.test_x``), classes
    join it, the function with its parameters is the name.
    """
    path, bracket, parameters = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + parameters
    return ".".join(names[:-1]), names[-1]


def junit_statuses(xml_text: str) -> dict[tuple[str, str], str]:
    """``{(classname, name): status}`` from pytest's JUnit XML.

    ``error`` -> ERROR, ``failure`` -> FAILED, ``skipped`` -> XFAIL or SKIPPED by its
    ``type``, nothing -> PASSED (which includes a non-strict XPASS). pytest writes a
    second ``testcase`` for a teardown error after a failure; ERROR wins.
    """
    statuses: dict[tuple[str, str], str] = {}
    for case in ET.fromstring(xml_text).iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag: child for child in case}
        if "error" in tags:
            status = "ERROR"
        elif "failure" in tags:
            status = "FAILED"
        elif "skipped" in tags:
            status = "XFAIL" if tags["skipped"].get("type") == "pytest.xfail" else "SKIPPED"
        else:
            status = "PASSED"
        if statuses.get(key) != "ERROR":
            statuses[key] = status
    return statuses


def runner_env() -> dict[str, str]:
    """The environment a pytest run of the corpus gets (also the eval logs')."""
    env = {
        key: value
        for key, value in os.environ.items()
        # CI/BUILD_NUMBER make pytest print whole multi-line messages; PYTEST_* from an
        # outer pytest (xdist worker ids, addopts) must not leak into the inner run.
        if key not in {"CI", "BUILD_NUMBER", "COLUMNS", "LINES"} and not key.startswith("PYTEST_")
    }
    env.update(COLUMNS="80", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def _anonymise(text: str, case_dir: Path) -> str:
    # Only whole python-tree paths: a bare prefix such as Debian's /usr would also rewrite
    # paths that belong to the tests themselves (a parameter "/usr/lib/libfoo.so").
    replacements = [
        (str(case_dir), "/testbed"),
        (sys.executable, "/usr/local/bin/python"),
        *(
            (f"{prefix}/lib/python", "/usr/local/lib/python")
            for prefix in {sys.prefix, sys.base_prefix}
        ),
        *(
            (f"{prefix}/bin/python", "/usr/local/bin/python")
            for prefix in {sys.prefix, sys.base_prefix}
        ),
    ]
    for old, new in replacements:
        text = text.replace(old, new)
    return text


def run_case(case: Case, workdir: Path) -> CorpusLog:
    case_dir = workdir / case.name
    for relative, source in {**case.files, "pytest_truth.py": TRUTH_PLUGIN}.items():
        path = case_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", *case.args, *TRUTH_ARGS],
        cwd=case_dir,
        env=runner_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    reports = json.loads((case_dir / "truth_reports.json").read_text(encoding="utf-8"))
    junit = case_dir / "junit.xml"
    xml = _anonymise(junit.read_text(encoding="utf-8"), case_dir)
    junit.write_text(re.sub(r'hostname="[^"]*"', 'hostname="host"', xml), encoding="utf-8")
    return CorpusLog(
        runner=RUNNER,
        case=case.name,
        command=command_line(case),
        text=_anonymise(completed.stdout.decode("utf-8"), case_dir),
        truth=truth_statuses(reports),
        compat=COMPAT,
        native=NATIVE,
        known_differences=dict(case.known_differences),
    )


def junit_xml(workdir: Path, case: str) -> str:
    """The JUnit XML that :func:`produce` had pytest write for ``case``."""
    return (workdir / case / "junit.xml").read_text(encoding="utf-8")


def corpus_junit_path(case: str) -> Path:
    return CORPUS_DIR / RUNNER / f"{case}.junit.xml"


def produce(workdir: Path) -> list[CorpusLog]:
    # Each case is its own pytest process; running them side by side keeps this fast.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda case: run_case(case, workdir), CASES))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        logs = produce(workdir)
        folder = write_corpus(RUNNER, logs)
        for log in logs:
            corpus_junit_path(log.case).write_text(junit_xml(workdir, log.case), encoding="utf-8")
    print(f"wrote {len(logs)} pytest logs to {folder}")


if __name__ == "__main__":
    main()
