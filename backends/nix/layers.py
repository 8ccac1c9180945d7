"""Write the layers of a trial image, and the image archive, inside the Nix sandbox.

Run by the Python of the image's own Debian root filesystem (through its dynamic loader,
see ``lib.nix``), with nothing but the standard library, as::

    layers.py base|env|history|instance|image [SPEC_JSON OUT]

``SPEC_JSON`` is the derivation's spec (store paths and settings, written by Nix;
default ``$specPath``); ``OUT`` the file to write (default ``$out``): one uncompressed
layer tar, or the docker-archive of an image.

Every tar is a function of its inputs alone: entries sorted by path, GNU format, mtime
the image's epoch, numeric owners only, modes from the package (base) or normalized
(0755 directories, 0755 or 0644 files, by the owner's execute bit). Nothing is run from
the packages: what their maintainer scripts would have made and a trial needs is made
here, from the packages' own files (``_configure``). A spec's install command is the one
thing run: in a chroot of the image's layers, as root of a user namespace (``install``).
"""

from __future__ import annotations

import base64
import configparser
import fnmatch
import hashlib
import io
import json
import os
import re
import stat
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

#: dpkg path filters, as the podman backend's mmdebstrap uses them (last match wins).
DPKG_FILTERS = (
    ("exclude", "/usr/share/man/*"),
    ("exclude", "/usr/share/doc/*"),
    ("include", "/usr/share/doc/*/copyright"),
    ("exclude", "/usr/share/locale/*"),
    ("exclude", "/usr/share/info/*"),
)
#: Top-level directories that merged /usr turns into links (``bin -> usr/bin``).
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: The unprivileged user the code under test runs as: the podman backend's lines.
TESTER = {"name": "tester", "uid": 1000, "gid": 1000, "home": "home/tester"}
VENV = "opt/venv"
HISTORY = "opt/evalrepro/repo.git"
TESTBED = "testbed"
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Entry:
    """One member of a layer: ``kind`` is ``dir``, ``file``, ``symlink`` or ``hardlink``."""

    kind: str
    mode: int = 0o755
    uid: int = 0
    gid: int = 0
    data: bytes = b""
    #: a symlink's target, or the layer path a hard link shares its file with
    target: str = ""


Entries = dict[str, Entry]


def file(data: bytes | str, mode: int = 0o644, uid: int = 0, gid: int = 0) -> Entry:
    return Entry("file", mode, uid, gid, data.encode() if isinstance(data, str) else data)


def directory(mode: int = 0o755, uid: int = 0, gid: int = 0) -> Entry:
    return Entry("dir", mode, uid, gid)


def symlink(target: str) -> Entry:
    return Entry("symlink", 0o777, target=target)


