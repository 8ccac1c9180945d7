"""A layer's tar without overlayfs's attributes: what the storage driver adds is not content.

The rewrite must give exactly the tar a writer emits for the same entries without those
attributes (so that a rootless layer becomes the root one, byte for byte), keep every
other attribute and header, and refuse what is not a tar rather than guess.
"""

from __future__ import annotations

import io
import tarfile

import pytest

from evalrepro.build.layertar import LayerError, strip_private_xattrs

ORIGIN = "SCHILY.xattr.user.overlay.origin"
IMPURE = "SCHILY.xattr.user.overlay.impure"


def _tar(entries: list[tuple[str, dict[str, str]]]) -> bytes:
    """A PAX tar of directories and one file each, with these PAX records, ended as Go's
    writer ends one (two zero blocks, no padding to a 10 KiB record)."""
    out = io.BytesIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        patch.setattr(tarfile, "RECORDSIZE", tarfile.BLOCKSIZE)
        for name, records in entries:
            folder = tarfile.TarInfo(name)
            folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, 0
            folder.pax_headers = dict(records)
            tar.addfile(folder)
            data = f"contents of {name}\n".encode() * 50
            member = tarfile.TarInfo(f"{name}/file")
            member.size, member.mtime = len(data), 0
            tar.addfile(member, io.BytesIO(data))
    return out.getvalue()


def _strip(data: bytes) -> tuple[int, bytes]:
    out = io.BytesIO()
    removed = strip_private_xattrs(io.BytesIO(data), out)
    return removed, out.getvalue()


def test_a_layer_loses_overlayfs_attributes_and_becomes_the_tar_written_without_them():
    rootless = _tar([("opt", {ORIGIN: "\x00\xfb", IMPURE: "y"}), ("usr", {ORIGIN: "x"})])
    root = _tar([("opt", {}), ("usr", {})])
    removed, stripped = _strip(rootless)
    assert removed == 3
    assert stripped == root


def test_other_records_stay_and_the_shortened_header_is_the_one_written_without_them():
    long = "a/" * 60 + "deep"  # too long for a ustar name: a PAX path record
    capability = "SCHILY.xattr.security.capability"
    rootless = _tar([(long, {ORIGIN: "o", capability: "cap", "SCHILY.xattr.user.mine": "1"})])
    root = _tar([(long, {capability: "cap", "SCHILY.xattr.user.mine": "1"})])
    removed, stripped = _strip(rootless)
    assert removed == 1 and stripped == root
    names = {m.name: m.pax_headers for m in tarfile.open(fileobj=io.BytesIO(stripped))}
    assert names[long][capability] == "cap" and ORIGIN not in names[long]


def test_trusted_overlay_and_libarchive_spellings_go_too_and_a_clean_tar_is_unchanged():
    entries = [("etc", {"SCHILY.xattr.trusted.overlay.origin": "o"})]
    entries.append(("run", {"LIBARCHIVE.xattr.user.overlay.impure": "eQ=="}))
    assert _strip(_tar(entries)) == (2, _tar([("etc", {}), ("run", {})]))
    clean = _tar([("opt", {"SCHILY.xattr.user.overlayish": "kept"})])
    assert _strip(clean) == (0, clean)


def test_what_is_not_a_tar_is_refused_not_guessed():
    damaged = bytearray(_tar([("opt", {ORIGIN: "o"})]))
    damaged[0] ^= 0xFF  # the first header's checksum no longer matches
    with pytest.raises(LayerError, match="checksum"):
        _strip(bytes(damaged))
    with pytest.raises(LayerError, match="cut short"):
        _strip(_tar([("opt", {})])[:700])
