"""The watchdog: what the test user's processes use together, against the trial's limits.

The tests' limits are the trial's, not each process's: memory (each page counted once),
tasks, bytes written, files and folders created (``InodeCount``: a walk of the folders
the test user can write, ``writable_roots``), and the machine's reserves (memory, disk,
inodes) that other trials share. The container's cgroup counters, where it has a cgroup
of its own (root podman), name the kernel's own limits when they were hit.
"""

from __future__ import annotations

import os
import stat
import time

from .user import User


class Watchdog:
    """Measures the test user's processes together and says when a limit is crossed."""

    def __init__(
        self, uid: int, limits: dict, fs_path: str, roots: list[str] | None = None
    ) -> None:
        self.uid = uid
        self.limits = limits
        self.fs_path = fs_path
        self.peak = {"memory": 0, "pids": 0, "disk": 0, "inodes": 0}
        self.reaped_io_base = _io_written(os.getpid())
        #: Files and folders under the folders the test user can write (None: no limit).
        self.inodes = None if roots is None or "inodes" not in limits else InodeCount(roots)

    def processes(self) -> list[tuple[int, int]]:
        """(pid, threads) of every process of the test user in this container."""
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/status", "rb") as handle:
                    status = handle.read(4096)
            except OSError:
                continue
            uid = threads = None
            for line in status.split(b"\n"):
                if line.startswith(b"Uid:"):
                    uid = int(line.split()[1])
                elif line.startswith(b"Threads:"):
                    threads = int(line.split()[1])
            if uid == self.uid:
                found.append((int(name), threads or 1))
        return found

    def check(self) -> tuple[str, str] | None:
        procs = self.processes()
        pids = sum(threads for _, threads in procs)
        self.peak["pids"] = max(self.peak["pids"], pids)
        if pids >= self.limits["pids"]:
            return "pids", f"{pids} tasks reached the limit of {self.limits['pids']}"
        memory = _memory(pid for pid, _ in procs)
        self.peak["memory"] = max(self.peak["memory"], memory)
        if memory > self.limits["memory"]:
            return "memory", (
                f"{size_text(memory)} in use by the test processes together, "
                f"limit {size_text(self.limits['memory'])}"
            )
        available = _mem_available()
        if available is not None and available < self.limits["memory_reserve"]:
            return "memory", (
                f"the machine has {size_text(available)} available, below the "
                f"reserve of {size_text(self.limits['memory_reserve'])}"
            )
        written = sum(_io_written(pid) for pid, _ in procs)
        written += _io_written(os.getpid()) - self.reaped_io_base
        self.peak["disk"] = max(self.peak["disk"], written)
        if written > self.limits["disk"]:
            limit = self.limits["disk"]
            return "disk", f"{size_text(written)} written, limit {size_text(limit)}"
        if self.inodes is not None:
            created = self.inodes.step()
            self.peak["inodes"] = max(self.peak["inodes"], created)
            if created > self.limits["inodes"]:
                return "inodes", (
                    f"{created} files and folders created, limit {self.limits['inodes']}"
                )
        try:
            fs = os.statvfs(self.fs_path)
        except OSError:
            return None
        free = fs.f_bavail * fs.f_frsize
        if free < self.limits["disk_reserve"]:
            return "disk", (
                f"the filesystem has {size_text(free)} free, below the reserve of "
                f"{size_text(self.limits['disk_reserve'])}"
            )
        reserve = self.limits.get("inodes_reserve", 0)
        if fs.f_files and fs.f_favail < reserve:  # f_files 0: the filesystem has no count
            return "inodes", (
                f"the filesystem has {fs.f_favail} free inodes, below the reserve of {reserve}"
            )
        return None

    def last_count(self) -> tuple[str, str] | None:
        """After the tests: one whole count of what they left (a flood made between two
        passes by tests that then ended at once is counted here), bounded by the limit."""
        if self.inodes is None:
            return None
        created = self.inodes.recount(self.limits["inodes"])
        self.peak["inodes"] = max(self.peak["inodes"], created)
        if created > self.limits["inodes"]:
            return "inodes", (
                f"{created} files and folders created, limit {self.limits['inodes']} "
                "(counted after the tests)"
            )
        return None


#: Entries the inode count reads per watchdog tick, and how often a new pass starts.
_INODE_SLICE = 20_000
_INODE_PERIOD = 1.0


