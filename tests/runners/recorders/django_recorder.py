"""Django's test runner, recording every outcome it reports as JSON.

Copied into a temp workdir by ``tests/runners/django.py`` and passed to
``python -m django test --testrunner=django_recorder.RecordingRunner``. The runner is
Django's ``DiscoverRunner`` unchanged except for its result class, unittest's
``TextTestResult`` plus recording (``unittest_recorder.py``), so the log is Django's
real output. The JSON goes to ``$EVALREPRO_TRUTH``.
"""

from __future__ import annotations

from django.test.runner import DiscoverRunner
from unittest_recorder import RecordingResult


class RecordingRunner(DiscoverRunner):
    def get_resultclass(self) -> type[RecordingResult]:
        return RecordingResult
