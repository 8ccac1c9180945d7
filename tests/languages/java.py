"""Java: java-string-similarity 2.0.0, from Debian's ``java-string-similarity`` source
package.

The upstream tarball (``java-string-similarity_2.0.0.orig.tar.xz``; the mirror lacks the
package's Debian tarball) is the base commit, with its ``pom.xml`` built as Debian
builds it: the release plugins (Nexus staging, sources, javadoc, GPG, release,
coveralls, cobertura, checkstyle), which no Debian package gives, are left out, and the
plugins and libraries the build needs are the versions in Debian's
``/usr/share/maven-repo`` (Maven's own plugins, ``junit4``,
``libjcip-annotations-java``). The bug: ``Levenshtein.distance(s1, s2, limit)`` stops
one edit early, returning ``limit`` for strings whose distance is ``limit - 1``. The
test patch adds that case. Maven runs offline (``mvn -o``) against the Debian repository
as its local one: nothing is ever fetched. Surefire's XML reports are printed after the
run and read by ``junit_xml``.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.languages import Project
from tests.languages._fetch_b import Edit, make_repository, patches, source_tarball, unpack

PACKAGE = "java-string-similarity"
ORIG = (
    "java-string-similarity_2.0.0.orig.tar.xz",
    "3c10dbefdc09cb3fea52c0e098ff6663b712e66ee5273ec94128783561a811ec",
)
LEVENSHTEIN = "src/main/java/info/debatty/java/stringsimilarity/Levenshtein.java"

#: The build as Debian's packaging makes it: the plugins the tests need, at the
#: versions of Debian's Maven repository.
BUILD = """\
    <build>
        <plugins>
            <plugin>
                <groupId>org.apache.maven.plugins</groupId>
                <artifactId>maven-compiler-plugin</artifactId>
                <version>3.10.1</version>
                <configuration>
                    <source>8</source>
                    <target>8</target>
                </configuration>
            </plugin>
            <plugin>
                <groupId>org.apache.maven.plugins</groupId>
                <artifactId>maven-resources-plugin</artifactId>
                <version>3.3.0</version>
            </plugin>
            <plugin>
                <groupId>org.apache.maven.plugins</groupId>
                <artifactId>maven-surefire-plugin</artifactId>
                <version>2.22.3</version>
            </plugin>
        </plugins>
    </build>
"""


def make_repo(repo_dir: Path, cache_dir: Path) -> str:
    orig = source_tarball(PACKAGE, *ORIG, cache_dir)
    tree = unpack(orig, cache_dir / "unpacked" / PACKAGE)
    pom = (tree / "pom.xml").read_text()
    build = re.search(r"    <build>\n.*?    </build>\n", pom, re.S)
    assert build is not None, "java-string-similarity's pom.xml has no <build>"
    edits: list[Edit] = [
        ("pom.xml", build.group(0), BUILD),
        ("pom.xml", "<version>4.12</version>", "<version>4.x</version>"),
        (LEVENSHTEIN, "if (minv1 >= limit) {", "if (minv1 >= limit - 1) {"),
    ]
    return make_repository(tree, repo_dir, edits, "java-string-similarity 2.0.0, Levenshtein")


GOLD, TEST, WRONG, ATTACK = patches("java")

#: Offline, against Debian's repository as the local one. The JIT's first tier alone and
#: the tests in Maven's own JVM (``-DforkCount=0``) make a run about 4x faster here.
MAVEN = (
    "MAVEN_OPTS=-XX:TieredStopAtLevel=1 mvn -o -B -q -Dstyle.color=never"
    " -Dmaven.repo.local=/usr/share/maven-repo"
)
#: A checkout's files can have mtime 0 (1970), and Maven's resources plugin then fails to
#: copy them ("NoSuchFileException" on the copy it just made): they are touched first.
TOUCH = "find src -path '*/resources/*' -type f -exec touch {} +"
REPORTS = "sed '/<properties>/,/<\\/properties>/d' target/surefire-reports/TEST-*.xml"
TESTS = "-DforkCount=0 -Dtest=LevenshteinTest,CosineTest"
#: Maven's status is the command's; the reports follow the run in the log.
TEST_CMD = f"({TOUCH}; {MAVEN} test {TESTS}; status=$?; {REPORTS}; exit $status)"
CLASS = "info.debatty.java.stringsimilarity.LevenshteinTest"

PROJECT = Project(
    language="java",
    repo="tdebatty/java-string-similarity",
    version="2.0.0",
    debs=(
        "default-jdk-headless",
        "maven",
        "libmaven-compiler-plugin-java",
        "libmaven-resources-plugin-java",
        "libsurefire-java",
        "junit4",
        "libjcip-annotations-java",
    ),
    spec={"test_cmd": TEST_CMD, "test_directives": [], "parser": "junit_xml"},
    make_repo=make_repo,
    gold_patch=GOLD,
    test_patch=TEST,
    wrong_patch=WRONG,
    attack_patch=ATTACK,
    fail_to_pass=(f"{CLASS}#testDistanceBelowTheLimit",),
    by_hand=f"{TEST_CMD} 2>&1",
)
