"""Tar layouts that cannot be a bundle: refused in one line naming the member, before the
first byte is unpacked, and nothing outside the extraction folder is touched.

The rule is one, on the tree the members make once every name is normalised (``b/./x``
and ``b//x`` are ``b/x``): folders, regular files and hard links to an earlier file
only; one root folder; no path twice; nothing inside a file; no file where a folder is;
bounded members and bytes. The cases below are written as an adversary would (each
layout once killed ``verify`` with a traceback, or would write outside the folder), and
a seeded fuzz of random layouts holds every archive to the same rule: unpacked exactly
as its normalised tree, or refused with a UserError, and never anything else.
"""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path, PurePosixPath

import pytest

from evalrepro.build import tarball
from evalrepro.cli import main
from evalrepro.errors import UserError

DIR, FILE, HARD, SYM = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE


def member(name: str, kind: bytes = FILE, link: str = "", data: bytes = b"x") -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, data


def archive(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    """A real gzipped tar with exactly these members, in this order."""
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


#: (members, the one line after "ARCHIVE: ").
#: (tarfile reads a folder's name without its trailing slash: messages name it so.)
REFUSED = {
    "dot-twice": (
        [member("b/bagit.txt"), member("b/./bagit.txt")],
        "member 'b/./bagit.txt': appears twice (as 'b/bagit.txt')",
    ),
    "slash-twice": (
        [member("b/bagit.txt"), member("b//bagit.txt")],
        "member 'b//bagit.txt': appears twice (as 'b/bagit.txt')",
    ),
    "folder-twice": (
        [member("b/", DIR), member("./b/", DIR)],
        "member './b': appears twice (as 'b')",
    ),
    "file-then-folder": (
        [member("b/", DIR), member("b/x"), member("b/x/", DIR)],
        "member 'b/x': appears twice (as 'b/x')",
    ),
    "file-at-the-top": (
        [member("b"), member("b/bagit.txt")],
        "member 'b': a file at the top; a bundle is one folder",
    ),
    "inside-a-file": (
        [member("b/data"), member("b/data/x")],
        "member 'b/data/x': inside 'b/data', a file of the archive",
    ),
    "inside-a-hard-link": (
        [member("b/x"), member("b/data", HARD, "b/x"), member("b/data/x")],
        "member 'b/data/x': inside 'b/data', a file of the archive",
    ),
    "file-where-a-folder-is": (
        [member("b/d/x"), member("b/d")],
        "member 'b/d': a file where the archive has a folder",
    ),
    "hard-link-where-a-folder-is": (
        [member("b/x"), member("b/d/y"), member("b/d", HARD, "b/x")],
        "member 'b/d': a hard link where the archive has a folder",
    ),
    "two-roots": (
        [member("b/bagit.txt"), member("c/x")],
        "member 'c/x': outside 'b', the folder that holds the bundle",
    ),
    "the-top-itself": (
        [member("./", DIR), member("b/x")],
        "member '.': names the top of the archive, not a member of the bundle",
    ),
    "absolute": (
        [member("/tmp/evalrepro-owned")],
        "member '/tmp/evalrepro-owned': an absolute name, outside the bundle",
    ),
    "dotdot": (
        [member("b/x"), member("b/../../x")],
        "member 'b/../../x': a name with '..', outside the bundle",
    ),
    "dotdot-after-dot": (
        [member("b/./../x")],
        "member 'b/./../x': a name with '..', outside the bundle",
    ),
    "backslash": (
        [member("b\\..\\x")],
        "member 'b\\\\..\\\\x': a name with a NUL or a backslash; not a bundle",
    ),
    "name-too-long": (
        [member("b/" + "n" * 256)],
        f"member 'b/{'n' * 256}': a name too long to unpack; not a bundle",
    ),
    "symbolic-link": (
        [member("b/l", SYM, "/")],
        "member 'b/l': a symbolic link; a bundle holds only files and folders",
    ),
    "symbolic-link-then-through-it": (
        [member("b/l", SYM, "/tmp"), member("b/l/owned")],
        "member 'b/l': a symbolic link; a bundle holds only files and folders",
    ),
    "character-device": (
        [member("b/tty", tarfile.CHRTYPE)],
        "member 'b/tty': a device, FIFO or other special file; a bundle holds only "
        "files and folders",
    ),
    "block-device": (
        [member("b/sda", tarfile.BLKTYPE)],
        "member 'b/sda': a device, FIFO or other special file; a bundle holds only "
        "files and folders",
    ),
    "fifo": (
        [member("b/p", tarfile.FIFOTYPE)],
        "member 'b/p': a device, FIFO or other special file; a bundle holds only files and folders",
    ),
    "hard-link-outside": (
        [member("b/h", HARD, "/etc/passwd")],
        "member 'b/h': a hard link to '/etc/passwd': an absolute name, outside the bundle",
    ),
    "hard-link-up": (
        [member("b/h", HARD, "b/../../etc/passwd")],
        "member 'b/h': a hard link to 'b/../../etc/passwd': a name with '..', outside the bundle",
    ),
    "hard-link-to-a-later-file": (
        [member("b/h", HARD, "b/x"), member("b/x")],
        "member 'b/h': a hard link to 'b/x', not an earlier file",
    ),
    "hard-link-to-a-folder": (
        [member("b/d/", DIR), member("b/h", HARD, "b/d")],
        "member 'b/h': a hard link to 'b/d', not an earlier file",
    ),
    "hard-link-to-itself": (
        [member("b/h", HARD, "b/h")],
        "member 'b/h': a hard link to 'b/h', not an earlier file",
    ),
    "hard-link-to-another-root": (
        [member("b/x"), member("b/h", HARD, "c/x")],
        "member 'b/h': a hard link to 'c/x', not an earlier file",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_layout_that_cannot_be_a_bundle_is_one_line_naming_the_member(tmp_path, capsys, case):
    members, says = REFUSED[case]
    hostile = archive(tmp_path / "hostile.tar.gz", *members)
    assert main(["verify", str(hostile)]) == 2
    assert capsys.readouterr().err == f"evalrepro: error: {hostile}: {says}\n"


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_nothing_is_unpacked_before_the_layout_is_refused(tmp_path, case):
    members, says = REFUSED[case]
    hostile = archive(tmp_path / "hostile.tar.gz", *members)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(UserError) as refused:
        tarball.extract_untrusted(hostile, dest, what="bundle")
    assert str(refused.value) == f"{hostile}: {says}"
    assert list(dest.iterdir()) == []


def test_the_temporary_folder_of_verify_is_left_empty_and_the_host_untouched(
    tmp_path, monkeypatch, capsys
):
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("mine\n")
    for case, (members, _) in REFUSED.items():
        hostile = archive(tmp_path / f"{case}.tar.gz", *members)
        assert main(["verify", str(hostile)]) == 2, case
    capsys.readouterr()
    assert list(scratch.iterdir()) == []
    assert tree(outside) == {"kept"} and (outside / "kept").read_text() == "mine\n"


def test_too_many_members_or_bytes_are_refused_before_unpacking(tmp_path, monkeypatch):
    dest = tmp_path / "dest"
    dest.mkdir()
    many = archive(tmp_path / "many.tar.gz", *(member(f"b/{i}") for i in range(4)))
    monkeypatch.setattr(tarball, "MAX_MEMBERS", 3)
    with pytest.raises(UserError, match=r"^.*many\.tar\.gz: more than 3 members; not a bundle$"):
        tarball.extract_untrusted(many, dest, what="bundle")
    monkeypatch.setattr(tarball, "MAX_MEMBERS", 1_000_000)
    big = archive(tmp_path / "big.tar.gz", member("b/x", data=b"1" * 600), member("b/y"))
    monkeypatch.setattr(tarball, "MAX_BYTES", 600)
    with pytest.raises(UserError, match=r"big\.tar\.gz: unpacks to more than 0 GiB; not read$"):
        tarball.extract_untrusted(big, dest, what="bundle")
    assert list(dest.iterdir()) == []


def test_names_that_normalise_to_distinct_paths_unpack_at_those_paths(tmp_path):
    """``./b/x``, ``b//y`` and a hard link named ``./b/./z`` to ``b/x`` are a bundle's
    files b/x, b/y and b/z: normalising is how names are read, not a reason to refuse."""
    ok = archive(
        tmp_path / "ok.tar.gz",
        member("./b/", DIR),
        member("./b/x", data=b"same"),
        member("b//y", data=b"other"),
        member("./b/./z", HARD, "b/x"),
        member("b/d/e/f", data=b"deep"),
        member("b/d/", DIR),  # a folder named after a member implied it: the same folder
    )
    dest = tmp_path / "dest"
    dest.mkdir()
    tarball.extract_untrusted(ok, dest, what="bundle")
    assert tree(dest) == {"b", "b/x", "b/y", "b/z", "b/d", "b/d/e", "b/d/e/f"}
    assert (dest / "b/z").read_bytes() == b"same" and (dest / "b/y").read_bytes() == b"other"
    assert not any(p.is_symlink() for p in dest.rglob("*"))


# --- every layout, not a list: a seeded fuzz of the rule ---------------------------------

_NAMES = ["b", "b/x", "b/./x", "b//x", "b/x/y", "b/d", "b/d/", "./b/d/y", "b/../../x", "c/x", "b/y"]
_KINDS = [DIR, FILE, FILE, HARD, SYM, tarfile.FIFOTYPE]


def _expected_tree(members: list[tuple[tarfile.TarInfo, bytes]]) -> dict[str, bytes] | None:
    """What a bundle's tree would be, computed from the rule's statement alone (None: no
    bundle can have these members). Files map to their bytes; folders to b""."""
    kinds: dict[PurePosixPath, bytes | None] = {}  # None: a folder
    named: set[PurePosixPath] = set()
    roots = set()
    for info, data in members:
        parts = [p for p in info.name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts or info.name.startswith("/"):
            return None
        path = PurePosixPath(*parts)
        roots.add(parts[0])
        if info.type not in (DIR, FILE, HARD) or len(roots) > 1 or path in named:
            return None
        if len(parts) == 1 and info.type != DIR:
            return None
        for folder in path.parents[:-1]:
            if kinds.get(folder, None) is not None:
                return None
            kinds[folder] = None
        if info.type != DIR and path in kinds:
            return None
        if info.type == HARD:
            target = PurePosixPath(*[p for p in info.linkname.split("/") if p not in ("", ".")])
            if kinds.get(target) is None:
                return None
            data = kinds[target]
        named.add(path)
        kinds[path] = None if info.type == DIR else data
    return {str(p): b"" if v is None else v for p, v in kinds.items()}


def test_any_layout_unpacks_as_its_normalised_tree_or_is_one_line(tmp_path):
    rng = random.Random(19)
    outside = tmp_path / "outside"
    outside.mkdir()
    refused = unpacked = 0
    for index in range(300):
        members = []
        for _ in range(rng.randint(1, 5)):
            kind = rng.choice(_KINDS)
            link = rng.choice(_NAMES) if kind in (HARD, SYM) else ""
            members.append(member(rng.choice(_NAMES), kind, link, data=f"{index}".encode()))
        path = archive(tmp_path / f"{index}.tar.gz", *members)
        dest = tmp_path / f"dest-{index}"
        dest.mkdir()
        expected = _expected_tree(members)
        try:
            tarball.extract_untrusted(path, dest, what="bundle")
        except UserError as error:
            assert "\n" not in str(error) and str(error).startswith(f"{path}: ")
            assert expected is None, (members, error)
            assert list(dest.iterdir()) == []
            refused += 1
            continue
        assert expected is not None, members
        got = {
            p.relative_to(dest).as_posix(): b"" if p.is_dir() else p.read_bytes()
            for p in dest.rglob("*")
        }
        assert got == expected, members
        assert not any(p.is_symlink() for p in dest.rglob("*"))
        unpacked += 1
    assert list(outside.iterdir()) == [] and not (tmp_path / "x").exists()
    assert refused > 50 and unpacked > 20  # both sides of the rule were exercised
