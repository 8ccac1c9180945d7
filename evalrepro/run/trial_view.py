"""One trial's view, built where its evidence is read: the ``TrialView`` record of what
the viewer (``evalrepro view``) shows of a trial, read from the trial's folder with bounds.

Everything of a trial is hostile input, read with bounds:

* a file is opened only at a path from the trial's ``result.json`` that stays inside the
  trial's folder (no absolute path, no ``..``), walking down from the run directory
  without following a symbolic link at any step, and only if it is a regular file;
* a record file (``program.json``, ``supervisor.json``, ...) is read only up to
  ``MAX_RECORD`` bytes, and parsed as the one reader of records parses it;
* a log or patch is never read whole: the first and last KiB (and, for a log, the graded
  region's start and end, with some context) are kept, each cut said with its size;
  a window of very many short lines is cut to its first and last lines;
* lists (tests, status map, a record's fields) are cut at ``MAX_LISTED`` entries, with a
  count of the rest, and one field at ``MAX_FIELD`` characters.

So the record is bounded whatever the trial holds, and the renderer
(``evalrepro.report.view``) draws a page from it alone; what it shows is escaped and
made visible there.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from evalrepro.errors import UserError
from evalrepro.records.artifact import Artifact
from evalrepro.records.base import Record, parse_record
from evalrepro.records.labels import reason_label, stopped_by
from evalrepro.records.report import TrialRow
from evalrepro.records.rerun import RerunCheck
from evalrepro.records.supervision import SupervisorReport, TrialProgram
from evalrepro.records.trajectory import Trajectory
from evalrepro.records.trial import Attempt, TrialResult
from evalrepro.records.view import (
    ArtifactLine,
    AttemptLine,
    Row,
    RowKind,
    ShownFile,
    TestLine,
    TrialView,
    Value,
)
from evalrepro.text import clip, size

R = TypeVar("R", bound=Record)

if TYPE_CHECKING:  # the lockfile pulls in the builders' records: read where it is used
    from evalrepro.records.lockfile import LockedImage, Lockfile


@dataclass(frozen=True)
class Budget:
    """How much of a file a page shows: all of it up to ``whole`` bytes; otherwise the
    first ``head`` and last ``tail`` bytes and, for a log, the graded region's first
    ``region_head`` and last ``region_tail`` bytes with ``context`` bytes around them."""

    whole: int
    head: int
    tail: int
    region_head: int = 0
    region_tail: int = 0
    context: int = 0
    #: A run of more lines than this is cut to its first and last halves.
    max_lines: int = 2000


LOG = Budget(
    whole=192 << 10,
    head=32 << 10,
    tail=32 << 10,
    region_head=96 << 10,
    region_tail=32 << 10,
    context=2 << 10,
)
PATCH = Budget(whole=192 << 10, head=128 << 10, tail=32 << 10, max_lines=3000)
SMALL = Budget(whole=32 << 10, head=8 << 10, tail=16 << 10, max_lines=400)
#: Largest record file (program.json, supervisor.json, image.json) parsed.
MAX_RECORD = 4 << 20
#: Tests, status map entries and list items shown at most; the rest is counted.
MAX_LISTED = 2000
#: Characters of one field (a detail, a command) shown at most.
MAX_FIELD = 8000


# --- reading inside the run, without following links --------------------------------------


class Unreadable(Exception):
    """Why a file of the run is not shown (one phrase)."""


def _inside(relative: str, folder: str) -> list[str]:
    """The path's components, if it names a file inside ``folder`` of the run."""
    parts = relative.split("/")
    if (
        not relative.startswith(folder + "/")
        or any(part in ("", ".", "..") for part in parts)
        or "\0" in relative
    ):
        raise Unreadable("its recorded path leaves the trial's folder: not followed")
    return parts


