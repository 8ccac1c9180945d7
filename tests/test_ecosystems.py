"""Ecosystems: each language's test infrastructure, protected in the instances it tests.

The module guarantees that:

* ``protection.ecosystems: auto`` takes the instance's parser's ecosystems, a list names
  them (the parser's then count for nothing), ``[]`` adds none; an unknown name is one
  line naming the key, and a parser naming an unknown ecosystem is one line naming it;
* an instance's resolved patterns are the dataset's ``patterns`` and then its
  ecosystems', each once, in that order, and the TestSpec holds them: a Python dataset's
  are exactly the patterns it had before ecosystems (its TestSpecs are unchanged);
* every parser of evalrepro's names at least one ecosystem, and only known ones;
* each ecosystem's patterns protect its test infrastructure wherever it sits in a
  monorepo, and name no library file, nor any file an honest build or run writes
  (those are checked after the run too: ``changed_during_run``).
"""

from __future__ import annotations

import fnmatch
from typing import ClassVar

import pytest
from pydantic import ValidationError

from evalrepro.config.dataset import DatasetConfig
from evalrepro.config.ecosystems import ECOSYSTEMS, PYTHON_PATTERNS, Ecosystem, anywhere
from evalrepro.config.experiment import compose
from evalrepro.config.protection import DEFAULT_PATTERNS, TestProtection
from evalrepro.config.spec import RepoSpec
from evalrepro.errors import UserError
from evalrepro.grade.parsers import LogParser, ParsedLog, get_parser, parser_names
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.plan.testspec import compile_test_spec, resolve_protection
from evalrepro.sample import Family, Sample
from evalrepro.sandbox.infra import protected_reason

# --- resolution -------------------------------------------------------------------------


def patterns(protection: TestProtection, parser: str | None) -> list[str]:
    return resolve_protection(protection, [], get_parser(parser) if parser else None).patterns


def test_the_ecosystems_are_auto_by_default():
    assert TestProtection().ecosystems == "auto"


@pytest.mark.parametrize(
    "parser", [n for n in parser_names() if get_parser(n).ecosystems == ("python",)]
)
def test_a_python_parser_resolves_to_the_patterns_every_dataset_had_before(parser):
    assert patterns(TestProtection(), parser) == list(DEFAULT_PATTERNS)
    assert DEFAULT_PATTERNS == PYTHON_PATTERNS == ECOSYSTEMS["python"].patterns


def test_auto_adds_the_parsers_ecosystems_after_the_datasets_patterns_each_once():
    resolved = patterns(TestProtection(), "gotest")
    assert resolved == [*DEFAULT_PATTERNS, *ECOSYSTEMS["go"].patterns]
    assert "go.mod" in resolved and "*_test.go" in resolved
    # junit_xml is read from Maven, Gradle, PHPUnit and ctest: shared patterns come once.
    resolved = patterns(TestProtection(patterns=[]), "junit_xml")
    assert resolved == list(
        dict.fromkeys(
            pattern
            for name in ("maven", "gradle", "php", "cmake")
            for pattern in ECOSYSTEMS[name].patterns
        )
    )
    assert len(resolved) == len(set(resolved))


def test_a_list_names_the_ecosystems_and_the_parsers_count_for_nothing():
    protection = TestProtection(ecosystems=["rust", "javascript"])
    assert patterns(protection, "pytest_full") == list(
        dict.fromkeys(
            [*DEFAULT_PATTERNS, *ECOSYSTEMS["rust"].patterns, *ECOSYSTEMS["javascript"].patterns]
        )
    )
    assert patterns(protection, None) == patterns(protection, "gotest")


def test_an_empty_list_leaves_the_datasets_patterns_alone():
    protection = TestProtection(patterns=["ci/*.sh"], ecosystems=[])
    assert patterns(protection, "gotest") == ["ci/*.sh"]


def test_a_dataset_that_overrides_its_patterns_keeps_them_and_gets_its_ecosystems():
    protection = TestProtection(patterns=["ci/*.sh", "go.mod"])
    assert patterns(protection, "gotest") == [
        "ci/*.sh",
        "go.mod",
        *(p for p in ECOSYSTEMS["go"].patterns if p != "go.mod"),
    ]


