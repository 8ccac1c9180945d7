"""The eval script: what one instance's trial does inside its sandbox, as data.

SWE-bench renders a bash script; evalrepro compiles the same steps into a record that
the trial supervisor (``evalrepro/run/sandbox/supervisor.py``) carries out, as a user the
code under test is not. Its order is SWE-bench's (../shared/docs/semantics.md,
"Running one trial"):

1. apply the model patch: ``git apply --verbose``, then ``git apply --verbose --reject``,
   then ``patch --batch --fuzz=5 -p1 -i``; the first success wins, and the tree is put
   back between tries so a half-applied patch never meets the next tool;
2. test infrastructure the patch changed is restored (or recorded) by the protection
   policy; the files the test patch touches are written as base + test patch, so the
   model cannot plant or edit tests, and verified; an empty test patch has nothing to
   apply and the existing tests run, as in SWE-bench;
3. run the test command (its output is the region; its exit status is the test exit
   code).

The record is part of the TestSpec, so its digest covers every step, and the digest of
the supervisor's own code (``sandbox``): changing how trials run changes the trial ids.
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict

from evalrepro.digest import sha256_bytes
from evalrepro.run.protection import ResolvedProtection
from evalrepro.run.sandbox import GUARD, SUPERVISOR

#: Where the attempt's inputs are mounted (read-only) in the sandbox.
PATCH_PATH = "/evalrepro/patch.diff"
TEST_PATCH_PATH = "/evalrepro/test.patch"
PROGRAM_PATH = "/evalrepro/program.json"
SUPERVISOR_PATH = "/evalrepro/supervisor.py"
GUARD_PATH = "/evalrepro/guard.py"
TESTBED = "/testbed"
#: The harness's own copy of the repo's history (root-owned, outside /testbed).
GIT_DIR = "/opt/evalrepro/repo.git"

#: (method name, command) in the order they are tried.
PATCH_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("git_apply", ("git", "apply", "--verbose", PATCH_PATH)),
    ("git_apply_reject", ("git", "apply", "--verbose", "--reject", PATCH_PATH)),
    ("patch_fuzz", ("patch", "--batch", "--fuzz=5", "-p1", "-i", PATCH_PATH)),
)


class EvalScript(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_commit: str
    #: The spec's test command with its directives.
    test_command: str
    #: Every file the test patch touches (written as base + test patch before the tests).
    test_files: list[str]
    test_patch_empty: bool
    patch_commands: list[tuple[str, list[str]]]
    protection: ResolvedProtection
    #: sha256 over the supervisor's and the exit guard's source bytes.
    sandbox: str


@cache
def sandbox_digest() -> str:
    return sha256_bytes(SUPERVISOR.read_bytes() + b"\0" + GUARD.read_bytes())


def compile_eval_script(
    *,
    base_commit: str,
    test_command: str,
    test_files: list[str],
    test_patch_empty: bool,
    protection: ResolvedProtection,
) -> EvalScript:
    return EvalScript(
        base_commit=base_commit,
        test_command=test_command,
        test_files=test_files,
        test_patch_empty=test_patch_empty,
        patch_commands=[(method, list(argv)) for method, argv in PATCH_COMMANDS],
        protection=protection,
        sandbox=sandbox_digest(),
    )