def _descend(run_dir: Path, parts: list[str]) -> int:
    """A descriptor of the folder ``run_dir/parts...``, reached without following a link."""
    directory = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            try:
                step = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
            except OSError as error:
                raise Unreadable(_opening(error, folder=True)) from None
            os.close(directory)
            directory = step
    except BaseException:
        os.close(directory)
        raise
    return directory


def open_in_run(run_dir: Path, relative: str, folder: str) -> tuple[int, int]:
    """An open file descriptor of ``run_dir/relative`` and its size; every component is
    opened without following a symbolic link, and the file must be a regular file."""
    parts = _inside(relative, folder)
    directory = _descend(run_dir, parts[:-1])
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except OSError as error:
        raise Unreadable(_opening(error, folder=False)) from None
    finally:
        os.close(directory)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Unreadable("not a regular file: not read")
    return fd, info.st_size


def check_folder(run_dir: Path, folder: str) -> None:
    """``folder`` of the run is a real folder all the way down (no link), or Unreadable."""
    parts = folder.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\0" in folder:
        raise Unreadable("its path leaves the run directory: not followed")
    os.close(_descend(run_dir, parts))


def _opening(error: OSError, *, folder: bool) -> str:
    if error.errno == errno.ENOENT:
        return "missing"
    if error.errno == errno.ELOOP or (folder and error.errno == errno.ENOTDIR):
        return "a symbolic link (or one in its path): not followed"
    return f"cannot be read ({error.strerror})"


def _parsed(run_dir: Path, artifact: Artifact, folder: str, model: type[R]) -> R:
    """A record artifact read safely (``_read_record``) and parsed as the one reader of
    records parses it: its name, its schema version (an older one migrated), its model."""
    data = _read_record(run_dir, artifact, folder)
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise UserError(f"not JSON: {error}") from None
    name = PurePosixPath(artifact.path).name
    message = ""
    try:
        return parse_record(raw, model, where=name)
    except UserError as error:
        message = str(error).removeprefix(f"{name}: ")
    raise UserError(message)


def _read_record(run_dir: Path, artifact: Artifact, folder: str) -> bytes:
    fd, length = open_in_run(run_dir, artifact.path, folder)
    try:
        if length > MAX_RECORD:
            raise Unreadable(f"{size(length)}, larger than the {size(MAX_RECORD)} read")
        return os.pread(fd, MAX_RECORD, 0)
    finally:
        os.close(fd)


# --- excerpts of big, hostile text files --------------------------------------------------


def _row(kind: RowKind, text: str) -> Row:
    return Row(kind=kind, text=text)


def _absent(name: str, problem: str) -> ShownFile:
    return ShownFile(name=name, size=0, shown=0, rows=[], problem=problem)


def _windows(length: int, budget: Budget, region: tuple[int, int] | None) -> list[list[int]]:
    """The byte ranges to show, sorted and merged."""
    if length <= budget.whole:
        return [[0, length]]
    spans = [[0, budget.head], [length - budget.tail, length]]
    if region is not None:
        start, count = region
        end = start + count
        if count <= budget.region_head + budget.region_tail:
            spans.append([start - budget.context, end + budget.context])
        else:
            spans.append([start - budget.context, start + budget.region_head])
            spans.append([end - budget.region_tail, end + budget.context])
    merged: list[list[int]] = []
    for low, high in sorted([max(0, a), min(length, b)] for a, b in spans):
        if merged and low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return merged


