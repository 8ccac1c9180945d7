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
started with. All of this runs inside the process under test, so it is evidence against
a trial only, never for one.

What it prevents rather than detects, from ``site`` on (before sitecustomize, before any
code of the repository), in every process that has the variable, whatever descriptor it
names:

* a test framework (unittest, doctest, pytest, _pytest, pluggy, iniconfig) and every
  top-level module of the standard library (``sys.stdlib_module_names``; ``test`` aside)
  is imported from outside the repository whenever a copy exists there, so a module or
  package of the repository (``unittest/``, ``difflib.py``, ``json.py``) cannot shadow
  it; a name with no copy outside (a repository that is the framework) imports as usual;
* no bytecode cache is read or written (``sys.pycache_prefix`` is the supervisor's empty
  folder of root's, ``sys.dont_write_bytecode`` is on), in every process, with the
  variable or without (a parent may have cleared the environment): every module
  compiles from its source;
* the repository's own ``sitecustomize`` and ``usercustomize`` do not run (``site``
  finds none) unless the dataset's ``protection.site_hooks`` says so: the supervisor
  writes ``_SITE_HOOKS = True`` or ``False`` as this file's first line. The image's own,
  outside the repository, run as usual.

Standard library only; it does nothing at all when the variable is absent, and writes no
record when it names another descriptor. Nothing may precede the supervisor's first line
(no ``from __future__`` import here).
"""

import os
import sys

#: Written by the supervisor as the first line; off when the module is imported bare.
_SITE_HOOKS = bool(globals().get("_SITE_HOOKS", False))
#: Written by the supervisor as the second line: a folder of root's, empty.
_PYCACHE_PREFIX = globals().get("_PYCACHE_PREFIX")

_FRAMEWORKS = ("unittest", "_pytest", "pytest", "pluggy")
#: Also scanned: what a runner exits and prints through.
_RUNTIME = ("sys", "os", "builtins", "atexit")


#: Test frameworks a module of the repository may not stand in for.
_OUTSIDE_ONLY = ("unittest", "doctest", "pytest", "_pytest", "pluggy", "iniconfig")
#: Modules ``site`` imports by name at startup to run code: the repository's are not run.
_SITE_HOOK_NAMES = ("sitecustomize", "usercustomize")
#: Standard library names not taken from outside. ``test`` is CPython's own test suite:
#: nothing but CPython's test runner imports it, while many projects have a top-level
#: ``test/`` package of their own that pytest imports by that very name (``test.test_x``);
#: taking it from outside would run CPython's package (or none) instead of the project's.
_STDLIB_EXEMPT = ("test",)


def _stdlib_names():
    """Top-level module names of the standard library.

    ``sys.stdlib_module_names`` from Python 3.10 on; before that, what the standard
    library's folders hold (the modules compiled in are found by their own importer)."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return frozenset(names).difference(_STDLIB_EXEMPT)
    found = set()
    home = os.path.dirname(os.__file__)
    for folder in (home, os.path.join(home, "lib-dynload")):
        try:
            listed = os.listdir(folder)
        except OSError:
            continue
        for entry in listed:
            stem = entry.split(".", 1)[0]
            if entry.endswith((".py", ".so", ".pyd")):
                found.add(stem)
            elif "." not in entry and os.path.isfile(os.path.join(folder, entry, "__init__.py")):
                found.add(entry)
    return frozenset(found).difference(_STDLIB_EXEMPT)


class _Absent:
    """The loader of a module that is not there: ``site`` takes the error as "none"."""

    def __init__(self, name):
        self.name = name

    def create_module(self, spec):
        raise ModuleNotFoundError(f"No module named {self.name!r}", name=self.name)

    def exec_module(self, module):
        raise ModuleNotFoundError(f"No module named {self.name!r}", name=self.name)


