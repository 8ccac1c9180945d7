"""What confines the code under test besides its user: no user namespace of its own, and
nothing that says which tests are new.

- A seccomp program refuses the code under test new user namespaces (in one it could
  mount a tmpfs the watchdog never sees); the test process loads it (``testrun.py``).
- What names the test patch's tests (the test patch, the program, the repository's
  ``.git`` and the harness's store, unless the dataset declared that its tests read git)
  is locked to root, and the test user is asked to read it (``still_readable``).
- Before the reset, every process but the supervisor is killed (``kill_leftovers``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import struct

#: unshare/clone's flag for a new user namespace.
CLONE_NEWUSER = 0x10000000

# --- no new user namespaces for the code under test ------------------------------------

#: (audit arch, unshare, clone, clone3) per machine.
_SYSCALLS = {
    "x86_64": (0xC000003E, 272, 56, 435),
    "aarch64": (0xC00000B7, 97, 220, 435),
}
_LD_W_ABS, _JEQ_K, _JSET_K, _JGE_K, _RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def no_user_namespaces_filter(machine: str) -> list[tuple[int, int, int, int]] | None:
    """A seccomp program: unshare/clone with CLONE_NEWUSER fail with EPERM, clone3 with
    ENOSYS (its flags cannot be read; glibc then falls back to clone), other ABIs of the
    machine (i386, x32) are refused. In a user namespace of its own, code under test could
    mount a tmpfs the watchdog never sees."""
    numbers = _SYSCALLS.get(machine)
    if numbers is None:
        return None
    audit, unshare, clone, clone3 = numbers
    deny, nosys = _RET_ERRNO | 1, _RET_ERRNO | 38
    x32 = (_JGE_K, 0, 1, 0x40000000) if machine == "x86_64" else (_JEQ_K, 0, 1, 0xFFFFFFFF)
    return [
        (_LD_W_ABS, 0, 0, 4),  # 0: A = arch
        (_JEQ_K, 1, 0, audit),  # 1: this machine's ABI -> 3
        (_RET_K, 0, 0, deny),  # 2: another ABI
        (_LD_W_ABS, 0, 0, 0),  # 3: A = syscall number
        x32,  # 4: x32 (x86_64) -> 5
        (_RET_K, 0, 0, deny),  # 5
        (_JEQ_K, 0, 1, clone3),  # 6: clone3 -> 7
        (_RET_K, 0, 0, nosys),  # 7
        (_JEQ_K, 1, 0, unshare),  # 8: unshare -> 10
        (_JEQ_K, 0, 3, clone),  # 9: clone -> 10, else 13
        (_LD_W_ABS, 0, 0, 16),  # 10: A = flags (low word of the first argument)
        (_JSET_K, 0, 1, CLONE_NEWUSER),  # 11: CLONE_NEWUSER -> 12, else 13
        (_RET_K, 0, 0, deny),  # 12
        (_RET_K, 0, 0, _RET_ALLOW),  # 13
    ]


def install_seccomp(libc: ctypes.CDLL, program: list[tuple[int, int, int, int]]) -> None:
    """Load ``program`` for this process and its children (no_new_privs must be set)."""
    raw = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(raw)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(program), ctypes.addressof(buffer))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


# --- what the tests may not see ------------------------------------------------------


def lock_away(path: str) -> str | None:
    """``path`` (a folder or a file; a link: what it resolves to) made root's alone, closed
    to every other user; the path locked, or None when there is none. Only the top needs
    it: nothing under a folder the test user cannot enter can be opened by it, whoever
    owns what is inside (root owns it, so the test user cannot open it again)."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    os.chown(target, 0, 0, follow_symlinks=False)
    os.chmod(target, 0o700 if stat.S_ISDIR(st.st_mode) else 0o600)
    return target


def still_readable(paths: list[str]) -> None:
    """Run as the test user: fails naming each of ``paths`` it can list or read."""
    found = []
    for path in paths:
        try:
            os.listdir(path)
            found.append(path)
            continue
        except NotADirectoryError:
            pass
        except OSError:
            continue
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            found.append(path)
        except OSError:
            continue
    if found:
        raise PermissionError("readable by the test user: " + ", ".join(found))


def kill_leftovers() -> None:
    """Every process but init and this one killed, in one ``kill(-1)``, and what was ours
    reaped: before the reset, nothing of the test user's (a daemon left by a tool or by
    code pytest's config reader imported) may watch the test files being written."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def tests_read_git(program: dict) -> bool:
    """Whether the dataset declared that its tests read the repository's git data."""
    return bool(program["protection"].get("tests_read_git", False))