def _lines(data: bytes, kind: RowKind, max_lines: int) -> tuple[list[Row], int]:
    """Rows of ``data`` (split at newlines) and the bytes cut when there are too many."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    cut = 0
    middle: list[bytes] = []
    if len(lines) > max_lines:
        keep = max_lines // 2
        middle = lines[keep:-keep]
        lines = [*lines[:keep], b"", *lines[-keep:]]
        cut = sum(len(line) + 1 for line in middle)
    rows = []
    for index, line in enumerate(lines):
        if middle and index == max_lines // 2:
            rows.append(_row("cut", f"\u2026 {len(middle):,} lines ({size(cut)}) not shown \u2026"))
            continue
        rows.append(_row(kind, line.decode("utf-8", "replace").removesuffix("\r")))
    return rows, cut


def excerpt(
    fd: int, length: int, budget: Budget, region: tuple[int, int] | None = None
) -> tuple[list[Row], int]:
    """The rows shown of an open file of ``length`` bytes, and how many bytes they show;
    with ``region`` (offset, length), the rows inside it are ``graded``, marked where it
    starts and ends."""
    start, end = (region[0], region[0] + region[1]) if region is not None else (-1, -1)
    rows: list[Row] = []
    shown, position, marked = 0, 0, False

    def mark_empty(at: int) -> None:
        nonlocal marked
        if region is not None and start == end == at and not marked:
            rows.append(_row("mark", _region_note(start, end)))
            marked = True

    for low, high in _windows(length, budget, region):
        if low > position:
            rows.append(_cut_row(position, low, length, start <= position and low <= end))
        data = os.pread(fd, high - low, low)
        high = low + len(data)  # the file may have shrunk meanwhile
        bounds = sorted({low, high, *(b for b in (start, end) if low < b < high)})
        for a, b in itertools.pairwise(bounds):
            mark_empty(a)
            graded = start <= a and b <= end
            if graded and a == start:
                rows.append(_row("mark", _region_note(start, end)))
            part, cut = _lines(
                data[a - low : b - low], "graded" if graded else "line", budget.max_lines
            )
            rows += part
            shown += (b - a) - cut
            if graded and b == end:
                rows.append(_row("mark", "\u25b2 end of the graded region"))
        mark_empty(high)
        position = high
    if position < length:
        rows.append(_cut_row(position, length, length, start <= position < end))
    return rows, shown


def _region_note(start: int, end: int) -> str:
    if start == end:
        return f"\u25bc the graded region is empty (0 bytes at byte {start:,})"
    return (
        f"\u25bc graded region: bytes {start:,} to {end:,} ({size(end - start)}), "
        "as the supervisor recorded it"
    )


def _cut_row(low: int, high: int, length: int, graded: bool) -> Row:
    inside = " (inside the graded region)" if graded else ""
    return _row(
        "cut",
        f"\u2026 {size(high - low)} not shown{inside}: bytes {low:,} to {high:,} of "
        f"{length:,} \u2026",
    )


def show_file(
    run_dir: Path,
    artifact: Artifact | None,
    folder: str,
    budget: Budget,
    name: str,
    region: tuple[int, int] | None = None,
) -> ShownFile:
    if artifact is None:
        return _absent(name, "not recorded for this attempt")
    try:
        fd, length = open_in_run(run_dir, artifact.path, folder)
    except Unreadable as why:
        return _absent(name, str(why))
    notes = []
    try:
        if region is not None and (region[0] < 0 or region[1] < 0 or sum(region) > length):
            notes.append(
                f"The recorded region (bytes {region[0]:,} to {sum(region):,}) lies outside "
                f"the file of {length:,} bytes (changed since?): nothing is marked."
            )
            region = None
        rows, shown = excerpt(fd, length, budget, region)
    finally:
        os.close(fd)
    if length != artifact.size:
        notes.append(
            f"On disk it is {length:,} bytes; the attempt recorded {artifact.size:,} "
            "(changed since it was recorded)."
        )
    return ShownFile(name=name, size=length, shown=shown, rows=rows, notes=notes)


_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_META = (
    "diff ",
    "index ",
    "new file mode",
    "deleted file mode",
    "old mode",
    "new mode",
    "similarity index",
    "dissimilarity index",
    "rename ",
    "copy ",
    "Binary files",
    "GIT binary patch",
)


def diff_rows(rows: list[Row]) -> list[Row]:
    """Rows of a patch classified as added, removed, hunk header, file header, meta or
    context; a hunk's body is counted by its header, as patch tools read it, so a removed
    line that starts with ``--`` is not taken for a file header."""
    out: list[Row] = []
    old = new = 0
    for row in rows:
        if row.kind != "line":
            old = new = 0  # a cut: the hunk's counts no longer hold
            out.append(row)
            continue
        text, kind = row.text, None
        if old > 0 or new > 0:
            first = text[:1]
            if first == "+":
                new, kind = new - 1, "add"
            elif first == "-":
                old, kind = old - 1, "del"
            elif first in (" ", ""):
                old, new, kind = old - 1, new - 1, "ctx"
            elif first == "\\":
                kind = "meta"
            else:
                old = new = 0
        if kind is None:
            hunk = _HUNK.match(text)
            if hunk:
                kind = "hunk"
                old = int(hunk.group(1)) if hunk.group(1) is not None else 1
                new = int(hunk.group(2)) if hunk.group(2) is not None else 1
            elif text.startswith(("+++ ", "--- ")):
                kind = "file"
            elif text.startswith(_META):
                kind = "meta"
            elif text.startswith("+"):
                kind = "add"
            elif text.startswith("-"):
                kind = "del"
            else:
                kind = "ctx"
        out.append(_row(kind, text))
    return out


# --- one trial's view ------------------------------------------------------------------


def _value(name: str, lines: list[str]) -> Value:
    return Value(name=name, lines=lines)


def _text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value[:MAX_LISTED]) or "none"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    return clip(value, MAX_FIELD)


def _value_lines(value: Any) -> list[str]:
    """A field's value as lines of text: lists item by item, models field by field."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        items = list(value.items())
        lines = [f"{k}: {_text(v)}" for k, v in items[:MAX_LISTED]]
        if len(items) > MAX_LISTED:
            lines.append(f"and {len(items) - MAX_LISTED:,} more")
        return lines or ["none"]
    if isinstance(value, list | tuple):
        lines = []
        for item in value[:MAX_LISTED]:
            if isinstance(item, BaseModel):
                item = item.model_dump(mode="json")
            if isinstance(item, dict):
                lines.append(", ".join(f"{k}: {_text(v)}" for k, v in item.items()))
            elif isinstance(item, list | tuple):
                lines.append(" ".join(_text(v) for v in item))
            else:
                lines.append(_text(item))
        if len(value) > MAX_LISTED:
            lines.append(f"and {len(value) - MAX_LISTED:,} more")
        return lines or ["none"]
    return [_text(value)]