class InodeCount:
    """Files and folders the tests created (net): entries under the folders the test user
    can write, less those there before the tests. No counter of the kernel's is this
    trial's alone (a filesystem's free inodes are every trial's), so the tree is walked:
    at most ``_INODE_SLICE`` entries a tick (a flood costs a bounded time per tick), a
    new pass at most every ``_INODE_PERIOD`` seconds."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = roots
        self._pending: list[str] = []
        self._listing = None
        self._partial = 0
        self._next_pass = 0.0
        self._last = 0
        self.baseline = 0
        while not self._walk(1 << 62):
            pass
        self.baseline = self._partial

    def step(self) -> int:
        """Walk on for a slice; entries created so far (the larger of the last whole
        pass and the pass under way)."""
        if self._pending or self._listing is not None or time.monotonic() >= self._next_pass:
            self._walk(_INODE_SLICE)
        return max(self._last, self._partial) - self.baseline

    def recount(self, limit: int) -> int:
        """A new whole pass, read to its end or to ``limit`` entries past the baseline
        (enough to say the limit was crossed); the entries created."""
        self._pending, self._listing, self._partial = [], None, 0
        self._walk(self.baseline + limit + 1)
        if self._listing is not None:
            self._listing.close()
            self._listing = None
        return self._partial - self.baseline

    def _walk(self, budget: int) -> bool:
        """Read up to ``budget`` entries; True when a whole pass ended."""
        if not self._pending and self._listing is None:
            self._pending, self._partial = list(self.roots), 0
        seen = 0
        while seen < budget:
            if self._listing is None:
                if not self._pending:
                    self._last = self._partial
                    self._next_pass = time.monotonic() + _INODE_PERIOD
                    return True
                try:
                    self._listing = os.scandir(self._pending.pop())
                except OSError:
                    continue
            entry = next(self._listing, None)
            if entry is None:
                self._listing.close()
                self._listing = None
                continue
            seen += 1
            self._partial += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    self._pending.append(entry.path)
            except OSError:
                continue
        return False


def writable_roots(user: User, testbed: str) -> list[str]:
    """The folders the test user can create files in: the repository, its home, and any
    folder up to three levels below / that it owns or may write (``/tmp``, ``/var/tmp``,
    ``/dev/shm``, ``/run/lock``, ...), outermost only."""
    found = {testbed.rstrip("/") or "/", user.home.rstrip("/")}
    stack = [("/", 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.path in ("/proc", "/sys") or entry.path in found:
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (
                st.st_mode & stat.S_IWOTH
                or (st.st_uid == user.uid and st.st_mode & stat.S_IWUSR)
                or (st.st_gid == user.gid and st.st_mode & stat.S_IWGRP)
            ):
                found.add(entry.path)
            elif depth < 2:
                stack.append((entry.path, depth + 1))
    return sorted(p for p in found if not any(p.startswith(q + "/") for q in found if q != "/"))


def _memory(pids) -> int:
    """Anonymous and shared memory of these processes together, each page counted once.

    PSS splits shared pages among their users; shared-memory objects held open but not
    mapped (a memfd written with write()) are counted by inode, once.
    """
    total = 0
    mapped: set[tuple[int, int]] = set()
    held: dict[tuple[int, int], int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle.read().split(b"\n"):
                    if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                        total += int(line.split()[1]) * 1024
            with open(f"/proc/{pid}/maps", "rb") as handle:
                for line in handle.read().split(b"\n"):
                    fields = line.split(None, 5)
                    if len(fields) == 6 and fields[5].startswith(
                        (b"/memfd:", b"/dev/shm/", b"/SYSV")
                    ):
                        major, minor = fields[3].split(b":")
                        mapped.add((os.makedev(int(major, 16), int(minor, 16)), int(fields[4])))
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if not target.startswith(("/memfd:", "/dev/shm/")):
                        continue
                    st = os.stat(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                held[(st.st_dev, st.st_ino)] = st.st_blocks * 512
        except OSError:
            continue  # the process went away, or hides: the machine reserve still holds
    total += sum(size for key, size in held.items() if key not in mapped)
    return total


def _io_written(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/io", "rb") as handle:
            fields = dict(line.split(b": ") for line in handle.read().split(b"\n") if line)
        return int(fields[b"write_bytes"]) - int(fields.get(b"cancelled_write_bytes", 0))
    except (OSError, KeyError, ValueError):
        return 0


def cgroup_counters() -> dict[str, int]:
    """The container's own cgroup: out-of-memory kills and refused forks so far.

    Only a cgroup with a limit set is the container's own (root podman); rootless on
    cgroup v1 there is none, and what is mounted is not ours to read.
    """
    counters: dict[str, int] = {}
    for limit_file, events_file, key, name in (
        ("memory/memory.limit_in_bytes", "memory/memory.oom_control", b"oom_kill", "oom_kill"),
        ("memory.max", "memory.events", b"oom_kill", "oom_kill"),
        ("pids/pids.max", "pids/pids.events", b"max", "pids_max"),
        ("pids.max", "pids.events", b"max", "pids_max"),
    ):
        try:
            with open(f"/sys/fs/cgroup/{limit_file}", "rb") as handle:
                limit = handle.read().strip()
            if limit == b"max" or (limit.isdigit() and int(limit) >= 1 << 60):
                continue
            with open(f"/sys/fs/cgroup/{events_file}", "rb") as handle:
                for line in handle.read().split(b"\n"):
                    fields = line.split()
                    if len(fields) == 2 and fields[0] == key:
                        counters[name] = int(fields[1])
        except (OSError, ValueError):
            continue
    return counters


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as handle:
            for line in handle:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def size_text(n: int) -> str:
    """A size for people (``1.5 MiB``)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
