"""Repo sources: which source serves each instance, and what its history layer holds.

A dataset names a source per repo, several per repo (the first whose history has the
base commit serves), or one per instance id (which wins over the repo's). Sources with
the same history share one key, so one history layer, whatever their kind or repo name.
Archives holding a git repository keep working; the two archive bugs (a fresh cache, a
cache inside a work tree) are reproduced here. Real git repos and archives throughout.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalrepro.errors import UserError, validation_message
from evalrepro.sources import demo_repos
from evalrepro.sources.archive import ArchiveRepo
from evalrepro.sources.checkout import PIN_PREFIX
from evalrepro.sources.commits import Signature, commit_directory, init_repository
from evalrepro.sources.config import SourceConfig
from evalrepro.sources.demo import DemoRepo, open_demo
from evalrepro.sources.demo_repos import (
    AUTHOR_EMAIL,
    AUTHOR_NAME,
    FIRST_COMMIT_EPOCH,
    build_repo,
    commit_dirs,
    commit_label,
    repo_names,
)
from evalrepro.sources.local import LocalRepo
from evalrepro.sources.remote import RemoteRepo
from evalrepro.sources.resolve import materialize, resolve_sources
from tests.repo_support import (
    commit,
    commits_in,
    dangling_commit,
    git,
    make_repo,
    sample,
    tar_of,
)


def archive_source(path: Path) -> ArchiveRepo:
    return ArchiveRepo(path=path, sha256=hashlib.sha256(path.read_bytes()).hexdigest())


def resolve(config: dict, samples, cache: Path, **kwargs):
    return resolve_sources(
        SourceConfig.model_validate(config), samples, cache, dataset="mine", **kwargs
    )


@pytest.fixture
def two_repos(tmp_path: Path):
    """Upstream (a, b) and a fork of it with one more commit (c); b is in both."""
    upstream = tmp_path / "upstream"
    a = make_repo(upstream, {"x.py": "a\n"})
    b = commit(upstream, {"x.py": "b\n"}, "b")
    fork = tmp_path / "fork"
    subprocess.run(["git", "clone", "-q", str(upstream), str(fork)], check=True)
    c = commit(fork, {"x.py": "c\n"}, "c")
    return upstream, fork, {"a": a, "b": b, "c": c}


# --- one source, several, per instance ---------------------------------------------------


def test_one_source_per_repo_serves_every_instance_of_the_repo(two_repos, tmp_path):
    upstream, _, sha = two_repos
    samples = [sample("i-a", "me/x", sha["a"]), sample("i-b", "me/x", sha["b"])]
    got = resolve(
        {"repos": {"me/x": {"kind": "local", "path": str(upstream)}}}, samples, tmp_path / "cache"
    )
    assert set(got.keys) == {"i-a", "i-b"} and len(got.checkouts) == 1
    checkout = got.checkout("i-a")
    assert checkout.git_dir == upstream / ".git"
    assert checkout.refs == (("refs/heads/main", sha["b"]),)
    assert got.unavailable == {}


def test_of_several_sources_the_first_whose_history_has_the_commit_serves(two_repos, tmp_path):
    upstream, fork, sha = two_repos
    samples = [sample("in-both", "me/x", sha["b"]), sample("fork-only", "me/x", sha["c"])]
    sources = [{"kind": "local", "path": str(upstream)}, {"kind": "local", "path": str(fork)}]
    got = resolve({"repos": {"me/x": sources}}, samples, tmp_path / "cache")
    assert got.checkout("in-both").git_dir == upstream / ".git"
    assert got.checkout("fork-only").git_dir == fork / ".git"
    assert len(got.checkouts) == 2

    # The order is the rule: listed the other way round, the fork serves both.
    got = resolve({"repos": {"me/x": sources[::-1]}}, samples, tmp_path / "cache")
    assert {got.checkout(i).git_dir for i in ("in-both", "fork-only")} == {fork / ".git"}


def test_an_instance_source_wins_over_its_repo_source(two_repos, tmp_path):
    upstream, fork, sha = two_repos
    samples = [sample("i-1", "me/x", sha["b"]), sample("i-2", "me/x", sha["b"])]
    config = {
        "repos": {"me/x": {"kind": "local", "path": str(upstream)}},
        "instance_repos": {"i-2": {"kind": "local", "path": str(fork)}},
    }
    got = resolve(config, samples, tmp_path / "cache")
    assert got.checkout("i-1").git_dir == upstream / ".git"
    assert got.checkout("i-2").git_dir == fork / ".git"


def test_instances_with_the_same_history_share_one_source_key(tmp_path):
    # One repo per instance, as some datasets have: two instances name the same archive
    # (and a third a byte-identical copy elsewhere): one key, so one history layer.
    repo = tmp_path / "lib"
    base = make_repo(repo)
    archive = tar_of(repo, tmp_path / "lib.tar.gz", "lib")
    copy = tmp_path / "elsewhere" / "lib-copy.tar.gz"
    copy.parent.mkdir()
    shutil.copy(archive, copy)
    samples = [sample(f"i-{n}", f"org{n}/lib", base) for n in range(3)]
    source = archive_source(archive).model_dump(mode="json")
    config = {
        "instance_repos": {
            "i-0": source,
            "i-1": source,
            "i-2": archive_source(copy).model_dump(mode="json"),
        }
    }
    got = resolve(config, samples, tmp_path / "cache")
    assert len(got.checkouts) == 1
    assert len({got.keys[s.instance_id] for s in samples}) == 1


def test_the_source_key_is_the_history_not_the_repo_name_or_the_kind(two_repos, tmp_path):
    upstream, _, sha = two_repos
    samples = [sample("i-1", "me/x", sha["a"]), sample("i-2", "other/x", sha["a"])]
    config = {
        "repos": {
            "me/x": {"kind": "local", "path": str(upstream)},
            "other/x": {"kind": "local", "path": f"file://{upstream}"},
        }
    }
    got = resolve(config, samples, tmp_path / "cache")
    assert got.keys["i-1"] == got.keys["i-2"]

    # An archive of the same repository is the same history: the same key.
    archive = tar_of(upstream, tmp_path / "up.tar", "up", mode="w")
    config["repos"]["other/x"] = archive_source(archive).model_dump(mode="json")
    got = resolve(config, samples, tmp_path / "cache")
    assert got.keys["i-1"] == got.keys["i-2"] and len(got.checkouts) == 1


def test_a_base_commit_in_none_of_the_sources_is_refused_in_one_line(two_repos, tmp_path):
    upstream, fork, _ = two_repos
    missing = "0" * 40
    samples = [sample("lost-1", "me/x", missing), sample("lost-2", "me/x", "1" * 40)]
    sources = [{"kind": "local", "path": str(upstream)}, {"kind": "local", "path": str(fork)}]
    with pytest.raises(UserError) as error:
        resolve({"repos": {"me/x": sources}}, samples, tmp_path / "cache")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"dataset 'mine': base commit {missing} of instance 'lost-1'")
    assert f"local {upstream}" in message and f"local {fork}" in message
    assert message.endswith("and 1 more instance(s)")


def test_an_instance_without_a_source_and_a_stray_instance_entry_are_refused(tmp_path):
    repo = tmp_path / "r"
    base = make_repo(repo)
    with pytest.raises(UserError, match=r"no source for repo 'me/nosrc' \(instance 'i-1'\)"):
        resolve({"repos": {}}, [sample("i-1", "me/nosrc", base)], tmp_path / "cache")
    config = {
        "repos": {"me/x": {"kind": "local", "path": str(repo)}},
        "instance_repos": {"typo-1": {"kind": "local", "path": str(repo)}},
    }
    with pytest.raises(UserError, match=r"instance_repos names 1 instance\(s\) .*: typo-1"):
        resolve(config, [sample("i-1", "me/x", base)], tmp_path / "cache")


def test_a_base_commit_no_branch_reaches_is_pinned_into_the_history_export(tmp_path):
    # The commit is in the repository (a rebased-away branch, a pull ref): the history
    # layer must hold it too, or /testbed's .git could not find its own HEAD.
    repo = tmp_path / "r"
    tip = make_repo(repo)
    lost = dangling_commit(repo, {"y.py": "lost\n"})
    got = resolve(
        {"repos": {"me/x": {"kind": "local", "path": str(repo)}}},
        [sample("tip", "me/x", tip), sample("lost", "me/x", lost)],
        tmp_path / "cache",
    )
    checkout = got.checkout("lost")
    assert checkout.refs == ((PIN_PREFIX + lost, lost), ("refs/heads/main", tip))
    checkout.export_history(tmp_path / "history.git")
    assert commits_in(tmp_path / "history.git") == {tip, lost}


def test_the_history_export_holds_exactly_the_refs_the_key_names(two_repos, tmp_path):
    upstream, _, sha = two_repos
    git(upstream, "tag", "v1", sha["a"])
    git(upstream, "tag", "-a", "-m", "annotated", "v2", sha["b"])
    git(upstream, "update-ref", "refs/remotes/origin/gone", sha["a"])  # not exported
    checkout = resolve(
        {"repos": {"me/x": {"kind": "local", "path": str(upstream)}}},
        [sample("i", "me/x", sha["b"])],
        tmp_path / "cache",
    ).checkout("i")
    dest = tmp_path / "history.git"
    checkout.export_history(dest)
    exported = git(dest, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    assert sorted(tuple(line.split()) for line in exported) == list(checkout.refs)
    assert [ref for ref, _ in checkout.refs] == ["refs/heads/main", "refs/tags/v1", "refs/tags/v2"]

    # A new commit on a branch is another history: another key.
    commit(upstream, {"x.py": "d\n"}, "d")
    again = resolve(
        {"repos": {"me/x": {"kind": "local", "path": str(upstream)}}},
        [sample("i", "me/x", sha["b"])],
        tmp_path / "cache",
    ).checkout("i")
    assert again.source_digest != checkout.source_digest


def test_the_tree_export_is_the_commit_as_committed(two_repos, tmp_path):
    upstream, _, sha = two_repos
    checkout = materialize("me/x", LocalRepo(path=str(upstream)), tmp_path / "cache")
    checkout.export_tree(sha["a"], tmp_path / "tree")
    assert sorted(p.name for p in (tmp_path / "tree").iterdir()) == ["x.py"]
    assert (tmp_path / "tree" / "x.py").read_text() == "a\n"


# --- the models --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("repos", "expected"),
    [
        ({"me/x": {"kind": "local"}}, "missing field 'repos.me/x.path'"),
        ({"me/x": {"kind": "svn", "url": "x"}}, "field 'repos.me/x': Input tag 'svn'"),
        ({"me/x": []}, "field 'repos.me/x': List should have at least 1 item"),
        (
            {"me/x": [{"kind": "demo", "name": "calc"}, {"kind": "remote"}]},
            "missing field 'repos.me/x.1.url'",
        ),
        (
            {"me/x": {"kind": "remote", "url": "ext::sh -c touch% /tmp/pwned"}},
            "field 'repos.me/x.url': String should match pattern",
        ),
        ({"me/x": {"kind": "local", "path": "p", "ref": "main"}}, "unknown field"),
    ],
)
def test_a_bad_source_config_names_the_field_as_the_user_wrote_it(repos, expected):
    with pytest.raises(ValidationError) as error:
        SourceConfig.model_validate({"repos": repos})
    assert validation_message(error.value, model=SourceConfig).startswith(expected)


def test_one_source_stays_one_source_in_the_config_dump():
    # A dataset written before lists existed dumps (and so digests) as it did.
    config = {
        "repos": {"me/a": {"kind": "demo", "name": "calc"}},
        "instance_repos": {"i": [{"kind": "remote", "url": "https://example.invalid/r.git"}]},
    }
    dumped = SourceConfig.model_validate(config).model_dump(mode="json")
    assert dumped == {
        "repos": {"me/a": {"kind": "demo", "name": "calc"}},
        "instance_repos": {"i": [{"kind": "remote", "url": "https://example.invalid/r.git"}]},
    }


def test_every_source_field_is_documented_for_the_config_reference():
    from evalrepro.config.reference import rows

    assert [key for key, _type, _default, doc in rows(SourceConfig, "dataset.") if not doc] == []


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/org/repo.git",
        "http://127.0.0.1:8080/repo",
        "ssh://git@forge.example/org/repo.git",
        "git://127.0.0.1:9418/repo.git",
        "file:///srv/mirrors/repo.git",
        "git@github.com:org/repo.git",
    ],
)
def test_remote_urls_of_the_four_transports_are_accepted(url):
    assert RemoteRepo(url=url).url == url


# --- the bugs ------------------------------------------------------------------------------


def test_an_archive_works_with_a_cache_directory_that_does_not_exist_yet(tmp_path):
    # Was: FileNotFoundError under cache/repos/.archive-... (mkdtemp in a missing folder).
    repo = tmp_path / "lib"
    base = make_repo(repo)
    archive = tar_of(repo, tmp_path / "lib.tar.gz", "lib")
    cache = tmp_path / "never" / "made"
    got = resolve(
        {"repos": {"me/lib": archive_source(archive).model_dump(mode="json")}},
        [sample("i", "me/lib", base)],
        cache,
    )
    assert (
        got.checkout("i").git_dir == cache / "repos" / f"archive-{_sha(archive)}" / "lib" / ".git"
    )


def test_an_archive_in_a_cache_inside_a_work_tree_is_never_that_work_tree(tmp_path):
    # Was: an archive without .git resolved to the enclosing repository (git discovery
    # walked up from the extracted folder), then "base commit not in history".
    enclosing = tmp_path / "project"
    enclosing_commit = make_repo(enclosing)
    tree = tmp_path / "pkg-1.0"
    tree.mkdir()
    (tree / "pkg.py").write_text("x = 1\n")
    archive = tar_of(tree, tmp_path / "pkg-1.0.tar.gz", "pkg-1.0")
    cache = enclosing / ".cache" / "evalrepro"

    checkout = materialize("me/pkg", archive_source(archive), cache)
    assert checkout.git_dir.is_relative_to(cache)
    assert not checkout.has_commit(enclosing_commit)
    assert [ref for ref, _ in checkout.refs] == ["refs/heads/main"]

    # The same for an archive whose repository is gone: refused, not the enclosing one.
    broken = tmp_path / "broken"
    (broken / "lib" / ".git").mkdir(parents=True)
    (broken / "lib" / "f.py").write_text("")
    holder = tar_of(broken / "lib", tmp_path / "broken.tar", "lib", mode="w")
    assert materialize("me/b", archive_source(holder), cache).git_dir.is_relative_to(cache)


def test_a_local_path_inside_some_work_tree_is_not_that_work_tree(tmp_path):
    enclosing = tmp_path / "project"
    make_repo(enclosing)
    (enclosing / "vendored").mkdir()
    with pytest.raises(UserError, match=r"vendored is not a git repository"):
        materialize("me/v", LocalRepo(path=str(enclosing / "vendored")), tmp_path / "cache")


# --- archives of git repositories --------------------------------------------------------


def test_an_archive_of_a_work_tree_or_of_a_bare_repo_is_that_repository(two_repos, tmp_path):
    upstream, _, sha = two_repos
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream), str(bare)], check=True)
    for archive in (
        tar_of(upstream, tmp_path / "work.tar.xz", "upstream", mode="w:xz"),
        tar_of(bare, tmp_path / "bare.tar.bz2", "bare.git", mode="w:bz2"),
    ):
        checkout = materialize("me/x", archive_source(archive), tmp_path / "cache")
        assert checkout.has_commit(sha["a"]) and checkout.has_commit(sha["b"])
        assert checkout.refs == (("refs/heads/main", sha["b"]),)


def test_an_archive_is_checked_against_its_pinned_sha256(tmp_path):
    repo = tmp_path / "lib"
    make_repo(repo)
    archive = tar_of(repo, tmp_path / "lib.tar.gz", "lib")
    wrong = ArchiveRepo(path=archive, sha256="0" * 64)
    with pytest.raises(UserError, match=r"repo 'me/lib': archive .* has sha256 .* pins 0000"):
        materialize("me/lib", wrong, tmp_path / "cache")


def test_an_archived_repository_cannot_run_its_own_config(tmp_path):
    # The archive's .git/config defines a smudge filter its .gitattributes asks for: had
    # the config survived, exporting the tree would run it.
    repo = tmp_path / "lib"
    marker = tmp_path / "filter-ran"
    make_repo(repo, {"a.py": "a\n", ".gitattributes": "* filter=evil\n"})
    git(repo, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    git(repo, "config", "filter.evil.required", "true")
    elsewhere = tmp_path / "elsewhere"
    make_repo(elsewhere)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(
        f"{elsewhere / '.git' / 'objects'}\n"
    )
    archive = tar_of(repo, tmp_path / "lib.tar.gz", "lib")
    checkout = materialize("me/lib", archive_source(archive), tmp_path / "cache")
    checkout.export_tree(checkout.refs[0][1], tmp_path / "tree")
    assert (tmp_path / "tree" / "a.py").read_text() == "a\n"
    assert not marker.exists()
    assert not (checkout.git_dir / "objects" / "info" / "alternates").exists()
    assert "filter" not in (checkout.git_dir / "config").read_text()


def test_an_archive_member_that_would_land_outside_is_refused(tmp_path):
    import io
    import tarfile

    def evil(name: str, **member) -> Path:
        path = tmp_path / f"{name}.tar"
        with tarfile.open(path, "w") as archive:
            for entry in member["entries"]:
                info = tarfile.TarInfo(entry["name"])
                data = entry.get("data", b"")
                info.type = entry.get("type", tarfile.REGTYPE)
                info.linkname = entry.get("link", "")
                info.size = len(data) if info.type == tarfile.REGTYPE else 0
                archive.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
        return path

    cases = {
        "dotdot": ([{"name": "pkg/../../escaped", "data": b"x"}], "would land outside"),
        "absolute": ([{"name": "/tmp/escaped", "data": b"x"}], "would land outside"),
        "link-out": ([{"name": "pkg/l", "type": tarfile.SYMTYPE, "link": "../../x"}], "leaves"),
        "through-link": (
            [
                {"name": "pkg/d", "type": tarfile.SYMTYPE, "link": "."},
                {"name": "pkg/d/f", "data": b"x"},
            ],
            "goes through a link",
        ),
        "device": ([{"name": "pkg/null", "type": tarfile.CHRTYPE}], "device or fifo"),
    }
    for name, (entries, expected) in cases.items():
        with pytest.raises(UserError, match=expected) as error:
            materialize("me/e", archive_source(evil(name, entries=entries)), tmp_path / "c")
        assert "\n" not in str(error.value)
    assert not (tmp_path / "escaped").exists()


def test_a_file_that_is_no_archive_is_one_line(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive at all")
    with pytest.raises(UserError, match=r"junk.tar.gz: cannot be unpacked"):
        materialize("me/j", archive_source(junk), tmp_path / "cache")


# --- the demo, and what it shares with the sdist commits ------------------------------------


def test_commit_directory_makes_the_demo_repos_commits(tmp_path):
    # The helper the sdist commits are made with makes the demo's commits too: the demo
    # can use it instead of its own git plumbing, and its SHAs stay what they are.
    for name in repo_names():
        expected = build_repo(name, tmp_path / "built" / name)
        work = tmp_path / "made" / name
        work.mkdir(parents=True)
        git_dir = init_repository(work, bare=False)
        made, parent = {}, None
        for number, commit_dir in enumerate(commit_dirs(name)):
            for path in sorted(commit_dir.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    target = work / path.relative_to(commit_dir)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
                    target.chmod(0o644)
            label = commit_label(commit_dir)
            signature = Signature(AUTHOR_NAME, AUTHOR_EMAIL, FIRST_COMMIT_EPOCH + number * 86_400)
            message = label.replace("-", " ").capitalize()
            parent = commit_directory(
                work, git_dir, signature=signature, message=message, parent=parent
            )
            made[label] = parent
        assert made == expected
        assert git(work, "status", "--porcelain") == ""


def test_a_demo_source_serves_its_instances(tmp_path):
    expected = build_repo("calc", tmp_path / "calc")
    base = expected["initial"]
    got = resolve(
        {"repos": {"demo/calc": DemoRepo(name="calc").model_dump()}},
        [sample("c-1", "demo/calc", base)],
        tmp_path / "cache",
    )
    assert got.checkout("c-1").refs == (("refs/heads/main", expected["variables"]),)


def test_a_demo_repo_is_built_once_and_found_again_by_its_sources(tmp_path, monkeypatch):
    builds = []
    real = demo_repos.build_repo

    def counted(name, dest):
        builds.append(name)
        return real(name, dest)

    monkeypatch.setattr(demo_repos, "build_repo", counted)
    first = open_demo(DemoRepo(name="calc"), tmp_path)
    again = open_demo(DemoRepo(name="calc"), tmp_path)
    assert builds == ["calc"]
    assert again.git_dir == first.git_dir

    # A repo gone from the cache is built again, to the same commits.
    head = git(first.git_dir, "rev-parse", "main")
    shutil.rmtree(first.git_dir.parent)
    rebuilt = open_demo(DemoRepo(name="calc"), tmp_path)
    assert builds == ["calc", "calc"]
    assert git(rebuilt.git_dir, "rev-parse", "main") == head


def test_a_demo_repo_whose_sources_changed_is_built_anew(tmp_path, monkeypatch):
    copied = tmp_path / "sources"
    shutil.copytree(demo_repos.REPOS_DIR / "calc", copied / "calc")
    monkeypatch.setattr(demo_repos, "REPOS_DIR", copied)
    first = open_demo(DemoRepo(name="calc"), tmp_path / "cache")
    last = sorted((copied / "calc").iterdir())[-1]
    (last / "NOTES.txt").write_text("one more file\n")
    changed = open_demo(DemoRepo(name="calc"), tmp_path / "cache")
    assert changed.git_dir != first.git_dir
    assert "NOTES.txt" in git(changed.git_dir, "ls-tree", "--name-only", "main")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
