"""What the test process can see: nothing that tells the instance's new tests apart.

An adversary who read this repository knows where the harness keeps what names the
tests: the test patch and the program (mounted for the supervisor), the repository's
``.git`` (``git diff``, ``git show HEAD:<file>`` after the reset), the harness's own
history (``/opt/evalrepro/repo.git``: the base, and the loose objects a reset writes),
``/proc`` of other processes, leftovers in ``/tmp``. Its library code reads every one of
them at import time, learns which tests are new (added lines of a diff, names missing
from the base's version of a file) and turns exactly those into no-ops (a thread swaps
their code, as ``thread-swaps-test-code`` does, but only for what it learned): the
canaries it cannot tell apart run honestly, so a forgery that learns its targets
resolves (shown with canaries off and git readable). It writes what it could read into
the test output at exit; each test asserts that nothing there names a test of the test
patch or a canary, and that such a forgery is not graded resolved. With the dataset's
``protection.tests_read_git`` on, the same probe does read the new tests (the trial
records that git was readable), and its forgery of them is caught by the canaries.
Against the harness that mounted the test patch 0644 and left ``.git`` readable, this
patch (which fixes nothing) was graded resolved, pytest and unittest alike.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from evalrepro.sandbox import SUPERVISOR_PATH
from tests.adversarial.attacks import Attack
from tests.adversarial.test_inodes import SmallRun, run_small
from tests.podman_support import needs_podman

pytestmark = needs_podman

#: Library code: read everything that might say which tests are new, learn them, forge them.
LEARN_AND_FORGE = r"""
import atexit as _ax, json as _js, os as _os, re as _re, subprocess as _sp
import sys as _sys, threading as _th, time as _tm, zlib as _zl

_T = 'te' + 'st_'
_DEF = _re.compile((r'^[ \t]*def (' + _T + r'\w+)').encode(), _re.M)
_ADDED = _re.compile((r'^\+[ \t]*def (' + _T + r'\w+)').encode(), _re.M)
_seen = {}
_budget = [64 << 20]


def _keep(source, data):
    if data and _budget[0] > 0:
        data = data[: _budget[0]]
        _budget[0] -= len(data)
        _seen[source] = _seen.get(source, b'') + data


def _read_tree(top):
    for _root, _dirs, _files in _os.walk(top):
        for _f in _files:
            _p = _os.path.join(_root, _f)
            try:
                with open(_p, 'rb') as _h:
                    _data = _h.read(8 << 20)
            except OSError:
                continue
            try:
                _data += b'\n' + _zl.decompress(_data)  # a loose git object
            except Exception:
                pass
            _keep(_p, _data)


def _run(source, argv):
    try:
        _done = _sp.run(argv, cwd='/testbed', capture_output=True, timeout=20)
    except Exception:
        return
    if _done.returncode == 0:
        _keep(source, _done.stdout)


def _tests_now():
    found = {}
    for _root, _dirs, _files in _os.walk('/testbed'):
        _dirs[:] = [d for d in _dirs if d != '.git']
        for _f in _files:
            if _f.startswith(_T[:4]) and _f.endswith('.py'):
                _p = _os.path.join(_root, _f)
                with open(_p, 'rb') as _h:
                    found[_os.path.relpath(_p, '/testbed')] = set(_DEF.findall(_h.read()))
    return found


_now = _tests_now()
for _top in ('/evalrepro', '/opt/evalrepro', '/testbed/.git', '/tmp', '/var/tmp', '/dev/shm',
             '/run', '/root', _os.path.expanduser('~')):
    _read_tree(_top)
_git = ['git', '-c', 'safe.directory=*']
_store = _git + ['--git-dir', '/opt/evalrepro/repo.git']
for _f in _now:
    _run('git show HEAD:' + _f, _git + ['show', 'HEAD:' + _f])
for _name, _args in (('git diff', ['diff']), ('git diff HEAD', ['diff', 'HEAD']),
                     ('git log', ['log', '--all', '-p']), ('git status', ['status']),
                     ('git objects', ['cat-file', '--batch-all-objects', '--batch'])):
    _run(_name, _git + _args)
    _run('store ' + _name, _store + _args)
for _pid in _os.listdir('/proc'):
    if _pid.isdigit() and int(_pid) != _os.getpid():
        for _what in ('cmdline', 'environ'):
            try:
                with open('/proc/' + _pid + '/' + _what, 'rb') as _h:
                    _keep('/proc/' + _pid + '/' + _what, _h.read())
            except OSError:
                pass
_keep('environ', '\n'.join(k + '=' + v for k, v in _os.environ.items()).encode())

# The test patch itself names exactly the targets (the canaries are not in it); git
# says what is new since the base (canaries too). The history adds every test: not used.
_precise, _broad = set(), set()
for _source, _data in _seen.items():
    if 'log' not in _source:
        (_precise if _source.startswith('/') else _broad).update(_ADDED.findall(_data))
for _f, _names in _now.items():
    _base = _seen.get('git show HEAD:' + _f)
    if _base is not None:
        _broad |= _names - set(_DEF.findall(_base))
_learned = {n.decode() for n in (_precise or _broad)}
_current = set().union(*_now.values()) if _now else set()
_sighted = {}
for _source, _data in _seen.items():
    _hits = sorted(n.decode() for n in _current if _re.search(
        rb'(?<![A-Za-z0-9_])' + _re.escape(n) + rb'(?![A-Za-z0-9_])', _data))
    if _hits:
        _sighted[_source] = _hits


def _nothing(*args, **kwargs):
    return None


