"""Native parser for Django's test runner at ``--verbosity 2``.

Expects ``python -m django test --verbosity 2`` / ``manage.py test -v 2`` / Django's
``tests/runtests.py --verbosity 2``, best with ``--parallel 1`` so that what a test
prints sits next to its line. Django runs the suite through ``unittest.TextTestRunner``,
so the progress lines, error blocks and totals are unittest's and are read by
:class:`~evalrepro.grade.parsers.unittest.TextRunnerLog` (rules in ``parsers/unittest.py``);
Django's own chatter (database creation, migrations, system checks) matches none of them.

Unlike the SWE-bench-compatible ``django`` parser, ids are always
``module.Class.test_method`` (docstring lines never become ids), subtests are
``module.Class.test_method (i=1)``, expected failures are XFAIL and unexpected successes
XPASS, and the runner's ``Ran N tests`` / ``FAILED (...)`` totals are cross-checked.
Both description formats are read: ``test_x (module.Class.test_x)`` (Python 3.11+) and
``test_x (module.Class)`` (the Pythons of SWE-bench's Django instances).
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.grade.parsers.registry import register
from evalrepro.grade.parsers.unittest import UnittestParser


@register
class DjangoFullParser(UnittestParser):
    name: ClassVar[str] = "django_full"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "unittest"
    description: ClassVar[str] = "Django's test runner at --verbosity 2 (full ids, totals checked)"