def _record_values(record: BaseModel, skip: Iterable[str] = ()) -> list[Value]:
    skipped = {"record", "schema_version", *skip}
    return [
        _value(name, _value_lines(getattr(record, name)))
        for name in type(record).model_fields
        if name not in skipped
    ]


def _observation_values(attempt: Attempt) -> list[Value]:
    seen = attempt.observation
    values = []
    for item in _record_values(seen, skip=("status_map", "tests")):
        # An empty patch is the target's answer, never a broken one: say what it is.
        if seen.patch_problem == "empty" and item.name == "patch_status":
            item = _value(item.name, ["empty patch: nothing to apply, no container ran"])
        elif seen.patch_problem == "empty" and item.name == "patch_problem":
            item = _value(item.name, ["empty patch"])
        elif item.name == "suspects" and seen.suspects:
            # Each finding in the words its record carries, with the line itself.
            item = _value(item.name, [s.sentence for s in seen.suspects[:MAX_LISTED]])
        values.append(item)
    return values


_PROGRAM_LABELS = {
    "base_commit": "base commit",
    "test_command": "test command",
    "test_files": "test files (written as base + test patch, then verified)",
    "test_patch_empty": "test patch empty",
    "patch_commands": "patch methods, tried in order",
    "protection": "protection of test infrastructure",
    "user": "test user",
    "limits": "limits (bytes; timeout in seconds)",
    "testbed": "repository in the sandbox",
    "git_dir": "harness's git store",
    "patch": "model patch (mounted)",
    "test_patch": "test patch (mounted)",
    "guard_source": "exit guard (mounted)",
    "guard": "exit guard on",
    "user_namespace": "tests in a user namespace of their own",
    "allow_user_namespaces": "tests may create user namespaces",
}


