"""A spec that names its Python runs in the base image of the Debian suite shipping it.

Real images: the ledger instances (unittest, no packages) with ``python: "3.9"`` build a
bullseye base and with ``python: "3.13"`` a trixie one; the supervisor itself runs with
that base's python3, and the gold patch resolves.
"""

from __future__ import annotations

import pytest

from evalrepro.records.supervision import SupervisorReport
from tests.podman_support import demo_config, needs_podman, run_demo

pytestmark = needs_podman


@pytest.mark.parametrize(("python", "suite_python"), [("3.9", "3.9."), ("3.13", "3.13.")])
def test_a_spec_runs_with_the_python_it_names(tmp_path, python, suite_python):
    config = demo_config(
        "demo",
        f"dataset.specs[demo/ledger][1.0].python={python}",
        "dataset.filter='^demo__ledger-1$'",
    )
    results, _ = run_demo(config, tmp_path / "run")
    assert (results.planned, results.resolved) == (1, 1)
    (report_file,) = (tmp_path / "run" / "trials").glob("*/attempt-1/supervisor.json")
    report = SupervisorReport.model_validate_json(report_file.read_text())
    assert report.start.python.startswith(suite_python)