class _FrameworkFromOutside:
    """The test framework and the standard library are imported from outside the
    repository when a copy exists there; the repository's site hooks are not run.

    ``python -m unittest`` (or ``-m pytest``) puts the repository first on the path, so a
    ``unittest/`` or ``_pytest/`` folder of the patch's would be the runner, and a
    ``difflib.py`` the module the runner reports failures with. The runner imports its
    framework before any code of the repository runs, and ``site`` imports sitecustomize
    after this hook is in place, so this holds from the start; a repository that *is*
    the framework (pytest installed from /testbed) has no copy outside and is imported as
    usual. Compiled-in and frozen modules keep their own importers (nothing on the path
    can shadow them)."""

    def __init__(self, testbed, site_hooks=False):
        import _imp

        try:  # the import system's own classes, loaded before site: nothing to import
            from _frozen_importlib import ModuleSpec
            from _frozen_importlib_external import PathFinder
        except ImportError:
            from importlib.machinery import ModuleSpec, PathFinder

        self.testbed = testbed
        self.site_hooks = site_hooks
        self.stdlib = _stdlib_names()
        self._is_frozen = _imp.is_frozen
        self._spec = ModuleSpec
        self._finder = PathFinder
        self._key = None
        self._entries = []

    def _outside(self, entry, cwd):
        if not entry:
            if cwd is None:
                return False  # the working folder is gone: nothing to import from it
            entry = cwd
        elif not os.path.isabs(entry) and cwd is None:
            return False
        return not (os.path.realpath(entry) + os.sep).startswith(self.testbed)

    def outside_entries(self):
        """The entries of sys.path outside the repository (realpath once per sys.path)."""
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
        key = (tuple(sys.path), cwd)
        if key != self._key:
            self._entries = [e for e in key[0] if isinstance(e, str) and self._outside(e, cwd)]
            self._key = key
        return self._entries

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None  # a submodule: its package's own __path__ decides
        if name in _SITE_HOOK_NAMES:
            if self.site_hooks:
                return None
            found = self._finder.find_spec(name, self.outside_entries())
            # None outside: the repository's (if any) is not run; site takes it as absent.
            return found or self._spec(name, _Absent(name))
        if name not in _OUTSIDE_ONLY and name not in self.stdlib:
            return None
        if name in sys.builtin_module_names or self._is_frozen(name):
            return None  # found by BuiltinImporter or FrozenImporter, ahead of any path
        return self._finder.find_spec(name, self.outside_entries())


def _verified_bytecode():
    """No bytecode is written, and none is read but the image's own: the repository's
    modules (and anything else the test user can write) compile from their sources.

    The supervisor gives the test run ``PYTHONPYCACHEPREFIX`` (a folder of root's, empty)
    and ``PYTHONDONTWRITEBYTECODE``; code under test may start a child without them, and
    this runs in that child too (before any code of the repository), whatever its
    environment says. With the prefix alone the standard library and the environment
    would compile from source in every process (seconds per pytest start): a module
    whose ``__pycache__`` folder, that folder's ancestors and the cached file are root's
    alone (the image's) keeps its usual cache. pytest's assertion-rewriting cache
    follows the prefix alone: test modules and conftests are rewritten from source."""
    if not _PYCACHE_PREFIX or not hasattr(sys, "pycache_prefix"):
        return
    sys.pycache_prefix = _PYCACHE_PREFIX
    sys.dont_write_bytecode = True
    try:
        import _frozen_importlib_external as external
    except ImportError:
        return
    original = external.cache_from_source
    folders = {}

    def root_only(path):
        try:
            st = os.lstat(path)
        except OSError:
            return False
        return st.st_uid == 0 and not st.st_mode & 0o022

    def trusted(given):
        """The real folder, if its cache is the image's; per folder, once."""
        found = folders.get(given, False)
        if found is False:
            folder = found = os.path.realpath(given)
            parent = os.path.join(folder, "__pycache__")
            while found and parent != os.sep:
                found = folder if root_only(parent) else None
                parent = os.path.dirname(parent)
            folders[given] = found
        return found

    def cache_from_source(path, debug_override=None, *, optimization=None):
        cached = original(path, debug_override, optimization=optimization)
        folder = trusted(os.path.dirname(os.path.abspath(os.fspath(path))))
        if folder is None:
            return cached
        usual = os.path.join(folder, "__pycache__", os.path.basename(cached))
        return usual if root_only(usual) or not os.path.lexists(usual) else cached

    external.cache_from_source = cache_from_source


def _install():
    _verified_bytecode()
    spec = os.environ.get("EVALREPRO_GUARD", "")
    parts = spec.split(":", 2)
    if len(parts) != 3:
        return
    # Before the descriptor check: a process that lost the guard's pipe still imports its
    # framework and the standard library from outside the repository.
    testbed = os.path.realpath(parts[2]) + os.sep
    sys.meta_path.insert(0, _FrameworkFromOutside(testbed, _SITE_HOOKS))
    try:
        fd, inode = int(parts[0]), int(parts[1])
        if os.fstat(fd).st_ino != inode:
            return
    except (ValueError, OSError):
        return
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
