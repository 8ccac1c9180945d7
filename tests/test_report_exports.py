"""Exit codes of ``report``: the gate decides the console report's code; an export that
was written exits 0.

A paper's build makes its tables with ``report --latex`` (or ``--markdown``, ``--json``,
``--html``): a run whose gate failed must not break that build, since the export shows the
verdict itself. ``--enforce-gate`` asks for exit 3 there too; plain ``report`` and ``run``
keep exit 3. The run is the demo in the fake environment with failing tests: nothing
resolves, so the demo's gate (resolved_rate >= 0.5) fails.
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from evalrepro.cli import EXIT_GATE_FAILED, EXIT_OK, main
from evalrepro.config.experiment import compose
from evalrepro.pipeline import run_experiment


@pytest.fixture(scope="module")
def failed_gate(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    config = compose(["+experiment=demo", "environment=fake", "environment.tests=fail"])
    outcome = run_experiment(
        config, Console(file=io.StringIO()), run_dir=root / "run", cache_dir=root / "cache"
    )
    assert not outcome.report.gate_passed
    return root / "run"


def report(capsys, *args: str) -> tuple[int, str]:
    code = main(["report", *args, "--n-resamples", "200"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def test_the_console_report_of_a_failed_gate_exits_3(failed_gate, capsys):
    code, text = report(capsys, str(failed_gate))
    assert code == EXIT_GATE_FAILED and "gate failed" in text


@pytest.mark.parametrize("flag", ["--json", "--markdown", "--latex"])
def test_a_written_export_of_a_failed_gate_exits_0_and_shows_the_verdict(failed_gate, capsys, flag):
    code, text = report(capsys, str(failed_gate), flag)
    assert code == EXIT_OK
    if flag == "--json":
        assert json.loads(text)["gate_passed"] is False
    elif flag == "--markdown":
        assert "| FAIL |" in text
    else:
        assert "\\begin{table}" in text


def test_an_html_page_of_a_failed_gate_exits_0_once_written(failed_gate, capsys, tmp_path):
    page = tmp_path / "report.html"
    code, _ = report(capsys, str(failed_gate), "--html", str(page))
    assert code == EXIT_OK and '<span class="badge fail">failed</span>' in page.read_text()


@pytest.mark.parametrize("flag", ["--json", "--markdown", "--latex", "--html"])
def test_enforce_gate_makes_an_export_exit_3_too(failed_gate, capsys, tmp_path, flag):
    args = [flag, str(tmp_path / "r.html")] if flag == "--html" else [flag]
    code, text = report(capsys, str(failed_gate), *args, "--enforce-gate")
    assert code == EXIT_GATE_FAILED
    assert text or (tmp_path / "r.html").is_file()  # written all the same


def test_run_keeps_exit_3_for_a_failed_gate(tmp_path, capsys):
    code = main(
        [
            "run",
            "+experiment=demo",
            "environment=fake",
            "environment.tests=fail",
            "--run-dir",
            str(tmp_path / "run"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    assert code == EXIT_GATE_FAILED and "gate failed" in capsys.readouterr().out
