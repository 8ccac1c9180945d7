"""A spec's own Debian packages (``debs``): its toolchain, in its base layer, pinned.

A small project whose gold patch runs ``jq`` (by subprocess, from the code under test) is
evaluated under three specs of one repo: one that asks for ``jq``, one that does not, one
that names a package the suite lacks. In real rootless podman: the first resolves, the
second does not (no ``jq`` on the base), the third's trials run in no image, and ``run``
prints why (apt's own reason, naming the package); ``lock`` refuses in one line. None of
the specs has Python packages: their instance layers sit on the base (no env layer).
The lockfile pins the toolchain's every .deb, ``verify`` passes the run, and the base of
the spec without ``debs`` asks exactly what the committed demo lockfile's base asked.
The run's bundle ``--with-images`` reproduces from a fresh cache with the toolchain
base's tag gone from the store (as in root's store, or another user's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalrepro.build.containerfile import SETUP_HOOKS
from evalrepro.build.inputs import _file_pins
from evalrepro.build.nix import DEBS_REFUSED, NixBuilder
from evalrepro.config.experiment import compose
from evalrepro.config.spec import RepoSpec, base_of
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.plan.lockfile import lockfile_problems, read_lockfile
from evalrepro.records.base import parse_record
from evalrepro.records.image import BuildFailure
from evalrepro.records.lockfile import LockedImage, Lockfile
from evalrepro.records.testspec import TestSpec
from evalrepro.run.rundir import RunDirectory
from evalrepro.sources.commits import Signature, commit_directory, init_repository
from tests.podman_support import cache_dir, needs_podman
from tests.realdata import Edit, diff

ROOT = Path(__file__).resolve().parents[1]
AUTHOR = Signature("dataset author", "author@example.invalid", 1_700_000_000)
MISSING = "evalrepro-no-such-package"
BASE = {
    "tool/__init__.py": "def keys(text):\n    raise NotImplementedError\n",
    "tests/__init__.py": "",
}
#: The fix asks jq for the sorted keys of a JSON object: it works where jq is installed.
GOLD = Edit(
    "tool/__init__.py",
    "def keys(text):\n    raise NotImplementedError\n",
    "import subprocess\n\n\ndef keys(text):\n"
    '    done = subprocess.run(["jq", "-c", "keys"], input=text, capture_output=True,\n'
    "                          text=True, check=True)\n"
    "    return done.stdout.strip()\n",
)
TEST = Edit(
    "tests/test_tool.py",
    None,
    "import unittest\n\nfrom tool import keys\n\n\nclass ToolTest(unittest.TestCase):\n"
    "    def test_keys(self):\n"
    '        self.assertEqual(keys(\'{"b": 1, "a": 2}\'), \'["a","b"]\')\n',
)
#: instance id -> its spec's version
INSTANCES = {"jqdemo__with-jq": "jq", "jqdemo__without-jq": "plain", "jqdemo__missing": "missing"}


# --- the spec and its record, without podman ----------------------------------------------


def test_a_spec_s_base_is_its_suite_and_its_sorted_set_of_debs() -> None:
    spec = RepoSpec(test_cmd="true", parser="unittest", debs=["jq", "cmake", "jq"])
    assert base_of(spec, "bookworm") == ("bookworm", ("cmake", "jq"))
    older = RepoSpec(test_cmd="true", parser="unittest", python="3.9", debs=["jq"])
    assert base_of(older, "bookworm") == ("bullseye", ("jq",))
    plain = RepoSpec(test_cmd="true", parser="unittest")
    assert plain.debs == [] and base_of(plain, "trixie") == ("trixie", ())


def test_a_spec_naming_no_debian_package_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="not a Debian package name: 'Java 17'"):
        RepoSpec(test_cmd="true", parser="unittest", debs=["Java 17"])


def _testspec_v2() -> dict:
    return {
        "record": "TestSpec",
        "schema_version": 2,
        "instance_id": "demo__ledger-1",
        "repo": "demo/ledger",
        "version": "1.0",
        "base_commit": "0" * 40,
        "packages": [],
        "install": None,
        "test_cmd": "python3 -m unittest -v",
        "test_directives": ["tests/test_x.py"],
        "parser": "unittest",
        "fail_only": False,
        "test_patch_digest": "sha256:" + "1" * 64,
        "fail_to_pass": ["tests.test_x.T.test_a"],
        "pass_to_pass": [],
        "eval_script": {
            "base_commit": "0" * 40,
            "test_command": "python3 -m unittest -v tests/test_x.py",
            "test_files": ["tests/test_x.py"],
            "test_patch_empty": False,
            "patch_commands": [],
            "protection": {
                "policy": "restore",
                "suspect": "invalid",
                "patterns": [],
                "test_dirs": ["tests"],
            },
            "sandbox": "sha256:" + "2" * 64,
        },
    }


def test_a_version_2_test_spec_reads_as_one_without_debs_and_the_digest_covers_them() -> None:
    spec = parse_record(_testspec_v2(), TestSpec, where="test")
    assert spec.schema_version == 3 and spec.debs == []
    with_jq = spec.model_copy(update={"debs": ["jq"]})
    assert with_jq.digest() != spec.digest()
    assert parse_record({**_testspec_v2(), "schema_version": 3}, TestSpec, where="t").debs == []


def test_the_nix_builder_refuses_a_spec_with_debs_as_its_trials_build_failure(tmp_path) -> None:
    config = compose(["+experiment=demo", "environment.builder=nix"])
    dataset = config.dataset
    specs = [instance_test_spec(dataset, sample) for sample in dataset.load()][:2]
    specs[0] = specs[0].model_copy(update={"debs": ["jq"]})
    # Nothing is built: the store is asked only which images it holds (none).
    store = SimpleNamespace(ids=lambda: {})
    runtime = SimpleNamespace(build_store=lambda: store)
    builder = NixBuilder(config.environment, runtime, tmp_path)  # type: ignore[arg-type]
    refused = builder.prepare(specs[:1], {specs[0].instance_id: None})  # type: ignore[dict-item]
    failure = refused[specs[0].instance_id]
    assert isinstance(failure, BuildFailure) and failure.layer == "base"
    assert failure.reason == f"instance {specs[0].instance_id}: {DEBS_REFUSED} (jq)"


# --- in podman ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository and a config tree: one repo, three specs (versions) of it."""
    root = tmp_path_factory.mktemp("jqdemo")
    git_dir = init_repository(root / "repo.git", bare=True)
    tree = root / "tree"
    for path, text in BASE.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    base = commit_directory(tree, git_dir, signature=AUTHOR, message="tool", branch="main")
    instances = [
        {
            "instance_id": instance_id,
            "repo": "example/tool",
            "base_commit": base,
            "patch": diff(tree, (GOLD,)),
            "test_patch": diff(tree, (TEST,)),
            "version": version,
            "FAIL_TO_PASS": ["tests.test_tool.ToolTest.test_keys"],
            "PASS_TO_PASS": [],
        }
        for instance_id, version in INSTANCES.items()
    ]
    conf = root / "conf"
    for folder in ("dataset", "experiment", "data"):
        (conf / folder).mkdir(parents=True)
    (conf / "data" / "tool.jsonl").write_text("".join(json.dumps(i) + "\n" for i in instances))
    spec = {"test_cmd": "python3 -m unittest -v", "parser": "unittest"}
    dataset = {
        "name": "jqdemo",
        "instances": "data/tool.jsonl",
        "test_ids": "native",
        "repos": {"example/tool": {"kind": "local", "path": "../repo.git"}},
        "specs": {
            "example/tool": {
                "jq": spec | {"debs": ["jq"]},
                "plain": spec,
                "missing": spec | {"debs": [MISSING]},
            }
        },
    }
    (conf / "dataset" / "jqdemo.yaml").write_text(json.dumps(dataset) + "\n")
    (conf / "experiment" / "jqdemo.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /dataset: jqdemo\n"
        "  - override /target: gold\nname: jqdemo\nenvironment:\n  timeout: 60\n"
    )
    return root


