"""protection: which files count as test infrastructure, and that the policy is part of a spec.

The module guarantees that:

* a test file's folder is its nearest ancestor named like a test folder (``tests``,
  ``test``, ``testing``, ``t``, ``spec``, ``__tests__``); ``auto`` collects those of the
  test patch's files, sorted and unique, and an explicit ``test_dirs`` list replaces them;
* everything under a test folder is protected, and so is any file matching a pattern:
  by its name when the pattern has no ``/``, by its whole path when it has one; library
  files are not;
* for setup.cfg, pyproject.toml and package.json only a change to their test sections
  counts, and content that cannot be parsed counts as changed;
* the policy, the suspect policy, the patterns and the folders are part of every
  TestSpec's digest.
"""

from pathlib import Path

import pytest

from evalrepro.config.protection import DEFAULT_PATTERNS, TestProtection
from evalrepro.plan import testspec
from evalrepro.plan.testspec import resolve_protection
from evalrepro.records.testspec import TestSpec
from evalrepro.rules.protection import test_folder as folder_of  # not collected as a test
from evalrepro.sample import load_samples
from evalrepro.sandbox.infra import SECTION_FILES, sections_changed

INSTANCES = Path(__file__).resolve().parents[1] / "evalrepro" / "demo" / "instances.jsonl"

# --- test folders -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "folder"),
    [
        ("tests/test_x.py", "tests"),
        ("test/test_x.py", "test"),
        ("sympy/core/tests/test_x.py", "sympy/core/tests"),
        ("tests/admin_views/tests.py", "tests"),
        ("numpy/testing/tests/test_utils.py", "numpy/testing/tests"),
        ("lib/t/basic.t", "lib/t"),
        ("spec/models/user_spec.rb", "spec"),
        ("src/__tests__/App.test.js", "src/__tests__"),
        ("pkg/testing/helpers.py", "pkg/testing"),
        ("tests/unit/deep/er/test_x.py", "tests"),
    ],
    ids=[
        "tests",
        "test",
        "nested-package",
        "file-named-tests",
        "tests-inside-testing",
        "perl-t",
        "spec",
        "jest",
        "testing",
        "deep-below",
    ],
)
def test_a_test_files_folder_is_its_nearest_test_named_ancestor(path, folder):
    assert folder_of(path) == folder


@pytest.mark.parametrize(
    "path",
    ["test_x.py", "tests", "pkg/test_x.py", "Tests/test_x.py", "my_tests/test_x.py"],
    ids=["root-file", "bare-name", "library-folder", "capitalised", "suffix-match"],
)
def test_a_file_with_no_test_named_ancestor_has_no_test_folder(path):
    assert folder_of(path) is None


def test_auto_collects_the_test_folders_of_the_test_files_sorted_and_unique():
    resolved = resolve_protection(
        TestProtection(),
        [
            "sympy/core/tests/test_b.py",
            "tests/test_a.py",
            "sympy/core/tests/test_a.py",
            "setup.py",
            "tests/admin_views/tests.py",
        ],
    )
    assert resolved.test_dirs == ["sympy/core/tests", "tests"]


def test_auto_with_no_test_files_protects_no_folder():
    assert resolve_protection(TestProtection(), []).test_dirs == []


def test_an_explicit_test_dirs_list_replaces_the_automatic_one():
    protection = TestProtection(test_dirs=["/tests/", "src/checks/", "tests"])
    assert resolve_protection(protection, ["sympy/core/tests/test_x.py"]).test_dirs == [
        "src/checks",
        "tests",
    ]


def test_resolving_keeps_the_policies_and_patterns():
    protection = TestProtection(policy="invalid", suspect="record", patterns=["*.ini"])
    resolved = resolve_protection(protection, ["tests/test_x.py"])
    assert (resolved.policy, resolved.suspect, resolved.patterns) == (
        "invalid",
        "record",
        ["*.ini"],
    )


def test_the_defaults_restore_test_infrastructure_and_invalidate_suspects():
    protection = TestProtection()
    assert (protection.policy, protection.suspect, protection.test_dirs) == (
        "restore",
        "invalid",
        "auto",
    )
    assert protection.patterns == list(DEFAULT_PATTERNS)


# --- which files are protected ------------------------------------------------------------

RESOLVED = resolve_protection(TestProtection(), ["tests/test_views.py", "pkg/tests/test_core.py"])


