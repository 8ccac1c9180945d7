"""Bytecode that is not the verified source, and state one run leaves for the next, in
containers: what runs is what was verified, and every lone run (fresh run, re-run)
starts from the state the tests started from.

* A patch that adds an unchecked hash-based ``.pyc`` of the fixed module beside the
  unfixed source (a binary git patch): the ``.pyc`` is test infrastructure (restored:
  removed), and no test process reads a bytecode cache anyway.
* Library code that writes such a ``.pyc`` of a fixed version of itself at run time (into
  ``__pycache__`` and into the cache prefix, if it could), or marker files wherever it can
  write (/tmp, /var/tmp, /dev/shm, its home, the repository), so that a later process
  runs the fix: the failing tests' re-runs start from the state before the run and fail
  again, so the trial is not ``tests_flaky`` and, under ``flaky_counts_as: passed``, not
  resolved.
* The same writes by a fix that holds only in the company of other tests: the fresh runs
  start from the state before the run, fail alone, and the trial is ``fresh_disagrees``.

Every gold patch still resolves.
"""

from __future__ import annotations

import os

import pytest

from tests.adversarial.attacks import Attack, Compiled
from tests.adversarial.test_inodes import SmallRun, run_small
from tests.podman_support import needs_podman
from tests.test_fresh import IN_COMPANY_ONLY

pytestmark = needs_podman

#: The gold fix of demo__calc-1 as an override of the parser's method.
FIXED_POWER = (
    "\n\ndef _fixed_power(self):\n"
    "    base = self.atom()\n"
    "    if self.peek().text != '^':\n"
    "        return base\n"
    "    self.take()\n"
    "    return base ** self.power()\n\n\n"
)

#: Library code that compiles the module as it is above this code, with the fix in force,
#: into an unchecked hash-based .pyc where the next process looks for it (beside the
#: source, and under the bytecode prefix of the day), then runs as it is (unfixed).
PLANT_FIXED_PYC = (
    "\n# planted\n"
    "import os as _os, sys as _sys, tempfile as _tf\n"
    "import importlib.util as _iu, py_compile as _pc\n\n\n"
    "def _plant():\n"
    "    text = open(__file__).read()\n"
    "    fixed = text[: text.index('# planted')] + " + repr(FIXED_POWER) + "\n"
    "    fixed += '_Parser.power = _fixed_power\\n'\n"
    "    folder = _tf.mkdtemp()\n"
    "    path = _os.path.join(folder, 'evaluator.py')\n"
    "    with open(path, 'w') as handle:\n"
    "        handle.write(fixed)\n"
    "    here = _os.path.join(_os.path.dirname(__file__), '__pycache__')\n"
    "    for target in (\n"
    "        _os.path.join(here, 'evaluator.' + _sys.implementation.cache_tag + '.pyc'),\n"
    "        _iu.cache_from_source(__file__),\n"
    "    ):\n"
    "        try:\n"
    "            _os.makedirs(_os.path.dirname(target), exist_ok=True)\n"
    "            _pc.compile(path, cfile=target, dfile=__file__, doraise=True,\n"
    "                        invalidation_mode=_pc.PycInvalidationMode.UNCHECKED_HASH)\n"
    "        except Exception:\n"
    "            pass\n\n\n"
    "_plant()\n"
)

#: Library code whose fix is in force only when an earlier process left a marker file in
#: one of the places the test user can write; it leaves them for the next one.
FIX_IF_A_MARKER_WAS_LEFT = (
    "\nimport os as _os\n" + FIXED_POWER + "_marks = [_os.path.join(_d, '.calc-state') for _d in "
    "('/tmp', '/var/tmp', '/dev/shm', _os.path.expanduser('~'), _os.path.dirname(__file__))]\n"
    "_left = any(_os.path.exists(_m) for _m in _marks)\n"
    "for _m in _marks:\n"
    "    try:\n"
    "        open(_m, 'a').close()\n"
    "    except OSError:\n"
    "        pass\n"
    "if _left:\n"
    "    _Parser.power = _fixed_power\n"
)

ATTACKS = (
    Attack(
        "pyc-in-patch",
        "bytecode",
        "demo__calc-1",
        "a binary patch adds an unchecked .pyc of the fixed module beside the unfixed source",
        ("unresolved", "tests_failed"),
        {
            "calc/__pycache__/evaluator.cpython-311.pyc": Compiled("calc/evaluator.py"),
        },
        with_gold=True,
    ),
    Attack(
        "pyc-written-at-run-time",
        "bytecode",
        "demo__calc-1",
        "library code writes a .pyc of a fixed version of itself for the re-runs to load",
        ("unresolved", "tests_failed"),
        {"calc/evaluator.py": PLANT_FIXED_PYC},
    ),
    Attack(
        "state-for-the-rerun",
        "bytecode",
        "demo__calc-1",
        "the fix is in force only where a run before left a marker file (anywhere writable)",
        ("unresolved", "tests_failed"),
        {"calc/evaluator.py": FIX_IF_A_MARKER_WAS_LEFT},
    ),
    Attack(
        "company-then-pyc",
        "bytecode",
        "demo__calc-1",
        "a fix that holds in company only, and a fixed .pyc written for the fresh runs",
        ("invalid", "fresh_disagrees"),
        {"calc/evaluator.py": IN_COMPANY_ONLY + PLANT_FIXED_PYC},
        with_gold=True,
    ),
    Attack(
        "company-then-state",
        "bytecode",
        "demo__calc-1",
        "a fix that holds in company only, and marker files left for the fresh runs",
        ("invalid", "fresh_disagrees"),
        {"calc/evaluator.py": IN_COMPANY_ONLY + FIX_IF_A_MARKER_WAS_LEFT},
        with_gold=True,
    ),
)

#: Re-runs and fresh runs together, under the lenient policy: a re-run that passed would
#: resolve the trial.
SETTINGS = (
    "environment.rerun_failed=2",
    "environment.flaky_counts_as=passed",
    "dataset.protection.fresh_runs=3",
)


def check(run: SmallRun) -> None:
    assert run.wrong() == []
    assert run.complete()
    assert run.gold_outcomes() == {"resolved"}
    for name in ("pyc-written-at-run-time", "state-for-the-rerun"):
        observation = run.result(name).attempts[-1].observation
        assert observation.reruns and not observation.flaky_tests, name
        for rerun in observation.reruns:
            assert set(rerun.outcomes) == {"failed"}, (name, rerun)
        # The run's writes were put back before the first re-run.
        assert run.supervisor_json(name)["rerun"]["restored"] > 0, name
    patched = run.supervisor_json("pyc-in-patch")["protect"]["touched"]
    assert [t["path"] for t in patched] == [
        "calc/__pycache__",
        "calc/__pycache__/evaluator.cpython-311.pyc",
    ]
    assert patched[0]["reason"] == "compiled bytecode (runs in place of its source)"


@pytest.fixture(scope="module")
def bytecode_run(tmp_path_factory) -> SmallRun:
    return run_small(tmp_path_factory.mktemp("bytecode"), ATTACKS, *SETTINGS)


def test_what_runs_is_what_was_verified_and_each_lone_run_starts_from_the_same_state(
    bytecode_run,
):
    check(bytecode_run)


@pytest.mark.podman
@pytest.mark.xdist_group("podman")
@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_as_root_the_same(tmp_path):
    check(run_small(tmp_path, ATTACKS, *SETTINGS))
