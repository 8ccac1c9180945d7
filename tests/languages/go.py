"""Go: go-runewidth 0.0.14, from Debian's ``golang-github-mattn-go-runewidth-dev``.

The package carries the library's whole source with its tests. Its one dependency,
``github.com/rivo/uniseg``, is Debian's ``golang-github-rivo-uniseg-dev`` in the base:
the base commit's ``go.mod`` replaces the module with that folder, and the tests run
with ``GOPROXY=off`` (no module is ever fetched). The bug: ``TruncateLeft`` drops the
padding when the cut falls inside a double-width character (the upstream rows that test
it come back with the test patch, with a test that fails at random: validate must find
it flaky). Go 1.19 (bookworm) and ``go test -json``, read by ``gotest_json``; no test
prints output without a trailing newline (see the parser's note on Go before 1.20).
"""

from __future__ import annotations

from pathlib import Path

from tests.languages import Project
from tests.languages._fetch import Edit, deb_tree, make_repository, patch

MODULE = "github.com/mattn/go-runewidth"
UNISEG = "/usr/share/gocode/src/github.com/rivo/uniseg"

PADDING = """\
		if width+chWidth > w {
			if width < w {
				_, pos = g.Positions()
				prefix += strings.Repeat(" ", width+chWidth-w)
			} else {
				pos, _ = g.Positions()
			}

			break
		}
"""
BUG = """\
		if width+chWidth > w {
			pos, _ = g.Positions()
			break
		}
"""
ROWS = """\
	{"あいうえお", 5, "", " えお"},
	{"Aあいうえお", 5, "", "うえお"},
"""


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    upstream = deb_tree(
        "golang-github-mattn-go-runewidth-dev",
        "0.0.14-1",
        "422dd4fbccebaab51df46ee3c454ddd94b26b0be86c5b4d5a2c13d6555fc834b",
        cache_dir,
        f"usr/share/gocode/src/{MODULE}",
    )
    edits: list[Edit] = [
        ("go.mod", "go 1.9\n", f"go 1.9\n\nreplace github.com/rivo/uniseg => {UNISEG}\n"),
        ("runewidth.go", PADDING, BUG),
        ("runewidth.go", '\t"os"\n\t"strings"\n', '\t"os"\n'),
        ("runewidth_test.go", ROWS, '\t{"Aあいうえお", 5, "", "うえお"},\n'),
    ]
    return make_repository(upstream, repo_dir, edits, "go-runewidth 0.0.14, TruncateLeft")


PROJECT = Project(
    language="go",
    repo="mattn/go-runewidth",
    version="0.0.14",
    debs=("golang-go", "golang-github-rivo-uniseg-dev"),
    spec={
        "test_cmd": (
            "export GOPROXY=off GOFLAGS=-mod=mod GOCACHE=$(mktemp -d) GOPATH=$(mktemp -d);"
            " go test -json . 2>&1"
        ),
        "test_directives": [],
        "parser": "gotest_json",
    },
    make_repo=make_repo,
    gold_patch=patch("go", "gold"),
    test_patch=patch("go", "test"),
    wrong_patch=patch("go", "wrong"),
    attack_patch=patch("go", "attack"),
    fail_to_pass=(f"{MODULE}::TestTruncateLeft",),
    by_hand=(
        "export GOPROXY=off GOFLAGS=-mod=mod GOCACHE=$(mktemp -d) GOPATH=$(mktemp -d);"
        " go test -json . 2>&1"
    ),
    flaky=f"{MODULE}::TestTruncateLeftCoin",
)
