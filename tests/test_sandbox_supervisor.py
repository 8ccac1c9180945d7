"""The supervisor's tree and guard helpers, on real files, real git and real bytes.

What is guaranteed (the supervisor's modules in ``evalrepro/sandbox/``):

* ``snapshot`` / ``changed_paths`` list exactly what a tool changed under a root: new,
  rewritten and deleted files, changes of kind (file -> link, directory -> file), never
  a directory whose only change is an entry inside it, never anything under ``.git``,
  never anything reached through a symbolic link;
* ``escaping_links`` finds, among changed paths, the links that resolve outside the tree
  or into its ``.git`` (through other links too);
* ``apply_writes`` writes the expected state (content, executable bit, links, folders,
  absent paths) whatever the umask, and never through a symbolic link or a file that
  sits where a parent folder should be: those are replaced by real directories;
* ``verify_writes`` is empty exactly when every path is as written, and names each kind
  of mismatch (parent not a directory, missing, content, executable bit, link target,
  kind, a path that should not exist);
* ``GuardRecords`` turns the exit guard's untrusted lines into the runner's exit:
  ``clean`` only when every runner wrote its exit line with its streams in place,
  ``abnormal`` when one did not (``os._exit``) or had its output sent away, ``unknown``
  when no runner reported; malformed and overlong lines are ignored, records bounded;
* ``neutralize`` prefixes every line that could pose as a harness line (``>>>>>``);
* the reset's git writes its blobs (base + test patch, no canaries) into root's private
  folder, never into the harness's store; ``lock_away`` makes a folder of the test
  user's root's alone, and ``still_readable``, run as the test user, names what it can
  still list or read.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evalrepro.sandbox import ARCHIVE_PACKAGE, shipped_supervisor
from evalrepro.sandbox.confine import no_user_namespaces_filter
from evalrepro.sandbox.exitguard import _GUARD_LINE, GuardRecords
from evalrepro.sandbox.protocol import neutralize
from evalrepro.sandbox.tree import changed_paths, escaping_links, snapshot
from evalrepro.sandbox.writes import apply_writes, operations_for, verify_writes

# --- snapshot / changed_paths --------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small repository tree: a package, a nested folder, a .git folder."""
    root = tmp_path / "testbed"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (root / "pkg" / "sub" / "deep.py").write_text("DEEP = 1\n")
    (root / "README.md").write_text("readme\n")
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("docs\n")
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def changes(root: Path, act) -> list[str]:
    before = snapshot(str(root))
    act()
    return changed_paths(before, snapshot(str(root)))


def test_an_untouched_tree_has_no_changes(tree):
    assert changes(tree, lambda: None) == []


def test_the_snapshot_holds_every_entry_but_git(tree):
    assert sorted(snapshot(str(tree))) == [
        "README.md",
        "docs",
        "docs/index.md",
        "pkg",
        "pkg/mod.py",
        "pkg/sub",
        "pkg/sub/deep.py",
    ]


def test_a_new_file_is_listed(tree):
    assert changes(tree, lambda: (tree / "NEW.txt").write_text("new\n")) == ["NEW.txt"]


def test_a_rewritten_file_is_listed(tree):
    assert changes(tree, lambda: (tree / "README.md").write_text("other text\n")) == ["README.md"]


def test_a_file_rewritten_in_place_with_same_size_content_by_another_process_is_listed(tree):
    # As a patch tool does it: another process, the same inode, the same size.
    path = tree / "pkg" / "mod.py"
    script = f"open({str(path)!r}, 'r+b').write(b'VALUE = 2\\n')"
    inode = path.stat().st_ino
    found = changes(tree, lambda: subprocess.run([sys.executable, "-c", script], check=True))
    assert (path.read_text(), path.stat().st_ino) == ("VALUE = 2\n", inode)
    assert found == ["pkg/mod.py"]


def test_a_deleted_file_is_listed(tree):
    assert changes(tree, lambda: (tree / "README.md").unlink()) == ["README.md"]


