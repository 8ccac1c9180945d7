"""Unpack pinned npm tarballs into a node_modules tree, as npm would lay it out, offline.

Run by the env layer's build with the base's python3 (the image has no npm):
``python3 npm-install.py FOLDER TARGET``, where FOLDER holds ``manifest.json`` (a list of
``{"path", "file", "sha256"}``, parents first: see ``evalrepro/build/npm.py``) and the
tarballs. Each tarball is checked against its sha256, then its regular files and
folders are unpacked below ``TARGET/<path>`` with the first path component stripped (as
npm does: ``package/``, or whatever the packer named it), links and devices skipped (npm
skips them too), modes 0644 / 0755 (a file with any execute bit), times
``SOURCE_DATE_EPOCH``. Then each package's ``bin`` is linked into the ``.bin`` folder of
the node_modules holding it (relative links, as npm makes them) and made executable.
Install scripts do not run.
"""

import hashlib
import json
import os
import sys
import tarfile
from pathlib import PurePosixPath


def fail(message):
    sys.exit(f"npm-install: {message}")


def safe_parts(name):
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts:
        return None
    return parts[1:]  # the packer's top folder stripped


def unpack(tarball, dest):
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            parts = safe_parts(member.name)
            if not parts:
                continue
            target = os.path.join(dest, *parts)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.isfile():
                os.makedirs(os.path.dirname(target), exist_ok=True)
                source = archive.extractfile(member)
                with open(target, "wb") as out:
                    out.write(source.read())
                os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)


def bins(package_dir):
    try:
        with open(os.path.join(package_dir, "package.json"), encoding="utf-8") as handle:
            meta = json.load(handle)
    except (OSError, ValueError):
        return {}
    declared = meta.get("bin")
    name = str(meta.get("name", "")).split("/")[-1]
    if isinstance(declared, str):
        declared = {name: declared} if name else {}
    if not isinstance(declared, dict):
        return {}
    found = {}
    for command, target in sorted(declared.items()):
        command = str(command).split("/")[-1]
        if command in ("", ".", "..") or not isinstance(target, str):
            continue
        relative = os.path.normpath(target)
        if relative.startswith(("/", "..")):
            continue
        found[command] = relative
    return found


def main():
    folder, target = sys.argv[1], sys.argv[2]
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    os.makedirs(target, exist_ok=True)
    for item in manifest:
        tarball = os.path.join(folder, item["file"])
        digest = hashlib.sha256()
        with open(tarball, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != item["sha256"]:
            fail(f"{item['file']} is not the pinned tarball of {item['path']}")
        dest = os.path.join(target, item["path"])
        os.makedirs(dest, exist_ok=True)
        unpack(tarball, dest)
    for item in manifest:
        package_dir = os.path.join(target, item["path"])
        holder = os.path.dirname(package_dir)  # the node_modules folder holding it
        if item["path"].rsplit("/node_modules/", 1)[-1].startswith("@"):
            holder = os.path.dirname(holder)  # @scope/name
        for command, relative in bins(package_dir).items():
            script = os.path.join(package_dir, relative)
            if not os.path.isfile(script):
                continue
            os.chmod(script, 0o755)
            bin_dir = os.path.join(holder, ".bin")
            os.makedirs(bin_dir, exist_ok=True)
            link = os.path.join(bin_dir, command)
            if os.path.lexists(link):
                continue  # the first package (parents first, then by path) keeps it
            os.symlink(os.path.relpath(script, bin_dir), link)
    # Fixed modes of folders and fixed times of everything: the same layer every build.
    for root, folders, files in os.walk(target, topdown=False):
        for name in folders:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)
            os.utime(path, (epoch, epoch), follow_symlinks=False)
        for name in files:
            os.utime(os.path.join(root, name), (epoch, epoch), follow_symlinks=False)
    os.chmod(target, 0o755)
    os.utime(target, (epoch, epoch))


if __name__ == "__main__":
    main()