def test_without_a_parser_auto_adds_nothing():
    assert patterns(TestProtection(patterns=["x.cfg"]), None) == ["x.cfg"]


def test_an_unknown_ecosystem_is_refused_naming_the_known_ones():
    with pytest.raises(ValidationError, match="unknown ecosystem 'golang'; known: cmake, go,"):
        TestProtection(ecosystems=["go", "golang"])


def test_an_unknown_ecosystem_in_a_config_is_one_line_naming_the_key():
    with pytest.raises(UserError) as error:
        compose(["+experiment=demo", "dataset.protection.ecosystems=[golang]"])
    message = str(error.value)
    assert "\n" not in message
    assert "dataset.protection.ecosystems" in message and "'golang'" in message


class _StrangeParser(LogParser):
    """Another package's parser that names an ecosystem evalrepro does not know."""

    name: ClassVar[str] = "strange"
    family: ClassVar[Family] = Family.NATIVE
    ecosystems: ClassVar[tuple[str, ...]] = ("zig",)

    def parse(self, text: str) -> ParsedLog:
        return ParsedLog(statuses={}, suite_ran=False)


def test_a_parser_naming_an_unknown_ecosystem_is_one_line_naming_both():
    with pytest.raises(UserError) as error:
        resolve_protection(TestProtection(), [], _StrangeParser())
    message = str(error.value)
    assert "\n" not in message
    assert "'strange'" in message and "'zig'" in message and "protection.ecosystems" in message
    # Named by the dataset, the parser's word does not matter.
    named = resolve_protection(TestProtection(ecosystems=["go"]), [], _StrangeParser())
    assert "go.mod" in named.patterns


def test_every_parser_names_known_ecosystems():
    for name in parser_names():
        ecosystems = get_parser(name).ecosystems
        assert ecosystems, f"{name} names no ecosystem"
        assert set(ecosystems) <= set(ECOSYSTEMS), name


@pytest.mark.parametrize(
    ("parser", "ecosystems"),
    [
        ("pytest", ("python",)),
        ("unittest", ("python",)),
        ("django", ("python",)),
        ("gotest", ("go",)),
        ("gotest_json", ("go",)),
        ("cargo", ("rust",)),
        ("cargo_json", ("rust",)),
        ("maven", ("maven", "gradle")),
        ("junit_xml", ("maven", "gradle", "php", "cmake")),
        ("jest", ("javascript",)),
        ("vitest", ("javascript",)),
        ("tap_full", ("javascript",)),
        ("phpunit", ("php",)),
        ("rspec_json", ("ruby",)),
        ("googletest", ("cmake",)),
    ],
)
def test_each_runners_parser_names_its_ecosystems(parser, ecosystems):
    assert get_parser(parser).ecosystems == ecosystems


def test_the_test_spec_records_what_was_protected():
    sample = Sample(
        instance_id="me__calc-1",
        repo="me/calc",
        base_commit="0" * 40,
        patch="",
        test_patch="diff --git a/calc_test.go b/calc_test.go\n",
        version="1",
        fail_to_pass=["TestHigh"],
        pass_to_pass=[],
    )
    spec = RepoSpec(test_cmd="go test -v", test_directives=["./..."], parser="gotest")
    compiled = compile_test_spec(
        sample, spec, parser="gotest", fail_only=False, protection=TestProtection()
    )
    assert compiled.eval_script.protection.patterns == patterns(TestProtection(), "gotest")
    other = compile_test_spec(
        sample, spec, parser="gotest", fail_only=False, protection=TestProtection(ecosystems=[])
    )
    assert other.digest() != compiled.digest()


def test_the_demo_datasets_test_specs_protect_what_they_did_before():
    dataset: DatasetConfig = compose(["+experiment=demo"]).dataset
    for sample in dataset.load():
        spec = instance_test_spec(dataset, sample)
        assert spec.eval_script.protection.patterns == list(DEFAULT_PATTERNS), sample.instance_id


