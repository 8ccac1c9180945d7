"""The harness's diff of an agent's working tree: files in, a patch out, git's config never
read. The trees here are tar streams as ``podman cp NAME:/testbed -`` writes them (every
member under ``testbed/``); the patch must apply to the base with ``git apply`` and give
exactly the agent's files, ``.git`` aside.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from evalrepro.run.worktree import TreeError, harness_diff


def tree(files: dict[str, bytes | str], *, links: dict[str, str] | None = None) -> bytes:
    """A tar of ``testbed/`` holding ``files`` (path -> bytes; ``str``: text) and
    symbolic ``links`` (path -> target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        folders = {"testbed"}
        for path in [*files, *(links or {})]:
            parts = path.split("/")[:-1]
            folders |= {"testbed/" + "/".join(parts[: i + 1]) for i in range(len(parts))}
        for folder in sorted(folders):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(f"testbed/{path}")
            info.size, info.mode = len(data), 0o755 if path.endswith(".sh") else 0o644
            archive.addfile(info, io.BytesIO(data))
        for path, target in (links or {}).items():
            info = tarfile.TarInfo(f"testbed/{path}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    return buffer.getvalue()


BASE = {
    "calc/evaluator.py": "def evaluate(x):\n    return x\n",
    "README.md": "calc\n",
    "old.txt": "to be removed\n",
    ".git/config": "[core]\n\tbare = false\n",
    ".git/HEAD": "ref: refs/heads/main\n",
}


def apply_to_base(tmp_path: Path, patch: bytes) -> Path:
    """The base's files in a fresh repository, the patch applied by ``git apply``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for path, content in BASE.items():
        if not path.startswith(".git/"):
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(content)
    (tmp_path / "patch.diff").write_bytes(patch)
    subprocess.run(["git", "apply", str(tmp_path / "patch.diff")], cwd=repo, check=True)
    return repo


def test_the_diff_holds_changed_new_binary_and_removed_files_and_nothing_of_git(tmp_path):
    binary = bytes(range(256)) * 4
    work = {
        **{k: v for k, v in BASE.items() if k != "old.txt"},
        "calc/evaluator.py": "def evaluate(x):\n    return x + 1\n",
        "calc/new_module.py": "VALUE = 1\n",
        "data/blob.bin": binary,
        "run.sh": "#!/bin/sh\necho hi\n",
        # What an agent may leave in .git to fool a naive `git diff`: none of it is read.
        ".git/config": "[diff]\n\texternal = /tmp/evil\n[core]\n\tfsmonitor = /tmp/evil\n",
        ".git/info/attributes": "* -diff\n",
        ".git/hooks/post-index-change": "#!/bin/sh\ntouch /tmp/pwned\n",
    }
    patch = harness_diff(tree(BASE), tree(work), limit=1 << 20)
    assert b".git/" not in patch
    assert b"GIT binary patch" in patch
    repo = apply_to_base(tmp_path, patch)
    assert (repo / "calc/evaluator.py").read_text() == "def evaluate(x):\n    return x + 1\n"
    assert (repo / "calc/new_module.py").read_text() == "VALUE = 1\n"
    assert (repo / "data/blob.bin").read_bytes() == binary
    assert (repo / "run.sh").stat().st_mode & 0o111
    assert not (repo / "old.txt").exists()
    assert (repo / "README.md").read_text() == "calc\n"


def test_attributes_in_the_tree_change_nothing(tmp_path):
    # `* -diff` would make a repository's git diff print "Binary files differ" and drop
    # the change; --no-index reads no attributes in the trees.
    work = {**BASE, ".gitattributes": "* -diff\n", "README.md": "calc, fixed\n"}
    patch = harness_diff(tree(BASE), tree(work), limit=1 << 20)
    repo = apply_to_base(tmp_path, patch)
    assert (repo / "README.md").read_text() == "calc, fixed\n"


def test_new_files_the_base_ignores_and_python_caches_are_not_the_agents_answer(tmp_path):
    base = {**BASE, ".gitignore": "*.log\nbuild/\n"}
    work = {
        **base,
        "calc/evaluator.py": "def evaluate(x):\n    return x + 1\n",
        "calc/__pycache__/evaluator.cpython-311.pyc": b"\000compiled",
        "notes.log": "ran the tests\n",
        "build/out.txt": "artefact\n",
        "calc/kept.py": "KEPT = 1\n",
        # The agent's own ignore rules are not the base's: they hide nothing.
        "calc/.gitignore": "kept.py\n",
    }
    patch = harness_diff(tree(base), tree(work), limit=1 << 20)
    assert b"__pycache__" not in patch and b"notes.log" not in patch and b"build/" not in patch
    assert b"calc/kept.py" in patch and b"calc/evaluator.py" in patch


def test_a_changed_file_the_base_tracks_is_taken_even_where_an_ignore_rule_matches(tmp_path):
    base = {**BASE, ".gitignore": "*.log\n", "tracked.log": "old\n"}
    patch = harness_diff(tree(base), tree({**base, "tracked.log": "new\n"}), limit=1 << 20)
    assert b"tracked.log" in patch


def test_an_unchanged_tree_is_an_empty_diff():
    assert harness_diff(tree(BASE), tree(BASE), limit=1 << 20) == b""


def test_a_symbolic_link_is_recorded_as_a_link_never_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("host secret\n")
    work = {**BASE}
    patch = harness_diff(tree(BASE), tree(work, links={"leak": str(secret)}), limit=1 << 20)
    assert b"new file mode 120000" in patch
    assert b"host secret" not in patch


def test_a_file_through_a_link_that_leaves_the_tree_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, kind, link in (
            ("testbed", tarfile.DIRTYPE, ""),
            ("testbed/x", tarfile.SYMTYPE, str(outside)),
        ):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            archive.addfile(info)
        info = tarfile.TarInfo("testbed/x/planted")
        info.size = 3
        archive.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(TreeError, match="'testbed/x/planted' inside a file or link"):
        harness_diff(tree(BASE), buffer.getvalue(), limit=1 << 20)
    assert list(outside.iterdir()) == []


def test_names_that_leave_the_tree_or_come_twice_are_refused():
    for name in ("testbed/../../etc/evil", "/etc/evil"):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.size = 3
            archive.addfile(info, io.BytesIO(b"bad"))
        with pytest.raises(TreeError, match="cannot be taken"):
            harness_diff(tree(BASE), buffer.getvalue(), limit=1 << 20)
    twice = tree(BASE) + b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for _ in range(2):
            info = tarfile.TarInfo("testbed/dup")
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(TreeError, match="names 'testbed/dup' twice"):
        harness_diff(twice, buffer.getvalue(), limit=1 << 20)


def test_hard_links_and_device_files_are_refused():
    for kind in (tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            base = tarfile.TarInfo("testbed")
            base.type = tarfile.DIRTYPE
            archive.addfile(base)
            info = tarfile.TarInfo("testbed/odd")
            info.type, info.linkname = kind, "testbed/README.md"
            archive.addfile(info)
        with pytest.raises(TreeError, match="special file or hard link: 'testbed/odd'"):
            harness_diff(tree(BASE), buffer.getvalue(), limit=1 << 20)


def test_too_many_entries_and_too_large_a_diff_are_one_line_each():
    many = {f"f{i}.txt": "x\n" for i in range(60)}
    with pytest.raises(TreeError, match="more than 50 entries"):
        harness_diff(tree(BASE), tree(many), limit=1 << 20, max_entries=50)
    big = {**BASE, "big.txt": "y" * 100_000}
    over = r"diff is (at least|more than) \d+ bytes, over the limit of 1000"
    with pytest.raises(TreeError, match=over):
        harness_diff(tree(BASE), tree(big), limit=1000)


def test_what_is_not_a_tar_is_one_line():
    with pytest.raises(TreeError, match="not a tar stream"):
        harness_diff(tree(BASE), b"not a tar" * 100, limit=1 << 20)