def _program_values(program: TrialProgram) -> list[Value]:
    values = []
    order = [*_PROGRAM_LABELS, *type(program).model_fields]
    for name in dict.fromkeys(order):
        if name in {"record", "schema_version"} or name not in type(program).model_fields:
            continue
        value = getattr(program, name)
        if name == "patch_commands":
            lines = [f"{method}: {' '.join(argv)}" for method, argv in value]
        elif name == "limits":
            lines = [f"{k}: {_limit(k, v)}" for k, v in value.items()]
        else:
            lines = _value_lines(value)
        values.append(_value(_PROGRAM_LABELS.get(name, name), lines))
    return values


def _limit(name: str, value: int) -> str:
    if name == "timeout":
        return f"{value} s"
    return f"{value:,}" if name == "pids" else size(value)


@dataclass(frozen=True)
class _Tests:
    lines: list[TestLine]
    #: Over every listed test, the shown and the cut alike.
    total: int = 0
    failed: int = 0
    not_run: int = 0


def _test_lines(attempt: Attempt) -> _Tests:
    """Each FAIL_TO_PASS and PASS_TO_PASS test as the log reported it (each list cut at
    ``MAX_LISTED``), and how many of them all failed or did not run."""
    tests = attempt.observation.tests
    if tests is None:
        return _Tests([])
    statuses = attempt.observation.status_map
    reruns = {check.test: check for check in attempt.observation.reruns}
    tampered = attempt.score.reason == "runner_tampered"
    # A test the log does not report, in tests a timeout or a limit stopped, never ran to
    # its end: "not run: timeout", not "failed / not in the status map".
    stopped = stopped_by(attempt.observation)
    missing = f"not run: {stopped}" if stopped else "not in the status map"
    lines, total, failed, not_run_count = [], 0, 0, 0
    for group, report in (
        ("FAIL_TO_PASS", tests.fail_to_pass),
        ("PASS_TO_PASS", tests.pass_to_pass),
    ):
        listed = [(t, False) for t in report.failure] + [(t, True) for t in report.success]
        total += len(listed)
        for index, (test, passed) in enumerate(listed):
            not_run = bool(stopped) and test not in statuses
            not_run_count += not_run
            failed += not passed and not not_run
            if index >= MAX_LISTED:
                continue
            status = statuses.get(test, missing)
            rerun = _rerun_text(reruns[test], tampered) if test in reruns else ""
            lines.append(
                TestLine(
                    group=group,
                    test=clip(test, 1000),
                    passed=passed,
                    status=clip(status, 200),
                    rerun=rerun,
                    not_run=not_run,
                )
            )
    return _Tests(lines, total, failed, not_run_count)


def _rerun_text(check: RerunCheck, tampered: bool = False) -> str:
    runs = len(check.outcomes)
    if check.flaky and tampered:
        # The runner said "passed" for a must-fail canary too: its word is worth nothing.
        return (
            f"passed alone on re-run {check.outcomes.index('passed') + 1} of {runs}, "
            "not judged: the runner was tampered with"
        )
    if check.flaky:
        return f"flaky: passed alone on re-run {check.outcomes.index('passed') + 1} of {runs}"
    if not runs:
        return "not re-run"
    return f"{', '.join(dict.fromkeys(check.outcomes))} alone in {runs} re-run" + "s" * (runs > 1)


