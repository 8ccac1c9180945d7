"""The second runner: one test of the trial run by a plain driver, not by its framework.

Library code can behave one way under the test framework and another way elsewhere (it
looks for ``pytest`` in ``sys.modules``, for ``PYTEST_CURRENT_TEST``, at ``sys.argv`` or
``__main__``, for the runner's frames on the stack). After the run, the supervisor runs
FAIL_TO_PASS tests once more, each alone, with this driver (``evalrepro.run.undertest``
plans them): ``python3 -I -S -c <this file> <style> <cwd> <selector>``. It

1. decides, before any code of the repository or the environment runs (``-I -S``: no
   site, no ``.pth``, no path from the environment), whether the test allows a plain
   run: read from the verified test file and the runner's configuration; if not, it
   exits 3 before the exit guard is installed (the supervisor sees no runner: "unknown",
   which code under test, run only later, cannot produce);
2. builds the path the runner would (``site``, ``PYTHONPATH``, pytest's ``prepend``
   import mode), imports the test module, then takes the framework's modules out of
   ``sys.modules`` (the test keeps its own references), clears ``PYTEST_*`` and the
   arguments, and calls the test: a function or a plain class's method directly (with
   the module's and class's xunit setup), a ``unittest.TestCase`` method through
   ``unittest``'s own suite;
3. exits 0 if the test passed, 1 if anything failed (the import of the test module
   included), raising ``SystemExit`` itself (a replaced ``sys.exit`` changes nothing).

Standard library only, and the syntax of Python 3.8: it runs in the test environment's
interpreter.
"""

import ast
import configparser
import os
import sys

NOT_APPLICABLE = 3

#: Decorators of pytest's that change how a test runs (the driver would run it otherwise).
_MARKS_THAT_CHANGE = {"parametrize", "usefixtures", "skip", "skipif", "xfail", "filterwarnings"}
#: Fixtures the driver provides itself.
_FIXTURES = {"tmp_path"}
#: pytest's own configuration keys that change how a selected test runs. Any other key
#: is read by a plugin or by nothing (a key of a plugin not installed): the plugins that
#: may be installed are ``_HARMLESS_PLUGINS``.
_INI_THAT_CHANGES = {"usefixtures", "consider_namespace_packages", "enable_assertion_pass_hook"}
#: Options of ``addopts`` that change what runs (plugins, import rules, the root).
_ADDOPTS_THAT_CHANGE = ("-p", "--ds", "--dc", "--import-mode", "--rootdir", "--confcutdir",
                        "--pyargs", "--doctest", "-c", "--config-file", "--noconftest")  # fmt: skip
#: Plugins (entry point names) installed in the environment that change nothing here.
_HARMLESS_PLUGINS = {"pytest_cov", "xdist", "xdist.looponfail", "timeout", "pytest_mock",
                     "hypothesispytest"}  # fmt: skip
#: What leaves sys.modules before the test runs: the frameworks, not the test's own use.
_FRAMEWORKS = ("pytest", "_pytest", "pluggy", "iniconfig", "unittest", "conftest")


class NotApplicable(Exception):
    """The test needs what only its runner gives: no plain run, no judgement."""


def _decorator_name(node):
    """``pytest.mark.skip(...)`` -> ["pytest", "mark", "skip"]."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def _check_decorators(decorators, where):
    for decorator in decorators:
        name = _decorator_name(decorator)
        is_mark = len(name) >= 2 and name[-2] == "mark"
        if not is_mark or name[-1] in _MARKS_THAT_CHANGE:
            raise NotApplicable(f"{where} has a decorator the driver does not apply")


def _is_fixture(node):
    return any("fixture" in _decorator_name(d) for d in node.decorator_list)


def _check_setup_body(body, where):
    """A module or class body: no autouse fixtures, no marks for every test."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_fixture(node):
            if "autouse" in ast.dump(node):
                raise NotApplicable(f"{where} defines an autouse fixture")
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if "pytestmark" in names:
                raise NotApplicable(f"{where} sets pytestmark")


