"""What every test starts from."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """No ``$COLUMNS`` or ``$LINES`` from outside: pytest-xdist's workers set 80 and 24,
    a developer's shell sets its own, and the console follows them (evalrepro.console).
    A test that is about the width sets it itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
