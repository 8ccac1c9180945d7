"""The image store's one listing (`PodmanRuntime.image_ids`): podman 4.3 fails a whole
`podman images` when another process removes an image meanwhile, so a failed listing is
tried again, and one that keeps failing is a one-line error, not a traceback."""

from __future__ import annotations

import subprocess

import pytest

from evalrepro.config.environment import PodmanEnvironment
from evalrepro.errors import UserError
from evalrepro.runtimes.podman import PodmanRuntime

RACE = (
    'Error: retrieving label for image "81f1": you may need to remove the image to resolve '
    "the error: image not known\n"
)


def runtime_answering(monkeypatch, tmp_path, answers: list[tuple[int, str, str]]):
    runtime = PodmanRuntime(PodmanEnvironment(), tmp_path)
    calls = []

    def podman(*args, check=True):
        calls.append(args)
        code, out, err = answers[min(len(calls), len(answers)) - 1]
        return subprocess.CompletedProcess(["podman", *args], code, out, err)

    monkeypatch.setattr(runtime.images, "podman", podman)
    monkeypatch.setattr("evalrepro.runtimes.podman_store.time.sleep", lambda seconds: None)
    return runtime, calls


def test_a_listing_that_races_a_removal_is_tried_again(monkeypatch, tmp_path):
    listing = "localhost/evalrepro-base:abc sha256:" + "1" * 64 + "\n<none>:<none> 2222\n"
    runtime, calls = runtime_answering(monkeypatch, tmp_path, [(125, "", RACE), (0, listing, "")])
    assert runtime.image_ids() == {"localhost/evalrepro-base:abc": "sha256:" + "1" * 64}
    assert len(calls) == 2


def test_a_listing_that_keeps_failing_is_one_line(monkeypatch, tmp_path):
    runtime, calls = runtime_answering(monkeypatch, tmp_path, [(125, "", RACE)])
    with pytest.raises(UserError, match="podman images failed: Error: retrieving label") as error:
        runtime.image_ids()
    assert "\n" not in str(error.value) and len(calls) == 4
