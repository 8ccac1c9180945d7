"""JavaScript: sprintf-js 1.0.3, from the npm registry (``npm pack``).

The registry's tarball (pinned by sha256) is the tree; it has no dependencies, and its
tests run under Debian's ``mocha`` (with Debian's ``nodejs``) in the base: nothing is
installed from npm at run time. The bug: ``%u`` no longer turns a negative number into
an unsigned 32-bit one (the upstream assertion comes back with the test patch). Mocha's
TAP reporter, read by ``tap_full`` (ids: the suite and test titles joined by ``" > "``).
"""

from __future__ import annotations

from pathlib import Path

from tests.languages import Project
from tests.languages._fetch import Edit, make_repository, npm_tarball, patch, unpack

UNSIGNED = '                    case "u":\n                        arg = arg >>> 0\n'
BUG = '                    case "u":\n                        arg = parseInt(arg, 10)\n'
ASSERTION = '        assert.equal("4294967294", sprintf("%u", -2))\n'


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    tarball = npm_tarball(
        "sprintf-js@1.0.3",
        "3afb26bcc328dc90f516515acf2783ad35b08dbfe9e0ada18264c3c4ddaa1a83",
        cache_dir,
    )
    upstream = unpack(tarball, cache_dir / "unpacked" / "sprintf-js", "package")
    edits: list[Edit] = [("src/sprintf.js", UNSIGNED, BUG), ("test/test.js", ASSERTION, "")]
    return make_repository(upstream, repo_dir, edits, "sprintf-js 1.0.3, %u")


PROJECT = Project(
    language="javascript",
    repo="alexei/sprintf.js",
    version="1.0.3",
    debs=("nodejs", "mocha"),
    spec={"test_cmd": "mocha --reporter tap", "parser": "tap_full"},
    make_repo=make_repo,
    gold_patch=patch("javascript", "gold"),
    test_patch=patch("javascript", "test"),
    wrong_patch=patch("javascript", "wrong"),
    attack_patch=patch("javascript", "attack"),
    fail_to_pass=("sprintfjs should return formated strings for simple placeholders",),
    by_hand="mocha --reporter tap test/test.js 2>&1",
)
