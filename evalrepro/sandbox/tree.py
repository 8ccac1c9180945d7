"""The tree: what tools and tests wrote, seen by its stat data, and put back.

A snapshot of a folder holds every entry's stat facts; two snapshots differ exactly where
something wrote (a patch cannot choose an inode or a nanosecond mtime): that is how the
supervisor learns which paths the patch changed and which the tests changed. What the
test user may write is saved before the tests (``SavedState``) and put back before each
fresh run and re-run. ``root_folder`` makes the supervisor's own folders, where no other
user can replace them.
"""

from __future__ import annotations

import os
import stat

from .protocol import HarnessError, shown


def snapshot(root: str, skip: frozenset[str] = frozenset()) -> dict[str, tuple]:
    """Every entry under ``root`` (not following links, skipping .git and the relative
    paths in ``skip``) with its stat facts.

    Two snapshots differ exactly where a tool wrote: a patch cannot choose an inode or
    a nanosecond mtime.
    """
    entries: dict[str, tuple] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as listing:
                items = list(listing)
        except OSError:
            continue
        for item in items:
            if item.name == ".git":
                continue
            path = f"{rel}/{item.name}" if rel else item.name
            if path in skip:
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            entries[path] = (
                stat.S_IFMT(st.st_mode),
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                st.st_ino,
                st.st_ctime_ns,
            )
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
    return entries


def escaping_links(root: str, paths: list[str]) -> list[str]:
    """Links among ``paths`` that resolve outside ``root`` or into its .git.

    The host refuses such patches before any container; this is the same rule on what
    the tools really wrote, through links that were already in the repository.
    """
    top = os.path.realpath(root)
    found = []
    for path in paths:
        full = os.path.join(root, path)
        if not os.path.islink(full):
            continue
        resolved = os.path.realpath(full)
        inside = resolved == top or resolved.startswith(top + "/")
        if not inside or ".git" in os.path.relpath(resolved, top).split("/"):
            found.append(
                "a symbolic link that leaves the repository "
                f"({shown(path)} -> {shown(os.readlink(full))})"
            )
    return found


def changed_paths(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    # A directory's own stat changes when an entry in it does: that is not a change of
    # the directory unless its kind changed or it appeared or went.
    return sorted(
        p
        for p in changed
        if not (p in before and p in after and before[p][0] == after[p][0] == stat.S_IFDIR)
    )


class SavedState:
    """What the test user may write (the repository and every other writable folder), as
    it was when the tests started, kept in a folder of root's that the test user cannot
    enter; ``restore`` puts back everything a run changed since.

    Each fresh run and each re-run starts from this state, so nothing a run before it
    wrote (a file in /tmp, a marker in its home, bytecode in ``__pycache__``) can make it
    pass. Every test process is dead when it is used (the kill(-1) that ends a run): no
    one races it, and a changed parent is put back before anything below it."""

    def __init__(self, roots: list[str], store: str, skip: list[str]) -> None:
        self.roots = roots
        self.store = store
        #: Per root: the relative paths of the supervisor's own folders inside it.
        self.skip = [
            frozenset(
                os.path.relpath(s, root) for s in skip if s.startswith(root.rstrip("/") + "/")
            )
            for root in roots
        ]
        self.baseline: list[dict[str, tuple]] = []
        for index, root in enumerate(roots):
            entries = snapshot(root, self.skip[index])
            saved = os.path.join(store, str(index))
            os.mkdir(saved, 0o700)
            for rel in sorted(entries):
                _copy_entry(os.path.join(root, rel), os.path.join(saved, rel), recurse=False)
            self.baseline.append(entries)

    def restore(self) -> int:
        """Put back what changed since the state was saved (or last restored); how many
        paths were put back."""
        count = 0
        for index, root in enumerate(self.roots):
            before = self.baseline[index]
            now = snapshot(root, self.skip[index])
            changed = changed_paths(before, now)
            moded = [
                p
                for p in before.keys() & now.keys()
                if before[p][0] == now[p][0] == stat.S_IFDIR and before[p][1] != now[p][1]
            ]  # folders whose mode changed (changed_paths leaves folders out)
            done: set[str] = set()
            for rel in changed:  # sorted: a folder before what it holds
                parts = rel.split("/")
                if any("/".join(parts[:depth]) in done for depth in range(1, len(parts))):
                    continue  # put back with its folder
                full = os.path.join(root, rel)
                if rel in now:
                    remove(full)
                if rel in before:
                    _copy_entry(os.path.join(self.store, str(index), rel), full, recurse=True)
                done.add(rel)
            for rel in moded:
                os.chmod(os.path.join(root, rel), stat.S_IMODE(before[rel][1]))
            if done or moded:
                self.baseline[index] = snapshot(root, self.skip[index])
            count += len(done) + len(moded)
        return count


def _copy_entry(source: str, target: str, *, recurse: bool) -> None:
    """``source`` (not followed) at ``target`` with its kind, content, mode, owner and
    times; a folder with what it holds when ``recurse``. Sockets and devices are not
    kept (a run's state cannot depend on one: nothing outlives its processes)."""
    st = os.lstat(source)
    kind = stat.S_IFMT(st.st_mode)
    if kind == stat.S_IFDIR:
        os.mkdir(target, 0o700)
        if recurse:
            with os.scandir(source) as listing:
                for item in listing:
                    _copy_entry(item.path, os.path.join(target, item.name), recurse=True)
    elif kind == stat.S_IFLNK:
        os.symlink(os.readlink(source), target)
    elif kind == stat.S_IFREG:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "rb") as reader, os.fdopen(out, "wb") as writer:
            while chunk := reader.read(1 << 20):
                writer.write(chunk)
    elif kind == stat.S_IFIFO:
        os.mkfifo(target, 0o600)
    else:
        return
    os.lchown(target, st.st_uid, st.st_gid)
    if kind != stat.S_IFLNK:
        os.chmod(target, stat.S_IMODE(st.st_mode))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def root_folder(prefix: str, mode: int) -> str:
    """A new empty folder of root's with ``mode``, where no other user can replace it (its
    parent and the parent's ancestors are root's and writable by root alone)."""
    for parent in ("/var/lib", "/"):
        try:
            chain = [parent] + [
                os.path.dirname(parent.rstrip("/")) or "/" for _ in range(parent.count("/"))
            ]
            if all(_root_only(os.lstat(p)) for p in chain):
                folder = new_folder(parent, prefix)
                os.chmod(folder, mode)
                return folder
        except OSError:
            continue
    raise HarnessError("no folder of root's alone for the supervisor (/var/lib, /)")


def new_folder(parent: str, prefix: str) -> str:
    """A new folder in ``parent`` (mode 0700), its name ``prefix`` and random letters:
    what ``tempfile.mkdtemp`` makes, without importing tempfile (and with it shutil,
    random, bz2, lzma) into every supervisor's start."""
    for _ in range(100):
        folder = os.path.join(parent, prefix + os.urandom(6).hex())
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        return folder
    raise HarnessError(f"no new folder could be made in {parent}")


def _root_only(st: os.stat_result) -> bool:
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == 0
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def remove(path: str) -> None:
    """Whatever is at ``path`` gone (a folder with what it holds; a link, not its target)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        import shutil  # here: rarely needed, and slow to import at every start

        shutil.rmtree(path)  # does not follow links
    else:
        os.unlink(path)
