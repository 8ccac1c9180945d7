"""Bundles of a real run: the demo's gold run in rootless podman, bundled with its images
and build inputs, verified with no podman on the PATH, and reproduced from a fresh cache.

(The bundle format, its tampering cases and reproduction's classifications are specified
without containers in tests/test_bundle.py and tests/test_reproduce.py; image export and
load into an empty store in tests/test_image_archive.py.)
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from rich.console import Console

from evalrepro.publish.bundle import open_bundle, write_bundle
from evalrepro.publish.reproduce import print_reproduction, reproduce
from tests.podman_support import cache_dir, demo_config, needs_podman, run_demo

pytestmark = needs_podman


@pytest.fixture(scope="module")
def gold(tmp_path_factory):
    root = tmp_path_factory.mktemp("gold")
    results, _ = run_demo(demo_config("demo"), root / "demo-gold")
    assert results.resolved == 12
    return root / "demo-gold"


@pytest.fixture(scope="module")
def full_bundle(gold, tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "gold-full.bundle.tar.gz"
    write_bundle(gold, out, with_images=True, with_inputs=True, cache_dir=cache_dir())
    return out


def test_the_real_gold_run_bundles_to_the_same_bytes_twice(gold, tmp_path):
    one, two = tmp_path / "one.tar.gz", tmp_path / "two.tar.gz"
    write_bundle(gold, one)
    write_bundle(gold, two)
    assert one.read_bytes() == two.read_bytes()


def test_a_full_bundle_holds_images_and_inputs_and_verifies_without_podman(full_bundle, tmp_path):
    with open_bundle(full_bundle) as opened:
        index = opened.index()
        assert index.images == ["images/images.oci.tar"]
        assert index.all_build_inputs
        kinds = {item.source.split()[0] for item in index.inputs if item.role == "build"}
        assert {"deb", "wheel", "history"} <= kinds
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", "verify", "--json", str(full_bundle)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty)},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    payload = json.loads(done.stdout)
    assert payload["ok"] and payload["regraded"] == 12


def test_the_full_bundle_reproduces_from_a_fresh_cache_and_all_twelve_agree(full_bundle, tmp_path):
    out = io.StringIO()
    console = Console(file=out, width=200)
    reproduction = reproduce(
        full_bundle, console, run_dir=tmp_path / "again", cache_dir=tmp_path / "fresh-cache"
    )
    print_reproduction(console, reproduction)
    assert (reproduction.agreeing, len(reproduction.trials)) == (12, 12), out.getvalue()
    assert "12/12 trials agree" in out.getvalue()
