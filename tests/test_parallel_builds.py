"""The Containerfile builder builds independent layers at once, within the worker budget.

Without podman: the demo's 12 real test specs go through ``ContainerfileBuilder.prepare``
with only the ``podman build`` itself (``_build``) and the store replaced, so what is
checked is the builder's own scheduling: every layer built once however many chains
share it, never more builds at once than ``max_workers``, the same chains at 1 worker and
at 2, and an interrupt that starts no build after it and stops those under way
(``tether.stop_all``, tested on a real tethered command). The real builds at 1 and 2
workers, with their digests, are ``tests/test_podman_parallel_builds.py``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalrepro.build import wheels
from evalrepro.build.containerfile import ContainerfileBuilder
from evalrepro.build.images import ImageChain
from evalrepro.config.experiment import compose
from evalrepro.digest import sha256_json
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.records.image import ImageRecord, PinnedInput
from evalrepro.runtimes import tether
from evalrepro.runtimes.podman import backend_files

BUILD_SECONDS = 0.05


class Builds:
    """The fake ``podman build``: counts builds and how many run at once."""

    def __init__(self, interrupt_at: str | None = None) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.tags: list[str] = []
        self.started: list[float] = []
        self.interrupt_at = interrupt_at
        self.interrupted: float | None = None

    def __call__(self, containerfile, tag, parent, stage, build_log, network) -> None:
        with self.lock:
            self.tags.append(tag)
            self.started.append(time.monotonic())
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(BUILD_SECONDS)
            if self.interrupt_at and self.interrupt_at in tag and self.interrupted is None:
                self.interrupted = time.monotonic()
                raise KeyboardInterrupt
        finally:
            with self.lock:
                self.running -= 1


def base_record() -> ImageRecord:
    inputs = [
        PinnedInput(kind="deb", name=name, version=version, digest=sha256_json(name))
        for name, version in (("python3", "3.11.2-1+b1"), ("libc6", "2.36-9+deb12u4"))
    ]
    return ImageRecord(
        builder="containerfile",
        layer="base",
        key="sha256:" + "b" * 64,
        inputs_digest=sha256_json("base"),
        inputs=inputs,
        tag="localhost/evalrepro-base:test",
        parent_key=None,
        image_digest="sha256:" + "b" * 64,
    )


def prepare(tmp_path: Path, monkeypatch, workers: int, builds: Builds):
    config = compose(["+experiment=demo", f"executor.max_workers={workers}"])
    dataset = config.dataset
    specs = [instance_test_spec(dataset, sample) for sample in dataset.load()]
    checkouts = {
        spec.instance_id: SimpleNamespace(source_digest=sha256_json(spec.repo)) for spec in specs
    }
    store = SimpleNamespace(
        ids=lambda: {},
        image_id=lambda tag: sha256_json(tag).removeprefix("sha256:"),
    )
    runtime = SimpleNamespace(files=backend_files(), build_store=lambda: store, env={})
    builder = ContainerfileBuilder(  # type: ignore[arg-type]
        config.environment, runtime, tmp_path, concurrency=config.executor.concurrency
    )
    builder._base = lambda suite, debs, locked: base_record()  # type: ignore[method-assign]
    builder._build = builds  # type: ignore[method-assign]
    resolving = {"now": 0, "most": 0}

    def resolve_wheels(packages, **_):
        resolving["now"] += 1
        resolving["most"] = max(resolving["most"], resolving["now"])
        time.sleep(BUILD_SECONDS)
        resolving["now"] -= 1
        return []

    monkeypatch.setattr(wheels, "resolve_wheels", resolve_wheels)
    images = builder.prepare(specs, checkouts)  # type: ignore[arg-type]
    return specs, images, resolving


def layer_counts(tags: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for tag in tags:
        layer = tag.split(":")[0].removeprefix("localhost/evalrepro-")
        counts[layer] = counts.get(layer, 0) + 1
    return counts


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_each_layer_is_built_once_with_at_most_max_workers_builds_at_once(
    tmp_path, monkeypatch, workers
):
    builds = Builds()
    specs, images, resolving = prepare(tmp_path, monkeypatch, workers, builds)
    assert len(builds.tags) == len(set(builds.tags))
    # The demo: one env with pytest (ledger's spec has no packages: no env layer); three
    # repos; an instance layer per base commit (instances of one commit share it).
    commits = {(spec.repo, spec.base_commit, spec.install) for spec in specs}
    assert layer_counts(builds.tags) == {"env": 1, "history": 3, "instance": len(commits)}
    assert len(commits) > 3
    assert builds.most == workers if workers <= 2 else 2 <= builds.most <= workers
    assert resolving["most"] == 1  # pip resolutions one at a time
    assert all(isinstance(images[spec.instance_id], ImageChain) for spec in specs)


def test_two_workers_give_the_same_chains_as_one(tmp_path, monkeypatch):
    _, one, _ = prepare(tmp_path / "one", monkeypatch, 1, Builds())
    _, two, _ = prepare(tmp_path / "two", monkeypatch, 2, Builds())
    assert list(one) == list(two)  # the specs' order
    for instance_id, chain in one.items():
        assert [r.key for r in chain.layers] == [r.key for r in two[instance_id].layers]


def test_an_interrupt_starts_no_build_after_it_and_stops_those_under_way(tmp_path, monkeypatch):
    stopped: list[float] = []
    monkeypatch.setattr(tether, "stop_all", lambda: stopped.append(time.monotonic()))
    builds = Builds(interrupt_at="evalrepro-history")
    with pytest.raises(KeyboardInterrupt):
        prepare(tmp_path, monkeypatch, 2, builds)
    assert builds.interrupted is not None and len(stopped) == 1
    assert all(started <= stopped[0] for started in builds.started)
    assert layer_counts(builds.tags).get("instance", 0) < 7


def test_stop_all_stops_a_running_tethered_command_at_once(tmp_path):
    codes: list[int] = []
    log = (tmp_path / "log").open("wb")
    thread = threading.Thread(
        target=lambda: codes.append(tether.run_tethered(["sleep", "60"], stdout=log, env={}))
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not tether._running and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # the keeper has started sleep
    stopping = time.monotonic()
    tether.stop_all()
    thread.join(timeout=30)
    assert not thread.is_alive() and codes == [137]
    # SIGTERM ended it, not the SIGKILL that follows the grace period.
    assert time.monotonic() - stopping < tether.GRACE_SECONDS
    assert tether._running == {}
