"""Rust: heck 0.4.0, from Debian's ``librust-heck-dev``.

The package carries the crate's whole source (``/usr/share/cargo/registry/heck-0.4.0``),
its unit tests inline in ``src/*.rs``. Its optional dependency ``unicode-segmentation``
is resolved (cargo resolves optional dependencies too) from Debian's crates in the base,
``/usr/share/cargo/registry`` as a directory source that replaces crates.io, with
``--offline``: no crate is ever fetched. The bug: without the ``unicode`` feature, words
are no longer split at ``-`` (a regression: the upstream tests of kebab-case input fail
at the base commit; the test patch adds one more). libtest's JSON events
(``RUSTC_BOOTSTRAP=1``, ``--format json``), read by ``cargo_json``.
"""

from __future__ import annotations

from pathlib import Path

from tests.languages import Project
from tests.languages._fetch import Edit, deb_tree, make_repository, patch

SPLIT = "    s.split(|letter: char| !letter.is_ascii_alphanumeric())\n"
BUG = "    s.split(|letter: char| !letter.is_ascii_alphanumeric() && letter != '-')\n"
#: cargo with Debian's crates as its registry, offline; unit tests only, as JSON events.
CARGO = (
    "export CARGO_HOME=$(mktemp -d) CARGO_TARGET_DIR=$(mktemp -d) RUSTC_BOOTSTRAP=1;"
    " cargo test --offline --lib"
    " --config 'source.crates-io.replace-with=\"debian\"'"
    " --config 'source.debian.directory=\"/usr/share/cargo/registry\"'"
    " -- -Z unstable-options --format json 2>&1"
)


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    upstream = deb_tree(
        "librust-heck-dev",
        "0.4.0-1",
        "16b328c2857a8a374752aeec73fbad09b7e3bfc8250fdc3c1f214a54f6dba51c",
        cache_dir,
        "usr/share/cargo/registry/heck-0.4.0",
    )
    edits: list[Edit] = [("src/lib.rs", SPLIT, BUG)]
    return make_repository(upstream, repo_dir, edits, "heck 0.4.0, words split at -")


PROJECT = Project(
    language="rust",
    repo="withoutboats/heck",
    version="0.4.0",
    debs=("cargo", "librust-unicode-segmentation-dev"),
    spec={"test_cmd": CARGO, "test_directives": [], "parser": "cargo_json"},
    make_repo=make_repo,
    gold_patch=patch("rust", "gold"),
    test_patch=patch("rust", "test"),
    wrong_patch=patch("rust", "wrong"),
    attack_patch=patch("rust", "attack"),
    fail_to_pass=(
        "heck:src/lib.rs::lower_camel::tests::test5",
        "heck:src/lib.rs::lower_camel::tests::test8",
        "heck:src/lib.rs::shouty_snake::tests::test5",
        "heck:src/lib.rs::shouty_snake::tests::test8",
        "heck:src/lib.rs::snake::tests::test5",
        "heck:src/lib.rs::snake::tests::test8",
        "heck:src/lib.rs::title::tests::test11",
        "heck:src/lib.rs::title::tests::test5",
        "heck:src/lib.rs::title::tests::test8",
        "heck:src/lib.rs::upper_camel::tests::test5",
        "heck:src/lib.rs::upper_camel::tests::test8",
    ),
    by_hand=CARGO,
)
