"""What every container runtime must do, one suite for all of them (podman, docker).

Each test runs once per runtime: podman in the mode the suite runs as (rootless first,
root in scripts/test's root part), docker as root's daemon (skipped, saying why, where
none is reachable). What it holds, for each: the sandbox has no network; its output is
bounded; it starts from the image's locked Id and is gone when stopped; every limit of
the environment is recorded as enforced (and how) or as not enforced; the supervisor's
channel comes back (its report, the test output); the demo's tricky trials get their
verdicts; a representative handful of ``tests/adversarial/`` attacks (one or two of
each kind: a forged log, reset, infrastructure, output, process and memory limits, a
private tmpfs, runner tampering) get their documented scores. And the lockfile a docker
run makes pins the same image digests as podman's: the same bytes in either store, and a
bundle's OCI archive loads into docker's store with its locked Ids.

Cost (2 cores, images warm, a loaded machine): about 45 s for podman, 1.5 minutes for
docker (the archive test's export and load, 35 s, included); most of the rest is the
attacks and the tricky trials.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
from rich.console import Console

import evalrepro
from evalrepro.build.images import ImageChain
from evalrepro.config.experiment import compose
from evalrepro.pipeline import plan_and_lock
from evalrepro.records.trial import read_trial_result
from evalrepro.runtimes.interactive import SandboxRequest
from tests.adversarial.attacks import ATTACKS, write_adversary
from tests.demo_expectations import EXPECTED
from tests.podman_support import cache_dir, demo_config, needs_podman, run_demo

PREDICTIONS = Path(evalrepro.__file__).parent / "demo" / "predictions"


def docker_reachable() -> str | None:
    """Why docker's daemon cannot be used here, or None."""
    if shutil.which("docker") is None:
        return "docker is not installed (scripts/setup installs it as root)"
    done = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True
    )
    if done.returncode != 0:
        return "no docker daemon is reachable (as root, scripts/setup starts one)"
    return None


_no_docker = docker_reachable()
RUNTIMES = [
    pytest.param("podman", marks=[*needs_podman, pytest.mark.root_podman], id="podman"),
    pytest.param(
        "docker",
        marks=[
            pytest.mark.docker,
            pytest.mark.xdist_group("podman"),  # it builds in podman's store
            pytest.mark.skipif(_no_docker is not None, reason=_no_docker or ""),
        ],
        id="docker",
    ),
]
#: The environment each runtime is (the conf/environment/ group).
ENVIRONMENT = {"podman": [], "docker": ["environment=docker"]}
#: One or two attacks of each kind (the whole catalogue runs in tests/adversarial/).
HANDFUL = {
    "fake-summary-os-exit",
    "edit-test-files",
    "root-conftest",
    "stdout-flood",
    "fork-bomb",
    "memory-hogs",
    "private-tmpfs",
    "runtest-builtin",
    "always-equal-value",
}
#: The demo's tricky trials: an atexit hook printing PASSED lines, an empty patch, a
#: looping patch (timeout), a patch that does not apply, a wrong fix.
TRICKY = [
    ("model_b", "demo__calc-1"),
    ("model_b", "demo__calc-2"),
    ("model_a", "demo__ledger-3"),
    ("model_a", "demo__textkit-2"),
    ("model_a", "demo__calc-3"),
]


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime_kind(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def opened(runtime_kind):
    """The runtime and the demo's calc-1 image (built once, cached)."""
    config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]", *ENVIRONMENT[runtime_kind])
    backend, plan, _ = plan_and_lock(config, Console(file=io.StringIO()), cache_dir())
    (planned,) = plan.trials
    assert isinstance(planned.image, ImageChain)
    yield backend.runtime, planned.image.image
    backend.close()


def request_for(image) -> SandboxRequest:
    name = f"evalrepro-conformance-{uuid.uuid4().hex[:12]}"
    return SandboxRequest(name=name, image_tag=image.tag, image_digest=image.image_digest)


