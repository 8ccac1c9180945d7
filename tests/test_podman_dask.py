"""The Dask executor in real podman: the demo on a ``LocalCluster`` is the local run, trial
for trial, and a node whose image store is empty gets the run's images (built there from
the lockfile's pins, from an archive, or from a registry) before it takes a trial, with
the lockfile's digests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import pytest
from distributed import LocalCluster

from evalrepro.plan.lockfile import read_lockfile
from evalrepro.publish.verify import check_run, compare
from evalrepro.records.trial import read_trial_result
from evalrepro.run.execute import container_prefix
from evalrepro.run.executors.dask import SCHEDULER_SETTINGS
from tests.podman_support import demo_config, needs_podman, run_demo
from tests.test_prebuilt_image import REGISTRY, registry  # noqa: F401 - a fixture

pytestmark = needs_podman


def outcomes(run_dir: Path) -> dict[str, tuple[str, str]]:
    found = {}
    for path in (run_dir / "trials").glob("*/result.json"):
        result = read_trial_result(path)
        found[result.trial.trial_id] = (str(result.score.outcome), result.score.reason)
    return found


def test_the_demo_on_a_local_cluster_is_the_local_run(tmp_path):
    run_demo(demo_config("demo", "executor=local"), tmp_path / "local")
    run_demo(demo_config("demo", "executor=dask", "executor.workers=2"), tmp_path / "dask")
    assert outcomes(tmp_path / "dask") == outcomes(tmp_path / "local")
    assert set(outcomes(tmp_path / "dask").values()) == {("resolved", "tests_passed")}
    comparison = compare(tmp_path / "local", tmp_path / "dask", same_target=True)
    assert comparison.differences == []
    assert check_run(tmp_path / "dask").ok
    leases = {
        read_trial_result(p).attempts[-1].lease.worker
        for p in (tmp_path / "dask" / "trials").glob("*/result.json")
    }
    assert len(leases) == 2


@pytest.fixture
def empty_store(tmp_path):
    """A podman storage config whose store is empty (a second node's), and its removal."""
    root = tmp_path / "store"
    conf = tmp_path / "storage.conf"
    # Rootless podman takes its store from rootless_storage_path, not graphroot.
    conf.write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{root}/graph"\nrunroot = "{root}/run"\n'
        f'rootless_storage_path = "{root}/graph"\n'
    )
    env = {**os.environ, "CONTAINERS_STORAGE_CONF": str(conf)}
    listed = subprocess.run(
        ["podman", "images", "--quiet"], env=env, capture_output=True, text=True, check=True
    )
    assert listed.stdout.split() == [], "the second store is not empty"
    yield conf, env
    # The overlay folder is a mount (rootless: in podman's user namespace) and the files
    # belong to sub-uids: unmounted and removed inside it, by a podman of the usual store.
    script = 'umount "$1/graph/overlay" 2>/dev/null; rm -rf "$1"'
    command = ["sh", "-c", script, "sh", str(root)]
    if os.geteuid() != 0:
        command = ["podman", "unshare", *command]
    subprocess.run(command, capture_output=True, check=False)


def one_node_run(tmp_path: Path, conf: Path, *overrides: str, node_env: dict | None = None) -> Path:
    """The demo's calc-1 and ledger-1 on one worker whose podman store is ``conf``'s."""
    with dask.config.set(SCHEDULER_SETTINGS):
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            env={"CONTAINERS_STORAGE_CONF": str(conf), **(node_env or {})},
        )
    try:
        run_dir = tmp_path / "run"
        run_demo(
            demo_config(
                "demo",
                "executor=dask",
                f"executor.address={cluster.scheduler_address}",
                "dataset.instance_ids=[demo__calc-1,demo__ledger-1]",
                *overrides,
            ),
            run_dir,
        )
    finally:
        cluster.close()
    return run_dir


