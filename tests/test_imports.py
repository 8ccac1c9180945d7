"""What a command loads before it does anything: not the statistics, not Hydra.

scipy.stats costs every process about 0.5 s and 70 MiB, Hydra about 0.1 s
(``benchmarks/startup.py``). ``run``, ``lock``, ``verify``, ``grade`` and ``--help``
import the record models of ``evalrepro.report.stats`` and ``evalrepro.config.experiment``,
never what computes an interval or composes a config until they do it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def loaded_after(module: str) -> set[str]:
    """The top-level packages in sys.modules after importing ``module`` in a new process."""
    code = (
        f"import json, sys; import {module}; "
        "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout))


@pytest.mark.parametrize(
    "module", ["evalrepro.pipeline", "evalrepro.publish.verify", "evalrepro.cli"]
)
def test_importing_a_command_loads_neither_scipy_nor_hydra(module):
    loaded = loaded_after(module)
    assert "scipy" not in loaded
    assert "hydra" not in loaded


def test_the_statistics_load_scipy_when_they_compute_and_wilson_only_at_unusual_levels():
    code = (
        "import sys; from evalrepro.report.stats import mcnemar_exact, wilson_interval; "
        "assert 'scipy' not in sys.modules; low, high = wilson_interval(3, 10); "
        "assert 0 < low < 0.3 < high < 1 and 'scipy' not in sys.modules; "
        "wilson_interval(3, 10, confidence=0.975); "
        "assert 'scipy.special' in sys.modules and 'scipy.stats' not in sys.modules; "
        "mcnemar_exact([1, 0, 1], [0, 0, 1]); "
        "assert 'scipy.stats' in sys.modules; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
