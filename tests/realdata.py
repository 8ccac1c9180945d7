"""A dataset built on real PyPI projects, the way a user builds one, from config alone.

Two projects' sdists (six 1.16.0, toolz 0.12.1), fetched with pip and pinned by sha256,
are the starting trees. Bugs are injected as commits of a dataset author:

* six: two forks, each a git repo whose first commit is the sdist's own commit (the one
  ``evalrepro.sources.repos.sdist_commit`` defines) and whose second injects a bug; the instances'
  base commits live in different histories, so the repo has a list of sources;
* six, once more: a feature asked of the pristine sdist (its base commit is the sdist's
  commit; the source is the archive itself, for that one instance);
* toolz: one git repo with two bug branches, one with a new test (a non-empty test patch)
  and one caught by the existing tests (an empty test patch).

FAIL_TO_PASS / PASS_TO_PASS are what pytest, run by hand on the host (with a plugin that
records each node id's outcome), says before and after the gold patch. A second target
("model") holds patches whose outcome the same by-hand run decides. The config tree
(``conf/``) refers to the data by paths relative to itself.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from evalrepro.sources.commits import Signature, commit_directory, init_repository
from evalrepro.sources.sdist import SDIST_MESSAGE, SDIST_SIGNATURE, sdist_commit
from tests.demo_harness import _PYTEST_TRUTH_PLUGIN

SDISTS = {
    "six": ("six==1.16.0", "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926"),
    "toolz": ("toolz==0.12.1", "ecca342664893f177a13dac0e6b41cbd8ac25a358e5f215316d43e2100224f4d"),
}
AUTHOR = Signature("dataset author", "author@example.invalid", 1_700_000_000)
TEST_CMD = "python -m pytest -rA -v -p no:cacheprovider"
#: The env layer: pytest with its whole dependency closure pinned (as the demo pins it).
PACKAGES = ["pytest==8.3.4", "iniconfig==2.3.1", "packaging==26.4", "pluggy==1.7.0"]
PASSING = {"PASSED", "XFAIL"}


@dataclass(frozen=True)
class Edit:
    path: str
    old: str | None  # None: the file is new
    new: str

    def undo(self) -> Edit:
        assert self.old is not None
        return Edit(self.path, self.new, self.old)


@dataclass(frozen=True)
class Case:
    instance_id: str
    project: str
    #: Where its base commit lives: "fork-a", "fork-b", "sdist" or "toolz".
    source: str
    bug: tuple[Edit, ...]
    test_patch: tuple[Edit, ...]
    #: The gold patch; None: the bug's undoing.
    gold: tuple[Edit, ...] | None
    #: The model's patch (() = empty); its outcome is what a by-hand run gives it.
    model: tuple[Edit, ...] = ()
    note: str = ""

    def gold_patch(self) -> tuple[Edit, ...]:
        return self.gold if self.gold is not None else tuple(e.undo() for e in self.bug)


_INT2BYTE = Edit(
    "six.py", 'int2byte = struct.Struct(">B").pack', 'int2byte = struct.Struct(">H").pack'
)
_BYTE2INT = Edit(
    "six.py", "byte2int = operator.itemgetter(0)", "byte2int = operator.itemgetter(-1)"
)
_VERSION = '__version__ = "1.16.0"'
_FREQUENCIES = Edit(
    "toolz/itertoolz.py",
    "        d[item] += 1\n    return dict(d)",
    "        d[item] = 1\n    return dict(d)",
)
_SECOND = Edit(
    "toolz/itertoolz.py",
    "    seq = iter(seq)\n    next(seq)\n    return next(seq)",
    "    seq = iter(seq)\n    return next(seq)",
)

CASES = (
    Case(
        "six__bug-int2byte", "six", "fork-a",
        bug=(_INT2BYTE,), test_patch=(), gold=None,
        model=(Edit("six.py", _INT2BYTE.new, "int2byte = lambda i: bytes((i,))"),),
        note="empty test patch; the model's fix differs from gold and is right",
    ),
    Case(
        "six__bug-byte2int", "six", "fork-b",
        bug=(_BYTE2INT,), test_patch=(), gold=None,
        model=(Edit("six.py", _BYTE2INT.new, "byte2int = operator.itemgetter(1)"),),
        note="empty test patch, another history; the model's fix is wrong",
    ),
    Case(
        "six__feature-version-info", "six", "sdist",
        bug=(),
        test_patch=(
            Edit(
                "test_six.py",
                "def test_add_metaclass():",
                "def test_version_info():\n    assert six.VERSION_INFO == (1, 16, 0)\n\n\n"
                "def test_add_metaclass():",
            ),
        ),
        gold=(Edit("six.py", _VERSION, _VERSION + "\nVERSION_INFO = (1, 16, 0)"),),
        model=(
            Edit("six.py", _VERSION, _VERSION + "\nVERSION_INFO = (1, 16, int('0'))"),
        ),
        note="a feature asked of the sdist itself; the model's is right",
    ),
    Case(
        "toolz__bug-frequencies", "toolz", "toolz",
        bug=(_FREQUENCIES,),
        test_patch=(
            Edit(
                "toolz/tests/test_itertoolz.py",
                "def test_reduceby():",
                "def test_frequencies_counts_repeats():\n"
                "    assert frequencies('aab') == {'a': 2, 'b': 1}\n\n\n"
                "def test_reduceby():",
            ),
        ),
        gold=None,
        model=(),
        note="a new test; the model sent no patch",
    ),
    Case(
        "toolz__bug-second", "toolz", "toolz",
        bug=(_SECOND,), test_patch=(), gold=None,
        model=(
            Edit("toolz/itertoolz.py", _SECOND.new, "    return list(iter(seq))[1]"),
            Edit("toolz/tests/conftest.py", None, "collect_ignore = ['test_itertoolz.py']\n"),
        ),
        note="empty test patch; a right fix plus a conftest.py that hides the tests (restored)",
    ),
)  # fmt: skip


@dataclass
class RealData:
    root: Path
    conf: Path
    instances: list[dict]
    #: instance id -> the outcome of the model's patch by hand (resolved / unresolved).
    model_outcomes: dict[str, str] = field(default_factory=dict)


def fetch_sdist(project: str, dest: Path) -> Path:
    requirement, sha256 = SDISTS[project]
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
         ":all:", requirement, "-d", str(dest)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (archive,) = dest.glob(f"{project}-*.tar.gz")
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == sha256, f"{archive}: not pinned"
    return archive


def _unpack(archive: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(dest)], check=True)
    (top,) = list(dest.iterdir())
    return top


def _apply(tree: Path, edits: tuple[Edit, ...]) -> None:
    for edit in edits:
        path = tree / edit.path
        if edit.old is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(edit.new)
            continue
        text = path.read_text()
        assert text.count(edit.old) == 1, f"{edit.path}: {edit.old!r} not found once"
        path.write_text(text.replace(edit.old, edit.new))


def diff(before: Path, edits: tuple[Edit, ...]) -> str:
    """A git-style unified diff of ``edits`` made to the tree at ``before``."""
    chunks = []
    for edit in edits:
        new_file = edit.old is None
        old_lines = [] if new_file else (before / edit.path).read_text().splitlines(keepends=True)
        text = "".join(old_lines)
        new_text = edit.new if new_file else text.replace(edit.old, edit.new)
        header = f"diff --git a/{edit.path} b/{edit.path}\n"
        header += "new file mode 100644\n" if new_file else ""
        body = difflib.unified_diff(
            old_lines,
            new_text.splitlines(keepends=True),
            "/dev/null" if new_file else f"a/{edit.path}",
            f"b/{edit.path}",
        )
        chunks.append(header + "".join(body))
    return "".join(chunks)


def _commit(git_dir: Path, tree: Path, *, parent: str | None, message: str, branch: str) -> str:
    signature = SDIST_SIGNATURE if parent is None else AUTHOR
    return commit_directory(tree, git_dir, signature=signature, message=message, parent=parent,
                            branch=branch)  # fmt: skip


def run_by_hand(tree: Path, files: list[str]) -> dict[str, str]:
    """pytest on the host, as the spec runs it; {node id: outcome} as pytest recorded it."""
    plugin_dir = tree.parent / f"{tree.name}.plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "realdata_truth.py").write_text(_PYTEST_TRUTH_PLUGIN)
    truth = tree.parent / f"{tree.name}.truth.json"
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tree.parent),
        "PYTHONPATH": str(plugin_dir),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "DEMO_TRUTH": str(truth),
    }
    # The spec's own command, with the host's python and the recording plugin.
    command = [sys.executable, *TEST_CMD.split()[1:], "-p", "realdata_truth", *files]
    subprocess.run(command, cwd=tree, env=env, capture_output=True, check=False, timeout=300)
    return json.loads(truth.read_text())


def _by_hand(base_tree: Path, case: Case, patch: tuple[Edit, ...], scratch: Path) -> dict[str, str]:
    tree = scratch / "tree"
    if tree.exists():
        subprocess.run(["rm", "-rf", str(tree)], check=True)
    subprocess.run(["cp", "-a", str(base_tree), str(tree)], check=True)
    _apply(tree, patch)
    # The model's changes to test files do not count: the test patch's files are reset.
    for edit in case.test_patch:
        (tree / edit.path).write_text((base_tree / edit.path).read_text())
    _apply(tree, case.test_patch)
    for edit in patch:
        if edit.path.rsplit("/", 1)[-1] == "conftest.py" and edit.old is None:
            (tree / edit.path).unlink()  # restored (removed) before the tests, by policy
    return run_by_hand(tree, [edit.path for edit in case.test_patch])


def build(root: Path) -> RealData:
    sdists = {project: fetch_sdist(project, root / "sdists") for project in SDISTS}
    pristine = {p: _unpack(archive, root / "unpacked" / p) for p, archive in sdists.items()}
    assert sdist_commit(sdists["six"])  # the archive's own commit is defined
    repos = {"fork-a": root / "forks" / "six-a", "fork-b": root / "forks" / "six-b",
             "toolz": root / "repos" / "toolz"}  # fmt: skip
    roots: dict[str, str] = {}
    for name, git_dir in repos.items():
        init_repository(git_dir, bare=True)
        project = "toolz" if name == "toolz" else "six"
        roots[name] = _commit(git_dir, pristine[project], parent=None, message=SDIST_MESSAGE,
                              branch="main")  # fmt: skip
    assert roots["fork-a"] == roots["fork-b"] == sdist_commit(sdists["six"])

    data = RealData(root=root, conf=root / "conf", instances=[])
    scratch = root / "scratch"
    for case in CASES:
        base_tree = scratch / case.instance_id / "base"
        base_tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(pristine[case.project]), str(base_tree)], check=True)
        _apply(base_tree, case.bug)
        if case.source == "sdist":
            base_commit = sdist_commit(sdists["six"])
        else:
            git_dir = repos[case.source]
            message = f"Inject {case.instance_id}"
            base_commit = _commit(
                git_dir,
                base_tree,
                parent=roots[case.source],
                message=message,
                branch=case.instance_id,
            )
        before = _by_hand(base_tree, case, (), scratch / case.instance_id)
        after = _by_hand(base_tree, case, case.gold_patch(), scratch / case.instance_id)
        f2p = sorted(t for t in after if after[t] in PASSING and before.get(t) not in PASSING)
        p2p = sorted(t for t in after if after[t] in PASSING and before.get(t) in PASSING)
        assert f2p, f"{case.instance_id}: the gold patch fixes nothing by hand"
        instance = {
            "instance_id": case.instance_id,
            "repo": "benjaminp/six" if case.project == "six" else "pytoolz/toolz",
            "base_commit": base_commit,
            "patch": diff(base_tree, case.gold_patch()),
            "test_patch": diff(base_tree, case.test_patch),
            "FAIL_TO_PASS": f2p,
            "PASS_TO_PASS": p2p,
            "version": "1.16" if case.project == "six" else "0.12",
            "problem_statement": case.note,
        }
        data.instances.append(instance)
        if case.model:
            by_hand = _by_hand(base_tree, case, case.model, scratch / case.instance_id)
            resolved = all(by_hand.get(t) in PASSING for t in f2p) and all(
                by_hand.get(t) in PASSING | {"SKIPPED"} for t in p2p
            )
            data.model_outcomes[case.instance_id] = "resolved" if resolved else "unresolved"
        else:
            data.model_outcomes[case.instance_id] = "unresolved"
        case_model = diff(base_tree, case.model) if case.model else ""
        instance["_model_patch"] = case_model
    _write_config(data, sdists)
    return data


def _write_config(data: RealData, sdists: dict[str, Path]) -> None:
    conf = data.conf
    for folder in ("dataset", "experiment", "target", "data"):
        (conf / folder).mkdir(parents=True, exist_ok=True)
    model = [
        {"instance_id": i["instance_id"], "model_name_or_path": "model",
         "model_patch": i.pop("_model_patch")}
        for i in data.instances
    ]  # fmt: skip
    (conf / "data" / "instances.jsonl").write_text(
        "".join(json.dumps(i) + "\n" for i in data.instances)
    )
    (conf / "data" / "model.jsonl").write_text("".join(json.dumps(m) + "\n" for m in model))
    six_sha = hashlib.sha256(sdists["six"].read_bytes()).hexdigest()
    spec = {"packages": PACKAGES, "test_cmd": TEST_CMD, "parser": "pytest_full"}
    dataset = {
        "name": "realdata",
        "instances": "data/instances.jsonl",
        "test_ids": "native",
        "repos": {
            # The first source whose history has an instance's base commit serves it.
            "benjaminp/six": [
                {"kind": "local", "path": "../forks/six-a"},
                {"kind": "local", "path": "../forks/six-b"},
            ],
            "pytoolz/toolz": {"kind": "local", "path": "../repos/toolz"},
        },
        "instance_repos": {
            "six__feature-version-info": {
                "kind": "archive",
                "path": f"../sdists/{sdists['six'].name}",
                "sha256": six_sha,
            }
        },
        "specs": {"benjaminp/six": {"1.16": spec}, "pytoolz/toolz": {"0.12": spec}},
    }
    (conf / "dataset" / "realdata.yaml").write_text(json.dumps(dataset, indent=2) + "\n")
    (conf / "target" / "realdata_model.yaml").write_text(
        json.dumps({"kind": "predictions", "name": "model", "path": "data/model.jsonl"}) + "\n"
    )
    for name, target in (("realdata", "gold"), ("realdata_model", "realdata_model")):
        (conf / "experiment" / f"{name}.yaml").write_text(
            "# @package _global_\n"
            f"defaults:\n  - override /dataset: realdata\n  - override /target: {target}\n"
            f"name: {name}\nenvironment:\n  timeout: 120\n"
        )
