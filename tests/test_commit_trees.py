"""Commit trees kept in the cache by full commit id (``evalrepro.plan.outside``).

What is guaranteed:

* the plan's search for the test files a command runs outside its test patch lists the
  base commit's tree once: it is kept as a ``CommitTree`` record in the cache's
  ``commit-trees/<full commit id>.json``, and a later plan reads it from there (a commit's
  tree never changes), with the same answer;
* a kept tree that is not a readable ``CommitTree`` of that commit is listed again with
  git and written anew, never trusted.
"""

from __future__ import annotations

import json
import subprocess

from evalrepro.config.experiment import compose
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.plan.outside import find_outside, trees_of
from evalrepro.records.base import read_record
from evalrepro.records.testspec import CommitTree
from evalrepro.sources.demo_repos import build_repo

OUTSIDE = "tests/test_tokenizer.py"


def _spec(tmp_path):
    repo = tmp_path / "calc"
    build_repo("calc", repo)
    config = compose(["+experiment=demo", "dataset.specs[demo/calc][1.0].test_directives=[tests]"])
    row = next(s for s in config.dataset.load() if s.instance_id == "demo__calc-1")
    return repo, instance_test_spec(config.dataset, row)


def _listed(repo, commit) -> dict[str, tuple[str, int]]:
    out = subprocess.run(
        ["git", "ls-tree", "-r", "-l", "-z", "--full-tree", commit],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    files = {}
    for entry in out.split(b"\0"):
        if entry:
            meta, _, path = entry.partition(b"\t")
            mode, _kind, oid, size = meta.split()
            if mode in (b"100644", b"100755"):
                files[path.decode()] = (oid.decode(), int(size))
    return files


def test_a_commits_tree_is_kept_by_its_id_and_read_back_by_the_next_plan(tmp_path):
    repo, spec = _spec(tmp_path)
    cache = tmp_path / "cache"
    first = find_outside(repo / ".git", spec, cache)
    assert [f.path for f in first[0]] == [OUTSIDE]
    kept = trees_of(cache) / f"{spec.base_commit}.json"
    tree = read_record(kept, CommitTree)
    assert tree.commit == spec.base_commit
    assert tree.files == _listed(repo, spec.base_commit)
    # The next plan reads the kept tree, not git's: a file the cache's tree leaves out is
    # not found (a tree that lies is a cache that was tampered with; it shows it is read).
    data = json.loads(kept.read_text())
    del data["files"][OUTSIDE]
    kept.write_text(json.dumps(data))
    assert find_outside(repo / ".git", spec, cache) == ([], 0)


def test_a_kept_tree_that_is_not_that_commits_is_listed_again(tmp_path):
    repo, spec = _spec(tmp_path)
    cache = tmp_path / "cache"
    expected = find_outside(repo / ".git", spec, cache)
    kept = trees_of(cache) / f"{spec.base_commit}.json"
    for damage in (
        "not json",
        json.dumps({"record": "CommitTree", "schema_version": 1, "commit": "0" * 40, "files": {}}),
        json.dumps({"record": "CommitTree", "schema_version": 99, "files": {}}),
    ):
        kept.write_text(damage)
        assert find_outside(repo / ".git", spec, cache) == expected
        assert read_record(kept, CommitTree).files == _listed(repo, spec.base_commit)
