"""What ``podman info`` says of this machine is asked once, and again when it may differ."""

from __future__ import annotations

import json

import pytest

from evalrepro.run.backend import Backend
from tests.podman_support import demo_config, needs_podman

pytestmark = needs_podman


@pytest.fixture
def runtime(tmp_path):
    runtime = Backend.open(demo_config("demo").environment, tmp_path).runtime
    asked: list[tuple[str, ...]] = []
    real = runtime.podman

    def recorded(*args, **kwargs):
        asked.append(args)
        return real(*args, **kwargs)

    runtime.podman = recorded
    return runtime, asked, tmp_path / "podman-info"


def test_the_answer_is_podmans_and_a_second_check_does_not_ask_again(runtime):
    runtime, asked, kept = runtime
    runtime.check()
    assert [args[0] for args in asked] == ["info"]
    first = runtime.describe(), runtime.graph_root
    shown = runtime.podman("info", "--format", "{{.Store.GraphDriverName}} {{.Version.Version}}")
    assert shown.stdout.split() == [runtime.storage_driver, runtime.version]

    asked.clear()
    runtime.check()
    assert asked == []
    assert (runtime.describe(), runtime.graph_root) == first
    assert len(list(kept.iterdir())) == 1


def test_a_store_that_is_not_where_the_answer_says_is_asked_about_again(runtime, tmp_path):
    runtime, asked, kept = runtime
    runtime.check()
    (answer,) = kept.iterdir()
    driver, version, _ = json.loads(answer.read_text())
    answer.write_text(json.dumps([driver, version, str(tmp_path / "gone")]))
    asked.clear()
    runtime.check()
    assert [args[0] for args in asked] == ["info"]
    assert runtime.graph_root != str(tmp_path / "gone")


def test_an_unreadable_answer_is_asked_about_again(runtime):
    runtime, asked, kept = runtime
    runtime.check()
    (answer,) = kept.iterdir()
    answer.write_text("[not json")
    asked.clear()
    runtime.check()
    assert [args[0] for args in asked] == ["info"]


def test_a_user_whose_store_may_have_moved_is_asked_about_again(runtime, monkeypatch, tmp_path):
    # Rootless podman keeps its store under XDG_DATA_HOME: another one may be another store.
    runtime, asked, kept = runtime
    runtime.check()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "elsewhere"))
    asked.clear()
    runtime._info()
    assert [args[0] for args in asked] == ["info"]
    assert len(list(kept.iterdir())) == 2