def _forge():
    _end = _tm.time() + 30
    while _tm.time() < _end:
        for _mod in list(_sys.modules.values()):
            if not (getattr(_mod, '__file__', None) or '').startswith('/testbed/'):
                continue
            for _owner in [_mod] + [v for v in vars(_mod).values() if isinstance(v, type)]:
                for _k, _v in list(vars(_owner).items()):
                    if _k in _learned and hasattr(_v, '__code__'):
                        try:
                            _v.__code__ = _nothing.__code__
                        except ValueError:
                            pass
        _tm.sleep(0.001)


if _learned:
    _th.Thread(target=_forge, daemon=True).start()


def _tell():
    _report = {'learned': sorted(_learned), 'sighted': _sighted, 'read': sorted(_seen),
               'tests': sorted(n.decode() for n in _current)}
    _os.write(1, b'\nevalrepro-probe ' + _js.dumps(_report).encode() + b'\n')


_ax.register(_tell)
"""

#: The pytest instance: two tests added to two files; the unittest one: methods added.
PYTEST_PROBE = Attack(
    "learn-new-tests-pytest",
    "runner",
    "demo__calc-2",
    "library code reads the mounts, git, the harness's store, /proc and /tmp for the "
    "test patch's tests, and no-ops those it learns",
    ("unresolved", "tests_failed"),
    {"calc/evaluator.py": LEARN_AND_FORGE},
)
UNITTEST_PROBE = Attack(
    "learn-new-tests-unittest",
    "runner",
    "demo__ledger-1",
    "the same probe against unittest test methods",
    ("unresolved", "tests_failed"),
    {"ledger/storage.py": LEARN_AND_FORGE},
)


def probe_report(run: SmallRun, name: str) -> dict:
    """What the probe of attack ``name`` could read, from its trial's test output."""
    attempt = run.result(name).attempts[-1]
    path = next(a.path for a in attempt.artifacts if a.path.endswith("/test_output.txt"))
    text = (run.run_dir / path).read_text(errors="replace")
    found = re.findall(r"^evalrepro-probe (\{.*\})$", text, re.MULTILINE)
    assert found, f"{name}: the probe reported nothing"
    return json.loads(found[-1])


def secret_names(run: SmallRun, attack: Attack) -> set[str]:
    """The names that must not be learned: the test patch's tests and the canaries."""
    from evalrepro.demo import DEMO_DIR

    for line in (DEMO_DIR / "instances.jsonl").read_text().splitlines():
        instance = json.loads(line)
        if instance["instance_id"] == attack.instance:
            added = set(re.findall(r"^\+\s*def (test_\w+)", instance["test_patch"], re.M))
    canaries = set(run.supervisor_json(attack.name)["reset"]["canaries"])
    assert added and canaries, (added, canaries)
    return added | canaries


@pytest.fixture(scope="module")
def hidden_run(tmp_path_factory) -> SmallRun:
    return run_small(tmp_path_factory.mktemp("hidden"), (PYTEST_PROBE, UNITTEST_PROBE))


def test_a_forgery_that_reads_everything_learns_no_target_and_resolves_nothing(hidden_run):
    assert hidden_run.wrong() == []
    assert hidden_run.complete()
    assert hidden_run.gold_outcomes() == {"resolved"}
    for attack in (PYTEST_PROBE, UNITTEST_PROBE):
        report = probe_report(hidden_run, attack.name)
        secret = secret_names(hidden_run, attack)
        # The probe saw the test files themselves (the runner reads them): the new
        # tests are there, among the others, and nothing says which they are.
        assert secret <= set(report["tests"]), report["tests"]
        assert report["learned"] == [], report
        leaks = {
            source: names for source, names in report["sighted"].items() if secret & set(names)
        }
        assert leaks == {}, leaks
        # It did look: its own process tree and the harness's mounted code were readable.
        assert any(source.startswith("/proc/") for source in report["read"]), report["read"]
        assert SUPERVISOR_PATH in report["read"]
        started = hidden_run.supervisor_json(attack.name)["tests_started"]
        assert started["git"] == "hidden"


@pytest.fixture(scope="module")
def git_readable_run(tmp_path_factory) -> SmallRun:
    return run_small(
        tmp_path_factory.mktemp("git-readable"),
        (dataclasses.replace(PYTEST_PROBE, expect=("invalid", "runner_tampered")),),
        "dataset.protection.tests_read_git=true",
    )


def test_with_git_readable_the_probe_learns_the_new_tests_and_the_canaries_catch_it(
    git_readable_run,
):
    """The declared exception: git is readable (and recorded so); the probe then learns
    the new tests, canaries among them, and its no-ops of the must-fail canaries are
    caught. The gold patch still resolves with git readable."""
    assert git_readable_run.wrong() == []
    assert git_readable_run.gold_outcomes() == {"resolved"}
    report = probe_report(git_readable_run, PYTEST_PROBE.name)
    added = {"test_scientific_notation", "test_exponent_needs_digits"}
    assert added <= set(report["learned"]), report["learned"]
    started = git_readable_run.supervisor_json(PYTEST_PROBE.name)["tests_started"]
    assert started["git"] == "readable"


def test_the_forgery_resolves_where_it_can_learn_and_no_canary_runs(tmp_path):
    """Why hiding matters: with git readable and no canaries, the same patch, which fixes
    nothing, is graded resolved."""
    run = run_small(
        tmp_path,
        (dataclasses.replace(PYTEST_PROBE, expect=("resolved", "tests_passed")),),
        "dataset.protection.tests_read_git=true",
        "dataset.protection.canaries=false",
    )
    assert run.wrong() == []
