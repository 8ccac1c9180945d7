"""PHP: doctrine/inflector 2.0.6, from Debian's ``php-doctrine-inflector`` source package.

The upstream tarball (``php-doctrine-inflector_2.0.6.orig.tar.xz``) is the base commit,
with a bug injected: ``Inflector::classify`` splits words at underscores only, no longer
at spaces and dashes (``model-name`` gives ``Modelname``). The test patch adds the test
of those delimiters. No Composer: as Debian's own build does (``debian/rules``), the
test command makes the autoloader with ``phpab`` (Debian's ``phpab``) from ``lib`` and
``tests``, in a temporary folder, then runs PHPUnit 9.6 (Debian's ``phpunit``) on one
test class with its JUnit XML report on stdout (``--log-junit php://stdout``), read by
``junit_xml``.
"""

from __future__ import annotations

from pathlib import Path

from tests.languages import Project
from tests.languages._fetch_b import Edit, make_repository, patches, source_tarball, unpack

PACKAGE = "php-doctrine-inflector"
ORIG = (
    "php-doctrine-inflector_2.0.6.orig.tar.xz",
    "92e7831dda9ca19a55906f0bd741af7125419ad926f0e22e84c2530a69e114a1",
)

EDITS: list[Edit] = [
    (
        "lib/Doctrine/Inflector/Inflector.php",
        "ucwords($word, ' _-')",
        "ucwords($word, '_')",
    ),
]


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    orig = source_tarball(PACKAGE, *ORIG, cache_dir)
    tree = unpack(orig, cache_dir / "unpacked" / PACKAGE)
    return make_repository(tree, repo_dir, EDITS, "doctrine/inflector 2.0.6, classify")


GOLD, TEST, WRONG, ATTACK = patches("php")

#: The autoloader goes to a folder of its own outside the repository: ``vendor/`` is
#: PHP's test infrastructure, and a file the run writes there is a suspect change.
TEST_CMD = (
    "autoload=$(mktemp -d) && phpab --output $autoload/autoload.php --basedir $autoload"
    " lib tests > /dev/null && phpunit --colors=never --bootstrap $autoload/autoload.php"
    " --log-junit php://stdout"
)
TEST_FILE = "tests/Doctrine/Tests/Inflector/InflectorTest.php"
CLASS = "Doctrine.Tests.Inflector.InflectorTest"

PROJECT = Project(
    language="php",
    repo="doctrine/inflector",
    version="2.0.6",
    debs=("php-cli", "php-mbstring", "php-xml", "phpunit", "phpab"),
    spec={"test_cmd": TEST_CMD, "parser": "junit_xml"},
    make_repo=make_repo,
    gold_patch=GOLD,
    test_patch=TEST,
    wrong_patch=WRONG,
    attack_patch=ATTACK,
    fail_to_pass=(f"{CLASS}#testClassifyAtSpacesAndDashes",),
    by_hand=f"{TEST_CMD} {TEST_FILE} 2>&1",
)