def test_a_file_replaced_by_a_symlink_is_listed(tree):
    def replace():
        (tree / "README.md").unlink()
        (tree / "README.md").symlink_to("docs/index.md")

    assert changes(tree, replace) == ["README.md"]


def test_a_directory_replaced_by_a_file_lists_it_and_what_it_held(tree):
    def replace():
        shutil.rmtree(tree / "docs")
        (tree / "docs").write_text("now a file\n")

    assert changes(tree, replace) == ["docs", "docs/index.md"]


def test_a_change_inside_a_subdirectory_does_not_list_the_directory_itself(tree):
    def edit():
        (tree / "pkg" / "sub" / "deep.py").write_text("DEEP = 2  # changed\n")
        (tree / "pkg" / "sub" / "added.py").write_text("ADDED = 1\n")
        (tree / "docs" / "index.md").unlink()

    assert changes(tree, edit) == ["docs/index.md", "pkg/sub/added.py", "pkg/sub/deep.py"]


def test_a_new_directory_is_listed_with_its_files(tree):
    def add():
        (tree / "pkg" / "new").mkdir()
        (tree / "pkg" / "new" / "x.py").write_text("X = 1\n")

    assert changes(tree, add) == ["pkg/new", "pkg/new/x.py"]


def test_changes_under_git_folders_are_skipped_at_any_depth(tree):
    (tree / "vendored" / ".git").mkdir(parents=True)

    def touch_git():
        (tree / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
        (tree / ".git" / "objects" / "ab").write_bytes(b"\0object")
        (tree / "vendored" / ".git" / "config").write_text("[core]\n")

    assert changes(tree, touch_git) == []


def test_a_symlinked_directory_is_one_entry_and_is_not_followed(tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    assert changes(tree, lambda: (outside / "planted.py").write_text("x\n")) == []
    assert "linked" in snapshot(str(tree))
    assert not any(path.startswith("linked/") for path in snapshot(str(tree)))


# --- escaping_links ----------------------------------------------------------------------


def test_links_that_resolve_outside_the_tree_or_into_git_are_found(tree, tmp_path):
    (tmp_path / "outside.txt").write_text("secret\n")
    (tree / "abs").symlink_to(tmp_path / "outside.txt")
    (tree / "pkg" / "up").symlink_to("../../outside.txt")
    (tree / "pkg" / "git").symlink_to("../.git/HEAD")
    (tree / "hop").symlink_to("pkg/up")  # outside through another link
    paths = ["abs", "hop", "pkg/git", "pkg/up"]
    assert escaping_links(str(tree), paths) == [
        f"a symbolic link that leaves the repository (abs -> {tmp_path / 'outside.txt'})",
        "a symbolic link that leaves the repository (hop -> pkg/up)",
        "a symbolic link that leaves the repository (pkg/git -> ../.git/HEAD)",
        "a symbolic link that leaves the repository (pkg/up -> ../../outside.txt)",
    ]


def test_links_inside_the_tree_and_other_paths_are_not_found(tree):
    (tree / "pkg" / "alias.py").symlink_to("mod.py")
    (tree / "top").symlink_to(".")
    (tree / "dangling").symlink_to("pkg/not_there.py")
    paths = ["pkg/alias.py", "top", "dangling", "pkg/mod.py", "pkg", "gone.py"]
    assert escaping_links(str(tree), paths) == []


def test_only_the_listed_paths_are_looked_at(tree, tmp_path):
    (tree / "abs").symlink_to(tmp_path)
    assert escaping_links(str(tree), ["README.md"]) == []


# --- apply_writes / verify_writes ----------------------------------------------------


@pytest.fixture
def umask_077():
    """A restrictive umask: the executable bit must come from the operation, not it."""
    old = os.umask(0o077)
    yield
    os.umask(old)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_apply_then_verify_round_trips_files_modes_folders_and_absent_paths(tmp_path, umask_077):
    root = tmp_path / "testbed"
    root.mkdir()
    (root / "gone.py").write_text("to be removed\n")
    (root / "was_dir").mkdir()
    (root / "was_dir" / "inner.txt").write_text("inner\n")
    operations = [
        ("tests/test_a.py", "file", 0o644, b"def test_a():\n    assert True\n"),
        ("tests/run.sh", "file", 0o755, b"#!/bin/sh\nexit 0\n"),
        ("tests/data", "dir", 0o755, b""),
        ("tests/empty.txt", "file", 0o644, b""),
        ("gone.py", "absent", 0, b""),
        ("was_dir", "file", 0o644, b"a file now\n"),
        ("never/there.py", "absent", 0, b""),
    ]
    apply_writes(str(root), operations)
    assert verify_writes(str(root), operations) == []
    assert (root / "tests" / "test_a.py").read_bytes() == operations[0][3]
    assert mode_of(root / "tests" / "test_a.py") == 0o644
    assert mode_of(root / "tests" / "run.sh") == 0o755
    assert (root / "tests" / "data").is_dir()
    assert not (root / "gone.py").exists()
    assert (root / "was_dir").read_bytes() == b"a file now\n"


def test_writing_a_file_replaces_the_old_content_and_mode(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    old = root / "tool.py"
    old.write_text("a much longer old content than the new one\n")
    old.chmod(0o755)
    operations = [("tool.py", "file", 0o644, b"new\n")]
    apply_writes(str(root), operations)
    assert (old.read_bytes(), mode_of(old)) == (b"new\n", 0o644)
    assert verify_writes(str(root), operations) == []


def test_a_dir_operation_keeps_an_existing_directory_and_its_contents(tmp_path):
    root = tmp_path / "testbed"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "kept.py").write_text("kept\n")
    apply_writes(str(root), [("tests", "dir", 0o755, b"")])
    assert (root / "tests" / "kept.py").read_text() == "kept\n"


def test_a_symlink_from_the_git_store_round_trips(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    entries = {
        "tests/link.py": ("120000", "blob", "1" * 40),
        "tests/target.py": ("100644", "blob", "2" * 40),
    }
    contents = {"1" * 40: b"target.py", "2" * 40: b"X = 1\n"}
    operations = operations_for(entries, sorted(entries), contents)
    apply_writes(str(root), operations)
    assert os.readlink(root / "tests" / "link.py") == "target.py"
    assert verify_writes(str(root), operations) == []


def test_a_symlink_in_a_parent_position_is_replaced_by_a_directory(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "tests").symlink_to(outside, target_is_directory=True)
    operations = [("tests/sub/test_x.py", "file", 0o644, b"planted?\n")]
    apply_writes(str(root), operations)
    assert not (root / "tests").is_symlink()
    assert (root / "tests").is_dir()
    assert (root / "tests" / "sub" / "test_x.py").read_bytes() == b"planted?\n"
    assert list(outside.iterdir()) == []
    assert verify_writes(str(root), operations) == []


def test_a_file_in_a_parent_position_is_replaced_by_a_directory(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    (root / "tests").write_text("a file where a folder belongs\n")
    operations = [("tests/test_x.py", "file", 0o644, b"x\n")]
    apply_writes(str(root), operations)
    assert (root / "tests").is_dir()
    assert verify_writes(str(root), operations) == []


def test_a_symlink_at_the_path_itself_is_replaced_not_written_through(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("untouched\n")
    (root / "conftest.py").symlink_to(outside / "victim.txt")
    operations = [("conftest.py", "file", 0o644, b"# base\n")]
    apply_writes(str(root), operations)
    assert not (root / "conftest.py").is_symlink()
    assert (root / "conftest.py").read_bytes() == b"# base\n"
    assert (outside / "victim.txt").read_text() == "untouched\n"


def test_removing_a_path_under_a_planted_symlink_deletes_nothing_outside(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n")
    (root / "tests").symlink_to(outside, target_is_directory=True)
    operations = [("tests/precious.txt", "absent", 0, b"")]
    apply_writes(str(root), operations)
    assert (outside / "precious.txt").read_text() == "keep me\n"
    assert not (root / "tests").is_symlink()
    assert verify_writes(str(root), operations) == []


def test_a_folder_and_its_files_both_absent_leave_no_folder(tmp_path):
    # A patch that adds a folder in a test folder: both are restored to absent.
    root = tmp_path / "testbed"
    (root / "tests" / "sub").mkdir(parents=True)
    (root / "tests" / "sub" / "test_new.py").write_text("x = 1\n")
    operations = [("tests/sub", "absent", 0, b""), ("tests/sub/test_new.py", "absent", 0, b"")]
    apply_writes(str(root), operations)
    assert not (root / "tests" / "sub").exists()
    assert verify_writes(str(root), operations) == []


def test_a_dir_operation_replaces_a_symlink_to_a_directory(tmp_path):
    root = tmp_path / "testbed"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "tests").symlink_to(outside, target_is_directory=True)
    apply_writes(str(root), [("tests", "dir", 0o755, b"")])
    assert (root / "tests").is_dir() and not (root / "tests").is_symlink()


@pytest.fixture
def written(tmp_path) -> Path:
    """A root where tests/test_a.py (0644) and tests/run.sh (0755) are as expected."""
    root = tmp_path / "testbed"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_bytes(b"A\n")
    (root / "tests" / "test_a.py").chmod(0o644)
    (root / "tests" / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "tests" / "run.sh").chmod(0o755)
    return root


EXPECTED_A = ("tests/test_a.py", "file", 0o644, b"A\n")
EXPECTED_RUN = ("tests/run.sh", "file", 0o755, b"#!/bin/sh\n")


def test_verify_is_empty_when_the_files_are_as_expected(written):
    assert verify_writes(str(written), [EXPECTED_A, EXPECTED_RUN]) == []


def test_verify_reports_a_content_difference(written):
    (written / "tests" / "test_a.py").write_bytes(b"B\n")
    assert verify_writes(str(written), [EXPECTED_A]) == [
        "tests/test_a.py: content differs from the expected file"
    ]


def test_verify_reports_content_appended_after_the_expected_bytes(written):
    (written / "tests" / "test_a.py").write_bytes(b"A\nimport evil\n")
    assert verify_writes(str(written), [EXPECTED_A]) == [
        "tests/test_a.py: content differs from the expected file"
    ]


def test_verify_reports_an_executable_bit_difference_both_ways(written):
    (written / "tests" / "test_a.py").chmod(0o755)
    (written / "tests" / "run.sh").chmod(0o644)
    assert verify_writes(str(written), [EXPECTED_A, EXPECTED_RUN]) == [
        "tests/test_a.py: executable bit differs",
        "tests/run.sh: executable bit differs",
    ]


def test_verify_reports_a_missing_file(written):
    (written / "tests" / "test_a.py").unlink()
    assert verify_writes(str(written), [EXPECTED_A]) == ["tests/test_a.py: missing"]


def test_verify_reports_a_parent_that_is_a_symlink_even_if_the_content_matches(written, tmp_path):
    outside = tmp_path / "outside"
    shutil.move(written / "tests", outside)
    (written / "tests").symlink_to(outside, target_is_directory=True)
    assert (written / "tests" / "test_a.py").read_bytes() == b"A\n"  # right bytes, via a link
    assert verify_writes(str(written), [EXPECTED_A]) == [
        "tests/test_a.py: a parent folder is not a directory"
    ]


def test_verify_reports_a_parent_that_is_a_file(written):
    shutil.rmtree(written / "tests")
    (written / "tests").write_text("not a folder\n")
    assert verify_writes(str(written), [EXPECTED_A]) == [
        "tests/test_a.py: a parent folder is not a directory"
    ]


def test_verify_reports_a_link_with_another_target(written):
    (written / "tests" / "link.py").symlink_to("other.py")
    assert verify_writes(str(written), [("tests/link.py", "link", 0, b"test_a.py")]) == [
        "tests/link.py: not the expected symbolic link"
    ]


def test_verify_reports_a_file_where_a_link_is_expected(written):
    assert verify_writes(str(written), [("tests/test_a.py", "link", 0, b"run.sh")]) == [
        "tests/test_a.py: not the expected symbolic link"
    ]


def test_verify_reports_a_link_where_a_file_is_expected(written):
    (written / "tests" / "test_a.py").unlink()
    (written / "tests" / "test_a.py").symlink_to("run.sh")
    assert verify_writes(str(written), [EXPECTED_A]) == ["tests/test_a.py: not a regular file"]


def test_verify_reports_a_file_where_a_directory_is_expected(written):
    assert verify_writes(str(written), [("tests/test_a.py", "dir", 0o755, b"")]) == [
        "tests/test_a.py: not a directory"
    ]


def test_verify_reports_a_path_that_should_not_exist(written):
    assert verify_writes(str(written), [("tests/test_a.py", "absent", 0, b"")]) == [
        "tests/test_a.py: should not exist"
    ]


def test_verify_accepts_an_absent_path_under_a_missing_folder(written):
    assert verify_writes(str(written), [("gone/deeper/x.py", "absent", 0, b"")]) == []


def test_verify_names_every_mismatch_in_one_pass(written):
    (written / "tests" / "test_a.py").write_bytes(b"changed\n")
    (written / "tests" / "run.sh").chmod(0o644)
    operations = [EXPECTED_A, EXPECTED_RUN, ("tests/new.py", "file", 0o644, b"N\n")]
    assert verify_writes(str(written), operations) == [
        "tests/test_a.py: content differs from the expected file",
        "tests/run.sh: executable bit differs",
        "tests/new.py: missing",
    ]


# --- GuardRecords ----------------------------------------------------------------------

MAIN = 4242


def exit_line(pid: int, replaced=(), redirected: bool = False) -> bytes:
    payload = json.dumps({"replaced": list(replaced), "redirected": redirected})
    return b"X %d %s\n" % (pid, payload.encode())


def records(*chunks: bytes) -> GuardRecords:
    guard = GuardRecords()
    for chunk in chunks:
        guard.feed(chunk)
    return guard


def test_a_runner_that_started_and_exited_normally_is_clean():
    guard = records(b"S %d 1\n" % MAIN, exit_line(MAIN))
    assert guard.runner_exit(MAIN) == ("clean", "")


def test_a_runner_without_an_exit_line_left_by_os_exit_and_is_abnormal():
    state, detail = records(b"S %d 1\n" % MAIN).runner_exit(MAIN)
    assert state == "abnormal"
    assert f"pid {MAIN}" in detail and "os._exit" in detail


def test_a_runner_whose_streams_were_redirected_is_abnormal():
    state, detail = records(b"S %d 1\n" % MAIN, exit_line(MAIN, redirected=True)).runner_exit(MAIN)
    assert state == "abnormal"
    assert f"pid {MAIN}" in detail and "stdout or stderr" in detail


def test_a_runner_started_by_the_shell_is_the_child_of_the_main_pid():
    shell_child = MAIN + 1
    grandchild = MAIN + 2
    # The grandchild (a worker of the runner) never exits normally: it is not a runner.
    lines = b"S %d %d\nS %d %d\n" % (shell_child, MAIN, grandchild, shell_child)
    assert records(lines, exit_line(shell_child)).runner_exit(MAIN) == ("clean", "")
    state, detail = records(lines, exit_line(grandchild)).runner_exit(MAIN)
    assert state == "abnormal" and f"pid {shell_child}" in detail


def test_every_runner_child_of_the_shell_must_exit_normally():
    first, second = MAIN + 1, MAIN + 2
    lines = b"S %d %d\nS %d %d\n" % (first, MAIN, second, MAIN)
    assert records(lines, exit_line(first), exit_line(second)).runner_exit(MAIN)[0] == "clean"
    state, detail = records(lines, exit_line(first)).runner_exit(MAIN)
    assert state == "abnormal" and f"pid {second}" in detail


def test_when_the_main_pid_is_python_its_children_do_not_count():
    child = MAIN + 1
    guard = records(b"S %d 1\nS %d %d\n" % (MAIN, child, MAIN), exit_line(MAIN))
    assert guard.runner_exit(MAIN) == ("clean", "")


def test_the_runner_exit_is_unknown_when_no_runner_reported():
    assert records().runner_exit(MAIN) == (
        "unknown",
        "no Python runner reported to the exit guard",
    )
    unrelated = records(b"S 77 76\n", exit_line(77))
    assert unrelated.runner_exit(MAIN)[0] == "unknown"


def test_an_exit_line_alone_does_not_make_a_runner():
    assert records(exit_line(MAIN)).runner_exit(MAIN)[0] == "unknown"


def test_lines_may_arrive_in_any_pieces():
    stream = b"S %d 1\n" % MAIN + exit_line(MAIN, redirected=True)
    guard = records(*(stream[i : i + 1] for i in range(len(stream))))
    assert guard.started == {MAIN: 1}
    assert guard.exited == {MAIN} and guard.redirected == {MAIN}


def test_an_unfinished_last_line_is_not_read():
    assert records(b"S %d 1\n" % MAIN, b"X %d {}" % MAIN).runner_exit(MAIN)[0] == "abnormal"


@pytest.mark.parametrize(
    "line",
    [
        b"garbage",
        b"S",
        b"S notapid 1",
        b"S 12",
        b"X notapid {}",
        b"X",
        b"Q 1 2",
        b"",
        b"\xff\xfe\x00",
        b"X 12 {not json",
    ],
)
def test_malformed_lines_are_ignored_and_the_next_lines_still_count(line):
    guard = records(line + b"\n", b"S %d 1\n" % MAIN, exit_line(MAIN))
    assert guard.runner_exit(MAIN) == ("clean", "")
    assert set(guard.started) == {MAIN}


def test_an_exit_payload_that_is_not_an_object_counts_as_an_exit_without_facts():
    guard = records(b"S %d 1\n" % MAIN, b"X %d [1, 2]\n" % MAIN)
    assert guard.runner_exit(MAIN) == ("clean", "")
    assert guard.findings == []


@pytest.mark.parametrize("replaced", [b"5", b"null", b'{"target": "x"}'])
def test_an_exit_payload_with_a_replaced_field_of_the_wrong_type_is_ignored(replaced):
    guard = records(b'X 12 {"replaced": ' + replaced + b"}\n", b"S %d 1\n" % MAIN)
    guard.feed(exit_line(MAIN))
    assert guard.runner_exit(MAIN) == ("clean", "")


def test_an_exit_payload_nested_too_deeply_is_ignored():
    deep = b'X 12 {"replaced": ' + b"[" * 50_000 + b"\n"
    guard = records(deep, b"S %d 1\n" % MAIN, exit_line(MAIN))
    assert guard.runner_exit(MAIN) == ("clean", "")


def test_replaced_items_that_are_not_objects_are_skipped_and_long_fields_cut():
    item = {"target": "t" * 1000, "file": "/testbed/" + "f" * 1000}
    guard = records(exit_line(MAIN, replaced=["a string", 7, None, item]))
    assert guard.findings == [{"target": "t" * 300, "file": "f" * 500}]


def test_findings_are_bounded_however_many_exit_lines_arrive():
    items = [
        {"target": f"unittest.case.TestCase.assert{i}", "file": "/testbed/x.py"} for i in range(60)
    ]
    line = exit_line(1, replaced=items)
    assert len(records(line).findings) == 20  # at most 20 per exit line
    lines = b"".join(exit_line(n, replaced=items[n : n + 20]) for n in range(40))
    assert len(records(lines).findings) == 50  # and 50 in all


def test_only_replacements_by_files_the_patch_changed_are_findings():
    replaced = [
        {"target": "unittest.case.TestCase.assertEqual", "file": "/testbed/calc/evaluator.py"},
        {"target": "unittest.case.TestCase.assertTrue", "file": "/testbed/tests/conftest.py"},
        {"target": "sys.exit", "file": "/usr/lib/python3/dist-packages/x.py"},
    ]
    guard = GuardRecords({"calc/evaluator.py"}, "/testbed")
    guard.feed(exit_line(MAIN, replaced=replaced))
    assert guard.findings == [
        {"target": "unittest.case.TestCase.assertEqual", "file": "calc/evaluator.py"}
    ]


def test_started_records_are_bounded():
    guard = records(b"".join(b"S %d 1\n" % pid for pid in range(1, 100_010)))
    assert len(guard.started) == 100_000


def test_an_overlong_line_spread_over_pieces_is_dropped_and_the_next_lines_still_count():
    overlong = b"S %d 1 " % MAIN + b"x" * (2 * _GUARD_LINE) + b"\n"
    stream = overlong + b"S 99 %d\n" % MAIN + exit_line(99)
    guard = records(*(stream[i : i + 1000] for i in range(0, len(stream), 1000)))
    assert MAIN not in guard.started
    assert len(guard._partial) <= _GUARD_LINE + 1000
    assert guard.runner_exit(MAIN) == ("clean", "")


def test_an_overlong_line_that_arrives_in_one_piece_is_dropped():
    overlong = b"S %d 1 " % MAIN + b"x" * (2 * _GUARD_LINE) + b"\n"
    assert records(overlong).runner_exit(MAIN)[0] == "unknown"


def test_the_rest_of_a_dropped_overlong_line_is_not_read_as_a_line():
    head = b"y" * (_GUARD_LINE + 1)
    guard = records(head, b"S %d 1\n" % MAIN)  # one line of _GUARD_LINE + 7 bytes
    assert guard.runner_exit(MAIN)[0] == "unknown"


# --- neutralize ------------------------------------------------------------------------


def test_neutralize_prefixes_lines_that_look_like_harness_lines():
    text = ">>>>> Start Test Output\n  >>>>> Test Exit Code: 0\n\t>>>>> End Test Output\n"
    assert neutralize(text) == (
        "| >>>>> Start Test Output\n|   >>>>> Test Exit Code: 0\n| \t>>>>> End Test Output\n"
    )


def test_neutralize_leaves_other_lines_and_ends_every_line():
    assert neutralize("Checking patch a.py...\nApplied cleanly") == (
        "Checking patch a.py...\nApplied cleanly\n"
    )
    assert neutralize("> quoted\n>>>> four\nx >>>>> inside\n") == (
        "> quoted\n>>>> four\nx >>>>> inside\n"
    )
    assert neutralize("") == ""


def test_neutralize_cuts_at_carriage_returns_and_unicode_separators():
    assert neutralize("ok\r>>>>> Reset Failed") == "ok\n| >>>>> Reset Failed\n"
    assert neutralize("ok\u2028>>>>> Reset Failed\r\n") == "ok\n| >>>>> Reset Failed\n"


def test_neutralize_sees_through_unicode_whitespace():
    assert neutralize("\u00a0>>>>> Reset Failed\n") == "| \u00a0>>>>> Reset Failed\n"


# --- no new user namespaces for the code under test ------------------------------------

_SECCOMP_CHILD = """
import ctypes, errno, os, subprocess, sys, threading
sys.path.insert(0, {archive!r})
from {package}.confine import install_seccomp, no_user_namespaces_filter
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(38, 1, 0, 0, 0)  # no_new_privs, as the supervisor sets it
install_seccomp(libc, no_user_namespaces_filter(os.uname().machine))
refused = libc.unshare(0x10000000) == -1 and ctypes.get_errno() == errno.EPERM
thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
child = subprocess.run(["unshare", "--user", "true"], capture_output=True)
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
print(refused, child.returncode != 0, os.waitstatus_to_exitcode(status))
"""


def test_the_seccomp_filter_refuses_new_user_namespaces_and_nothing_else_we_use(tmp_path):
    if no_user_namespaces_filter(platform.machine()) is None:
        pytest.skip(f"no seccomp program for {platform.machine()}")
    archive = tmp_path / "supervisor.pyz"  # the modules as the sandbox has them
    archive.write_bytes(shipped_supervisor().archive)
    code = _SECCOMP_CHILD.format(archive=str(archive), package=ARCHIVE_PACKAGE)
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    # unshare(CLONE_NEWUSER) is refused in the process and in its children (the unshare
    # tool); threads (clone3 -> clone) and fork still work.
    assert done.stdout.split() == ["True", "True", "7"]


# --- what the tests may not see ----------------------------------------------------------


def _git_here(*args: str, cwd: Path) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _objects(git_dir: Path) -> set[str]:
    return {str(p.relative_to(git_dir)) for p in (git_dir / "objects").rglob("*") if p.is_file()}


def test_the_reset_writes_its_blobs_to_the_private_folder_never_into_the_store(tmp_path):
    """The blobs of base + test patch (without the canaries) are what a readable store
    would give away: they stay in root's private folder, and the store is as built."""
    from evalrepro.sandbox.writes import Git

    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_a.py").write_text("def test_old():\n    pass\n")
    _git_here("init", "-q", cwd=work)
    _git_here("add", "-A", cwd=work)
    _git_here("commit", "-qm", "base", cwd=work)
    base = _git_here("rev-parse", "HEAD", cwd=work).strip()
    store = tmp_path / "repo.git"
    _git_here("clone", "-q", "--bare", str(work), str(store), cwd=tmp_path)
    (work / "tests" / "test_a.py").write_text(
        "def test_old():\n    pass\n\n\ndef test_new():\n    pass\n"
    )
    patch = tmp_path / "test.patch"
    patch.write_text(_git_here("diff", cwd=work))
    built = _objects(store)
    private = tmp_path / "private"
    private.mkdir()
    git = Git(str(store), str(private))
    git.run("read-tree", base)
    git.run("apply", "--cached", str(patch))
    entry = git.index_entries(["tests/test_a.py"])["tests/test_a.py"]
    assert b"def test_new" in git.blobs([entry[2]])[entry[2]]
    assert _objects(store) == built
    assert any((private / "objects").rglob("*")), "the new blob is in the private folder"


@pytest.fixture
def open_folder():
    """A folder any user may enter (pytest's own is root's alone)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="evalrepro-test-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.skipif(os.geteuid() != 0, reason="locks to root and asks another user")
def test_what_is_locked_away_cannot_be_listed_or_read_by_the_test_user(open_folder):
    from evalrepro.sandbox.confine import lock_away, still_readable
    from evalrepro.sandbox.user import User, as_user

    tmp_path = open_folder
    user = User({"uid": 1000, "gid": 1000, "name": "tester", "home": str(tmp_path)})
    git_dir = tmp_path / "testbed" / ".git"
    (git_dir / "objects").mkdir(parents=True)
    (git_dir / "HEAD").write_text("base\n")
    os.chmod(tmp_path / "testbed", 0o755)
    for path in (tmp_path / "testbed", git_dir, git_dir / "objects", git_dir / "HEAD"):
        os.chown(path, 1000, 1000)  # the test user's own, as in the image
    paths = [str(git_dir), str(git_dir / "HEAD")]
    assert "readable by the test user" in (as_user(user, still_readable, paths) or "")
    assert lock_away(str(git_dir)) == str(git_dir)
    assert as_user(user, still_readable, paths) is None
    assert stat.S_IMODE(git_dir.stat().st_mode) == 0o700 and git_dir.stat().st_uid == 0
    assert lock_away(str(tmp_path / "absent")) is None