def test_the_runtime_is_what_the_environment_names(opened, runtime_kind):
    runtime, _ = opened
    assert runtime.kind == runtime_kind
    described = runtime.describe()
    assert described["kind"] == runtime_kind and described["mode"] in ("root", "rootless")


def test_the_sandbox_has_no_network(opened):
    runtime, image = opened
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.settimeout(60)
    accepted: list[object] = []

    def accept() -> None:
        try:
            accepted.append(server.accept())
        except OSError:
            pass  # closed at the end of the test: nothing came

    threading.Thread(target=accept, daemon=True).start()
    probe = (
        "import socket\n"
        "for host in ('127.0.0.1', '10.0.2.2', '172.17.0.1', '1.1.1.1'):\n"
        "    try:\n"
        f"        socket.create_connection((host, {port}), timeout=2)\n"
        "        print('reached', host)\n"
        "    except OSError:\n"
        "        print('unreachable', host)\n"
    )
    try:
        with runtime.sandbox(request_for(image)) as sandbox:
            sandbox.write_file("/tmp/probe.py", probe.encode())
            done = sandbox.exec("python3 /tmp/probe.py; ls /sys/class/net", timeout=60)
    finally:
        server.close()
    lines = done.output.split()
    assert "reached" not in lines and accepted == []
    assert lines[-1] == "lo" and lines.count("unreachable") == 4, done.output


def test_output_is_bounded_and_the_rest_counted(opened):
    runtime, image = opened
    with runtime.sandbox(request_for(image)) as sandbox:
        done = sandbox.exec("head -c 2000000 /dev/zero | tr '\\0' x", timeout=30, output_limit=1000)
    assert done.output == "x" * 1000 and done.dropped == 2_000_000 - 1000


def test_the_sandbox_runs_the_locked_image_and_is_gone_when_stopped(opened):
    runtime, image = opened
    wanted = request_for(image)
    with runtime.sandbox(wanted) as sandbox:
        done = sandbox.exec("cat /testbed/.git/HEAD", timeout=30)
    assert done.exit_code == 0 and len(done.output.strip()) == 40
    left = runtime.cli("ps", "--all", "--format", "{{.Names}}").stdout.split()
    assert wanted.name not in left


@pytest.fixture(scope="module")
def tricky(runtime_kind, tmp_path_factory) -> dict[tuple[str, str], object]:
    """The demo's tricky trials, each target's run of its instances."""
    results = {}
    for target in sorted({t for t, _ in TRICKY}):
        chosen = [i for t, i in TRICKY if t == target]
        tmp = tmp_path_factory.mktemp(f"tricky-{target}")
        # The target's predictions for the chosen instances only (a predictions file
        # may name no instance the dataset leaves out).
        lines = (PREDICTIONS / f"{target}.jsonl").read_text().splitlines()
        kept = [line for line in lines if json.loads(line)["instance_id"] in chosen]
        (tmp / "predictions.jsonl").write_text("\n".join(kept) + "\n")
        config = demo_config(
            "demo",
            f"target={target}",
            f"target.path={tmp / 'predictions.jsonl'}",
            f"dataset.instance_ids=[{','.join(chosen)}]",
            *ENVIRONMENT[runtime_kind],
        )
        run_dir = tmp / "run"
        run_demo(config, run_dir)
        for path in (run_dir / "trials").glob("*/result.json"):
            result = read_trial_result(path)
            results[(target, result.instance_id)] = result
    return results


def test_the_demos_tricky_trials_get_their_verdicts(tricky):
    got = {key: str(result.score.outcome) for key, result in tricky.items()}
    assert got == {key: EXPECTED[key] for key in TRICKY}


def test_the_supervisors_channel_comes_back(tricky):
    result = tricky[("model_a", "demo__calc-3")]  # a wrong fix: the tests ran to the end
    attempt = result.attempts[-1]
    names = {Path(artifact.path).name for artifact in attempt.artifacts}
    assert {"supervisor.json", "test_output.txt"} <= names
    assert attempt.observation.tests is not None


