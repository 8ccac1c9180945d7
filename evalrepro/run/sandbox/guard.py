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
so it is evidence against a trial only, never for one. Standard library only; it does
nothing at all when the variable is absent or names another descriptor.
"""

import os
import sys

_FRAMEWORKS = ("unittest", "_pytest", "pytest", "pluggy")
#: Also scanned: what a runner exits and prints through.
_RUNTIME = ("sys", "os", "builtins", "atexit")


def _install():
    spec = os.environ.get("EVALREPRO_GUARD", "")
    parts = spec.split(":", 2)
    if len(parts) != 3:
        return
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
