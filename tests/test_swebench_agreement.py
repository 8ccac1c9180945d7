"""Differential suite: our grading of real logs agrees with swebench's, end to end.

For every log of the corpus and every compatible parser listed for it, we wrap the
log as a SWE-bench eval log (``set -x`` trace, markers, exit-code line), derive
instances from the tests the log contains (all pass, one fails, skipped, missing,
truncated ids) and require that our observe -> score gives the same F2P/P2P split and
the same resolved verdict as swebench 5.0.2's get_logs_eval -> get_eval_tests_report
-> get_resolution_status. Deliberate differences are tested separately below, by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from swebench.harness.constants import EvalType, ResolvedStatus
from swebench.harness.grading import get_eval_tests_report, get_logs_eval, get_resolution_status

from evalrepro.observation import observe
from evalrepro.parsers import get_parser
from evalrepro.sample import Sample
from evalrepro.score import Outcome, score
from tests.corpus import CorpusLog, all_corpus
from tests.reference import reference_spec, swebench_status_map

PASSING = {"PASSED", "XFAIL"}
FAILING = {"FAILED", "ERROR"}


def eval_log(region: str, exit_code: int | None) -> str:
    """A log shaped like the one SWE-bench's harness writes (set -x traces included)."""
    lines = [
        "+ source /opt/miniconda3/bin/activate",
        "+ git checkout abc123 tests/test_x.py",
        "+ git apply -v -",
        "Checking patch tests/test_x.py...",
        "Applied patch tests/test_x.py cleanly.",
        "+ echo '>>>>> Start Test Output'",
        ">>>>> Start Test Output",
        region.rstrip("\n"),
        "+ SWEBENCH_TEST_EXIT_CODE=1",
        "+ echo '>>>>> End Test Output'",
        ">>>>> End Test Output",
    ]
    if exit_code is not None:
        lines += [
            f"+ echo '>>>>> Test Exit Code: {exit_code}'",
            f">>>>> Test Exit Code: {exit_code}",
        ]
    lines.append("+ git checkout abc123 tests/test_x.py")
    return "\n".join(lines) + "\n"