def _check_conftest(path):
    """A conftest the driver does not import must do nothing a test could rely on:
    imports, definitions (no autouse fixture, no hook) and collect_ignore only."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name.startswith("pytest_"):
                raise NotApplicable(f"{path} defines the hook {node.name}")
            if _is_fixture(node) and "autouse" in ast.dump(node):
                raise NotApplicable(f"{path} defines an autouse fixture")
            continue
        if isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id in ("collect_ignore", "collect_ignore_glob")
            for t in node.targets
        ):
            continue
        raise NotApplicable(f"{path} runs code at import (line {node.lineno})")


def _pytest_config(root):
    """The pytest ini options the runner reads, as {key: text}; NotApplicable when
    they cannot be read here."""
    for name, section in (("pytest.ini", "pytest"), ("pyproject.toml", None),
                          ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):  # fmt: skip
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        if section is None:
            with open(path, "rb") as handle:
                data = handle.read()
            if b"tool.pytest" not in data:
                continue
            try:
                import tomllib
            except ImportError:
                raise NotApplicable("pyproject.toml configures pytest (no tomllib here)") from None
            options = tomllib.loads(data.decode()).get("tool", {}).get("pytest", {})
            options = options.get("ini_options", {})
            return {k: v if isinstance(v, str) else " ".join(map(str, v))
                    for k, v in options.items()}  # fmt: skip
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except configparser.Error:
            raise NotApplicable(f"{name} cannot be read") from None
        if parser.has_section(section):
            return dict(parser.items(section))
        if name == "pytest.ini":
            return {}
    return {}


def _check_plugins(executable):
    """pytest plugins installed in the environment of ``executable`` that could change a
    test's run."""
    venv = os.path.dirname(os.path.dirname(executable))
    if not os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        venv = sys.prefix
    lib = os.path.join(venv, "lib")
    folders = []
    if os.path.isdir(lib):
        for entry in sorted(os.listdir(lib)):
            folder = os.path.join(lib, entry, "site-packages")
            if os.path.isdir(folder):
                folders.append(folder)
    for folder in folders:
        for entry in os.listdir(folder):
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            points = os.path.join(folder, entry, "entry_points.txt")
            if not os.path.isfile(points):
                continue
            parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
            try:
                parser.read(points)
            except configparser.Error:
                continue
            if parser.has_section("pytest11"):
                for name in parser.options("pytest11"):
                    if name not in _HARMLESS_PLUGINS:
                        raise NotApplicable(f"the environment has the pytest plugin {name}")


def _find(body, name):
    """The last definition of ``name`` in ``body``: the one the module ends up holding."""
    found = None
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                found = node
    return found


def _basedir(folder):
    """pytest's "prepend" import mode: the first folder up without an ``__init__.py``,
    and the package names on the way (outermost first)."""
    package = []
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        package.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    return folder, package