def _artifact_lines(run_dir: Path, attempt: Attempt, folder: str) -> list[ArtifactLine]:
    lines = []
    for artifact in attempt.artifacts:
        try:
            fd, length = open_in_run(run_dir, artifact.path, folder)
            os.close(fd)
            ok = length == artifact.size
            state = "on disk, size as recorded" if ok else f"on disk with {length:,} bytes"
        except Unreadable as why:
            state, ok = str(why), False
        lines.append(
            ArtifactLine(
                name=artifact.path.rsplit("/", 1)[-1],
                media_type=artifact.media_type,
                size=artifact.size,
                sha256=artifact.sha256,
                state=state,
                ok=ok,
            )
        )
    return lines


def _by_name(attempt: Attempt) -> dict[str, Artifact]:
    return {a.path.rsplit("/", 1)[-1]: a for a in attempt.artifacts}


def trial_view(
    run_dir: Path, row: TrialRow, result: TrialResult | None, images: LockedImages
) -> TrialView:
    """The view of the trial of ``row`` in the run at ``run_dir`` (resolved): everything
    of its final attempt (the one its score is), read with bounds; ``images``: the run's
    locked images, of which the trial's is shown unless the attempt kept an image.json.
    A trial without a result (or one whose folder is a link) has a view that says so."""
    if result is None or not result.attempts:
        return TrialView(trial_id=row.trial_id, folder=row.folder)
    try:
        check_folder(run_dir, row.folder)
    except Unreadable as why:
        # Its result.json was read through the link; nothing more is.
        return TrialView(
            trial_id=row.trial_id,
            folder=row.folder,
            withheld=f"{row.folder}: {why}; its records are not shown here.",
        )
    return TrialView(
        trial_id=row.trial_id,
        folder=row.folder,
        **_attempt_facts(result),
        **_evidence(run_dir, row.folder, result.attempts[-1], images.values(row.trial_id)),
    )


def trial_views(
    run_dir: Path,
    rows: Sequence[TrialRow],
    results: Mapping[str, TrialResult],
    lockfile: Lockfile | None = None,
) -> list[TrialView]:
    """The view of each trial of ``rows`` (a run report's, in its order); ``lockfile``:
    the run's (read from the run directory when not given), for each trial's image."""
    run_dir = run_dir.resolve()
    images = LockedImages(lockfile) if lockfile is not None else LockedImages.of_run(run_dir)
    return [trial_view(run_dir, row, results.get(row.trial_id), images) for row in rows]


def _attempt_facts(result: TrialResult) -> dict[str, Any]:
    """What the trial's result records (no file read): its attempts, its last attempt's
    tests, status map, re-runs and observation, in words."""
    attempt = result.attempts[-1]
    seen = attempt.observation
    tests = _test_lines(attempt)
    statuses = list(seen.status_map.items())
    return {
        "attempts": [
            AttemptLine(
                number=a.number,
                reason=a.reason,
                started_at=a.started_at,
                wall=(a.finished_at - a.started_at).total_seconds(),
                outcome=a.score.outcome,
                score_reason=a.score.reason,
                score_detail=a.score.detail,
                infrastructure_error=a.observation.infrastructure_error,
            )
            for a in result.attempts
        ],
        "resolution": attempt.score.resolution,
        "tests_note": _tests_note(attempt),
        "tests": tests.lines,
        "tests_total": tests.total,
        "tests_failed": tests.failed,
        "tests_not_run": tests.not_run,
        "parser": seen.parser,
        "status_map": [(clip(t, 1000), clip(s, 200)) for t, s in statuses[:MAX_LISTED]],
        "status_map_total": len(statuses),
        "flaky_tests": len(seen.flaky_tests),
        "flaky_counts_as": seen.flaky_counts_as,
        "tampered": attempt.score.reason == "runner_tampered",
        "rerun_times": seen.rerun_times,
        "rerun_note": seen.rerun_note,
        "observation": _observation_values(attempt),
    }


