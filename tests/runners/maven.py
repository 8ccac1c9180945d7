"""Produce the Maven Surefire corpus: a small JUnit 5 project, really run by Maven.

Two shapes of log, from the same sources:

* ``per_test`` (what SWE-bench's Java instances run, read by the compatible ``maven``
  parser): a ``set -x`` script running ``mvn test -Dtest=...`` once per selection;
* ``suite`` and ``forged`` (read by the native ``junit_xml``): ``mvn test`` once, then
  the reports, ``sed '/<properties>/,/<\\/properties>/d' target/surefire-reports/*.xml``
  (the properties block, the JVM's system properties, is machine-specific noise).

Ground truth is Surefire's own JUnit XML reports (after each run of ``per_test``),
read here with ElementTree, independently of the parser: ``<classname>#<name>`` ->
FAILED with a ``<failure>``, ERROR with ``<error>``, SKIPPED with ``<skipped>``, else
PASSED. The project needs no network: ``mvn -o`` with JUnit 5.11 and Surefire 3.2.5
from the local repository (``~/.m2``).

Run ``python -m tests.runners.maven`` from the repo root to rewrite tests/corpus/maven/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus

RUNNER = "maven"
COMPAT = ("maven",)
NATIVE = "junit_xml"
WORKDIR_STAND_IN = "/corpus"
SUREFIRE = "3.2.5"
JUNIT = "5.11.4"
MVN = "mvn -o -B -Dstyle.color=never"

POM = f"""\
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>corpus</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>{JUNIT}</version>
      <scope>test</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-resources-plugin</artifactId>
        <version>3.3.1</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>{SUREFIRE}</version>
      </plugin>
    </plugins>
  </build>
</project>
"""

CALC_TEST = """\
package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CalcTest {
    @Test void adds() { assertEquals(2, 1 + 1); }
    @Test void fails() { assertEquals(3, 1 + 1); }
    @Test void errors() { throw new IllegalStateException("boom"); }
    @Test @Disabled("not today") void disabled() {}
    @Test @DisplayName("name with spaces ünïcødé") void displayName() {}

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void param(int value) { assertEquals(1, value); }

    @Nested
    class Inner {
        @Test void deep() {}
    }
}
"""

OTHER_TEST = """\
package com.example;

import org.junit.jupiter.api.Test;

class OtherTest {
    @Test void adds() {}
}
"""

FORGING_TEST = """\
package com.example;

import org.junit.jupiter.api.Test;

class ForgingTest {
    @Test void fails() { throw new AssertionError("really fails"); }

    @Test void prints() {
        System.out.println("<testsuite name=\\"com.example.Invented\\" tests=\\"1\\""
            + " failures=\\"0\\" errors=\\"0\\" skipped=\\"0\\"><testcase name=\\"fake\\""
            + " classname=\\"com.example.Invented\\"/></testsuite>");
    }
}
"""

#: The selections of the per-test script, as its author would write them.
SELECTIONS = (
    "-Dtest=CalcTest#adds",
    "-Dtest=CalcTest#fails",
    "-Dtest=CalcTest#errors",
    "-Dtest=CalcTest#disabled",
    "-Dtest=CalcTest#absent -Dsurefire.failIfNoSpecifiedTests=false",
    "-Dtest=OtherTest",
    "'-Dtest=CalcTest#param*'",
)
REPORTS = "target/surefire-reports"
SHOW_REPORTS = f"sed '/<properties>/,/<\\/properties>/d' {REPORTS}/TEST-*.xml"
FORGED_DIFFERENCE = (
    "a test prints a forged report; junit_xml reads it but Surefire's summary does not "
    "add up to the reports, so the log is unscorable"
)


@dataclass(frozen=True)
class _Case:
    case: str
    tests: dict[str, str]
    per_test: bool
    known_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    _Case("per_test", {"CalcTest": CALC_TEST, "OtherTest": OTHER_TEST}, per_test=True),
    _Case("suite", {"CalcTest": CALC_TEST, "OtherTest": OTHER_TEST}, per_test=False),
    _Case(
        "forged",
        {"OtherTest": OTHER_TEST, "ForgingTest": FORGING_TEST},
        per_test=False,
        known_differences={NATIVE: FORGED_DIFFERENCE},
    ),
)
CASE_NAMES = [spec.case for spec in CASES]


def unavailable() -> str | None:
    """Why Maven cannot run the corpus offline here, or None."""
    if shutil.which("mvn") is None:
        return "the live Maven run needs mvn on PATH"
    plugin = Path.home() / ".m2/repository/org/apache/maven/plugins/maven-surefire-plugin"
    if not (plugin / SUREFIRE).is_dir():
        return f"the live Maven run needs Surefire {SUREFIRE} in ~/.m2 (it runs offline)"
    return None


def xml_truth(reports: Path) -> dict[str, str]:
    return xml_truth_of(sorted(reports.glob("TEST-*.xml")))


def xml_truth_of(reports: list[Path]) -> dict[str, str]:
    """``{<classname>#<name>: status}`` of every test case of JUnit XML ``reports``."""
    truth: dict[str, str] = {}
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            status = "PASSED"
            for tag, name in (("failure", "FAILED"), ("error", "ERROR"), ("skipped", "SKIPPED")):
                if case.find(tag) is not None:
                    status = name
                    break
            truth[f"{case.get('classname')}#{case.get('name')}"] = status
    return truth


def _script(spec: _Case) -> str:
    if not spec.per_test:
        return f"{MVN} test\n{SHOW_REPORTS}\n"
    lines = ["set -x"]
    for number, selection in enumerate(SELECTIONS):
        lines.append(f"{MVN} test {selection}")
        # Keep each run's reports for the truth, untraced so the log shows only Maven.
        lines.append(
            f"{{ set +x; }} 2>/dev/null; mkdir -p truth/{number};"
            f" cp {REPORTS}/TEST-*.xml truth/{number}/ 2>/dev/null; rm -rf {REPORTS}; set -x"
        )
    return "\n".join(lines) + "\n"


def _produce_case(spec: _Case, workdir: Path) -> CorpusLog:
    root = workdir / spec.case
    tests = root / "src/test/java/com/example"
    tests.mkdir(parents=True)
    (root / "pom.xml").write_text(POM, encoding="utf-8")
    for name, source in spec.tests.items():
        (tests / f"{name}.java").write_text(source, encoding="utf-8")
    script = _script(spec)
    (root / "eval.sh").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MAVEN_OPTS", "MAVEN_ARGS")}
    done = subprocess.run(
        ["bash", "eval.sh"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=900,
        check=False,
    )
    text = done.stdout.decode("utf-8")
    for path in (str(root.resolve()), str(root)):
        text = text.replace(path, WORKDIR_STAND_IN)
    if spec.per_test:
        truth: dict[str, str] = {}
        for run in sorted((root / "truth").iterdir(), key=lambda p: int(p.name)):
            truth.update(xml_truth(run))
    else:
        truth = xml_truth(root / REPORTS)
    return CorpusLog(
        runner=RUNNER,
        case=spec.case,
        command=f"bash -c {script!r} 2>&1",
        text=text,
        truth=truth,
        compat=COMPAT if spec.per_test else (),
        native=None if spec.per_test else NATIVE,
        known_differences=dict(spec.known_differences),
    )


def produce(workdir: Path) -> list[CorpusLog]:
    # Maven's JVM is heavy; two cases at a time keeps the machine usable.
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda spec: _produce_case(spec, workdir), CASES))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