def plan(style, selector, root, executable=None):
    """What to run: (file, module name, base folder, class name, test name, takes
    tmp_path); NotApplicable when the test does not allow a plain run."""
    if style == "pytest":
        parts = selector.split("::")
        if len(parts) not in (2, 3) or "[" in selector or not parts[0].endswith(".py"):
            raise NotApplicable("not a plain pytest node id")
        relative, names = parts[0], parts[1:]
    else:
        dotted = selector.split(".")
        if len(dotted) < 3:
            raise NotApplicable("not a module.Class.test id")
        relative = "/".join(dotted[:-2]) + ".py"
        names = dotted[-2:]
    path = os.path.join(root, relative)
    if not os.path.isfile(path):
        raise NotApplicable(f"no file {relative}")
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    klass = None
    body = tree.body
    if len(names) == 2:
        klass = _find(body, names[0])
        if not isinstance(klass, ast.ClassDef):
            raise NotApplicable(f"no class {names[0]} defined in {relative}")
        body = klass.body
    test = _find(body, names[-1])
    if not isinstance(test, ast.FunctionDef):
        raise NotApplicable(f"no test function {names[-1]} defined where it is named")
    bases = [_decorator_name(b)[-1:] for b in klass.bases] if klass is not None else []
    unit = any(b != ["object"] for b in bases)
    if style == "pytest" and unit and not any(b and b[0].endswith("TestCase") for b in bases):
        # A plain class with a base, or a TestCase through a base of the project's:
        # which one it is shows only once the repository's code is imported.
        raise NotApplicable(f"{names[0]} has a base the driver cannot tell apart")
    conftests = []
    if style == "pytest":
        _check_setup_body(tree.body, relative)
        _check_decorators(test.decorator_list, test.name)
        if klass is not None:
            _check_setup_body(klass.body, klass.name)
            _check_decorators(klass.decorator_list, klass.name)
            names_in = {n.name for n in klass.body if isinstance(n, ast.FunctionDef)}
            if not unit and "__init__" in names_in:
                raise NotApplicable(f"{klass.name} has __init__")
        if unit and test.args.args[1:]:
            raise NotApplicable(f"{test.name} takes arguments")
        arguments = [a.arg for a in test.args.args][1 if klass is not None else 0 :]
        extra = [a for a in arguments if a not in _FIXTURES]
        if extra or test.args.vararg or test.args.kwarg or test.args.kwonlyargs:
            raise NotApplicable(f"{test.name} asks for fixtures the driver does not give")
        config = _pytest_config(root)
        changing = sorted(set(config) & _INI_THAT_CHANGES)
        if changing:
            raise NotApplicable("pytest's configuration sets " + ", ".join(changing))
        addopts = config.get("addopts", "").split() + os.environ.get("PYTEST_ADDOPTS", "").split()
        if any(o == c or o.startswith(c + "=") for o in addopts for c in _ADDOPTS_THAT_CHANGE):
            raise NotApplicable("pytest's addopts change what runs")
        folder = os.path.dirname(os.path.abspath(path))
        top = os.path.abspath(root)
        while True:
            conftest = os.path.join(folder, "conftest.py")
            if os.path.isfile(conftest):
                _check_conftest(conftest)
                # Not imported, but put on the path as pytest's import of it would.
                conftests.append(_basedir(folder)[0])
            if folder == top or len(folder) <= len(top):
                break
            folder = os.path.dirname(folder)
        _check_plugins(executable or sys.executable)
    elif not unit:
        raise NotApplicable(f"{names[0]} is not a unittest class")
    if style == "pytest":
        base, package = _basedir(os.path.dirname(os.path.abspath(path)))
        module = [*package, os.path.splitext(os.path.basename(path))[0]]
        pythonpath = _pytest_config(root).get("pythonpath", "").split()
    else:
        module, base, pythonpath = selector.split(".")[:-2], os.path.abspath(root), []
    # First on the path as pytest leaves it: the test's folder, then the conftests'
    # (the deepest imported last), then the configuration's pythonpath.
    paths = [base, *conftests] + [os.path.join(root, p) for p in pythonpath]
    return {
        "file": relative,
        "module": ".".join(module),
        "paths": paths,
        "klass": names[0] if len(names) == 2 else None,
        "unit": unit,
        "test": names[-1],
    }


def _framework_gone():
    """The frameworks out of sys.modules (their objects live on where they are held)."""
    for name in list(sys.modules):
        if name.split(".", 1)[0] in _FRAMEWORKS:
            del sys.modules[name]
        elif name == "py" and getattr(sys.modules[name], "__file__", "").endswith("py.py"):
            del sys.modules[name]  # pytest's shim of the py library


def _call_optional(function, argument):
    """``function(argument)``, or ``function()`` if it takes no argument (pytest's rule
    for xunit setup and teardown)."""
    code = getattr(function, "__code__", None)
    count = code.co_argcount if code is not None else 1
    if getattr(function, "__self__", None) is not None:
        count -= 1  # bound: its first parameter is given
    return function(argument) if count > 0 else function()


