"""Real upstream projects, one per language, for the language tests (issue 39).

Each module of this package (``go.py``, ``rust.py``...) defines ``PROJECT``, a
:class:`Project`: where its sources come from (Debian's archive or the npm registry,
fetched at test time and cached), the bug injected at its base commit, and the patches.
``tests/test_languages.py`` builds one dataset of all of them, on one base: the union
of their ``debs``.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Project:
    #: As docs/languages/ spells it: go, rust, java, javascript, c, ruby, php.
    language: str
    #: The dataset's repo name (``owner/name``) and version.
    repo: str
    version: str
    #: Debian packages the spec needs in its base (toolchain, runner, libraries).
    debs: tuple[str, ...]
    #: The spec's other fields (``RepoSpec``: test_cmd, parser, install,
    #: test_directives, packages, npm).
    spec: dict[str, object]
    #: Makes the git repository at its base commit in ``repo_dir`` (empty), from sources
    #: fetched into ``cache_dir`` (kept between tests); returns the base commit's id.
    make_repo: Callable[[Path, Path], str]
    #: The injected bug's fix (source files only), the tests it turns from failing to
    #: passing, a plausible wrong fix, and an attack on the ecosystem's test
    #: infrastructure that makes the tests pass when run by hand, but not in evalrepro.
    gold_patch: str
    test_patch: str
    wrong_patch: str
    attack_patch: str
    #: What running the tests by hand finds, as the parser names the tests.
    fail_to_pass: tuple[str, ...]
    #: The shell command that runs the spec's tests by hand in a plain ``podman run`` of
    #: the instance image (in the repository's folder), printing the runner's output.
    by_hand: str
    #: A test of the test patch whose outcome is random: validate must find it flaky.
    flaky: str | None = None


def projects() -> list[Project]:
    """Every language's project; ``EVALREPRO_TEST_LANGUAGES=go,rust`` keeps some."""
    wanted = os.environ.get("EVALREPRO_TEST_LANGUAGES")
    found = []
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_"):
            continue
        project = importlib.import_module(f"{__name__}.{module.name}").PROJECT
        if not wanted or project.language in wanted.split(","):
            found.append(project)
    return sorted(found, key=lambda p: p.language)