@pytest.mark.parametrize(
    ("path", "folder"),
    [
        ("tests/test_views.py", "tests"),
        ("tests/__init__.py", "tests"),
        ("tests/helpers.py", "tests"),
        ("tests/fixtures/data.json", "tests"),
        ("tests/new_test_added_by_the_patch.py", "tests"),
        ("pkg/tests/test_core.py", "pkg/tests"),
        ("pkg/tests/__init__.py", "pkg/tests"),
    ],
)
def test_every_file_in_a_test_folder_is_protected(path, folder):
    assert RESOLVED.reason(path) == f"in test folder {folder}/"


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("conftest.py", "conftest.py"),
        ("src/pkg/conftest.py", "conftest.py"),
        ("a/b/c/d/conftest.py", "conftest.py"),
        ("pytest.ini", "pytest.ini"),
        ("tox.ini", "tox.ini"),
        ("noxfile.py", "noxfile.py"),
        ("src/sitecustomize.py", "sitecustomize.py"),
        ("usercustomize.py", "usercustomize.py"),
        ("evil.pth", "*.pth"),
        ("lib/python3.11/site-packages/zz.pth", "*.pth"),
        ("runtests.py", "runtests.py"),
        ("django/runtests.py", "runtests.py"),
        ("jest.config.js", "jest.config.*"),
        ("web/.mocharc.yml", ".mocharc*"),
    ],
)
def test_a_default_pattern_matches_the_file_name_at_any_depth(path, pattern):
    assert RESOLVED.reason(path) == f"matches {pattern}"


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("ci/run.sh", True),
        ("ci/sub/run.sh", True),
        ("run.sh", False),
        ("other/ci/run.sh", False),
    ],
    ids=["in-folder", "below-folder", "name-only", "elsewhere"],
)
def test_a_pattern_with_a_slash_is_matched_against_the_whole_path(path, protected):
    resolved = resolve_protection(TestProtection(patterns=["ci/*.sh"]), [])
    assert (resolved.reason(path) is not None) == protected


@pytest.mark.parametrize(
    "path",
    [
        "django/test/utils.py",
        "django/test/runner.py",
        "pkg/testing.py",
        "pkg/conftest_helpers.py",
        "docs/conftest.py.txt",
        "testsuite/test_x.py",
        "setup.py",
        "README.md",
    ],
)
def test_library_files_are_not_protected(path):
    resolved = resolve_protection(TestProtection(test_dirs=["tests"]), ["django/test/test_x.py"])
    assert resolved.reason(path) is None


def test_a_folder_is_matched_by_whole_components_only():
    resolved = resolve_protection(TestProtection(test_dirs=["tests"]), [])
    assert resolved.reason("tests_extra/x.py") is None
    assert resolved.reason("tests") is not None


@pytest.mark.parametrize("name", sorted(SECTION_FILES))
def test_section_files_are_not_protected_by_name(name):
    # Only a change to their test sections counts: see sections_changed.
    assert RESOLVED.reason(name) is None


def test_no_patterns_means_only_the_test_folders_are_protected():
    resolved = resolve_protection(TestProtection(patterns=[]), ["tests/test_x.py"])
    assert resolved.reason("conftest.py") is None
    assert resolved.reason("tests/conftest.py") == "in test folder tests/"


# --- test sections of setup.cfg, pyproject.toml and package.json --------------------------

SETUP_CFG = b"[metadata]\nname = pkg\nversion = 1.0\n\n[tool:pytest]\ntestpaths = tests\n"
PYPROJECT = (
    b'[project]\nname = "pkg"\nversion = "1.0"\n\n'
    b'[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.ruff]\nline-length = 100\n'
)
PACKAGE_JSON = b'{"name": "pkg", "version": "1.0.0", "scripts": {"test": "jest"}, "jest": {}}'