def _evalrepro(
    project: Path, *args: str, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALREPRO_CACHE": str(cache or cache_dir()), "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


def _chain(lock: Lockfile, instance_id: str) -> list[LockedImage]:
    by_key = {image.key: image for image in lock.environment.images}
    trial = next(t for t in lock.trials if t.key.instance_id == instance_id)
    chain, key = [], trial.image_key
    while key:
        chain.insert(0, by_key[key])
        key = by_key[key].parent_key or ""
    return chain


def _requests(image: LockedImage) -> list[tuple[str, str, str]]:
    return [(i.kind, i.name, i.digest) for i in image.inputs if i.kind not in ("deb", "recipe")]


def _in_podman(test):
    for mark in needs_podman:
        test = mark(test)
    return test


@_in_podman
def test_a_spec_s_debs_are_its_toolchain_pinned_and_a_missing_one_fails_its_trials_alone(
    project: Path,
) -> None:
    run_dir = project / "run"
    conf = ("--config-dir", str(project / "conf"))
    done = _evalrepro(project, "run", "+experiment=jqdemo", *conf, "--run-dir", str(run_dir))
    output = done.stdout + done.stderr
    # One trial in three without an image: the default gate's invalid rate fails (3).
    assert done.returncode == 3, output
    # run says which layer failed and why: apt's reason, naming the package.
    failed = [line for line in output.splitlines() if "base layer failed" in line]
    assert len(failed) == 1, output
    assert MISSING in failed[0] and "Unable to locate package" in failed[0], failed[0]

    directory = RunDirectory(run_dir)
    lock = read_lockfile(directory.lockfile_path)
    results = {r.instance_id: r for r in directory.completed(lock).values()}
    assert results["jqdemo__with-jq"].score.outcome == "resolved"
    assert results["jqdemo__without-jq"].score.outcome == "unresolved"
    missing = results["jqdemo__missing"].score
    assert missing.outcome == "invalid", missing
    (failure,) = lock.environment.build_failures
    assert failure.layer == "base" and MISSING in failure.reason

    # The toolchain's base pins jq and its libraries, each by name, version and sha256;
    # no env layer under a spec without Python packages.
    with_jq, plain = _chain(lock, "jqdemo__with-jq"), _chain(lock, "jqdemo__without-jq")
    assert [i.layer for i in with_jq] == ["base", "history", "instance"]
    assert [i.layer for i in plain] == ["base", "history", "instance"]
    assert with_jq[0].key != plain[0].key and with_jq[1:] != plain[1:]
    debs = {i.name: i for i in with_jq[0].inputs if i.kind == "deb"}
    plain_debs = {i.name: i for i in plain[0].inputs if i.kind == "deb"}
    assert {"jq", "libjq1"} <= debs.keys() and plain_debs.keys() < debs.keys()
    assert all(d.version and d.digest.startswith("sha256:") for d in debs.values())
    settings = {i.name: i.version for i in with_jq[0].inputs if i.kind == "setting"}
    assert settings["debs"] == '["jq"]'
    assert settings["setup_hooks"] == json.dumps(list(SETUP_HOOKS))
    # A base without debs asks what the demo's committed base asked: the same layer.
    demo = read_lockfile(ROOT / "lockfiles" / "demo.lock.json")
    (demo_base,) = [image for image in demo.environment.images if image.layer == "base"]
    assert _requests(plain[0]) == _requests(demo_base)
    if {i.name: i.digest for i in plain[0].inputs} == {i.name: i.digest for i in demo_base.inputs}:
        assert plain[0].key == demo_base.key and plain[0].image_digest == demo_base.image_digest

    # A bundle carries the toolchain's .debs like the base's own.
    carried = {(pin.kind, pin.name) for _, pin in _file_pins(lock)}
    assert ("deb", "jq") in carried and ("deb", "libjq1") in carried
    # An edited pin of the toolchain is an edit of the lockfile.
    edited = json.loads(directory.lockfile_path.read_text())
    for image in edited["environment"]["images"]:
        for item in image["inputs"]:
            if item["kind"] == "deb" and item["name"] == "jq":
                item["digest"] = "sha256:" + "0" * 64
    problems = lockfile_problems(Lockfile.model_validate(edited))
    assert problems and "inputs_digest" in problems[0], problems

    checked = _evalrepro(project, "verify", str(run_dir))
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # lock refuses, in one line naming the package and apt's reason.
    locked = _evalrepro(project, "lock", "+experiment=jqdemo", *conf, "--output", "l.json")
    assert locked.returncode == 2, locked.stdout + locked.stderr
    (line,) = locked.stderr.strip().splitlines()
    assert "cannot lock: the base layer failed" in line and MISSING in line, line
    assert "Unable to locate package" in line, line

    # A bundle with its images reproduces where the run's tags are not (another user's
    # store, root's): each image is loaded under a name of its Id, the builder finds each
    # layer by its locked Id, and the base's package list, which a fresh cache lacks, is
    # read from that Id, not from the tag the author's store had.
    bundle = project / "jqdemo.bundle.tar.gz"
    made = _evalrepro(project, "bundle", str(run_dir), "-o", str(bundle), "--with-images")
    assert made.returncode == 0, made.stdout + made.stderr
    base = with_jq[0]
    subprocess.run(["podman", "untag", base.image_digest, base.tag], check=True)
    try:
        again = _evalrepro(
            project,
            "reproduce",
            str(bundle),
            "--run-dir",
            str(project / "again"),
            cache=project / "fresh-cache",
        )
    finally:
        subprocess.run(["podman", "tag", base.image_digest, base.tag], check=True)
    output = again.stdout + again.stderr
    assert again.returncode == 0, output
    assert "3/3 trials agree" in output, output
