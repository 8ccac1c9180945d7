"""evalrepro's exit guard, loaded by every Python process of a trial's test run.

The supervisor installs this file as ``_evalrepro_guard`` with a ``.pth`` line in each
site directory of the image, and gives the test run a pipe whose descriptor and inode
are in ``EVALREPRO_GUARD`` (``fd:inode:testbed``). A process that finds that very pipe
writes ``S <pid> <ppid>`` when it starts and, from an exit hook registered before any
other, ``X <pid> <json>`` when Python shuts down normally. A runner that printed a fake
summary and left by ``os._exit(0)`` never writes its ``X`` line.

At exit it also lists functions of the test frameworks (unittest, pytest, pluggy) and of
``sys``, ``os``, ``builtins`` and ``atexit`` that were replaced by functions defined in
the repository (library code that monkeypatches ``TestCase.assertEqual`` or ``sys.exit``
shows up here), and says whether the process's stdout and stderr are still the pipes it
started with. All of this runs inside the process under test,
so it is evidence against a trial only, never for one. One thing it prevents rather than
detects: a test framework (unittest, doctest, pytest, pluggy, iniconfig) is imported from
outside the repository whenever a copy exists there, so a package of the repository
cannot shadow it. Standard library only; it does nothing at all when the variable is
absent, and writes no record when it names another descriptor.
"""

import os
import sys

_FRAMEWORKS = ("unittest", "_pytest", "pytest", "pluggy")
#: Also scanned: what a runner exits and prints through.
_RUNTIME = ("sys", "os", "builtins", "atexit")


#: Test frameworks a module of the repository may not stand in for.
_OUTSIDE_ONLY = ("unittest", "doctest", "pytest", "_pytest", "pluggy", "iniconfig")


class _FrameworkFromOutside:
    """A test framework is imported from outside the repository when a copy exists there.

    ``python -m unittest`` (or ``-m pytest``) puts the repository first on the path, so a
    ``unittest/`` or ``_pytest/`` folder of the patch's would be the runner. The runner
    imports its framework before any code of the repository runs, so this holds from the
    start; a repository that *is* the framework (pytest installed from /testbed) has no
    copy outside and is imported as usual."""

    def __init__(self, testbed):
        self.testbed = testbed

    def _outside(self, entry):
        return not (os.path.realpath(entry or os.getcwd()) + os.sep).startswith(self.testbed)

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in _OUTSIDE_ONLY:
            return None
        from importlib.machinery import PathFinder

        entries = [entry for entry in sys.path if isinstance(entry, str) and self._outside(entry)]
        return PathFinder.find_spec(name, entries)


def _install():
    spec = os.environ.get("EVALREPRO_GUARD", "")
    parts = spec.split(":", 2)
    if len(parts) != 3:
        return
    # Before the descriptor check: a process that lost the guard's pipe still imports its
    # framework from outside the repository.
    sys.meta_path.insert(0, _FrameworkFromOutside(os.path.realpath(parts[2]) + os.sep))
    try:
        fd, inode = int(parts[0]), int(parts[1])
        if os.fstat(fd).st_ino != inode:
            return
    except (ValueError, OSError):
        return
    testbed = os.path.realpath(parts[2]) + os.sep
    pid = os.getpid()
    streams = _streams()

    def write(line):
        try:
            os.write(fd, line[:4000] + b"\n")
        except OSError:
            pass

    def at_exit():
        if os.getpid() != pid:
            return  # a forked child inherited the hook; it is not the process that started
        try:
            replaced = _replaced(testbed)
        except Exception:
            replaced = []
        import json

        # pytest restores its captured descriptors before exit: a runner whose stdout or
        # stderr is not the pipe it started with had its output sent elsewhere.
        redirected = _streams() != streams
        payload = json.dumps({"replaced": replaced[:20], "redirected": redirected}).encode()
        write(b"X %d " % pid + payload[:3500])

    import atexit

    atexit.register(at_exit)
    write(b"S %d %d" % (pid, os.getppid()))


def _streams():
    found = []
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
            found.append((st.st_dev, st.st_ino))
        except OSError:
            found.append(None)
    return found


def _replaced(testbed):
    """Framework functions whose code lives in the repository, not in the framework."""
    homes = []
    for name in _FRAMEWORKS:
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None)
        if origin:
            homes.append(os.path.dirname(os.path.realpath(origin)) + os.sep)
    found = []
    real = {}  # co_filename -> its real path: a few hundred files, thousands of functions
    for name, module in list(sys.modules.items()):
        if module is None or not (name.split(".")[0] in _FRAMEWORKS or name in _RUNTIME):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                for member, item in list(vars(value).items()):
                    _check(found, f"{name}.{attr}.{member}", item, testbed, homes, real)
            else:
                _check(found, f"{name}.{attr}", value, testbed, homes, real)
            if len(found) >= 20:
                return found
    return found


def _check(found, target, value, testbed, homes, real):
    for candidate in (value, getattr(value, "__func__", None), getattr(value, "fget", None)):
        code = getattr(candidate, "__code__", None)
        if code is None and candidate is not None and not isinstance(candidate, type):
            # A callable object whose class (defined in the repository) does the work.
            call = vars(type(candidate)).get("__call__")
            code = getattr(call, "__code__", None)
        if code is None or code.co_filename.startswith("<"):
            continue  # frozen and generated code lives in no file
        filename = real.get(code.co_filename)
        if filename is None:
            filename = real[code.co_filename] = os.path.realpath(code.co_filename)
        if filename.startswith(testbed) and not filename.startswith(tuple(homes)):
            found.append({"target": target, "file": filename})
            return


_install()
