"""Ruby: hashie 5.0.0, from Debian's ``ruby-hashie`` source package.

The upstream tarball (``ruby-hashie_5.0.0.orig.tar.gz``, the gem's files) with Debian's
two patches (``debian/patches``: the specs load no ``pry``; one spec requires
``tempfile``) is the base commit. Its bug is upstream's own, none is injected:
``DeepFetch#deep_fetch`` means to turn a key into an index when the object it fetches
from is an array (``Integer(arg) if obj.is_a? Array``), but inside ``module Hashie``
``Array`` is ``Hashie::Array``, so a string index (``'1'``, as from a path in a config
file) raises ``TypeError``; the gold patch says ``::Array``. The test patch adds the
spec of that case (the flaky test validate must find is Go's: one is enough).
RSpec 3.12 from Debian's ``ruby-rspec``, with ``ruby-rspec-pending-for`` that hashie's
``spec_helper`` loads; ``rspec --format json``, read by ``rspec_json``.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from tests.languages import Project
from tests.languages._fetch_b import Edit, make_repository, patches, source_tarball, unpack

PACKAGE = "ruby-hashie"
ORIG = (
    "ruby-hashie_5.0.0.orig.tar.gz",
    "f16d5394d732678d6287a334aeb41e88bb12fe78c22c4b749ffcb0570014f59a",
)
DEBIAN = (
    "ruby-hashie_5.0.0-2.debian.tar.xz",
    "b843b1b0dc9b114eec3cf7cc3a1a70c3e6872111609455a7fc036c03d879176d",
)

#: The bug is upstream's own: none is injected.
EDITS: list[Edit] = []


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    orig = source_tarball(PACKAGE, *ORIG, cache_dir)
    debian = source_tarball(PACKAGE, *DEBIAN, cache_dir)
    with tempfile.TemporaryDirectory() as scratch:
        tree = unpack(orig, Path(scratch) / "tree")
        patches = unpack(debian, Path(scratch) / "debian") / "patches"
        for name in (patches / "series").read_text().split():
            subprocess.run(
                ["patch", "-s", "-p1", "-i", str(patches / name)],
                cwd=tree,
                check=True,
                capture_output=True,
            )
        return make_repository(tree, repo_dir, EDITS, "hashie 5.0.0 (Debian 5.0.0-2), deep_fetch")


GOLD, TEST, WRONG, ATTACK = patches("ruby")

SPEC = "./spec/hashie/extensions/deep_fetch_spec.rb::Hashie::Extensions::DeepFetch#deep_fetch"
TEST_CMD = "rspec --format json"

PROJECT = Project(
    language="ruby",
    repo="hashie/hashie",
    version="5.0.0",
    debs=("ruby", "ruby-rspec", "ruby-rspec-pending-for"),
    spec={"test_cmd": TEST_CMD, "parser": "rspec_json"},
    make_repo=make_repo,
    gold_patch=GOLD,
    test_patch=TEST,
    wrong_patch=WRONG,
    attack_patch=ATTACK,
    fail_to_pass=(f"{SPEC} extracts a value from a nested array by a string index",),
    by_hand=f"{TEST_CMD} spec/hashie/extensions/deep_fetch_spec.rb",
)