def test_every_limit_is_enforced_or_recorded_as_not(tricky, runtime_kind):
    result = tricky[("model_a", "demo__calc-3")]
    limits = result.limits
    for name in ("memory", "pids", "cpus", "disk", "inodes", "output", "time", "nofile"):
        assert limits.get(name), f"{runtime_kind} does not say how {name} is enforced"
    if runtime_kind == "docker" or os.geteuid() == 0:
        assert limits["cpus"].startswith("cgroup")
    else:
        assert limits["cpus"].startswith("not enforced")


@pytest.fixture(scope="module")
def attacked(runtime_kind, tmp_path_factory):
    chosen = tuple(attack for attack in ATTACKS if attack.name in HANDFUL)
    tmp = tmp_path_factory.mktemp(f"attacks-{runtime_kind}")
    adversary = write_adversary(tmp, chosen, every_instance=False)
    run_dir = tmp / "run"
    only = f"dataset.instance_ids=[{','.join(adversary.instances)}]"
    run_demo(compose(adversary.config(only, *ENVIRONMENT[runtime_kind])), run_dir)
    results = {}
    for path in (run_dir / "trials").glob("*/result.json"):
        result = read_trial_result(path)
        results[(result.instance_id, result.sample_index)] = result
    return adversary, results


def test_a_handful_of_attacks_get_their_documented_scores(attacked):
    adversary, results = attacked
    assert {attack.name for attack in adversary.expected.values()} == HANDFUL
    wrong = []
    for key, attack in sorted(adversary.expected.items()):
        score = results[key].score
        if (str(score.outcome), score.reason) != attack.expect:
            wrong.append(f"{attack.name}: {score.outcome} {score.reason} ({score.detail})")
    assert wrong == []
    gold = {iid: r for (iid, index), r in results.items() if index == adversary.samples - 1}
    assert {iid: str(r.score.outcome) for iid, r in gold.items()} == dict.fromkeys(
        {attack.instance for attack in adversary.expected.values()}, "resolved"
    )


@pytest.mark.docker
@pytest.mark.xdist_group("podman")
@pytest.mark.skipif(_no_docker is not None, reason=_no_docker or "")
def test_docker_locks_the_same_image_digests_as_podman():
    """The layers are evalrepro's: the same bytes load into either store with one Id."""
    digests = {}
    for kind in ("podman", "docker"):
        config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]", *ENVIRONMENT[kind])
        _, _, lockfile = plan_and_lock(config, Console(file=io.StringIO()), cache_dir())
        digests[kind] = sorted(
            (i.layer, i.key, i.image_digest) for i in lockfile.environment.images
        )
    assert digests["docker"] == digests["podman"]


@pytest.mark.docker
@pytest.mark.xdist_group("podman")
@pytest.mark.skipif(_no_docker is not None, reason=_no_docker or "")
def test_a_bundles_oci_archive_loads_into_docker_with_the_locked_ids(tmp_path):
    """Docker 20.10 loads no OCI archive: its store re-packs the layout as a
    docker-archive, config bytes kept, so every image keeps its locked Id."""
    from evalrepro.build.image_archive import export_images, load_images

    config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]", "environment=docker")
    backend, _, lockfile = plan_and_lock(config, Console(file=io.StringIO()), cache_dir())
    chain = list(lockfile.environment.images)
    (archive,) = export_images(backend.runtime.build_store(), chain, tmp_path)
    assert archive.name == "images.oci.tar"
    store = backend.runtime.images
    for image in reversed(chain):  # the instance first: a parent goes once nothing uses it
        store.remove(image.image_digest.removeprefix("sha256:"), *store_names(store, image))
    assert [store.image_id(image.image_digest) for image in chain] == [None] * len(chain)
    assert load_images(store, archive, chain) == []
    assert [f"sha256:{store.image_id(image.image_digest)}" for image in chain] == [
        image.image_digest for image in chain
    ]
    backend.close()


def store_names(store, image) -> list[str]:
    return [name for name, found in store.ids().items() if found == image.image_digest]