def _key(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def add_parents(entries: Entries, uid: int = 0, gid: int = 0) -> None:
    """Give every entry its parent directories (0755), so no layer leaves one implicit."""
    for path in list(entries):
        parent = PurePosixPath(path).parent
        while str(parent) != "." and str(parent) not in entries:
            entries[str(parent)] = directory(uid=uid, gid=gid)
            parent = parent.parent


def write_tar(entries: Entries, out: Path, epoch: int) -> None:
    """``entries`` as a deterministic tar: sorted, GNU format, mtime ``epoch``, no names.

    A hard link group's first member in that order holds the data (a link must come
    after its file), whichever member the package named.
    """
    names = sorted(entries, key=_key)
    first: dict[str, str] = {}  # group (the file's own path) -> its first member
    for name in names:
        entry = entries[name]
        group = entry.target if entry.kind == "hardlink" else name
        if entry.kind in ("file", "hardlink"):
            first.setdefault(group, name)
    with tarfile.open(
        out, "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        for name in names:
            entry = entries[name]
            if entry.kind == "hardlink":
                source = entries.get(entry.target)
                if source is None or source.kind != "file":
                    raise SystemExit(f"{name}: hard link to {entry.target}, which is no file")
                group = entry.target
            else:
                source, group = entry, name
            info = tarfile.TarInfo(name)
            info.mtime = epoch
            info.uname = info.gname = ""
            data = None
            if entry.kind == "dir":
                info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, entry.mode, *_ids(entry)
            elif entry.kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, entry.target
                info.mode, info.uid, info.gid = 0o777, *_ids(entry)
            elif first[group] != name:
                info.type, info.linkname = tarfile.LNKTYPE, first[group]
                info.mode, info.uid, info.gid = source.mode, *_ids(source)
            else:
                info.type, info.size = tarfile.REGTYPE, len(source.data)
                info.mode, info.uid, info.gid = source.mode, *_ids(source)
                data = io.BytesIO(source.data)
            tar.addfile(info, data)


def _ids(entry: Entry) -> tuple[int, int]:
    return entry.uid, entry.gid


def normalized_mode(info: tarfile.TarInfo) -> int:
    if info.isdir():
        return 0o755
    return 0o755 if info.mode & 0o100 else 0o644


def read_tar(path: Path, prefix: str, uid: int = 0, gid: int = 0) -> Entries:
    """A host-made input tar, re-rooted at ``prefix``, owners and modes normalized."""
    entries: Entries = {}
    with tarfile.open(path, encoding="utf-8", errors="surrogateescape") as tar:
        for info in tar:
            rel = _relative(info.name)
            if not rel:
                continue
            name = f"{prefix}/{rel}"
            if info.isdir():
                entries[name] = directory(uid=uid, gid=gid)
            elif info.issym():
                entries[name] = replace(symlink(info.linkname), uid=uid, gid=gid)
            elif info.isreg():
                data = tar.extractfile(info)
                assert data is not None
                entries[name] = file(data.read(), normalized_mode(info), uid, gid)
            else:
                raise SystemExit(f"{path}: {info.name!r} is not a file, directory or link")
    return entries


def _relative(name: str) -> str:
    parts = [part for part in PurePosixPath(name).parts if part not in ("", ".", "/")]
    if ".." in parts:
        raise SystemExit(f"member {name!r} would land outside its directory")
    return "/".join(parts)


# --- base: the Debian root filesystem ---------------------------------------------------


@dataclass
class Package:
    name: str
    control: str
    #: control.tar members besides ``control`` (md5sums, conffiles, postinst...)
    info: dict[str, tuple[int, bytes]]
    #: the paths the package installed, as dpkg lists them (``/bin/bash``)
    files: list[str]

    @property
    def fields(self) -> dict[str, str]:
        fields: dict[str, str] = {}
        for line in self.control.splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        return fields


def ar_members(data: bytes) -> dict[str, bytes]:
    """The members of an ar archive (a .deb)."""
    if not data.startswith(b"!<arch>\n"):
        raise SystemExit("not a .deb (no ar header)")
    members, offset = {}, 8
    while offset + 60 <= len(data):
        header = data[offset : offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        offset += 60
        members[name] = data[offset : offset + size]
        offset += size + (size & 1)
    return members


def _member_tar(members: dict[str, bytes], stem: str) -> tarfile.TarFile:
    for name, blob in members.items():
        if name == stem or name.startswith(stem + "."):
            if name.endswith(".zst"):
                raise SystemExit(f"{name}: zstd members are not supported")
            return tarfile.open(fileobj=io.BytesIO(blob), mode="r:*", encoding="utf-8")
    raise SystemExit(f"no {stem} member")


def _filtered(path: str) -> bool:
    verdict = False
    for rule, pattern in DPKG_FILTERS:
        if fnmatch.fnmatchcase(path, pattern):
            verdict = rule == "exclude"
    return verdict


def _merged(rel: str) -> str:
    top, _, rest = rel.partition("/")
    return f"usr/{top}" + (f"/{rest}" if rest else "") if top in MERGED else rel


def unpack_debs(debs: list[Path]) -> tuple[Entries, list[Package]]:
    """Every .deb's data.tar as dpkg would lay it out on merged /usr, filters applied."""
    entries: Entries = {}
    held: set[str] = set()  # filtered directories, kept only if something is left in them
    packages = []
    for deb in debs:
        members = ar_members(deb.read_bytes())
        info: dict[str, tuple[int, bytes]] = {}
        control = ""
        with _member_tar(members, "control.tar") as tar:
            for member in tar:
                name = _relative(member.name)
                if member.isreg():
                    blob = tar.extractfile(member).read()  # type: ignore[union-attr]
                    if name == "control":
                        control = blob.decode()
                    else:
                        info[name] = (member.mode & 0o7777, blob)
        package = Package("", control, info, [])
        package.name = package.fields["Package"]
        with _member_tar(members, "data.tar") as tar:
            for member in tar:
                rel = _relative(member.name)
                if not rel:
                    continue
                if _filtered("/" + rel):
                    if member.isdir():
                        held.add(_merged(rel))
                    continue
                package.files.append("/" + rel)
                path = _merged(rel)
                ids = {"uid": member.uid, "gid": member.gid}
                if member.isdir():
                    entries.setdefault(path, directory(member.mode & 0o7777, **ids))
                    continue
                if path in entries and entries[path].kind == "dir":
                    raise SystemExit(f"{deb.name}: {rel} replaces a directory")
                if member.issym():
                    entries[path] = replace(symlink(member.linkname), **ids)
                elif member.islnk():
                    target = _merged(_relative(member.linkname))
                    entries[path] = Entry("hardlink", member.mode & 0o7777, target=target, **ids)
                elif member.isreg():
                    blob = tar.extractfile(member).read()  # type: ignore[union-attr]
                    entries[path] = file(blob, member.mode & 0o7777, **ids)
                else:
                    raise SystemExit(f"{deb.name}: {rel} is a device or fifo")
        packages.append(package)
    for path in held:
        if path not in entries and any(p.startswith(path + "/") for p in entries):
            entries[path] = directory()
    return entries, packages


def _text(entries: Entries, path: str) -> str | None:
    entry = entries.get(path)
    while entry is not None and entry.kind == "hardlink":
        entry = entries.get(entry.target)
    return entry.data.decode() if entry is not None and entry.kind == "file" else None


def _configure(entries: Entries, packages: list[Package], spec: dict) -> None:
    """What the maintainer scripts would have made that a trial (or a person) needs."""
    names = {package.name for package in packages}
    epoch = spec["epoch"]
    # merged /usr: bin -> usr/bin and the rest, for the directories that exist
    for top in MERGED:
        if f"usr/{top}" in entries:
            entries[top] = symlink(f"usr/{top}")
    _accounts(entries, names, epoch)
    # base-files' postinst
    for source, dest in (
        ("dot.profile", "root/.profile"),
        ("dot.bashrc", "root/.bashrc"),
        ("profile", "etc/profile"),
        ("motd", "etc/motd"),
    ):
        text = _text(entries, f"usr/share/base-files/{source}")
        if text is not None and dest not in entries:
            entries[dest] = file(text)
    for path in ("mnt", "srv", "opt", "etc/opt", "var/opt", "media"):
        entries.setdefault(path, directory())
    entries.setdefault("var/mail", directory(0o2775, gid=8))
    entries.setdefault("var/spool/mail", symlink("../mail"))
    entries.setdefault("run/lock", directory(0o1777))
    for path in ("", "/share", "/share/man", "/bin", "/games", "/lib", "/include", "/sbin"):
        entries.setdefault(f"usr/local{path}", directory())
    entries.setdefault("usr/local/src", directory())
    entries.setdefault("usr/local/etc", directory())
    entries.setdefault("usr/local/man", symlink("share/man"))
    for path, mode in (
        ("var/log/wtmp", 0o664),
        ("var/log/btmp", 0o660),
        ("var/log/lastlog", 0o664),
    ):
        entries.setdefault(path, file(b"", mode, gid=43))
    if "etc/dpkg/origins/debian" in entries:
        entries.setdefault("etc/dpkg/origins/default", symlink("debian"))
    # libc-bin's, tzdata's, python3.11's, libpam-modules' postinst
    nsswitch = _text(entries, "usr/share/libc-bin/nsswitch.conf")
    if nsswitch is not None:
        entries.setdefault("etc/nsswitch.conf", file(nsswitch))
    if "tzdata" in names:
        entries.setdefault("etc/localtime", symlink("/usr/share/zoneinfo/Etc/UTC"))
        entries.setdefault("etc/timezone", file("Etc/UTC\n"))
    for version in sorted(
        n.removeprefix("python") for n in names if re.fullmatch(r"python3\.\d+", n)
    ):
        entries.setdefault(f"usr/local/lib/python{version}/dist-packages", directory())
    if "libpam-modules" in names:
        entries.setdefault("etc/environment", file(b""))
    _shells(entries)
    _alternatives(entries, packages)
    _certificates(entries)
    entries["etc/apt/sources.list"] = file(f"deb {spec['mirror']} {spec['suite']} main\n")
    _dpkg_database(entries, packages)
    home = TESTER["home"]
    entries[home] = directory(uid=TESTER["uid"], gid=TESTER["gid"])


def _accounts(entries: Entries, names: set[str], epoch: int) -> None:
    """/etc/passwd and /etc/group from base-passwd's masters, shadowed, plus tester."""
    passwd_master = _text(entries, "usr/share/base-passwd/passwd.master")
    group_master = _text(entries, "usr/share/base-passwd/group.master")
    if passwd_master is None or group_master is None:
        raise SystemExit("base-passwd is not among the packages: no /etc/passwd to make")
    users = [line.split(":") for line in passwd_master.splitlines() if line]
    if "apt" in names:  # apt's postinst: adduser --system _apt
        users.insert(-1, ["_apt", "*", "42", "65534", "", "/nonexistent", "/usr/sbin/nologin"])
    groups = [line.split(":") for line in group_master.splitlines() if line]
    day = epoch // 86400
    passwd = "".join(":".join([u[0], "x", *u[2:]]) + "\n" for u in users)
    shadow = "".join(f"{u[0]}:{u[1]}:{day}:0:99999:7:::\n" for u in users)
    group = "".join(":".join([g[0], "x", *g[2:]]) + "\n" for g in groups)
    gshadow = "".join(f"{g[0]}:{g[1]}::\n" for g in groups)
    # The podman backend's fixed lines for the test user.
    name, uid, gid, home = TESTER["name"], TESTER["uid"], TESTER["gid"], TESTER["home"]
    passwd += f"{name}:x:{uid}:{gid}:evalrepro tests:/{home}:/bin/bash\n"
    group += f"{name}:x:{gid}:\n"
    shadow += f"{name}:*:19000:0:99999:7:::\n"
    gshadow += f"{name}:!::\n"
    entries["etc/passwd"] = file(passwd)
    entries["etc/group"] = file(group)
    entries["etc/shadow"] = file(shadow, 0o640, gid=42)
    entries["etc/gshadow"] = file(gshadow, 0o640, gid=42)


def _shells(entries: Entries) -> None:
    """debianutils' update-shells: its list and shells.d, each also under /usr (merged)."""
    listed = _text(entries, "usr/share/debianutils/shells")
    if listed is None:
        return
    shells = [line for line in listed.splitlines() if line and not line.startswith("#")]
    header = [line for line in listed.splitlines() if line.startswith("#")]
    for path in sorted(p for p in entries if p.startswith("usr/share/debianutils/shells.d/")):
        shells += [line for line in (_text(entries, path) or "").splitlines() if line]
    both = [s for s in shells if not s.startswith("/usr/")]
    both += [f"/usr{s}" for s in both if s.startswith(("/bin/", "/sbin/"))]
    unique = list(dict.fromkeys(both))
    entries["etc/shells"] = file("\n".join([*header, *unique]) + "\n")


_ALTERNATIVE = re.compile(
    r"update-alternatives\s+--install\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)((?:\s+--slave\s+\S+\s+\S+\s+\S+)*)"
)


def _alternatives(entries: Entries, packages: list[Package]) -> None:
    """The ``update-alternatives --install`` of the postinst scripts, in auto mode:
    the highest priority whose target exists wins, slaves only where theirs exist."""
    best: dict[str, tuple[int, str, str, list[tuple[str, str, str]]]] = {}
    for package in packages:
        script = package.info.get("postinst", (0, b""))[1].decode(errors="replace")
        for match in _ALTERNATIVE.finditer(script.replace("\\\n", " ")):
            link, name, path, priority, slaves = match.groups()
            if _lexists(entries, path) and int(priority) > best.get(name, (-1,))[0]:
                found = re.findall(r"--slave\s+(\S+)\s+(\S+)\s+(\S+)", slaves)
                best[name] = (int(priority), link, path, found)
    for name, (_, link, path, slaves) in sorted(best.items()):
        for each_link, each_name, each_path in [(link, name, path), *slaves]:
            if _lexists(entries, each_path):
                entries[f"etc/alternatives/{each_name}"] = symlink(each_path)
                entries[_merged(each_link.lstrip("/"))] = symlink(f"/etc/alternatives/{each_name}")


def _lexists(entries: Entries, path: str) -> bool:
    return _merged(path.lstrip("/")) in entries


def _certificates(entries: Entries) -> None:
    """update-ca-certificates: the config listing every CA, its links, and the bundle.
    (Not the OpenSSL subject-hash links: making them needs openssl, not in the image.)"""
    prefix = "usr/share/ca-certificates/"
    certs = sorted(
        (p.removeprefix(prefix) for p in entries if p.startswith(prefix) and p.endswith(".crt")),
        key=_key,
    )
    if not certs:
        return
    conf = (
        "# This file lists certificates that you wish to use or to ignore to be\n"
        "# installed in /etc/ssl/certs.\n"
        "# update-ca-certificates(8) will update /etc/ssl/certs by reading this file.\n"
        "#\n"
        "# This is autogenerated by ca-certificates.postinst.\n"
    )
    entries["etc/ca-certificates.conf"] = file(conf + "".join(f"{c}\n" for c in certs))
    bundle = b""
    for cert in certs:
        data = entries[prefix + cert].data
        bundle += data if data.endswith(b"\n") else data + b"\n"
        pem = PurePosixPath(cert).name.removesuffix(".crt") + ".pem"
        entries[f"etc/ssl/certs/{pem}"] = symlink(f"/{prefix}{cert}")
    entries["etc/ssl/certs/ca-certificates.crt"] = file(bundle)


def _dpkg_database(entries: Entries, packages: list[Package]) -> None:
    """/var/lib/dpkg: every package installed (status, file lists, control files)."""
    root = "var/lib/dpkg"
    status = []
    for package in sorted(packages, key=lambda p: p.name):
        fields = package.fields
        lines = package.control.rstrip("\n").splitlines()
        conffiles = package.info.get("conffiles", (0, b""))[1].decode().split()
        paragraph = [lines[0], "Status: install ok installed", *lines[1:]]
        if conffiles:
            paragraph.append("Conffiles:")
            for conffile in conffiles:
                digest = hashlib.md5(entries[_merged(conffile.lstrip("/"))].data).hexdigest()
                paragraph.append(f" {conffile} {digest}")
        status.append("\n".join(paragraph) + "\n")
        same = fields.get("Multi-Arch") == "same"
        stem = f"{package.name}:{fields['Architecture']}" if same else package.name
        entries[f"{root}/info/{stem}.list"] = file(
            "/.\n" + "".join(f"{f}\n" for f in package.files)
        )
        for name, (mode, blob) in package.info.items():
            entries[f"{root}/info/{stem}.{name}"] = file(blob, 0o755 if mode & 0o100 else 0o644)
    entries[f"{root}/status"] = file("\n".join(status))
    entries[f"{root}/arch"] = file("amd64\n")
    for name in ("available", "diversions", "statoverride"):
        entries.setdefault(f"{root}/{name}", file(b""))
    for name in ("updates", "triggers", "alternatives", "parts"):
        entries.setdefault(f"{root}/{name}", directory())


def build_base(spec: dict, out: Path) -> None:
    entries, packages = unpack_debs([Path(p) for p in spec["debs"]])
    _configure(entries, packages, spec)
    write_tar(entries, out, spec["epoch"])


# --- env: the venv with the pinned wheels ------------------------------------------------


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import stat
import sys
from {module} import {import_name}
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit({func}())
"""


def install_wheel(entries: Entries, wheel: Path, site: str, python: str, version: str) -> str:
    """Unpack a wheel into the venv as pip would (``--no-deps --no-compile``): its files,
    its ``.data`` schemes, console scripts bound to ``python``; RECORD rewritten."""
    venv = site.split("/lib/")[0]
    with zipfile.ZipFile(wheel) as archive:
        names = [info for info in archive.infolist() if not info.is_dir()]
        infos = {PurePosixPath(i.filename).parts[0] for i in names}
        dist_info = next((d for d in infos if d.endswith(".dist-info")), None)
        if dist_info is None:
            raise SystemExit(f"{wheel.name}: no .dist-info directory")
        data_dir = dist_info.removesuffix(".dist-info") + ".data"
        record: list[tuple[str, str, str]] = []
        scripts = []
        for info in sorted(names, key=lambda i: i.filename):
            rel = _relative(info.filename)
            blob = archive.read(info)
            executable = (info.external_attr >> 16) & 0o100
            parts = rel.split("/")
            if parts[0] == data_dir:
                scheme, inner = parts[1], "/".join(parts[2:])
                if scheme in ("purelib", "platlib"):
                    dest = f"{site}/{inner}"
                elif scheme == "scripts":
                    dest = f"{venv}/bin/{inner}"
                    if blob.startswith((b"#!python", b"#!pythonw")):
                        blob = b"#!" + python.encode() + blob[blob.index(b"\n") :]
                    executable = 1
                elif scheme == "data":
                    dest = f"{venv}/{inner}"
                elif scheme == "headers":
                    name = dist_info.split("-")[0]
                    dest = f"{venv}/include/site/python{version}/{name}/{inner}"
                else:
                    raise SystemExit(f"{wheel.name}: unknown scheme {scheme}")
            else:
                dest = f"{site}/{rel}"
            if rel in (f"{dist_info}/RECORD", f"{dist_info}/INSTALLER"):
                continue
            entries[dest] = file(blob, 0o755 if executable else 0o644)
            record.append((_site_relative(dest, site), _record_hash(blob), str(len(blob))))
        text = (
            archive.read(f"{dist_info}/entry_points.txt").decode()
            if (f"{dist_info}/entry_points.txt" in archive.namelist())
            else ""
        )
        wheel_name = dist_info.split("-")[0].lower()
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    for section in ("console_scripts", "gui_scripts"):
        if parser.has_section(section):
            scripts += list(parser.items(section))
    if wheel_name == "pip":  # pip's own rule: pipX.Y names this Python, not the wheel's
        scripts = [(n, v) for n, v in scripts if not re.fullmatch(r"pip\d\.\d+", n)]
        major_minor = [(n, v) for n, v in scripts if n == "pip"]
        scripts += [(f"pip{version}", v) for _, v in major_minor]
    for name, value in sorted(dict(scripts).items()):
        module, _, func = value.split("[")[0].strip().partition(":")
        func = func.strip()
        blob = SCRIPT.format(
            python=python, module=module.strip(), import_name=func.split(".")[0], func=func
        ).encode()
        dest = f"{venv}/bin/{name}"
        entries[dest] = file(blob, 0o755)
        record.append((_site_relative(dest, site), _record_hash(blob), str(len(blob))))
    installer = b"evalrepro\n"
    entries[f"{site}/{dist_info}/INSTALLER"] = file(installer)
    record.append((f"{dist_info}/INSTALLER", _record_hash(installer), str(len(installer))))
    record.append((f"{dist_info}/RECORD", "", ""))
    lines = "".join(",".join(row) + "\n" for row in sorted(record))
    entries[f"{site}/{dist_info}/RECORD"] = file(lines)
    return dist_info


def _site_relative(dest: str, site: str) -> str:
    if dest.startswith(site + "/"):
        return dest[len(site) + 1 :]
    up = "../" * len(site.split("/")[1:])
    return up + dest[len(site.split("/")[0]) + 1 :]


def build_env(spec: dict, out: Path) -> None:
    import venv

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if spec["python"] != version:
        raise SystemExit(f"the env pins Python {spec['python']}, the root filesystem has {version}")
    full = ".".join(str(part) for part in sys.version_info[:3])
    entries: Entries = {
        f"{VENV}/bin/python3": symlink("/usr/bin/python3"),
        f"{VENV}/bin/python": symlink("python3"),
        f"{VENV}/bin/python{version}": symlink("python3"),
        f"{VENV}/include/python{version}": directory(),
        f"{VENV}/lib/python{version}/site-packages": directory(),
        f"{VENV}/lib64": symlink("lib"),
        f"{VENV}/pyvenv.cfg": file(
            "home = /usr/bin\n"
            "include-system-site-packages = false\n"
            f"version = {full}\n"
            f"executable = /usr/bin/python{version}\n"
            f"command = /usr/bin/python3 -m venv /{VENV}\n"
        ),
    }
    # The activate scripts of this Python's venv module, for /opt/venv made by python3.
    builder = venv.EnvBuilder()
    templates = Path(venv.__file__).parent / "scripts"
    for template in sorted([*templates.glob("common/*"), *templates.glob("posix/*")]):
        context = SimpleNamespace(
            env_dir=f"/{VENV}",
            env_name=PurePosixPath(VENV).name,
            prompt=f"({PurePosixPath(VENV).name}) ",
            bin_name="bin",
            env_exe=f"/{VENV}/bin/python3",
            script_path=str(template),
        )
        text = builder.replace_variables(template.read_text(), context)
        entries[f"{VENV}/bin/{template.name}"] = file(text)
    site = f"{VENV}/lib/python{version}/site-packages"
    python = f"/{VENV}/bin/python"
    wheels = [Path(p) for p in spec["wheels"]]
    if spec.get("ensurepip"):
        # What `python3 -m venv` adds: the pip and setuptools wheels Debian ships.
        bundled = Path(sys.prefix) / "share" / "python-wheels"
        found = [w for w in bundled.glob("*.whl") if w.name.startswith(("pip-", "setuptools-"))]
        wheels = sorted(found) + wheels
    for wheel in wheels:
        install_wheel(entries, wheel, site, python, version)
    add_parents(entries)
    write_tar(entries, out, spec["epoch"])


# --- history and instance ----------------------------------------------------------------


def build_history(spec: dict, out: Path) -> None:
    entries = read_tar(Path(spec["tar"]), HISTORY)
    entries[HISTORY] = directory()
    add_parents(entries)
    write_tar(entries, out, spec["epoch"])


def build_instance(spec: dict, out: Path) -> None:
    uid, gid = TESTER["uid"], TESTER["gid"]
    entries = read_tar(Path(spec["tar"]), TESTBED, uid, gid)
    if any(p == f"{TESTBED}/.git" or p.startswith(f"{TESTBED}/.git/") for p in entries):
        raise SystemExit("the tree tar holds a .git")
    # A .git of fixed bytes, as the podman backend's: HEAD at the base commit, objects
    # borrowed from the history layer (objects/info/alternates).
    commit = spec["commit"]
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        raise SystemExit(f"base commit {commit!r} is not a full commit id")
    git = f"{TESTBED}/.git"
    owned = {"uid": uid, "gid": gid}
    entries.update(
        {
            TESTBED: directory(**owned),
            f"{git}/HEAD": file(f"{commit}\n", **owned),
            f"{git}/config": file(
                "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
                **owned,
            ),
            f"{git}/objects/info/alternates": file(f"/{HISTORY}/objects\n", **owned),
            f"{git}/refs/heads": directory(**owned),
            f"{git}/refs/tags": directory(**owned),
        }
    )
    if spec.get("install"):
        entries = install(spec, entries)
    add_parents(entries, uid, gid)
    write_tar(entries, out, spec["epoch"])


# --- the install step --------------------------------------------------------------------

#: What an install command leaves that is no part of the image (as a build's scratch).
_NOT_KEPT = ("tmp", "dev", "proc", "sys", "root/.cache", "run")
INSTALL_SCRIPT = r"""
set -e
"$BB" mkdir -p "$ROOT/dev" "$ROOT/proc"
"$BB" mount --rbind /dev "$ROOT/dev"
"$BB" mount --rbind /proc "$ROOT/proc"
exec "$BB" env -i HOME=/root LANG=C.UTF-8 SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
  PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  INSTALL="$INSTALL" "$BB" chroot "$ROOT" /bin/sh -c 'umask 022 && cd /testbed && sh -c "$INSTALL"'
"""


def layer_entries(path: Path) -> Entries:
    """A layer tar of ours, as it is (modes, owners, hard links)."""
    entries: Entries = {}
    with tarfile.open(path, encoding="utf-8", errors="surrogateescape") as tar:
        for info in tar:
            ids = {"uid": info.uid, "gid": info.gid}
            if info.isdir():
                entries[info.name] = directory(info.mode, **ids)
            elif info.issym():
                entries[info.name] = replace(symlink(info.linkname), **ids)
            elif info.islnk():
                entries[info.name] = Entry("hardlink", info.mode, target=info.linkname, **ids)
            else:
                entries[info.name] = file(tar.extractfile(info).read(), info.mode, **ids)  # type: ignore[union-attr]
    return entries


def _resolved(entries: Entries, path: str) -> tuple:
    """What a path is, for comparing: kind, permissions, bytes or link target."""
    entry = entries[path]
    if entry.kind == "hardlink":
        entry = entries[entry.target]
    # Without setuid and setgid bits: the sandbox cannot set them (see _materialize).
    return entry.kind, entry.mode & 0o1777, entry.data, entry.target


def _materialize(entries: Entries, root: Path, epoch: int) -> None:
    for name in sorted(entries, key=_key):
        entry, path = entries[name], root / name
        if entry.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "symlink":
            os.symlink(entry.target, path)
        elif entry.kind == "hardlink":
            os.link(root / entry.target, path)
        else:
            path.write_bytes(entry.data)
            # Nix's sandbox refuses setuid and setgid bits; the layer below keeps them.
            os.chmod(path, entry.mode & 0o1777)
    # Directory modes last: a read-only directory would have refused its files. And the
    # epoch as every mtime: what the command writes from them (a .pyc records its
    # source's mtime) must not depend on when the build ran.
    for name in sorted(entries, key=_key, reverse=True):
        if entries[name].kind == "dir":
            os.chmod(root / name, entries[name].mode & 0o1777)
        os.utime(root / name, (epoch, epoch), follow_symlinks=False)


def _scan(root: Path) -> Entries:
    entries: Entries = {}
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(top) / name
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                entries[rel] = symlink(os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                entries[rel] = directory(stat.S_IMODE(info.st_mode))
            elif stat.S_ISREG(info.st_mode):
                entries[rel] = file(path.read_bytes(), stat.S_IMODE(info.st_mode))
        dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]
    return entries


def install(spec: dict, instance: Entries) -> Entries:
    """Run the spec's install command in the image (as root of a user namespace, in a
    chroot of the layers below and this one; no network), and return the layer: the
    testbed as the command left it (the test user's), every other path it made or
    changed (root's), and a whiteout for each it removed."""
    import subprocess

    lower: Entries = {}
    for tar in spec["lower"]:
        lower.update(layer_entries(Path(tar)))
    root = Path(os.environ.get("TMPDIR", "/tmp")) / "rootfs"
    root.mkdir()
    merged = {**lower, **instance}
    add_parents(merged)
    _materialize(merged, root, spec["epoch"])
    done = subprocess.run(
        [spec["busybox"], "unshare", "-r", "-m", spec["busybox"], "sh", "-c", INSTALL_SCRIPT],
        env={
            "BB": spec["busybox"],
            "ROOT": str(root),
            "INSTALL": spec["install"],
            "SOURCE_DATE_EPOCH": str(spec["epoch"]),
        },
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the install command failed (exit {done.returncode})")
    after = _scan(root)
    uid, gid = TESTER["uid"], TESTER["gid"]
    layer: Entries = {}
    for path, entry in after.items():
        if any(path == skip or path.startswith(skip + "/") for skip in _NOT_KEPT):
            continue
        if path == TESTBED or path.startswith(TESTBED + "/"):
            layer[path] = replace(entry, uid=uid, gid=gid)  # as `chown -R` after install
        elif path not in lower or _resolved(lower, path) != _resolved(after, path):
            layer[path] = entry
    for path in lower:
        parent = str(PurePosixPath(path).parent)
        if path not in after and (parent == "." or parent in after):
            whiteout = f".wh.{PurePosixPath(path).name}"
            layer[whiteout if parent == "." else f"{parent}/{whiteout}"] = file(b"")
    # A changed path's directories as the layers below have them (root's), not the
    # test user's, which build_instance gives the testbed's.
    for path in list(layer):
        parent = str(PurePosixPath(path).parent)
        while parent != "." and parent not in layer:
            layer[parent] = lower.get(parent) or after[parent]
            parent = str(PurePosixPath(parent).parent)
    return layer


# --- the image ---------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def image_config(layers: list[tuple[str, str]], epoch: int) -> bytes:
    """The image config (its sha256 is the image Id): today's images' settings, fixed
    creation time; ``layers`` is (layer name, diff id hex)."""
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {"Env": [DEFAULT_PATH], "Cmd": ["/bin/bash"], "WorkingDir": f"/{TESTBED}"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for _, d in layers]},
        "history": [
            {"created": created, "created_by": f"evalrepro nix: {name} layer"} for name, _ in layers
        ],
    }
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def build_image(spec: dict, out: Path) -> None:
    """A docker-archive: manifest.json, the config, one uncompressed tar per layer."""
    layers = [(layer["name"], Path(layer["path"])) for layer in spec["layers"]]
    diff_ids = [(name, _sha256_file(path)) for name, path in layers]
    config = image_config(diff_ids, spec["epoch"])
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = [
        {
            "Config": config_name,
            "RepoTags": [spec["tag"]],
            "Layers": [f"{diff}/layer.tar" for _, diff in diff_ids],
        }
    ]
    members: list[tuple[str, bytes | Path]] = [
        ("manifest.json", json.dumps(manifest, sort_keys=True).encode()),
        (config_name, config),
    ]
    for (_, diff), (_, path) in zip(diff_ids, layers, strict=True):
        members.append((f"{diff}/layer.tar", path))
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tar:
        written = set()
        for name, content in members:
            if name in written:  # two layers with the same bytes: one blob
                continue
            written.add(name)
            info = tarfile.TarInfo(name)
            info.mtime, info.mode, info.uname, info.gname = spec["epoch"], 0o644, "", ""
            if isinstance(content, Path):
                info.size = content.stat().st_size
                with content.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))


BUILDERS = {
    "base": build_base,
    "env": build_env,
    "history": build_history,
    "instance": build_instance,
    "image": build_image,
}


def main(argv: list[str]) -> int:
    # In a derivation the spec and the output come from Nix: $specPath (passAsFile), $out.
    if len(argv) not in (1, 3) or argv[0] not in BUILDERS:
        print(f"usage: layers.py {'|'.join(BUILDERS)} [SPEC_JSON OUT]", file=sys.stderr)
        return 2
    spec, out = argv[1:] if len(argv) == 3 else (os.environ["specPath"], os.environ["out"])
    if len(argv) == 1 and (Path("/usr").exists() or Path("/home").exists()):
        # Nix's sandbox shows only the store (and /build, /dev, /proc, /tmp): a build that
        # sees the host's /usr is not sandboxed, and its output could depend on the host.
        print("layers.py: this build is not sandboxed (set sandbox = true)", file=sys.stderr)
        return 3
    BUILDERS[argv[0]](json.loads(Path(spec).read_text()), Path(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