# --- each ecosystem's patterns on real paths ------------------------------------------------


def reason(ecosystem: str, path: str) -> str | None:
    return protected_reason(path, {"patterns": list(ECOSYSTEMS[ecosystem].patterns)})


#: (ecosystem, path): test infrastructure, at the root and in monorepo subfolders.
PROTECTED = [
    ("go", "go.mod"),
    ("go", "services/api/go.mod"),
    ("go", "go.sum"),
    ("go", "go.work"),
    ("go", "tools/go.work.sum"),
    ("go", "internal/cache/export_test.go"),
    ("go", "zz_init_test.go"),
    ("go", "vendor/github.com/stretchr/testify/assert/assertions.go"),
    ("go", "services/api/vendor/modules.txt"),
    ("go", "internal/render/testdata/page.golden"),
    ("go", "testdata/input.json"),
    ("rust", "Cargo.toml"),
    ("rust", "crates/ruff_linter/Cargo.toml"),
    ("rust", "Cargo.lock"),
    ("rust", "build.rs"),
    ("rust", "crates/nu-cmd/build.rs"),
    ("rust", ".cargo/config.toml"),
    ("rust", ".cargo/config"),
    ("rust", "crates/x/.cargo/config.toml"),
    ("rust", "rust-toolchain.toml"),
    ("rust", "rust-toolchain"),
    ("rust", ".config/nextest.toml"),
    ("rust", "vendor/pretty_assertions/src/lib.rs"),
    ("maven", "pom.xml"),
    ("maven", "modules/core/pom.xml"),
    ("maven", ".mvn/maven.config"),
    ("maven", ".mvn/jvm.config"),
    ("maven", ".mvn/extensions.xml"),
    ("maven", ".mvn/wrapper/maven-wrapper.properties"),
    ("maven", "legacy/.mvn/maven.config"),
    ("maven", "mvnw"),
    ("maven", "src/main/resources/junit-platform.properties"),
    (
        "maven",
        "core/src/main/resources/META-INF/services/org.junit.jupiter.api.extension.Extension",
    ),
    (
        "maven",
        "src/main/resources/META-INF/services/org.junit.platform.launcher.TestExecutionListener",
    ),
    ("maven", "core/src/main/resources/META-INF/services/org.testng.ITestNGListener"),
    ("gradle", "build.gradle"),
    ("gradle", "build.gradle.kts"),
    ("gradle", "settings.gradle.kts"),
    ("gradle", "subprojects/core/core.gradle"),
    ("gradle", "gradle/init.gradle"),
    ("gradle", "gradle.properties"),
    ("gradle", "gradlew"),
    ("gradle", "gradle/wrapper/gradle-wrapper.properties"),
    ("gradle", "platforms/jvm/gradle/wrapper/gradle-wrapper.jar"),
    ("gradle", "gradle/libs.versions.toml"),
    ("gradle", "buildSrc/src/main/kotlin/conventions.gradle.kts"),
    ("gradle", "buildSrc/src/main/java/TestFilter.java"),
    ("gradle", "app/src/main/resources/junit-platform.properties"),
    ("javascript", "package.json"),
    ("javascript", "packages/core/package.json"),
    ("javascript", "package-lock.json"),
    ("javascript", "yarn.lock"),
    ("javascript", "pnpm-lock.yaml"),
    ("javascript", ".npmrc"),
    ("javascript", "packages/core/.npmrc"),
    ("javascript", ".yarnrc.yml"),
    ("javascript", ".pnp.cjs"),
    ("javascript", ".yarn/releases/yarn-4.1.0.cjs"),
    ("javascript", "jest.config.js"),
    ("javascript", "packages/core/jest.config.ts"),
    ("javascript", "jest.setup.js"),
    ("javascript", "src/setupTests.ts"),
    ("javascript", "vitest.config.mts"),
    ("javascript", "vitest.workspace.ts"),
    ("javascript", "vite.config.ts"),
    ("javascript", ".mocharc.yml"),
    ("javascript", "ava.config.js"),
    ("javascript", ".nycrc.json"),
    ("javascript", "babel.config.js"),
    ("javascript", "packages/core/.babelrc"),
    ("javascript", ".swcrc"),
    ("javascript", "tsconfig.json"),
    ("javascript", "packages/core/tsconfig.test.json"),
    ("javascript", "src/utils/format.test.ts"),
    ("javascript", "packages/ui/src/Button.spec.tsx"),
    ("javascript", "__mocks__/fs.js"),
    ("javascript", "packages/core/src/__mocks__/api.js"),
    ("javascript", "src/__snapshots__/format.test.ts.snap"),
    ("javascript", "node_modules/jest-circus/build/run.js"),
    ("javascript", "node_modules/@jest/core/build/index.js"),
    ("javascript", "packages/core/node_modules/vitest/dist/index.js"),
    ("javascript", "node_modules/.pnpm/expect@29.7.0/node_modules/expect/build/index.js"),
    ("javascript", "node_modules/.bin/jest"),
    ("cmake", "CMakeLists.txt"),
    ("cmake", "test/CMakeLists.txt"),
    ("cmake", "CMakePresets.json"),
    ("cmake", "cmake/FindFoo.cmake"),
    ("cmake", "libs/net/cmake/warnings.cmake"),
    ("cmake", "FindLibXml.cmake"),
    ("cmake", "fmtConfig.cmake.in"),
    ("cmake", "CTestConfig.cmake"),
    ("cmake", "third_party/googletest/googletest/src/gtest.cc"),
    ("cmake", "test/gtest/gmock-gtest-all.cc"),
    ("cmake", "include/gtest/gtest.h"),
    ("cmake", "third_party/catch_amalgamated.cpp"),
    ("cmake", "tests/doctest.h"),
    ("ruby", ".rspec"),
    ("ruby", "engines/billing/.rspec"),
    ("ruby", ".rspec_parallel"),
    ("ruby", "spec/spec_helper.rb"),
    ("ruby", "spec/rails_helper.rb"),
    ("ruby", "test/test_helper.rb"),
    ("ruby", ".simplecov"),
    ("ruby", "Gemfile"),
    ("ruby", "Gemfile.lock"),
    ("ruby", "gems/core/core.gemspec"),
    ("ruby", "Rakefile"),
    ("ruby", "lib/tasks/spec.rake"),
    ("ruby", ".bundle/config"),
    ("ruby", "vendor/bundle/ruby/3.1.0/gems/rspec-core-3.12.0/lib/rspec/core.rb"),
    ("php", "phpunit.xml"),
    ("php", "phpunit.xml.dist"),
    ("php", "src/Component/Yaml/phpunit.xml.dist"),
    ("php", "tests/bootstrap.php"),
    ("php", "bootstrap.php"),
    ("php", "composer.json"),
    ("php", "src/Bridge/composer.json"),
    ("php", "composer.lock"),
    ("php", "vendor/phpunit/phpunit/src/Framework/Assert.php"),
    ("php", "vendor/autoload.php"),
    ("php", "tools/phpunit.phar"),
    ("rust", "crates/x/.cargo/config"),
    ("maven", "mvnw.cmd"),
    ("maven", "core/src/main/resources/junit-platform.properties"),
    ("maven", "src/main/resources/META-INF/services/org.testng.ITestNGListener"),
    ("gradle", "gradlew.bat"),
    ("gradle", "build-logic/gradle/libs.versions.toml"),
    ("gradle", "platforms/buildSrc/src/main/groovy/Filter.groovy"),
    ("gradle", "src/main/resources/junit-platform.properties"),
    (
        "gradle",
        "src/main/resources/META-INF/services/org.junit.platform.launcher.LauncherSessionListener",
    ),
    (
        "gradle",
        "lib/src/main/resources/META-INF/services/org.junit.jupiter.api.extension.Extension",
    ),
    ("gradle", "src/main/resources/META-INF/services/org.testng.ITestNGListener"),
    ("gradle", "lib/src/main/resources/META-INF/services/org.testng.ITestNGListener"),
    ("javascript", "npm-shrinkwrap.json"),
    ("javascript", "pnpm-workspace.yaml"),
    ("javascript", ".yarnrc"),
    ("javascript", ".pnpmfile.cjs"),
    ("javascript", ".pnp.loader.mjs"),
    ("javascript", "packages/app/.yarn/plugins/plugin.cjs"),
    ("javascript", "jest-setup.ts"),
    ("javascript", "vitest.setup.ts"),
    ("javascript", "karma.conf.js"),
    ("javascript", ".babelrc.json"),
    ("javascript", "jsconfig.json"),
    ("javascript", "__snapshots__/cli.test.js.snap"),
    ("javascript", "packages/core/node_modules/.bin/vitest"),
    ("cmake", "CMakeUserPresets.json"),
    ("cmake", "third_party/googletest/googlemock/include/gmock/gmock-matchers.h"),
    ("cmake", "tests/catch.hpp"),
    ("cmake", "extern/catch_amalgamated.hpp"),
    ("ruby", ".rspec-local"),
    ("ruby", "gems.rb"),
    ("ruby", "gems.locked"),
    ("ruby", "rakefile"),
    ("ruby", "Rakefile.rb"),
    ("ruby", "engines/billing/.bundle/config"),
    ("ruby", "engines/billing/vendor/bundle/ruby/3.1.0/gems/minitest-5.16.3/lib/minitest.rb"),
    ("php", "phpunit.dist.xml"),
    ("php", "phpunit-bootstrap.php"),
    ("php", "src/Bridge/vendor/phpunit/phpunit/src/TextUI/Command.php"),
    ("php", ".phive/phars.xml"),
    ("php", "tools/.phive/phars.xml"),
    ("python", "conftest.py"),
    ("python", "pkg/tests/conftest.py"),
    ("python", "tox.ini"),
]

