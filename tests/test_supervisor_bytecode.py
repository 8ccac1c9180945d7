"""The supervisor starts from bytecode the host compiled, and only from its own source's.

Each runtime (podman, docker) mounts the supervisor's bytecode, compiled once on the host,
where the container's Python looks for it: the container does not compile 2,200 lines
for every attempt. The bytecode names the hash of the source it was compiled from, and
the container's Python checks it against the mounted source: bytecode of other bytes is
never run (the source is compiled instead, as before).

Each test forges the bytecode in a runtime opened on a cache of its own (the shared
cache's bytecode is left alone): code whose stream protocol is not the host's, so that
the attempt's report says which supervisor ran.
"""

from __future__ import annotations

import importlib.util
import io
import marshal
import sys

import pytest
from rich.console import Console

from evalrepro import atomic
from evalrepro.build.images import ImageChain
from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.pipeline import plan_and_lock
from evalrepro.records.supervision import SupervisorReport
from evalrepro.run.executors import run_trials
from evalrepro.sandbox import SUPERVISOR, SUPERVISOR_PATH
from evalrepro.sandbox.supervisor import PROTOCOL
from tests.podman_support import cache_dir, demo_config
from tests.test_runtime_conformance import ENVIRONMENT, RUNTIMES

SOURCE = SUPERVISOR.read_bytes()
#: A supervisor that says another protocol in its first event (the host refuses it).
OTHER = SOURCE.replace(f"\nPROTOCOL = {PROTOCOL}\n".encode(), b"\nPROTOCOL = 99\n", 1)
#: Hash-based bytecode whose source hash is checked when it is imported (PEP 552).
CHECKED_HASH = (0b11).to_bytes(4, "little")


@pytest.fixture(scope="module", params=RUNTIMES)
def opened(request, tmp_path_factory):
    """A runtime opened on a cache of its own, the demo's calc-1 gold trial, its
    environment."""
    assert OTHER != SOURCE
    config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]", *ENVIRONMENT[request.param])
    backend, plan, _ = plan_and_lock(config, Console(file=io.StringIO()), cache_dir())
    (planned,) = plan.trials
    assert isinstance(planned.image, ImageChain)
    runtime = type(backend.runtime)(config.environment, tmp_path_factory.mktemp("cache"))
    runtime.check()
    yield runtime, planned, config.environment
    runtime.close()
    backend.close()


def forge(runtime, code: bytes, hashed: bytes) -> None:
    """The runtime's supervisor bytecode: ``code`` compiled, naming ``hashed`` as its
    source."""
    (pyc,) = runtime.bytecode().rglob(f"*.{sys.implementation.cache_tag}.pyc")
    compiled = compile(code, SUPERVISOR_PATH, "exec")
    header = importlib.util.MAGIC_NUMBER + CHECKED_HASH + importlib.util.source_hash(hashed)
    atomic.write_bytes(pyc, header + marshal.dumps(compiled))


def attempt_report(opened, run_dir) -> tuple[str, SupervisorReport]:
    runtime, planned, environment = opened
    (result,) = run_trials(
        [planned],
        runtime=runtime,
        run_dir=run_dir,
        environment=environment,
        executor=LocalExecutorConfig(max_workers=1, max_attempts=1),
    )
    (found,) = run_dir.rglob("supervisor.json")
    return str(result.score.outcome), SupervisorReport.model_validate_json(found.read_bytes())


def test_the_container_runs_the_bytecode_the_host_compiled(opened, tmp_path):
    runtime = opened[0]
    # The demo's images have the host's Python (Debian's 3.11): the bytecode's name is theirs.
    forge(runtime, OTHER, SOURCE)
    outcome, report = attempt_report(opened, tmp_path)
    assert report.start is not None and report.start.protocol == 99
    assert report.stream_problem is not None and "protocol 99" in report.stream_problem
    assert outcome == "invalid"


def test_bytecode_of_other_source_bytes_is_not_run(opened, tmp_path):
    runtime = opened[0]
    forge(runtime, OTHER, OTHER)
    outcome, report = attempt_report(opened, tmp_path)
    assert report.start is not None and report.start.protocol == PROTOCOL
    assert report.stream_problem is None and outcome == "resolved"
