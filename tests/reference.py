"""The official ``swebench`` package, used as the reference for the compatible family:
its parsers' status maps, and its grading of whole eval logs end to end."""

from __future__ import annotations

from pathlib import Path

from swebench.harness.constants import EvalType, ResolvedStatus
from swebench.harness.grading import get_eval_tests_report, get_logs_eval, get_resolution_status
from swebench.harness.log_parsers import PARSER_REGISTRY
from swebench.types import TestSpec


def reference_spec(
    *,
    parser: str,
    fail_to_pass: list[str] = (),
    pass_to_pass: list[str] = (),
    instance_id: str = "ref__ref-1",
    eval_type: str = "pass_and_fail",
) -> TestSpec:
    return TestSpec(
        instance_id=instance_id,
        image="unused",
        eval_script_list=[],
        repo="ref/ref",
        version="0",
        FAIL_TO_PASS=list(fail_to_pass),
        PASS_TO_PASS=list(pass_to_pass),
        log_parser=f"parse_log_{parser}",
        eval_type=eval_type,
    )


def swebench_status_map(parser: str, text: str) -> dict[str, str]:
    """swebench's own status map for ``text``, by our compat parser name (``pytest``...)."""
    return PARSER_REGISTRY[f"parse_log_{parser}"](text, reference_spec(parser=parser))


def swebench_logs_eval(
    log_text: str, parser: str, folder: Path, *, fail_only: bool = False
) -> tuple[dict[str, str], bool]:
    """swebench's ``get_logs_eval`` of ``log_text``, from a file in ``folder`` as its
    harness reads it (text mode: universal newlines)."""
    spec = reference_spec(parser=parser, eval_type="fail_only" if fail_only else "pass_and_fail")
    path = folder / "test_output.txt"
    path.write_text(log_text, encoding="utf-8")
    return get_logs_eval(spec, str(path))


def swebench_grade(
    log_text: str,
    parser: str,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    folder: Path,
    *,
    fail_only: bool = False,
) -> dict | None:
    """swebench's verdict end to end (``get_logs_eval`` -> ``get_eval_tests_report`` ->
    ``get_resolution_status``); None when it finds no gradable test output."""
    status_map, found = swebench_logs_eval(log_text, parser, folder, fail_only=fail_only)
    if not found:
        return None
    eval_type = EvalType.FAIL_ONLY if fail_only else EvalType.PASS_AND_FAIL
    report = get_eval_tests_report(
        status_map,
        {"FAIL_TO_PASS": fail_to_pass, "PASS_TO_PASS": pass_to_pass},
        eval_type=eval_type,
    )
    resolution = get_resolution_status(report)
    return {
        "status_map": status_map,
        "fail_to_pass": report["FAIL_TO_PASS"],
        "pass_to_pass": report["PASS_TO_PASS"],
        "resolution": resolution,
        "resolved": resolution == ResolvedStatus.FULL.value,
    }


PASSING = frozenset({"PASSED", "XFAIL"})
FAILING = frozenset({"FAILED", "ERROR"})


def truncate(test_id: str) -> str | None:
    """A SWE-bench-issue-290 style id cut inside its parameter brackets."""
    if "[" not in test_id or not test_id.endswith("]"):
        return None
    open_at = test_id.index("[")
    inner = test_id[open_at + 1 : -1]
    return test_id[: open_at + 1 + max(1, len(inner) // 2)] if len(inner) > 1 else None


def instance_variants(statuses: dict[str, str]) -> list[tuple[str, list[str], list[str]]]:
    """Instances derived from the tests a status map holds: (label, F2P, P2P)."""
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