def assert_store_holds_the_locked_images(run_dir: Path, env: dict) -> None:
    listed = subprocess.run(
        ["podman", "images", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    # Each locked Id, under some name (trials run images by Id; loaded ones are named
    # after their Id, built ones after their layer's key).
    held = {line.split()[1].removeprefix("sha256:") for line in listed if line.strip()}
    for image in read_lockfile(run_dir).environment.images:
        if image.tag.startswith("localhost/"):
            assert image.image_digest.removeprefix("sha256:") in held, image.tag


def test_a_node_with_an_empty_store_loads_the_images_from_the_archive(tmp_path, empty_store):
    conf, env = empty_store
    archive = tmp_path / "images"
    run_dir = one_node_run(
        tmp_path, conf, "executor.images.source=archive", f"executor.images.archive={archive}"
    )
    # The submitter wrote the archive once; the node loaded it into its own store.
    assert sorted(p.name for p in archive.iterdir()) == ["images.oci.tar"]
    assert set(outcomes(run_dir).values()) == {("resolved", "tests_passed")}
    assert_store_holds_the_locked_images(run_dir, env)


def test_a_node_with_an_empty_store_builds_the_images_from_the_lockfiles_pins(
    tmp_path, empty_store
):
    conf, env = empty_store
    # A second node: its own store and its own cache, both empty.
    node_cache = tmp_path / "node-cache"
    run_dir = one_node_run(
        tmp_path,
        conf,
        "executor.images.source=build",
        node_env={"EVALREPRO_CACHE": str(node_cache)},
    )
    assert set(outcomes(run_dir).values()) == {("resolved", "tests_passed")}
    # Built there from the pins, every layer has the Id the submitter's build locked.
    assert_store_holds_the_locked_images(run_dir, env)
    assert any(node_cache.iterdir())  # what it built from was fetched there


@pytest.mark.skipif(
    REGISTRY is None and not os.environ.get("CI"),
    reason="docker-registry is not installed (scripts/setup installs it)",
)
def test_a_node_with_an_empty_store_pulls_the_images_from_a_registry_by_digest(
    tmp_path,
    empty_store,
    registry,  # noqa: F811
):
    conf, env = empty_store
    address, _ = registry
    run_dir = one_node_run(
        tmp_path,
        conf,
        "executor.images.source=registry",
        f"executor.images.registry={address}/evalrepro-run",
        "executor.images.tls_verify=false",
    )
    assert set(outcomes(run_dir).values()) == {("resolved", "tests_passed")}
    assert_store_holds_the_locked_images(run_dir, env)


def test_ctrl_c_stops_the_runs_containers_on_every_worker(tmp_path):
    # model_a's looping patch runs until its timeout: its container is up for 120 s.
    run_dir = (tmp_path / "run").resolve()
    command = [
        str(Path(sys.executable).parent / "evalrepro"),
        "run",
        "+experiment=model_a",
        "executor=dask",
        "environment.timeout=120",
        "--run-dir",
        str(run_dir),
    ]
    submitter = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    prefix = container_prefix(run_dir)

    def running() -> list[str]:
        listed = subprocess.run(
            ["podman", "ps", "--format", "{{.Names}}"], capture_output=True, text=True
        ).stdout.split()
        return [name for name in listed if name.startswith(prefix)]

    deadline = time.monotonic() + 180
    while len(list(run_dir.glob("trials/*/result.json"))) < 4 or not running():
        assert submitter.poll() is None, submitter.stderr.read()
        assert time.monotonic() < deadline, "no container started"
        time.sleep(0.5)
    started = time.monotonic()
    submitter.send_signal(signal.SIGINT)
    submitter.wait(timeout=60)
    while running() and time.monotonic() - started < 30:
        time.sleep(0.5)
    assert running() == []
    # The attempts that did not come back are not recorded: a resume runs them.
    assert submitter.returncode != 0
    assert len(list(run_dir.glob("trials/*/result.json"))) < 12