def _tests_note(attempt: Attempt) -> str:
    """Why no test list is shown, or how far the one shown holds ("" when it all does)."""
    seen = attempt.observation
    stopped = stopped_by(seen)
    limit = f" ({clip(seen.limit_detail, 500)})" if seen.limit_detail else ""
    if seen.tests is None and seen.execution_status == "not_run":
        return f"Not graded: no tests ran ({reason_label(attempt.score.reason)})."
    if seen.tests is None and stopped:
        # The host's deadline (or a limit) ended the container before the tests reported:
        # nothing to grade, and the reason is the stop, not the parser.
        return (
            f"Not run: {stopped}{limit}. The tests did not report before it; nothing was "
            "graded and the trial is invalid."
        )
    if seen.tests is None:
        return f"Not graded: the log's parser status is {seen.parser_status}" + (
            f" ({clip(seen.parser_detail, 500)})." if seen.parser_detail else "."
        )
    if stopped:
        return (
            f"Stopped: {stopped}{limit}. The tests the log does not report did not run to "
            "their end (not run); the trial is invalid."
        )
    return ""


def _evidence(run_dir: Path, folder: str, attempt: Attempt, image: list[Value]) -> dict[str, Any]:
    """What the attempt's files hold, each read inside ``folder`` with its bounds."""
    files = _by_name(attempt)
    found: dict[str, Any] = {"artifacts": _artifact_lines(run_dir, attempt, folder)}
    found["patch"] = _diff(show_file(run_dir, files.get("patch.diff"), folder, PATCH, "patch.diff"))
    found["test_patch"] = _diff(
        show_file(run_dir, files.get("test.patch"), folder, PATCH, "test.patch")
    )
    log_notes: list[str] = []
    region = None
    supervisor = files.get("supervisor.json")
    supervisor_problem = ""
    if supervisor is not None:
        try:
            report = _parsed(run_dir, supervisor, folder, SupervisorReport)
        except Unreadable as why:
            supervisor_problem = f"supervisor.json: {why}"
        except UserError as error:
            supervisor_problem = f"supervisor.json is not a supervisor report ({error})"
        else:
            found["supervisor"] = _record_values(report)
            if report.region is not None:
                region = (report.region.offset, report.region.length)
            else:
                log_notes.append("The supervisor recorded no graded region: the tests did not run.")
    found["supervisor_problem"] = supervisor_problem
    if "foreign.json" in files:
        log_notes.append(
            "This log was written by another harness (evalrepro regrade): there is no "
            "supervisor record, so no graded region is marked here. It was graded between "
            "SWE-bench's marker lines, by the reading rules below."
        )
        found["foreign"] = _json_values(run_dir, files["foreign.json"], folder)
    elif supervisor is None:
        log_notes.append("No supervisor record for this attempt: no graded region is marked.")
    elif supervisor_problem:
        log_notes.append(f"{supervisor_problem}: no graded region is marked.")
    found["log_notes"] = log_notes
    found["log"] = show_file(
        run_dir, files.get("test_output.txt"), folder, LOG, "test_output.txt", region
    )
    program = files.get("program.json")
    if program is None:
        found["program_problem"] = (
            "No program.json: this attempt ran no eval script of evalrepro's."
        )
    else:
        try:
            found["program"] = _program_values(_parsed(run_dir, program, folder, TrialProgram))
        except Unreadable as why:
            found["program_problem"] = f"program.json: {why}"
        except UserError as error:
            found["program_problem"] = f"program.json is not a trial program ({error})"
    if "image.json" in files:  # an attempt of evalrepro 0.2: its own record of the image
        found["image"] = _json_values(run_dir, files["image.json"], folder)
        found["image_source"] = "image.json"
    else:
        found["image"] = image
    if "runtime.log" in files:
        found["runtime_log"] = show_file(
            run_dir, files["runtime.log"], folder, SMALL, "runtime.log"
        )
    if "agent.json" in files:
        found["agent"] = _json_values(run_dir, files["agent.json"], folder)
        for name in ("trajectory.json", "agent_log.txt"):
            if name in files:
                found["agent_log"] = show_file(run_dir, files[name], folder, LOG, name)
                found["agent_log_name"] = name
                break
        if "trajectory.json" in files:
            try:
                found["trajectory"] = _parsed(run_dir, files["trajectory.json"], folder, Trajectory)
            except Unreadable as why:
                found["trajectory_problem"] = f"trajectory.json: {why}"
            except UserError as error:
                found["trajectory_problem"] = f"trajectory.json is not a trajectory ({error})"
    return found


