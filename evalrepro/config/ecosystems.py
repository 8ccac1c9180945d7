"""Each language ecosystem's test infrastructure, by file pattern: what a model patch may
not change in a repository of that ecosystem (``dataset.protection.ecosystems``).

A pattern is matched as every protection pattern is (``evalrepro.sandbox.infra``'s
``protected_reason``, fnmatch): against a file's name, or against its whole path when the
pattern has a "/" (``*`` then crosses folders, so ``*/vendor/*`` is a ``vendor`` folder
anywhere below the root and ``vendor/*`` the one at the root).

Two rules make the lists. A pattern names what the build and the runner **read**, never
what they write: the same patterns are checked after the run, and a file matching one
that the run created or changed makes the trial suspect (``changed_during_run``), so
build outputs, caches and generated files (``target/``, ``build/``, ``.gradle/``,
CMake's ``CTestTestfile.cmake``, ``node_modules/.vite``) are not here, however much a
patch could do by writing into them (docs/threat-model.md, "Ecosystems"). And a pattern
names test infrastructure by a name that means it in that ecosystem: a file that a
protected config names (a jest ``setupFiles`` entry, a Maven plugin of the same build)
is the dataset's to add to ``patterns`` or ``test_dirs``.

Which ecosystems an instance has is its parser's (``LogParser.ecosystems``) unless the
dataset names them; ``evalrepro.plan.testspec.resolve_protection`` adds their patterns to
the dataset's own.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Ecosystem(BaseModel):
    """One language ecosystem's test infrastructure."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The name datasets and parsers use (``go``, ``rust``, ...).
    name: str
    #: Test infrastructure files: names, or whole paths when the pattern has a "/".
    patterns: tuple[str, ...]
    #: Why these files, in one line (``evalrepro config --reference``, the docs).
    why: str


def anywhere(path: str) -> tuple[str, str]:
    """``path`` (a folder's ``name/*``, or a file's path) at the root or below it: its
    two patterns (``path`` and ``*/path``)."""
    return (path, f"*/{path}")


#: Python's, exactly the patterns every dataset had before ecosystems existed (its
#: resolved patterns, and so the TestSpecs and trial ids of Python datasets, are the same).
#: A few names of JavaScript runners were among them; they stay.
PYTHON_PATTERNS: tuple[str, ...] = (
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "noxfile.py",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    "runtests.py",
    "jest.config.*",
    "vitest.config.*",
    ".mocharc*",
    "karma.conf.*",
)

#: What the JUnit Platform and TestNG load from the classpath into the test JVM, in the
#: sources' resource folders (the code's included; the build copies them into its output,
#: which is not named here): configuration and service-loaded extensions, listeners and
#: conditions, which can skip a test or turn its failure into a pass.
_JVM_TEST_RUNTIME: tuple[str, ...] = (
    *anywhere("src/*/resources/junit-platform.properties"),
    *anywhere("src/*/resources/META-INF/services/org.junit.*"),
    *anywhere("src/*/resources/META-INF/services/org.testng.*"),
)

