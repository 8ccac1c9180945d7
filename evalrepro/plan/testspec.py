"""TestSpec: an instance compiled against its repo's spec into what the harness runs.

A :class:`RepoSpec` is configuration, one per (repo, version), like SWE-bench's per-repo
version table: environment packages, install command, test command, parser. Compiling
a Sample with it gives a :class:`TestSpec`, whose digest covers every setting that can
change a result; trial ids include it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from evalrepro.config.ecosystems import ECOSYSTEMS, ecosystem_patterns
from evalrepro.config.protection import TestProtection
from evalrepro.config.spec import RepoSpec
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.grade.parsers import LogParser, get_parser
from evalrepro.records.testspec import ResolvedProtection, TestSpec
from evalrepro.rules.evalscript import compile_eval_script
from evalrepro.rules.patchcheck import patch_bytes
from evalrepro.rules.protection import test_folder
from evalrepro.sample import Sample

_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
#: Files a test patch may touch that are not tests to run (SWE-bench's NON_TEST_EXTS).
NON_TEST_SUFFIXES = (
    ".json",
    ".png",
    ".csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)


@dataclass(frozen=True)
class TouchedFiles:
    """What a git diff does to files: those that exist at the base, those it creates."""

    at_base: list[str]
    created: list[str]

    @property
    def all(self) -> list[str]:
        return [*self.at_base, *self.created]


def files_touched(patch: str) -> TouchedFiles:
    at_base: dict[str, None] = {}
    created: dict[str, None] = {}
    current: tuple[str, str] | None = None
    is_new = False

    def close() -> None:
        if current is None:
            return
        old, new = current
        if is_new:
            created[new] = None
        else:
            at_base[old] = None
            if new != old:  # a rename creates its new path
                created[new] = None

    for line in patch.splitlines():
        header = _DIFF_HEADER.match(line)
        if header:
            close()
            current, is_new = (header.group(1), header.group(2)), False
        elif current is not None and line.startswith("new file mode"):
            is_new = True
    close()
    return TouchedFiles(at_base=list(at_base), created=list(created))


def resolve_protection(
    protection: TestProtection, test_files: list[str], parser: LogParser | None = None
) -> ResolvedProtection:
    """The dataset's policy for one instance: its test folders found (``auto``) or taken,
    its patterns the dataset's own and then its ecosystems' (``auto``: ``parser``'s;
    without a parser, none), each once, in that order."""
    if protection.test_dirs == "auto":
        folders = sorted({f for f in map(test_folder, test_files) if f is not None})
    else:
        folders = sorted({folder.strip("/") for folder in protection.test_dirs})
    return ResolvedProtection(
        policy=protection.policy,
        suspect=protection.suspect,
        patterns=list(
            dict.fromkeys([*protection.patterns, *instance_ecosystem_patterns(protection, parser)])
        ),
        test_dirs=folders,
        canaries=protection.canaries,
        framework_sources=protection.framework_sources,
        site_hooks=protection.site_hooks,
        fresh_runs=protection.fresh_runs,
        second_runner=protection.second_runner,
        tests_read_git=protection.tests_read_git,
    )


def instance_ecosystem_patterns(protection: TestProtection, parser: LogParser | None) -> list[str]:
    """The patterns of the ecosystems an instance has: the dataset's list, or (``auto``)
    its parser's. A parser that names an ecosystem evalrepro does not know (another
    package's) is a user error, named."""
    if protection.ecosystems != "auto":
        return ecosystem_patterns(protection.ecosystems)
    if parser is None:
        return []
    unknown = [name for name in parser.ecosystems if name not in ECOSYSTEMS]
    if unknown:
        raise UserError(
            f"log parser {parser.name!r} names ecosystem {unknown[0]!r}, which is not one of "
            f"{', '.join(sorted(ECOSYSTEMS))}: name the dataset's ecosystems in "
            "protection.ecosystems"
        )
    return ecosystem_patterns(parser.ecosystems)


def compile_test_spec(
    sample: Sample,
    spec: RepoSpec,
    *,
    parser: str,
    fail_only: bool,
    protection: TestProtection,
    model_patch: bool = True,
) -> TestSpec:
    touched = files_touched(sample.test_patch)
    if spec.test_directives == "test_patch":
        directives = [path for path in touched.all if not path.endswith(NON_TEST_SUFFIXES)]
    else:
        directives = list(spec.test_directives)
    test_command = " ".join([spec.test_cmd, *(shlex.quote(d) for d in directives)])
    return TestSpec(
        instance_id=sample.instance_id,
        repo=sample.repo,
        version=sample.version,
        base_commit=sample.base_commit,
        python=spec.python,
        packages=spec.packages,
        debs=sorted(set(spec.debs)),
        npm=spec.npm,
        install=spec.install,
        test_cmd=spec.test_cmd,
        test_directives=directives,
        parser=parser,
        fail_only=fail_only,
        test_patch_digest=sha256_bytes(patch_bytes(sample.test_patch)),
        fail_to_pass=sample.fail_to_pass,
        pass_to_pass=sample.pass_to_pass,
        eval_script=compile_eval_script(
            base_commit=sample.base_commit,
            test_command=test_command,
            test_files=touched.all,
            test_patch_empty=not sample.test_patch.strip(),
            protection=resolve_protection(protection, touched.all, get_parser(parser)),
            model_patch=model_patch,
        ),
    )