#: (ecosystem, path): library code, docs, and what an honest build or run writes into
#: the repository (a pattern is checked after the run too, so none may name these).
NOT_PROTECTED = [
    ("go", "calc.go"),
    ("go", "internal/cache/cache.go"),
    ("go", "cmd/tool/main.go"),
    ("go", "docs/testing.md"),
    ("rust", "src/lib.rs"),
    ("rust", "crates/ruff_linter/src/rules/mod.rs"),
    ("rust", "target/debug/deps/calc-1a2b3c4d"),
    ("rust", "target/debug/.fingerprint/calc-1a2b/lib-calc"),
    ("rust", "target/.rustc_info.json"),
    ("rust", "target/CACHEDIR.TAG"),
    ("maven", "src/main/java/com/example/Calc.java"),
    ("maven", "core/src/main/java/com/example/target/Target.java"),
    ("maven", "target/test-classes/junit-platform.properties"),
    ("maven", "target/classes/META-INF/services/org.junit.jupiter.api.extension.Extension"),
    ("maven", "core/target/surefire-reports/TEST-com.example.CalcTest.xml"),
    ("maven", "target/maven-status/maven-compiler-plugin/compile/default-compile/inputFiles.lst"),
    ("gradle", "src/main/kotlin/Calc.kt"),
    ("gradle", ".gradle"),
    ("gradle", ".gradle/8.5/fileHashes/fileHashes.lock"),
    ("gradle", "buildSrc/.gradle/8.5/checksums/checksums.lock"),
    ("gradle", "buildSrc/build/classes/kotlin/main/Conventions.class"),
    ("gradle", "build/resources/test/junit-platform.properties"),
    ("gradle", "build/test-results/test/TEST-CalcTest.xml"),
    ("gradle", "src/main/java/org/gradle/api/Project.java"),
    ("javascript", "src/utils/format.ts"),
    ("javascript", "packages/core/src/index.js"),
    ("javascript", "README.md"),
    ("javascript", "node_modules/.vite/vitest/results.json"),
    ("javascript", "packages/core/node_modules/.vite/vitest/results.json"),
    ("javascript", "node_modules/.cache/babel-loader/abc.json"),
    ("javascript", "node_modules"),
    ("javascript", ".nyc_output/out.json"),
    ("javascript", "tsconfig.tsbuildinfo"),
    ("cmake", "src/format.cc"),
    ("cmake", "include/fmt/format.h"),
    ("cmake", "build/CTestTestfile.cmake"),
    ("cmake", "build/test/CTestTestfile.cmake"),
    ("cmake", "build/cmake_install.cmake"),
    ("cmake", "build/CMakeFiles/3.25.1/CMakeCXXCompiler.cmake"),
    ("cmake", "build/test/format-test[1]_tests.cmake"),
    ("cmake", "build/test/gtest/CMakeFiles/gtest.dir/gmock-gtest-all.cc.o"),
    ("cmake", "build/test/gtest/CMakeFiles/gtest.dir/gmock-gtest-all.cc.o.d"),
    ("cmake", "build/CMakeFiles/Catch2.dir/catch_amalgamated.cpp.o"),
    ("cmake", "build/CTestCustom.cmake"),
    ("ruby", "lib/calc.rb"),
    ("ruby", "app/models/user.rb"),
    ("ruby", "vendor/assets/javascripts/app.js"),
    ("php", "src/Calc.php"),
    ("php", "src/Component/Yaml/Parser.php"),
    ("php", ".phpunit.result.cache"),
    ("php", ".phpunit.cache/test-results"),
    ("python", "pkg/core.py"),
]


