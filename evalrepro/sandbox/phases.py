"""One attempt's phases, in order (``Trial.run``)::

    apply the model patch      as the test user: git apply, git apply --reject, patch
                               --fuzz=5; the tree is put back between tries
    protect                    files that collect, configure or run the tests, changed
                               by the patch, are restored to the base commit (or only
                               recorded, or make the trial invalid: the dataset's policy)
    reset                      the test patch's files are written as base + test patch
                               from the harness's own git store, then verified (every
                               process of the test user killed first)
    hide                       what says which tests are new (the repository's .git,
                               the harness's store) locked to root; the test user is
                               asked to read it, and the test patch and the program
    run the tests              as the test user, in a user namespace of its own (so the
                               process cap is this trial's), under a watchdog
                               (memory, processes, disk written, files created,
                               output, time); no bytecode cache but the image's is read
                               or written (an empty prefix of root's)
    fresh runs, re-runs        single tests, each alone in a fresh process, judged by
                               exit status (the re-runs: the failing tests the host names
                               on the supervisor's stdin, the only thing it reads there),
                               each from the state the tests started from; the
                               second runner's are fresh runs of a plain driver
                               (``plain.py``) instead of the runner

Each phase reports itself as an event of the stream; ``Stop`` ends the phases where an
event already says why.
"""

from __future__ import annotations

import fnmatch
import json
import os
import select
import stat
import time
from collections.abc import Callable

from .confine import kill_leftovers, lock_away, still_readable, tests_read_git
from .exitguard import install_guard
from .infra import (
    PYTEST_READS,
    SECTION_FILES,
    bytecode_source,
    protected_reason,
    pytest_reading,
    runner_python,
    sections_changed,
)
from .protocol import HarnessError, Stream, shown
from .testrun import TestRun
from .tree import SavedState, changed_paths, escaping_links, new_folder, root_folder, snapshot
from .user import User, as_user, run_as, tool_env
from .watchdog import writable_roots
from .writes import Git, apply_writes, operations_for, verify_writes, with_canaries

_REQUEST_SECONDS = 120.0  # the host's word on what to re-run, once the tests finished
_REQUEST_BYTES = 1 << 22


