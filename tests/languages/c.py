"""C: cJSON 1.7.15, from Debian's source package ``cjson`` (``apt-get source``).

The upstream tarball (``cjson_1.7.15.orig.tar.gz``, pinned by sha256) is the tree: CMake
with its own Unity tests, one CTest test per test program. No dependency but the
compiler. The bug: ``parse_hex4`` no longer reads upper-case hex digits (a regression:
upstream's ``parse_string`` tests of ``\\u20AC`` fail at the base commit; the test patch
brings back the upper-case checks of ``parse_hex4``). The command builds three test
programs only and runs them with ``ctest --output-junit``; the report, printed into the
log, is read by ``junit_xml`` (one id per CTest test: ``parse_hex4#parse_hex4``).
"""

from __future__ import annotations

from pathlib import Path

from tests.languages import Project
from tests.languages._fetch import Edit, make_repository, patch, source_tarball, unpack

UPPER = """\
        else if ((input[i] >= 'A') && (input[i] <= 'F'))
        {
            h += (unsigned int) 10 + input[i] - 'A';
        }
"""
ALL_UPPER = (
    "        TEST_ASSERT_EQUAL_INT_MESSAGE(number, parse_hex4(digits_upper),"
    ' "Failed to parse uppercase digits.");\n'
)
TESTS = ("parse_hex4", "parse_string", "print_string")
#: Configure and build the three test programs out of the tree, run them with CTest.
CTEST = (
    "b=$(mktemp -d) && cmake -S . -B $b -DENABLE_CJSON_TEST=ON -DENABLE_CJSON_UTILS=OFF"
    f" >/dev/null && cmake --build $b -j2 --target {' '.join(TESTS)} >/dev/null"
    f" && cd $b && ctest -R '^({'|'.join(TESTS)})$' --output-junit junit.xml;"
    " cat $b/junit.xml"
)


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    tarball = source_tarball(
        "cjson",
        "cjson_1.7.15.orig.tar.gz",
        "5308fd4bd90cef7aa060558514de6a1a4a0819974a26e6ed13973c5f624c24b2",
        cache_dir,
    )
    upstream = unpack(tarball, cache_dir / "unpacked" / "cjson", "cJSON-1.7.15")
    edits: list[Edit] = [("cJSON.c", UPPER, ""), ("tests/parse_hex4.c", ALL_UPPER, "")]
    return make_repository(upstream, repo_dir, edits, "cJSON 1.7.15, parse_hex4")


PROJECT = Project(
    language="c",
    repo="DaveGamble/cJSON",
    version="1.7.15",
    debs=("cmake", "gcc", "libc6-dev", "make"),
    spec={"test_cmd": CTEST, "test_directives": [], "parser": "junit_xml"},
    make_repo=make_repo,
    gold_patch=patch("c", "gold"),
    test_patch=patch("c", "test"),
    wrong_patch=patch("c", "wrong"),
    attack_patch=patch("c", "attack"),
    fail_to_pass=("parse_hex4#parse_hex4", "parse_string#parse_string"),
    by_hand=CTEST,
)
