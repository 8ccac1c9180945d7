"""The eval script: what one instance's trial does inside its sandbox, as data.

SWE-bench renders a bash script; evalrepro compiles the same steps into a record that
the trial supervisor (``evalrepro/sandbox/supervisor.py`` and its modules) carries out,
as a user the code under test is not. Its order is SWE-bench's (../shared/docs/semantics.md,
"Running one trial"):

1. apply the model patch: ``git apply --verbose``, then ``git apply --verbose --reject``,
   then ``patch --batch --fuzz=5 -p1 -i``; the first success wins, and the tree is put
   back between tries so a half-applied patch never meets the next tool (a run that
   applies no patch, dataset validation's side before the gold patch, has the one step
   ``true``: method ``none``);
2. test infrastructure the patch changed is restored (or recorded) by the protection
   policy; the files the test patch touches are written as base + test patch, so the
   model cannot plant or edit tests, and verified; an empty test patch has nothing to
   apply and the existing tests run, as in SWE-bench;
3. run the test command (its output is the region; its exit status is the test exit
   code).

The record is part of the TestSpec, so its digest covers every step, and the digest of
the code that runs in the sandbox (``sandbox``: every module of the supervisor, and the exit
guard): changing how trials run changes the trial ids.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from evalrepro.digest import sha256_bytes
from evalrepro.records.testspec import EvalScript, ResolvedProtection
from evalrepro.sandbox import GUARD, PATCH_PATH, SANDBOX_DIR, shipped_supervisor

#: (method name, command) in the order they are tried.
PATCH_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("git_apply", ("git", "apply", "--verbose", PATCH_PATH)),
    ("git_apply_reject", ("git", "apply", "--verbose", "--reject", PATCH_PATH)),
    ("patch_fuzz", ("patch", "--batch", "--fuzz=5", "-p1", "-i", PATCH_PATH)),
)


#: The one patch step of a run that applies no model patch (dataset validation's side
#: before the gold patch): it changes nothing, so the tests meet base + test patch.
NO_MODEL_PATCH: tuple[tuple[str, tuple[str, ...]], ...] = (("none", ("true",)),)


def without_model_patch(patch_commands: list[tuple[str, list[str]]]) -> bool:
    """Whether an eval script's (or a trial program's) patch step applies no patch."""
    return [(m, tuple(a)) for m, a in patch_commands] == list(NO_MODEL_PATCH)


@cache
def sandbox_digest(folder: Path = SANDBOX_DIR) -> str:
    """The code that runs in the sandbox: every module of the supervisor's archive, and
    the exit guard (``folder``: a copy of ``evalrepro/sandbox/``, in tests)."""
    guard = (folder / GUARD.name).read_bytes()
    return sha256_bytes(shipped_supervisor(folder).digest.encode() + b"\0" + guard)


def compile_eval_script(
    *,
    base_commit: str,
    test_command: str,
    test_files: list[str],
    test_patch_empty: bool,
    protection: ResolvedProtection,
    model_patch: bool = True,
) -> EvalScript:
    """``model_patch``: False for a run that applies none (its step is
    :data:`NO_MODEL_PATCH`; the host refuses to give it one)."""
    commands = PATCH_COMMANDS if model_patch else NO_MODEL_PATCH
    return EvalScript(
        base_commit=base_commit,
        test_command=test_command,
        test_files=test_files,
        test_patch_empty=test_patch_empty,
        patch_commands=[(method, list(argv)) for method, argv in commands],
        protection=protection,
        sandbox=sandbox_digest(),
    )
