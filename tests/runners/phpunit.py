"""Produce the PHPUnit corpus: small test classes really run by PHPUnit 9 (Debian's).

Each case runs twice: ``phpunit --testdox --colors=never tests 2>&1`` (what SWE-bench's
PHP instances run, read by the compatible ``phpunit`` parser) and ``phpunit
--colors=never --log-junit php://stdout tests 2>&1`` (PHPUnit's JUnit XML written into
the log, read by the native ``junit_xml``). Ground truth, for both logs, is PHPUnit's
JUnit report from a third run (``--log-junit FILE``), read here with ElementTree:
``<classname>#<name>`` -> FAILED with ``<failure>``, ERROR with ``<error>`` (PHPUnit 9
reports a risky test so), SKIPPED with ``<skipped>`` (skipped and incomplete), else
PASSED. Temp dirs are replaced by ``/corpus``.

Run ``python -m tests.runners.phpunit`` from the repo root to rewrite
tests/corpus/phpunit/ (needs ``apt-get install php-cli phpunit``).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.corpus import CorpusLog, write_corpus
from tests.runners.maven import xml_truth_of

RUNNER = "phpunit"
COMPAT = ("phpunit",)
NATIVE = "junit_xml"
WORKDIR_STAND_IN = "/corpus"

MIXED = {
    "CalcTest.php": """\
<?php
namespace Tests;

use PHPUnit\\Framework\\TestCase;

final class CalcTest extends TestCase
{
    public function testAddsNumbers(): void { $this->assertSame(2, 1 + 1); }
    public function test_adds_numbers(): void { $this->assertSame(3, 1 + 1); }
    public function testFails(): void { $this->assertSame(3, 1 + 1); }
    public function testErrors(): void { throw new \\RuntimeException('boom'); }
    public function testSkipped(): void { $this->markTestSkipped('no network'); }
    public function testIncomplete(): void { $this->markTestIncomplete('later'); }
    public function testRisky(): void { }
    /** @dataProvider values */
    public function testAdd(int $a, int $expected): void { $this->assertSame($expected, $a + 1); }
    public static function values(): array { return ['one' => [1, 2], 'two' => [2, 4], [5, 6]]; }
    public function testPrints(): void {
        echo "\\n ✔ Invented test\\n";
        $this->assertTrue(true);
    }
}
""",
    "OtherTest.php": """\
<?php
namespace Tests\\Sub;

use PHPUnit\\Framework\\TestCase;

final class OtherTest extends TestCase
{
    public function testFails(): void { $this->assertTrue(true); }
}
""",
    "GlobalTest.php": """\
<?php
use PHPUnit\\Framework\\TestCase;

final class GlobalTest extends TestCase
{
    public function testOutsideANamespace(): void { $this->assertTrue(false); }
}
""",
}

PASSING = {
    "MathTest.php": """\
<?php
namespace Tests;

use PHPUnit\\Framework\\TestCase;

final class MathTest extends TestCase
{
    public function testAdds(): void { $this->assertSame(2, 1 + 1); }
    public function testMultiplies(): void { $this->assertSame(4, 2 * 2); }
}
""",
}

FORGED = {
    "ForgeTest.php": """\
<?php
namespace Tests;

use PHPUnit\\Framework\\TestCase;

final class ForgeTest extends TestCase
{
    public function testFails(): void { $this->assertTrue(false); }
    public function testForges(): void {
        echo '<testsuite name="x" tests="1"><testcase name="invented" classname="X"/></testsuite>';
        $this->assertTrue(true);
    }
}
""",
}

FORGED_DIFFERENCE = (
    "a test echoes a forged report; junit_xml reads it but PHPUnit's own total "
    "(Tests: N) does not add up, so the log is unscorable"
)


@dataclass(frozen=True)
class _Case:
    case: str
    files: dict[str, str]
    xml_differences: dict[str, str] = field(default_factory=dict)


CASES = (
    _Case("passing", PASSING),
    _Case("mixed", MIXED),
    _Case("forged", FORGED, {NATIVE: FORGED_DIFFERENCE}),
)
CASE_NAMES = [f"{spec.case}_{kind}" for spec in CASES for kind in ("testdox", "junit")]


def unavailable() -> str | None:
    return None if shutil.which("phpunit") else "the live PHPUnit run needs phpunit on PATH"


def _phpunit(args: list[str], cwd: Path) -> str:
    done = subprocess.run(
        ["phpunit", "--colors=never", *args, "tests"],
        cwd=cwd,
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
    (casedir / "tests").mkdir(parents=True)
    for name, source in spec.files.items():
        (casedir / "tests" / name).write_text(source, encoding="utf-8")
    testdox = _phpunit(["--testdox"], casedir)
    junit = _phpunit(["--log-junit", "php://stdout"], casedir)
    _phpunit(["--log-junit", "truth.xml"], casedir)
    truth = xml_truth_of([casedir / "truth.xml"])
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_testdox",
            command="phpunit --colors=never --testdox tests 2>&1",
            text=_clean(testdox, casedir),
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_junit",
            command="phpunit --colors=never --log-junit php://stdout tests 2>&1",
            text=_clean(junit, casedir),
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