@pytest.mark.parametrize(
    ("name", "old", "new", "changed"),
    [
        ("setup.cfg", SETUP_CFG, SETUP_CFG.replace(b"1.0", b"1.1"), []),
        (
            "setup.cfg",
            SETUP_CFG,
            SETUP_CFG + b"addopts = -p no:randomly\n",
            ["tool:pytest"],
        ),
        ("setup.cfg", SETUP_CFG, SETUP_CFG + b"\n[pytest]\naddopts = -x\n", ["pytest"]),
        ("setup.cfg", SETUP_CFG, SETUP_CFG + b"\n[nosetests]\nverbosity = 3\n", ["nosetests"]),
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace(b'"1.0"', b'"1.1"'), []),
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace(b"100", b"88"), []),
        (
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT.replace(b'["tests"]', b'["tests", "extra"]'),
            ["tool.pytest"],
        ),
        (
            "pyproject.toml",
            PYPROJECT,
            PYPROJECT + b"\n[tool.nose]\nverbosity = 3\n",
            ["tool.nose"],
        ),
        ("pyproject.toml", None, PYPROJECT, ["tool.pytest"]),
        ("pyproject.toml", None, b'[project]\nname = "pkg"\n', []),
        ("package.json", PACKAGE_JSON, PACKAGE_JSON.replace(b"1.0.0", b"1.0.1"), []),
        (
            "package.json",
            PACKAGE_JSON,
            PACKAGE_JSON.replace(b'"jest"}', b'"jest --passWithNoTests"}'),
            ["scripts"],
        ),
        (
            "package.json",
            PACKAGE_JSON,
            PACKAGE_JSON.replace(b'"jest": {}', b'"jest": {"bail": true}'),
            ["jest"],
        ),
    ],
    ids=[
        "setup.cfg-metadata",
        "setup.cfg-addopts",
        "setup.cfg-new-pytest-section",
        "setup.cfg-new-nosetests-section",
        "pyproject-version",
        "pyproject-other-tool",
        "pyproject-pytest-options",
        "pyproject-new-nose-table",
        "pyproject-created-with-pytest",
        "pyproject-created-without-tests",
        "package.json-version",
        "package.json-scripts-test",
        "package.json-jest",
    ],
)
def test_only_a_change_to_a_test_section_counts(name, old, new, changed):
    assert sections_changed(name, old, new) == changed


def test_identical_content_has_no_changed_section():
    for name, content in [
        ("setup.cfg", SETUP_CFG),
        ("pyproject.toml", PYPROJECT),
        ("package.json", PACKAGE_JSON),
    ]:
        assert sections_changed(name, content, content) == []


def test_a_deleted_file_with_test_sections_is_a_change():
    assert sections_changed("setup.cfg", SETUP_CFG, None) == ["tool:pytest"]


@pytest.mark.parametrize(
    ("name", "unparseable"),
    [
        ("setup.cfg", b"addopts = -p evil\n"),
        ("pyproject.toml", b"[tool.pytest\naddopts = "),
        ("package.json", b'{"scripts": '),
        ("package.json", b'["not", "an", "object"]'),
    ],
    ids=["cfg-without-section", "toml-syntax", "json-syntax", "json-not-an-object"],
)
def test_content_that_cannot_be_parsed_counts_as_every_section_changed(name, unparseable):
    valid = {"setup.cfg": SETUP_CFG, "pyproject.toml": PYPROJECT, "package.json": PACKAGE_JSON}
    every = list(SECTION_FILES[name])
    assert sections_changed(name, valid[name], unparseable) == every
    assert sections_changed(name, unparseable, valid[name]) == every
    assert sections_changed(name, unparseable, unparseable) == every


def test_undecodable_bytes_do_not_raise():
    changed = sections_changed("pyproject.toml", PYPROJECT, b"\xff\xfe\x00")
    assert changed == list(SECTION_FILES["pyproject.toml"])


# --- the policy is part of a TestSpec -----------------------------------------------------


def compile_spec(protection: TestProtection) -> TestSpec:
    sample = load_samples(INSTANCES)[0]
    spec = testspec.RepoSpec(test_cmd="pytest -rA", parser="pytest_full")
    return testspec.compile_test_spec(
        sample, spec, parser="pytest_full", fail_only=False, protection=protection
    )


@pytest.mark.parametrize(
    "protection",
    [
        TestProtection(policy="record"),
        TestProtection(policy="invalid"),
        TestProtection(suspect="record"),
        TestProtection(patterns=[*DEFAULT_PATTERNS, "Makefile"]),
        TestProtection(test_dirs=["tests", "calc/checks"]),
    ],
    ids=["policy-record", "policy-invalid", "suspect-record", "extra-pattern", "test-dirs"],
)
def test_a_different_protection_gives_a_different_test_spec_digest(protection):
    assert compile_spec(protection).digest() != compile_spec(TestProtection()).digest()


def test_the_same_protection_gives_the_same_test_spec_digest():
    assert compile_spec(TestProtection()).digest() == compile_spec(TestProtection()).digest()


def test_auto_and_the_equivalent_explicit_folders_give_the_same_digest():
    # The digest covers the resolved folders, not how they were declared.
    auto = compile_spec(TestProtection())
    assert auto.eval_script.protection.test_dirs == ["tests"]
    assert compile_spec(TestProtection(test_dirs=["tests"])).digest() == auto.digest()
