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
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrepro.config.sample import Sample
from evalrepro.digest import sha256_bytes
from evalrepro.records.testspec import TestSpec
from evalrepro.run.evalscript import compile_eval_script
from evalrepro.run.patchcheck import patch_bytes
from evalrepro.run.protection import TestProtection

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


#: The Python each Debian suite ships as ``python3``: a spec that names its Python gets
#: the base image of that suite (SWE-bench's specs pin 3.5 to 3.11; others are refused).
PYTHON_SUITES = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}


class RepoSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The Python version the env layer needs (``"3.9"``); None: the base suite's own.
    python: str | None = None
    #: pip requirement specifiers of the env layer, pinned (``pkg==1.2``).
    packages: list[str] = Field(default_factory=list)
    #: Run in the instance layer after checkout (e.g. ``pip install -e .``).
    install: str | None = None
    #: The test command; test directives (files) are appended to it.
    test_cmd: str = Field(min_length=1)
    #: ``test_patch``: the files the test patch touches; or an explicit list.
    test_directives: Literal["test_patch"] | list[str] = "test_patch"
    #: The log parser for its test output (`evalrepro parsers` lists them; its family must be the
    #: dataset's `test_ids`).
    parser: str

    @field_validator("python", mode="before")
    @classmethod
    def _known_python(cls, value: object) -> object:
        if value is None:
            return None
        version = str(value)
        if version not in PYTHON_SUITES:
            known = ", ".join(f"{v} ({suite})" for v, suite in PYTHON_SUITES.items())
            raise ValueError(
                f"python {version} is not the python3 of a Debian suite evalrepro builds "
                f"from; known: {known}"
            )
        return version

    def suite(self, default: str) -> str:
        """The Debian suite of this spec's base image."""
        return PYTHON_SUITES[self.python] if self.python else default


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
            protection=protection.resolve(touched.all),
            model_patch=model_patch,
        ),
    )