def _json_values(run_dir: Path, artifact: Artifact, folder: str) -> list[Value]:
    try:
        data = json.loads(_read_record(run_dir, artifact, folder))
    except Unreadable as why:
        return [_value("problem", [str(why)])]
    except (ValueError, RecursionError):
        return [_value("problem", ["not JSON"])]
    if not isinstance(data, dict):
        return [_value("value", _value_lines(data))]
    return [_value(str(k), _value_lines(v)) for k, v in list(data.items())[:MAX_LISTED]]


#: Layers of one image chain shown at most (a chain is a handful: base, env, instance).
MAX_LAYERS = 16


class LockedImages:
    """The image each planned trial runs in, from the lockfile's locked images: the
    trial's layer (its ``image_key``) and the layers under it, instance layer first."""

    def __init__(self, lockfile: Lockfile | None) -> None:
        self.by_key: dict[str, LockedImage] = {}
        self.trial_keys: dict[str, str] = {}
        if lockfile is not None:
            self.by_key = {image.key: image for image in lockfile.environment.images}
            self.trial_keys = {trial.trial_id: trial.image_key for trial in lockfile.trials}

    @classmethod
    def of_run(cls, run_dir: Path) -> LockedImages:
        """The run directory's lockfile's; none when it cannot be read (the report says
        what is wrong with it)."""
        from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile

        try:
            return cls(read_lockfile(run_dir / LOCKFILE_NAME, checked=False))
        except UserError:
            return cls(None)

    def values(self, trial_id: str) -> list[Value]:
        key = self.trial_keys.get(trial_id, "")
        if not key:
            return []
        first = self.by_key.get(key)
        if first is not None and first.builder == "recorded":
            source = (
                "the lockfile: another harness ran the tests, in an image nobody here built; "
                "what is locked is the log, by its digest"
            )
        else:
            source = "the lockfile: the trial's locked image, by its image key"
        values = [_value("from", [source])]
        seen: set[str] = set()
        while key and key not in seen and len(seen) < MAX_LAYERS:
            seen.add(key)
            image = self.by_key.get(key)
            if image is None:
                values.append(
                    _value("problem", [f"image {clip(key, 80)} is not among the locked images"])
                )
                break
            values.append(_value(f"{clip(image.layer, 100)} layer", _layer_lines(image)))
            key = image.parent_key or ""
        return values


def _layer_lines(image: LockedImage) -> list[str]:
    lines = [
        f"tag: {_text(image.tag)}",
        f"image digest: {_text(image.image_digest)}",
        f"builder: {_text(image.builder)}",
        f"key: {_text(image.key)}",
        f"inputs digest: {_text(image.inputs_digest)}",
        f"package manifest: {_text(image.package_manifest_digest)}",
    ]
    for pin in image.inputs[:MAX_LISTED]:
        named = " ".join(_text(part) for part in (pin.kind, pin.name, pin.version) if part)
        lines.append(f"input: {named} {_text(pin.digest)}")
    if len(image.inputs) > MAX_LISTED:
        lines.append(f"and {len(image.inputs) - MAX_LISTED:,} more inputs")
    return lines


def _diff(shown: ShownFile) -> ShownFile:
    if shown.problem is not None:
        return shown
    return ShownFile(
        name=shown.name,
        size=shown.size,
        shown=shown.shown,
        rows=diff_rows(shown.rows),
        notes=shown.notes,
    )