@pytest.mark.parametrize(("ecosystem", "path"), PROTECTED, ids=[f"{e}:{p}" for e, p in PROTECTED])
def test_an_ecosystems_test_infrastructure_is_protected_wherever_it_sits(ecosystem, path):
    assert reason(ecosystem, path) is not None


@pytest.mark.parametrize(
    ("ecosystem", "path"), NOT_PROTECTED, ids=[f"{e}:{p}" for e, p in NOT_PROTECTED]
)
def test_library_code_and_what_a_build_writes_are_not(ecosystem, path):
    assert reason(ecosystem, path) is None


def test_every_pattern_is_exercised_by_a_protected_path():
    """No pattern is dead weight: each names at least one real path above."""
    for ecosystem in ECOSYSTEMS.values():
        if ecosystem.name == "python":
            continue  # today's list, held by tests/test_protection.py
        paths = [p for e, p in PROTECTED if e == ecosystem.name]
        for pattern in ecosystem.patterns:
            subjects = [p if "/" in pattern else p.rsplit("/", 1)[-1] for p in paths]
            assert any(fnmatch.fnmatchcase(s, pattern) for s in subjects), (
                ecosystem.name,
                pattern,
            )


def test_anywhere_is_the_root_and_below():
    assert anywhere("vendor/*") == ("vendor/*", "*/vendor/*")


def test_ecosystems_are_models_named_as_their_keys():
    for name, ecosystem in ECOSYSTEMS.items():
        assert isinstance(ecosystem, Ecosystem) and ecosystem.name == name
        assert ecosystem.why and "\n" not in ecosystem.why
        assert len(set(ecosystem.patterns)) == len(ecosystem.patterns), name
    assert {"go", "rust", "maven", "gradle", "javascript", "cmake", "ruby", "php", "python"} <= set(
        ECOSYSTEMS
    )


def test_the_polyglot_demo_protects_each_languages_infrastructure():
    dataset: DatasetConfig = compose(["+experiment=demo_polyglot"]).dataset
    own = {
        "polyglot/roman": "go.mod",
        "polyglot/intervals": "Cargo.toml",
        "polyglot/slug": "package.json",
        "polyglot/ringbuf": "CMakeLists.txt",
        "polyglot/wordwrap": ".rspec",
        "polyglot/money": "phpunit.xml",
    }
    samples = dataset.load()
    assert {sample.repo for sample in samples} == set(own)
    for sample in samples:
        protection = instance_test_spec(dataset, sample).eval_script.protection
        assert protection.reason(own[sample.repo]) == f"matches {own[sample.repo]}", sample.repo
