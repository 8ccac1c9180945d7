"""The official ``swebench`` package, used as the reference for the compatible family."""

from __future__ import annotations

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