class Trial:
    def __init__(self, program: dict, stream: Stream, program_path: str | None = None) -> None:
        self.program = program
        self.program_path = program_path
        self.stream = stream
        self.testbed = program["testbed"]
        self.user = User(program["user"])
        self.private = new_folder("/var/tmp", "evalrepro-supervisor-")
        self.git = Git(program["git_dir"], self.private)
        self.base = program["base_commit"]
        self._python: str | bool | None = False  # the test environment's, when first asked
        self.state: SavedState | None = None  # what the lone runs start from
        self.placed: list[str] = []  # the canaries the reset placed
        self.restored = 0  # paths put back before the lone runs

    def run(self) -> None:
        started = time.monotonic()
        before = snapshot(self.testbed)
        method, changed = self.apply_model_patch(before)
        escapes = escaping_links(self.testbed, changed) if method else []
        self.stream.event(
            "patch",
            status="unsafe" if escapes else "applied" if method else "rejected",
            method=method,
            changed=[shown(path) for path in changed[:2000]],
            changed_total=len(changed),
            detail="; ".join(escapes[:5]),
            seconds=round(time.monotonic() - started, 3),
        )
        if method is None or escapes:
            return
        protected = self.protect(changed)
        if self.program["protection"]["policy"] == "invalid" and protected:
            return  # the trial is invalid by policy: running the tests would change nothing
        kill_leftovers()
        test_files = self.reset_test_files(protected)
        self.hide()
        prefix = root_folder("evalrepro-pycache-", 0o555)
        self.program["pycache_prefix"] = prefix
        if self.program.get("guard", True):
            site_hooks = self.program["protection"].get("site_hooks", False)
            sites = install_guard(self.program["guard_source"], self.testbed, site_hooks, prefix)
            self.stream.event("guard", sites=sites)
        if self.program.get("fresh") or self.program.get("rerun"):
            # Saved before the run: each lone run starts from it, whatever the run wrote.
            store = root_folder("evalrepro-state-", 0o700)
            roots = writable_roots(self.user, self.testbed)
            self.state = SavedState(roots, store, [self.private, store, prefix])
        before_tests = snapshot(self.testbed)

        def integrity() -> list[str]:
            return self.changed_while_running(test_files, before_tests)

        TestRun(self.program, self.stream, self.user, changed, integrity).run()
        if self.program.get("fresh"):
            self.fresh_runs(changed, integrity)
        if self.program.get("rerun"):
            self.reruns(changed, integrity)

    def hide(self) -> None:
        """After the reset, before any test runs: what says which tests are the test
        patch's is made unreadable to the test user, and the test user is asked.

        The test patch and the program are in root's folder from the start (the host
        mounts it so). The repository's ``.git`` and the harness's store hold the base:
        with them, ``git diff`` or ``git show HEAD:<file>`` says which tests are new.
        They are locked away unless the dataset declared that its tests read git
        (``protection.tests_read_git``, recorded in ``tests_started``). Whatever is still
        readable after this is the harness's failure, never a trial that runs."""
        private = [os.path.dirname(self.program["test_patch"]), self.program["test_patch"]]
        if self.program_path is not None:
            private.append(self.program_path)
        locked = []
        if not tests_read_git(self.program):
            for path in (os.path.join(self.testbed, ".git"), self.program["git_dir"]):
                done = lock_away(path)
                if done is not None:
                    locked.append(done)
        # The supervisor's own folder (its index names the test files' blobs) too.
        error = as_user(self.user, still_readable, [*private, *locked, self.private])
        if error:
            raise HarnessError(f"the test user can still read what names the tests: {error}")
        self.stream.log(f"hidden from the tests: {', '.join([private[0], *locked])}")

    def fresh_runs(self, changed: list[str], integrity: Callable[[], list[str]]) -> None:
        """Each fresh run of the program alone, in a process of its own: how it ended.

        A canary the reset did not place has nothing to run. Each run has the trial's
        limits (its timeout too): one test alone takes no longer than the whole run."""
        results = []
        for run in self.program["fresh"]:
            if run["expect"] == "fail" and run["test"] not in self.placed:
                continue
            results.append(self.run_alone(run, changed))
        self.stream.event(
            "fresh", runs=results, changed_during_run=integrity(), restored=self.restored
        )
        self.restored = 0

    def reruns(self, changed: list[str], integrity: Callable[[], list[str]]) -> None:
        """The runs the host names on stdin (it parsed the log: the failing tests, and a
        must-fail canary among them), each alone; a test up to the plan's ``times``, until
        one exits 0; the canary once, if the reset placed it."""
        asked = read_request(0, _REQUEST_SECONDS)
        results = []
        for run in asked or []:
            if run["expect"] == "fail" and run["test"] not in self.placed:
                continue
            times = 1 if run["expect"] == "fail" else self.program["rerun"]["times"]
            for _ in range(times):
                results.append(self.run_alone(run, changed))
                if results[-1]["exit_code"] == 0:
                    break
        self.stream.event(
            "rerun",
            runs=results,
            asked=-1 if asked is None else len(asked),
            changed_during_run=integrity(),
            restored=self.restored,
        )

    def run_alone(self, run: dict, changed: list[str]) -> dict:
        """One run of a single test in a fresh process, from the state the tests started
        from: how it ended (a ``FreshResult``)."""
        if self.state is not None:
            self.restored += self.state.restore()
        test = TestRun(
            self.program, self.stream, self.user, changed, command=run["command"], fresh=True
        )
        facts = test.execute()
        return {
            "test": run["test"],
            "exit_code": facts["exit_code"],
            "signal": facts["signal"],
            "seconds": facts["seconds"],
            "stopped": facts["stopped"]["limit"] if facts["stopped"] else None,
            "runner_exit": facts["runner_exit"],
            "runner": run.get("runner", ""),
        }

    def changed_while_running(self, test_files: list[tuple], before: dict[str, tuple]) -> list[str]:
        """Test files, and files named like test infrastructure, that the run changed.

        Code under test runs as the user who owns /testbed: it could rewrite a test module
        that is yet to be collected, or plant a conftest.py in a folder yet to be visited.
        Other files the tests write (caches, fixtures, temporary files) are theirs.
        """
        found = [
            "{} (a test file: {})".format(*_shown_problem(problem, test_files).split(": ", 1))
            for problem in verify_writes(self.testbed, test_files)
        ]
        patterns = self.program["protection"].get("patterns", ())
        tests = {op[0] for op in test_files}
        for path in changed_paths(before, snapshot(self.testbed)):
            name = path.rsplit("/", 1)[-1]
            source = bytecode_source(path)
            if any(fnmatch.fnmatchcase(path if "/" in p else name, p) for p in patterns):
                found.append(f"{shown(path)} (test infrastructure)")
            elif source is not None and (
                source in tests or protected_reason(source, self.program["protection"])
            ):
                # The tests' processes write no bytecode (an empty prefix of root's): this
                # is code standing in for a test file or test infrastructure.
                found.append(f"{shown(path)} (bytecode of {shown(source)})")
        return found[:50]

    def apply_model_patch(self, before: dict[str, tuple]) -> tuple[str | None, list[str]]:
        env = tool_env(self.user)
        for method, argv in self.program["patch_commands"]:
            done = run_as(self.user, argv, self.testbed, env)
            self.stream.log(f"$ {' '.join(argv)}\n{done[1]}")
            after = snapshot(self.testbed)
            changed = changed_paths(before, after)
            if done[0] == 0:
                return method, changed
            if changed:
                self.restore(changed)
        return None, []

    def restore(self, paths: list[str]) -> list[tuple]:
        """Paths back to the base commit (as the test user); the operations done."""
        entries = self.git.entries(self.base, paths)
        contents = self.git.blobs(sorted({e[2] for e in entries.values() if e[1] == "blob"}))
        operations = operations_for(entries, paths, contents)
        error = as_user(self.user, apply_writes, self.testbed, operations)
        if error:
            raise HarnessError(f"restoring {len(paths)} paths failed: {error}")
        return operations

    def protect(self, changed: list[str]) -> list[dict]:
        protection = self.program["protection"]
        touched = []
        sectioned = [
            p
            for p in changed
            if p.rsplit("/", 1)[-1] in SECTION_FILES and protected_reason(p, protection) is None
        ]
        base_contents = {}
        if sectioned:
            entries = self.git.entries(self.base, sectioned)
            blobs = self.git.blobs([e[2] for e in entries.values() if e[1] == "blob"])
            base_contents = {
                p: blobs.get(entries[p][2]) if p in entries else None for p in sectioned
            }
        for path in changed:
            reason = protected_reason(path, protection)
            if reason is None and path in base_contents:
                now = _read_file(os.path.join(self.testbed, path))
                name = path.rsplit("/", 1)[-1]
                sections = sections_changed(name, base_contents[path], now)
                if sections:
                    reason = "changes its test sections " + ", ".join(sections)
                elif name in PYTEST_READS and self._pytest_reads_differently(
                    name, base_contents[path], now
                ):
                    reason = "changes the configuration pytest reads from it"
            if reason is not None:
                touched.append({"path": path, "reason": reason})
        policy = protection["policy"]
        action = {"restore": "restored", "record": "recorded", "invalid": "recorded"}[policy]
        if touched and policy == "restore":
            self.restore([t["path"] for t in touched])
        for item in touched:
            item["action"] = action
        self.stream.event(
            "protect",
            policy=policy,
            touched=[{**item, "path": shown(item["path"])} for item in touched[:2000]],
            touched_total=len(touched),
        )
        if touched:
            self.stream.log(
                f"test infrastructure changed by the patch ({action}): "
                + ", ".join(shown(t["path"]) for t in touched[:50])
            )
        return touched

    def _pytest_reads_differently(self, name: str, old: bytes | None, new: bytes | None) -> bool:
        """Whether pytest itself reads another configuration from the file than at the
        base: the runner's own parser, never a look-alike (a ``\\r`` or ``\\x1c`` that
        configparser keeps inside a line is a line break to pytest)."""
        if self._python is False:
            self._python = runner_python()
        before = pytest_reading(self._python, name, old, self.user)
        if before is None:
            return False  # no pytest in the environment: nothing reads it as pytest does
        return before != pytest_reading(self._python, name, new, self.user)

    def reset_test_files(self, protected: list[dict]) -> list[tuple]:
        """The test patch's files as base + test patch; restored files verified too."""
        started = time.monotonic()
        files = list(self.program["test_files"])
        self.git.run("read-tree", self.base)
        if not self.program["test_patch_empty"]:
            try:
                self.git.run("apply", "--cached", "--whitespace=nowarn", self.program["test_patch"])
            except HarnessError as error:
                self.stream.event("reset", ok=False, reason="test_patch_failed", detail=str(error))
                raise Stop from None
        # The test files and the outside files the canaries may go into, listed with one
        # ls-files and read with one cat-file, whatever their number.
        planned = self.program.get("canaries", [])
        extra = self._outside_paths(planned, files)
        listed = self.git.index_entries(files + extra) if files or extra else {}
        expected = {p: listed[p] for p in files if p in listed}
        outside = {p: listed[p] for p in extra if p in listed and listed[p][0] != "120000"}
        contents = self.git.blobs(sorted({e[2] for e in listed.values()}))
        operations = operations_for(expected, files, contents)
        operations += self._outside_operations(outside, contents)
        operations, canaries = with_canaries(operations, planned)
        error = as_user(self.user, apply_writes, self.testbed, operations)
        restored = []
        if self.program["protection"]["policy"] == "restore" and protected:
            paths = [p["path"] for p in protected if p["path"] not in set(files)]
            entries = self.git.entries(self.base, paths)
            blobs = self.git.blobs(sorted({e[2] for e in entries.values() if e[1] == "blob"}))
            restored = operations_for(entries, paths, blobs)
        problems = [f"writing the test files: {error}"] if error else []
        problems += verify_writes(self.testbed, operations + restored)
        self.stream.event(
            "reset",
            ok=not problems,
            reason=None if not problems else "verification_failed",
            detail="; ".join(_shown_problem(p, operations + restored) for p in problems[:20]),
            test_files=len(files),
            verified=len(operations) + len(restored),
            seconds=round(time.monotonic() - started, 3),
            canaries=canaries,
        )
        if problems:
            raise Stop
        self.placed = canaries
        return operations

    def _outside_paths(self, canaries: list[dict], files: list[str]) -> list[str]:
        """The test files outside the test patch the reset writes: every one the plan
        kept, and any a canary goes into."""
        kept = set(self.program.get("outside_files") or [])
        return sorted((kept | {c["file"] for c in canaries}) - set(files))

    def _outside_operations(
        self, entries: dict[str, tuple[str, str, str]], contents: dict[str, bytes]
    ) -> list[tuple]:
        """Writes of the test files outside the test patch (``entries``: their index
        entries, links left out), each as it is in /testbed, and only where that is the
        base's file (the host drew its canaries from the base's bytes; a file the patch
        changed is left as it is). All are written, canaries or not: a file rewritten
        only when it holds canaries would tell code under test where they are."""
        found = []
        for path, (mode, _, oid) in sorted(entries.items()):
            if _read_file(os.path.join(self.testbed, path)) == contents.get(oid):
                found.append((path, "file", 0o755 if mode == "100755" else 0o644, contents[oid]))
        return found


class Stop(Exception):
    """The phases end here; the events already say why."""


def _shown_problem(problem: str, operations: list[tuple]) -> str:
    """A ``path: what`` problem of :func:`verify_writes` with its path :func:`shown`."""
    for operation in operations:
        if problem.startswith(operation[0] + ": "):
            return shown(operation[0]) + problem[len(operation[0]) :]
    return problem


def _read_file(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(1 << 24)


def read_request(fd: int, seconds: float) -> list[dict] | None:
    """The host's list of runs (JSON, one line, then end of file), or None: no word in
    time, or not a list of runs."""
    deadline = time.monotonic() + seconds
    data = b""
    while len(data) <= _REQUEST_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    try:
        runs = json.loads(data)
    except ValueError:
        return None
    keys = ("test", "expect", "command")
    if not isinstance(runs, list) or not all(
        isinstance(r, dict) and all(isinstance(r.get(k), str) for k in keys) for r in runs
    ):
        return None
    return runs
