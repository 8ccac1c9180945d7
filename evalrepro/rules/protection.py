"""Test infrastructure protection: what a model patch may not change, and what happens if
it does.

A patch may change library code. Files that collect, configure or take part in running
the tests are not a fix: ``conftest.py`` anywhere, ``pytest.ini`` / ``tox.ini``, the test
sections of ``setup.cfg``, ``pyproject.toml`` and ``package.json``, everything in the
dataset's test folders (``__init__.py`` included), ``sitecustomize`` / ``usercustomize``
and ``.pth`` files, runner scripts such as Django's ``runtests.py``. The policy says what
the supervisor does when the model patch changed one of them:

* ``restore`` (default): put it back to the base commit before the tests run;
* ``record``: leave it, and record it against the trial;
* ``invalid``: the trial is invalid (the tests are not run).

Each trial records which of them the patch touched. Separately, a static scan of the
patch (``patchcheck``) and the exit guard flag library code that reaches into the test
framework as *suspect*; ``suspect`` says whether that makes the trial ``invalid``
(default) or is only ``record``-ed. Both values are part of every TestSpec's digest.

Which files match is decided by ``evalrepro.sandbox.infra.protected_reason``, the
same function the supervisor runs inside the container. The dataset's policy
(``dataset.protection``) is resolved for each instance when it is planned
(``evalrepro.plan.testspec.resolve_protection``): the rules never read the config.
"""

from __future__ import annotations

from evalrepro.sandbox.infra import TEST_DIR_NAMES


def test_folder(path: str) -> str | None:
    """The nearest ancestor of ``path`` named like a test folder (``a/tests`` ...)."""
    parts = path.split("/")[:-1]
    for depth in range(len(parts), 0, -1):
        if parts[depth - 1] in TEST_DIR_NAMES:
            return "/".join(parts[:depth])
    return None
