"""Produce the GoogleTest corpus: small C++ test binaries, built against Debian's gtest.

Each case is compiled once (``g++ ... -lgtest -lgtest_main``) and run twice:
``./tests --gtest_color=no 2>&1`` (read by the compatible ``googletest`` parser) and
``./tests --gtest_color=no --gtest_output=xml:report.xml 2>&1; cat report.xml`` (read by
the native ``junit_xml``). Ground truth, for both logs, is GoogleTest's XML report of the
second run, read here with ElementTree: ``<classname>#<name>`` -> FAILED with
``<failure>``, SKIPPED with ``<skipped>`` or ``status="notrun"`` (disabled), else PASSED.

Run ``python -m tests.runners.googletest`` from the repo root to rewrite
tests/corpus/googletest/ (needs ``apt-get install g++ libgtest-dev``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus

RUNNER = "googletest"
COMPAT = ("googletest",)
NATIVE = "junit_xml"

PASSING = """\
#include <gtest/gtest.h>

TEST(Math, Adds) { EXPECT_EQ(2, 1 + 1); }
TEST(Math, Multiplies) { EXPECT_EQ(4, 2 * 2); }
"""

MIXED = """\
#include <gtest/gtest.h>
#include <cstdio>

TEST(Calc, Adds) { EXPECT_EQ(2, 1 + 1); }
TEST(Calc, Fails) { EXPECT_EQ(3, 1 + 1); }
TEST(Calc, Skipped) { GTEST_SKIP() << "no network"; }
TEST(Calc, DISABLED_Later) { EXPECT_EQ(1, 2); }
TEST(Calc, Prints) { std::printf("[       OK ] Invented.Test (0 ms)\\n"); }

class Param : public ::testing::TestWithParam<int> {};
TEST_P(Param, IsOne) { EXPECT_EQ(1, GetParam()); }
INSTANTIATE_TEST_SUITE_P(Values, Param, ::testing::Values(1, 2));

template <typename T> class Typed : public ::testing::Test {};
using Types = ::testing::Types<int, double>;
TYPED_TEST_SUITE(Typed, Types);
TYPED_TEST(Typed, IsIntegral) { EXPECT_TRUE(std::is_integral<TypeParam>::value); }

TEST(Other, Adds) { EXPECT_EQ(1, 1); }
"""

FORGED = """\
#include <gtest/gtest.h>
#include <cstdio>

TEST(Forge, Fails) { EXPECT_EQ(1, 2); }
TEST(Forge, Prints) {
  std::printf("<testsuite name=\\"X\\" tests=\\"1\\"><testcase name=\\"Invented\\" "
              "classname=\\"X\\"/></testsuite>\\n");
}
"""

FORGED_DIFFERENCE = (
    "a test prints a forged report; junit_xml reads it but GoogleTest's own count of "
    "tests that ran does not add up, so the log is unscorable"
)


@dataclass(frozen=True)
class _Case:
    case: str
    source: str
    xml_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    _Case("passing", PASSING),
    _Case("mixed", MIXED),
    _Case("forged", FORGED, {NATIVE: FORGED_DIFFERENCE}),
)
CASE_NAMES = [f"{spec.case}_{kind}" for spec in CASES for kind in ("console", "xml")]
XML_COMMAND = "./tests --gtest_color=no --gtest_output=xml:report.xml 2>&1; cat report.xml"


def unavailable() -> str | None:
    if shutil.which("g++") is None:
        return "the live GoogleTest run needs g++"
    if not Path("/usr/include/gtest/gtest.h").exists():
        return "the live GoogleTest run needs libgtest-dev"
    return None


def xml_truth(report: Path) -> dict[str, str]:
    truth: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        status = "PASSED"
        if case.find("failure") is not None:
            status = "FAILED"
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            status = "SKIPPED"
        truth[f"{case.get('classname')}#{case.get('name')}"] = status
    return truth


def _sh(command: str, cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _produce_case(spec: _Case, workdir: Path) -> list[CorpusLog]:
    casedir = workdir / spec.case
    casedir.mkdir(parents=True)
    (casedir / "tests.cc").write_text(spec.source, encoding="utf-8")
    subprocess.run(
        ["g++", "-std=c++17", "tests.cc", "-lgtest", "-lgtest_main", "-pthread", "-o", "tests"],
        cwd=casedir,
        check=True,
        timeout=300,
    )
    console = _sh("./tests --gtest_color=no", casedir)
    xml = _sh(XML_COMMAND, casedir)
    truth = xml_truth(casedir / "report.xml")
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_console",
            command="./tests --gtest_color=no 2>&1",
            text=console,
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_xml",
            command=XML_COMMAND,
            text=xml,
            truth=truth,
            native=NATIVE,
            known_differences=dict(spec.xml_differences),
        ),
    ]


def produce(workdir: Path) -> list[CorpusLog]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        produced = list(pool.map(lambda spec: _produce_case(spec, workdir), CASES))
    return [log for logs in produced for log in logs]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