_ECOSYSTEMS: tuple[Ecosystem, ...] = (
    Ecosystem(
        name="python",
        patterns=PYTHON_PATTERNS,
        why="pytest's and unittest's configuration, conftest files and the interpreter's "
        "start-up hooks (sitecustomize, .pth), read before any test runs",
    ),
    Ecosystem(
        name="go",
        patterns=(
            "go.mod",
            "go.sum",
            "go.work",
            "go.work.sum",
            "*_test.go",
            *anywhere("vendor/*"),
            *anywhere("testdata/*"),
        ),
        why="which code the test binary is built from (go.mod's require and replace lines, "
        "go.work, a vendored copy of a test dependency), every _test.go file of a package "
        "(each is compiled into its test binary: an init or a TestMain runs before the "
        "tests), and the fixtures and golden files in testdata/ the tests compare with",
    ),
    Ecosystem(
        name="rust",
        patterns=(
            "Cargo.toml",
            "Cargo.lock",
            "build.rs",
            *anywhere(".cargo/config"),
            *anywhere(".cargo/config.toml"),
            "rust-toolchain",
            "rust-toolchain.toml",
            ".config/nextest.toml",
            "vendor/*",
        ),
        why="the manifests and lock that say which crates, features and build scripts the "
        "test binaries are built from ([patch] and [replace] tables, dev-dependencies), the "
        "build scripts themselves (run by cargo test), cargo's config (a target runner, "
        "rustflags, source replacement), the toolchain file and a vendored crate tree",
    ),
    Ecosystem(
        name="maven",
        patterns=(
            "pom.xml",
            *anywhere(".mvn/*"),
            "mvnw",
            "mvnw.cmd",
            *_JVM_TEST_RUNTIME,
        ),
        why="every module's pom.xml (Surefire's configuration, test dependencies, plugins "
        "bound to the build), .mvn/ (maven.config and jvm.config options such as "
        "-DskipTests, build extensions, the wrapper) and what the JUnit Platform loads "
        "from the classpath",
    ),
    Ecosystem(
        name="gradle",
        patterns=(
            # "?*": a name before the dot; ".gradle" is the cache folder every build writes
            "?*.gradle",
            "?*.gradle.kts",
            "gradle.properties",
            "gradlew",
            "gradlew.bat",
            *anywhere("gradle/wrapper/*"),
            *anywhere("gradle/*.versions.toml"),
            # buildSrc's sources (its build scripts are *.gradle); not buildSrc/build/
            # and buildSrc/.gradle/, which every build writes
            *anywhere("buildSrc/src/*"),
            *_JVM_TEST_RUNTIME,
        ),
        why="the build scripts, settings and init scripts (the test task's filters, "
        "ignoreFailures, listeners), gradle.properties, the wrapper, version catalogs, "
        "buildSrc's build logic and what the JUnit Platform loads from the classpath",
    ),
    Ecosystem(
        name="javascript",
        patterns=(
            "package.json",
            "package-lock.json",
            "npm-shrinkwrap.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            "pnpm-workspace.yaml",
            ".npmrc",
            ".yarnrc",
            ".yarnrc.yml",
            ".pnpmfile.cjs",
            ".pnp.cjs",
            ".pnp.loader.mjs",
            *anywhere(".yarn/*"),
            "jest.config.*",
            "jest.setup.*",
            "jest-setup.*",
            "setupTests.*",
            "vitest.config.*",
            "vitest.workspace.*",
            "vitest.setup.*",
            "vite.config.*",
            ".mocharc*",
            "karma.conf.*",
            "ava.config.*",
            ".nycrc*",
            "babel.config.*",
            ".babelrc",
            ".babelrc.*",
            ".swcrc",
            "tsconfig*.json",
            "jsconfig.json",
            "*.test.*",
            "*.spec.*",
            *anywhere("__mocks__/*"),
            *anywhere("__snapshots__/*"),
            # the packages, not the caches runners write (node_modules/.vite, .cache)
            *anywhere("node_modules/[!.]*"),
            *anywhere("node_modules/.bin/*"),
        ),
        why="package.json whole (scripts, the runner's sections, type, exports and imports "
        "decide how tests load), the package managers' config and lockfiles (.npmrc's "
        "node-options runs a module in every process), the runners' configs and setup "
        "files, the transpilers' configs that rewrite tests and code, test files beside the "
        "code, jest's manual mocks and stored snapshots, and the installed packages the "
        "runner is made of (not the caches runners write under node_modules/.*)",
    ),
    Ecosystem(
        name="cmake",
        patterns=(
            "CMakeLists.txt",
            "CMakePresets.json",
            "CMakeUserPresets.json",
            "CTestConfig.cmake",
            "Find*.cmake",
            "*.cmake.in",
            *anywhere("cmake/*"),
            # a vendored test framework by its files' names: its folder is also where the
            # build writes its objects and generated files (build/test/gtest/...)
            "gtest*.h",
            "gtest*.cc",
            "gmock*.h",
            "gmock*.cc",
            "catch.hpp",
            "catch_amalgamated.hpp",
            "catch_amalgamated.cpp",
            "doctest.h",
        ),
        why="the CMake sources that define the test targets, their add_test lines and "
        "gtest_discover_tests (CMakeLists.txt, modules, presets, CTest's own files), and a "
        "vendored copy of the test framework (GoogleTest, Catch2, doctest); not the build "
        "folder's generated files (CTestTestfile.cmake), which every configure rewrites",
    ),
    Ecosystem(
        name="ruby",
        patterns=(
            ".rspec",
            ".rspec-local",
            ".rspec_parallel",
            "spec_helper.rb",
            "rails_helper.rb",
            "test_helper.rb",
            ".simplecov",
            "Gemfile",
            "Gemfile.lock",
            "gems.rb",
            "gems.locked",
            "*.gemspec",
            "Rakefile",
            "rakefile",
            "Rakefile.rb",
            "*.rake",
            *anywhere(".bundle/*"),
            *anywhere("vendor/bundle/*"),
        ),
        why="RSpec's option files (--require, --dry-run, filters), the spec and test "
        "helpers every spec loads, .simplecov (Ruby run at start-up), the Gemfile, gemspec "
        "and lock that say which gems load, Bundler's config and installed gems, and the "
        "Rakefile and rake tasks that a rake test command runs",
    ),
    Ecosystem(
        name="php",
        patterns=(
            "phpunit.xml",
            "phpunit.xml.dist",
            "phpunit.dist.xml",
            "bootstrap.php",
            "phpunit-bootstrap.php",
            "composer.json",
            "composer.lock",
            "*.phar",
            *anywhere("vendor/*"),
            *anywhere(".phive/*"),
        ),
        why="PHPUnit's configuration (test suites, bootstrap, extensions, the failOn and "
        "stopOn settings) and its bootstrap files, Composer's manifest and lock (autoload "
        "and autoload-dev files run in every process), the installed vendor/ tree that "
        "PHPUnit itself is part of, and a PHPUnit phar kept in the repository",
    ),
)

#: Every ecosystem, by name.
ECOSYSTEMS: dict[str, Ecosystem] = {ecosystem.name: ecosystem for ecosystem in _ECOSYSTEMS}


def ecosystem_patterns(names: list[str] | tuple[str, ...]) -> list[str]:
    """The patterns of the ecosystems ``names`` (each known), in order, each once."""
    return list(dict.fromkeys(p for name in names for p in ECOSYSTEMS[name].patterns))