def _around(holder, setup, teardown, argument, call, unbind=False):
    """``call`` between the holder's xunit ``setup`` and ``teardown``, as pytest does
    (``unbind``: a class's, called with the class, classmethod or not)."""
    first, last = getattr(holder, setup, None), getattr(holder, teardown, None)
    if unbind:
        first, last = (getattr(f, "__func__", f) for f in (first, last))
    if first is not None:
        _call_optional(first, argument)
    try:
        call()
    finally:
        if last is not None:
            _call_optional(last, argument)


def run(plan_, cwd_first):
    import importlib
    import site
    import tempfile

    # -I ignores PYTHON* variables: what they say of bytecode is set here. The cache
    # prefix only after site, where the exit guard sets it with the image's own caches
    # kept (with the prefix alone every module would compile from source).
    sys.dont_write_bytecode = True
    for entry in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        if entry:
            sys.path.insert(0, entry)
    site.main()  # the environment's path, its .pth files and the exit guard
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    if prefix and getattr(sys, "pycache_prefix", None) is None:
        sys.pycache_prefix = prefix  # no exit guard in this environment
    cwd = os.getcwd()
    if cwd_first:
        sys.path.insert(0, cwd)  # python -m puts the working folder first
    elif cwd not in sys.path:
        sys.path.append(cwd)
    for path in reversed(plan_["paths"]):
        if path not in sys.path:
            sys.path.insert(0, path)
    for name in list(os.environ):
        if name.startswith("PYTEST_"):
            del os.environ[name]
    del sys.argv[1:]
    try:
        module = importlib.import_module(plan_["module"])
        import unittest  # held here: the suite below runs on it once it left sys.modules

        _framework_gone()
        owner = module
        if plan_["klass"] is not None:
            owner = getattr(module, plan_["klass"])
        if plan_["unit"]:
            suite = unittest.TestSuite([owner(plan_["test"])])
            result = unittest.TestResult()
            suite.run(result)
            passed = result.wasSuccessful() and not result.skipped and result.testsRun == 1
            for _, text in result.errors + result.failures:
                sys.stderr.write(text)
            return 0 if passed else 1
        code = getattr(owner, plan_["test"]).__code__
        wanted = code.co_varnames[: code.co_argcount]
        arguments = [
            __import__("pathlib").Path(tempfile.mkdtemp()) for name in wanted if name != "self"
        ]
        test = getattr(owner, plan_["test"])
        if plan_["klass"] is None:

            def call():
                _around(module, "setup_function", "teardown_function", test,
                        lambda: test(*arguments))  # fmt: skip

        else:

            def call():
                instance = owner()
                method = getattr(instance, plan_["test"])
                _around(instance, "setup_method", "teardown_method", method,
                        lambda: method(*arguments))  # fmt: skip

            inner = call

            def call():
                _around(owner, "setup_class", "teardown_class", owner, inner, unbind=True)

        _around(module, "setup_module", "teardown_module", module, call)
    except BaseException:  # SystemExit and KeyboardInterrupt from the test fail it too
        import traceback

        traceback.print_exc()
        return 1
    return 0


def main(argv):
    if len(argv) != 4 or argv[1] not in ("pytest", "unittest") or argv[2] not in ("0", "1"):
        sys.stderr.write("usage: plain.py pytest|unittest 0|1 SELECTOR\n")
        raise SystemExit(NOT_APPLICABLE) from None
    try:
        planned = plan(argv[1], argv[3], os.getcwd())
    except (NotApplicable, SyntaxError, OSError, ValueError) as why:
        sys.stderr.write(f"not run by the plain driver: {why}\n")
        raise SystemExit(NOT_APPLICABLE) from None
    raise SystemExit(run(planned, argv[2] == "1"))


if __name__ == "__main__":
    main(sys.argv)
