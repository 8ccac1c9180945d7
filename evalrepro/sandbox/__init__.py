"""What runs inside a trial's sandbox: the supervisor and the exit guard.

Both are standard-library-only code: the container runs them with the base image's own
Python (3.9 or later). The supervisor is the modules named in :data:`SUPERVISOR_MODULES`,
one concept each (``supervisor.py`` says which); they reach the sandbox together, as one
archive the host builds from them (:func:`shipped_supervisor`), mounted read-only at
:data:`SUPERVISOR_PATH` and run as ``python3 -I -S`` of it. The host imports
``protocol`` (the stream's constants, the names' rule) and ``infra`` (which files are
test infrastructure) so that each is defined once, never the rest.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SANDBOX_DIR = Path(__file__).resolve().parent
GUARD = SANDBOX_DIR / "guard.py"
#: The second runner's plain driver (run in a fresh process, without the test framework).
PLAIN_DRIVER = SANDBOX_DIR / "plain.py"

#: The supervisor's modules, each importing only those before it; its entry last.
SUPERVISOR_MODULES = (
    "protocol.py",
    "user.py",
    "infra.py",
    "tree.py",
    "writes.py",
    "confine.py",
    "watchdog.py",
    "exitguard.py",
    "testrun.py",
    "phases.py",
    "supervisor.py",
)
#: The package the modules form inside the archive (no evalrepro there: the modules
#: import one another relatively, so any package name holds them).
ARCHIVE_PACKAGE = "sandbox"
#: The archive's own two files: Python runs a zip's ``__main__.py`` with the zip first on
#: ``sys.path`` (under ``-I`` too), and the package needs an ``__init__``.
_ARCHIVE_MAIN = (
    b"import sys\n\n"
    b"from " + ARCHIVE_PACKAGE.encode() + b".supervisor import main\n\n"
    b"sys.exit(main(sys.argv))\n"
)
_ARCHIVE_INIT = b'"""evalrepro\'s trial supervisor (evalrepro/sandbox/ in the harness)."""\n'
#: One time for every member: the same modules give the same archive bytes.
_ARCHIVE_TIME = (1980, 1, 1, 0, 0, 0)

#: Where the attempt's inputs are mounted (read-only) in the sandbox. The model patch is
#: the patch tools' (they run as the test user); the test patch and the program name the
#: instance's tests and the canaries: they are in a folder only the container's root may
#: enter (docs/threat-model.md, "What the test process can see").
PATCH_PATH = "/evalrepro/patch.diff"
PRIVATE_DIR = "/evalrepro/private"
TEST_PATCH_PATH = PRIVATE_DIR + "/test.patch"
PROGRAM_PATH = PRIVATE_DIR + "/program.json"
#: The supervisor's archive (``python3 -I -S SUPERVISOR_PATH PROGRAM_PATH``).
SUPERVISOR_PATH = "/evalrepro/supervisor.pyz"
GUARD_PATH = "/evalrepro/guard.py"
TESTBED = "/testbed"
#: The harness's own copy of the repo's history (root-owned, outside /testbed).
GIT_DIR = "/opt/evalrepro/repo.git"


@dataclass(frozen=True)
class ShippedSupervisor:
    """The supervisor as the sandbox gets it."""

    #: The archive's members, name -> bytes: every module, and the archive's own files.
    files: dict[str, bytes]
    #: The zip of :attr:`files` (stored, not compressed: no zlib is needed to run it).
    archive: bytes
    #: ``sha256:`` over every member's name and bytes (:func:`supervisor_digest`).
    digest: str


def supervisor_files(folder: Path = SANDBOX_DIR) -> dict[str, bytes]:
    """The archive's members, read from ``folder`` (a copy of this one, in tests)."""
    files = {"__main__.py": _ARCHIVE_MAIN, f"{ARCHIVE_PACKAGE}/__init__.py": _ARCHIVE_INIT}
    for name in SUPERVISOR_MODULES:
        files[f"{ARCHIVE_PACKAGE}/{name}"] = (folder / name).read_bytes()
    return files


def supervisor_archive(files: dict[str, bytes]) -> bytes:
    """A zip of ``files``: the same files give the same bytes (members in name order,
    one time, one mode)."""
    import zipfile  # here: with it come bz2 and lzma, which no importer of this needs

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_ARCHIVE_TIME)
            info.create_system = 3  # unix: the mode below is read as one
            info.external_attr = 0o100644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def supervisor_digest(files: dict[str, bytes]) -> str:
    """sha256 over every member's name and bytes, in name order: any change to any module
    shipped (or a module more or less) is another digest. It is the files', not the zip's
    bytes, so that it does not depend on the host's zipfile."""
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        digest.update(b"%s\0%d\0" % (name.encode(), len(data)))
        digest.update(data)
    return "sha256:" + digest.hexdigest()


@cache
def shipped_supervisor(folder: Path = SANDBOX_DIR) -> ShippedSupervisor:
    """The supervisor from ``folder``, read once per process: what a process mounts in
    its sandboxes is what the digest it puts in its eval scripts says."""
    files = supervisor_files(folder)
    return ShippedSupervisor(files, supervisor_archive(files), supervisor_digest(files))