def truncate(test_id: str) -> str | None:
    """A SWE-bench-issue-290 style id cut inside its parameter brackets."""
    if "[" not in test_id or not test_id.endswith("]"):
        return None
    open_at = test_id.index("[")
    inner = test_id[open_at + 1 : -1]
    return test_id[: open_at + 1 + max(1, len(inner) // 2)] if len(inner) > 1 else None


def instance_variants(statuses: dict[str, str]) -> list[tuple[str, list[str], list[str]]]:
    passed = [t for t, s in statuses.items() if s in PASSING]
    failed = [t for t, s in statuses.items() if s in FAILING]
    skipped = [t for t, s in statuses.items() if s == "SKIPPED"]
    half = len(passed) // 2
    variants = [
        ("all listed tests pass", passed[:half] or passed[:1], passed[half:]),
        ("one F2P fails", passed[:1] + failed[:1], passed[1:4]),
        ("one P2P fails", passed[:1], passed[1:3] + failed[:1]),
        ("skipped tests", skipped[:1], skipped[1:2] + passed[:1]),
        ("a test absent from the log", ["tests/absent.py::test_never_ran"], passed[:2]),
        ("failing tests only", failed[:2], []),
    ]
    truncated = [cut for t in statuses if (cut := truncate(t))]
    if truncated:
        variants.append(("truncated parametrized ids", truncated[:3], truncated[3:6]))
    return variants


def swebench_grade(
    log_text: str, parser: str, f2p: list[str], p2p: list[str], tmp_path: Path, fail_only: bool
) -> dict | None:
    eval_type = EvalType.FAIL_ONLY if fail_only else EvalType.PASS_AND_FAIL
    spec = reference_spec(
        parser=parser, fail_to_pass=f2p, pass_to_pass=p2p, eval_type=eval_type.value
    )
    path = tmp_path / "test_output.txt"
    path.write_text(log_text, encoding="utf-8")
    status_map, found = get_logs_eval(spec, str(path))
    if not found:
        return None
    report = get_eval_tests_report(
        status_map, {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}, eval_type=eval_type
    )
    return {
        "fail_to_pass": report["FAIL_TO_PASS"],
        "pass_to_pass": report["PASS_TO_PASS"],
        "resolved": get_resolution_status(report) == ResolvedStatus.FULL.value,
    }


def compat_cases() -> list[tuple[CorpusLog, str]]:
    return [(log, parser) for log in all_corpus() for parser in log.compat]


@pytest.mark.parametrize(
    ("log", "parser"),
    compat_cases(),
    ids=[f"{log.runner}/{log.case}/{parser}" for log, parser in compat_cases()],
)
def test_resolution_agrees_with_swebench_on_every_corpus_log(log, parser, tmp_path):
    ours = get_parser(parser)
    statuses = swebench_status_map(parser, log.text)
    has_failures = any(s in FAILING for s in statuses.values())
    for exit_code in (None, 1 if has_failures else 0):
        text = eval_log(log.text, exit_code)
        for label, f2p, p2p in instance_variants(statuses):
            sample = Sample(
                instance_id="ref__ref-1",
                repo="ref/ref",
                base_commit="abc123",
                test_patch="",
                FAIL_TO_PASS=f2p,
                PASS_TO_PASS=p2p,
            )
            observation = observe(text, sample, ours)
            reference = swebench_grade(text, parser, f2p, p2p, tmp_path, ours.fail_only)
            context = f"{label}, exit code {exit_code}"
            resolved = score(observation).outcome is Outcome.RESOLVED
            if reference is None:
                assert not resolved, context
                continue
            assert observation.tests is not None, context
            assert observation.tests.fail_to_pass.model_dump() == reference["fail_to_pass"], context
            assert observation.tests.pass_to_pass.model_dump() == reference["pass_to_pass"], context
            assert resolved == reference["resolved"], context


def test_the_corpus_covers_every_compatible_parser():
    from evalrepro.parsers import Family, parser_names

    compat = {n for n in parser_names() if get_parser(n).family is Family.SWEBENCH}
    covered = {parser for _, parser in compat_cases()}
    assert compat <= covered, f"compatible parsers without a corpus log: {compat - covered}"


# --- deliberate differences ----------------------------------------------------------


def _sample(f2p, p2p=()):
    return Sample(
        instance_id="ref__ref-1",
        repo="ref/ref",
        base_commit="abc",
        test_patch="",
        FAIL_TO_PASS=list(f2p),
        PASS_TO_PASS=list(p2p),
    )


def test_difference_lines_outside_the_markers_never_count(tmp_path):
    # swebench re-parses the whole log when the region yields nothing, so PASSED lines
    # printed before the markers (e.g. by a patched setup.py during install) resolve
    # the instance there. Here they are ignored, and an empty region is unscorable.
    text = "PASSED tests/test_x.py::test_fixed\n" + eval_log("collected 0 items\n", 0)
    reference = swebench_grade(text, "pytest", ["tests/test_x.py::test_fixed"], [], tmp_path, False)
    assert reference is not None and reference["resolved"]
    observation = observe(text, _sample(["tests/test_x.py::test_fixed"]), get_parser("pytest"))
    assert observation.status_map == {}
    assert score(observation).outcome is Outcome.INVALID


def test_difference_a_forged_end_marker_makes_the_log_unscorable(tmp_path):
    # The code under test prints a fake end marker and a PASSED line after its real
    # failure. swebench grades the forged line (its region is cut at the `set -x` trace
    # of the start marker, so it re-parses the whole log, where the last line wins) and,
    # in logs without an exit-code line, resolves. We refuse a log with two end markers.
    forged = (
        "FAILED tests/test_x.py::test_fixed\n"
        ">>>>> End Test Output\n"
        "PASSED tests/test_x.py::test_fixed"
    )
    text = eval_log(forged, None)
    reference = swebench_grade(text, "pytest", ["tests/test_x.py::test_fixed"], [], tmp_path, False)
    assert reference is not None and reference["resolved"]
    result = score(observe(text, _sample(["tests/test_x.py::test_fixed"]), get_parser("pytest")))
    assert result.outcome is Outcome.INVALID
    assert result.reason == "log_unparseable"
