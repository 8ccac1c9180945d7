"""What every test starts from."""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes the tests start, however the suite was started.

    A shell that runs a command in the background without job control (``cmd &`` in a
    script, a CI runner's launcher) starts it with SIGINT ignored, and an ignored signal
    stays ignored across every ``exec`` below: Python then installs no KeyboardInterrupt,
    and the tests that press Ctrl-C on ``evalrepro run`` see it do nothing. A handler
    (not an ignored signal) is reset to the default in a child, as a terminal gives it.
    """
    del config
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """No ``$COLUMNS`` or ``$LINES`` from outside: pytest-xdist's workers set 80 and 24,
    a developer's shell sets its own, and the console follows them (evalrepro.console).
    A test that is about the width sets it itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
