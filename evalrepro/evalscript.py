"""The eval script: what runs inside a trial's container, as one bash script.

Its order is SWE-bench's (../shared/docs/semantics.md, "Running one trial"):

1. apply the model patch: ``git apply --verbose``, then ``git apply --verbose --reject``,
   then ``patch --batch --fuzz=5 -p1 -i``; the first success wins, and the tree is
   restored between tries so a half-applied patch never meets the next tool;
2. reset the files the test patch touches to the base commit and delete the files it
   creates, so the model cannot plant tests; apply the test patch;
3. start marker, the test command, end marker, the test command's exit code;
4. reset the test files again.

Every line the harness prints starts with ``>>>>>`` and is written outside the test
region; the patch method (``>>>>> Applied Patch (git_apply)``) is read back from the log
by :mod:`evalrepro.testlog`, so the Observation is built from the log alone.

The container provides ``/testbed`` (the repo at its base commit, history reachable),
``/opt/venv`` (the env layer) and, mounted read-only, ``/evalrepro/{eval.sh,
patch.diff, test.patch}``.
"""

from __future__ import annotations

import shlex

PATCH_PATH = "/evalrepro/patch.diff"
TEST_PATCH_PATH = "/evalrepro/test.patch"
SCRIPT_PATH = "/evalrepro/eval.sh"

#: (method name, command) in the order they are tried.
PATCH_COMMANDS: tuple[tuple[str, str], ...] = (
    ("git_apply", f"git apply --verbose {PATCH_PATH}"),
    ("git_apply_reject", f"git apply --verbose --reject {PATCH_PATH}"),
    ("patch_fuzz", f"patch --batch --fuzz=5 -p1 -i {PATCH_PATH}"),
)

_TEMPLATE = """\
#!/bin/bash
# evalrepro eval script for {instance_id} ({repo} at {base_commit}).
# Generated from the instance's TestSpec, whose digest covers this text.
set -uo pipefail
cd /testbed
export PATH="/opt/venv/bin:$PATH"
# An index for the base commit (images ship none: its stat data is not reproducible).
git read-tree HEAD && git update-index -q --refresh >/dev/null 2>&1

restore_tree() {{ git checkout -q -f HEAD -- . && git clean -fdq; }}
reset_test_files() {{
{reset}
}}

method=""
{apply_chain}
if [ -z "$method" ]; then
  echo ">>>>> Patch Apply Failed"
  exit 0
fi
echo ">>>>> Applied Patch ($method)"

reset_test_files
if ! git apply --verbose {test_patch}; then
  echo ">>>>> Reset Failed"
  exit 0
fi

echo ">>>>> Start Test Output"
{test_command}
test_exit_code=$?
echo ">>>>> End Test Output"
echo ">>>>> Test Exit Code: $test_exit_code"
reset_test_files
exit 0
"""


def _apply_chain() -> str:
    lines = []
    for index, (method, command) in enumerate(PATCH_COMMANDS):
        guard = "" if index == 0 else 'if [ -z "$method" ]; then restore_tree; '
        close = "" if index == 0 else " fi"
        lines.append(f"{guard}if {command}; then method={method}; fi;{close}".rstrip(";"))
    return "\n".join(lines)


def render_eval_script(
    *,
    instance_id: str,
    repo: str,
    base_commit: str,
    files_at_base: list[str],
    files_created: list[str],
    test_command: str,
) -> str:
    reset = []
    if files_at_base:
        quoted = " ".join(shlex.quote(path) for path in files_at_base)
        reset.append(f"  git checkout -q {shlex.quote(base_commit)} -- {quoted}")
    if files_created:
        reset.append("  rm -f -- " + " ".join(shlex.quote(path) for path in files_created))
    return _TEMPLATE.format(
        instance_id=instance_id,
        repo=repo,
        base_commit=base_commit,
        reset="\n".join(reset) or "  :",
        apply_chain=_apply_chain(),
        test_patch=TEST_PATCH_PATH,
        test_command=test_command,
    )
