"""Remote git URLs as repo sources: fetched at plan time, pinned by the base commits.

A remote's history is the ancestry of the base commits it serves (never what its
branches point at today), fetched into a cache kept per URL; a second materialize goes
to the network only for a base commit the cache lacks. A commit the remote does not
have is refused in one line naming URL and commit; a remote that cannot be reached
makes its instances unavailable (an infrastructure error), not refused. Every fetch
here is real: git http-backend (smart HTTP, protocol v2, and a v0-only server) and git
daemon on 127.0.0.1, started by the test, and file:// URLs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalrepro.errors import UserError
from evalrepro.sources.checkout import PIN_PREFIX
from evalrepro.sources.config import SourceConfig
from evalrepro.sources.remote import RemoteRepo
from evalrepro.sources.resolve import resolve_sources
from tests.repo_support import (
    commit,
    commits_in,
    dangling_commit,
    git,
    git_daemon,
    http_git_server,
    make_repo,
    sample,
)


@pytest.fixture
def served(tmp_path: Path):
    """A bare repo ``srv/lib.git``: main (a, b), a feature branch (f) and a commit (d)
    that only the repo's objects hold, no ref."""
    work = tmp_path / "work"
    a = make_repo(work, {"lib.py": "a\n"})
    b = commit(work, {"lib.py": "b\n"}, "b")
    git(work, "checkout", "-q", "-b", "feature")
    f = commit(work, {"lib.py": "f\n"}, "f")
    git(work, "checkout", "-q", "main")
    d = dangling_commit(work, {"lib.py": "d\n"})
    root = tmp_path / "srv"
    root.mkdir()
    bare = root / "lib.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    # A bare clone copies only what refs reach; give the server the dangling commit too.
    git(work, "push", "-q", str(bare), f"{d}:refs/heads/tmp")
    git(bare, "update-ref", "-d", "refs/heads/tmp")
    return root, {"a": a, "b": b, "f": f, "d": d}


def resolve(url: str, samples, cache: Path, **kwargs):
    config = SourceConfig(repos={"me/lib": RemoteRepo(url=url)})
    return resolve_sources(config, samples, cache, dataset="mine", **kwargs)


def test_a_remote_over_http_serves_its_base_commits_and_nothing_else(served, tmp_path):
    root, sha = served
    with http_git_server(root) as server:
        got = resolve(f"{server.url}/lib.git", [sample("i-b", "me/lib", sha["b"])], tmp_path / "c")
        assert any(method == "POST" for method, _ in server.requests)  # a real fetch
    checkout = got.checkout("i-b")
    assert checkout.git_dir.is_relative_to(tmp_path / "c")
    assert checkout.refs == ((PIN_PREFIX + sha["b"], sha["b"]),)
    checkout.export_history(tmp_path / "history.git")
    # The ancestry of the base commit: not the feature branch the remote also has.
    assert commits_in(tmp_path / "history.git") == {sha["a"], sha["b"]}


def test_a_second_materialize_fetches_only_when_a_base_commit_is_missing(served, tmp_path):
    root, sha = served
    cache = tmp_path / "cache"
    with http_git_server(root) as server:
        url = f"{server.url}/lib.git"
        first = resolve(url, [sample("i-a", "me/lib", sha["a"])], cache)
        asked = len(server.requests)
        again = resolve(url, [sample("i-a", "me/lib", sha["a"])], cache)
        assert len(server.requests) == asked  # the cache had it: no request at all
        assert again.keys == first.keys

        more = resolve(
            url, [sample("i-a", "me/lib", sha["a"]), sample("i-f", "me/lib", sha["f"])], cache
        )
        assert len(server.requests) > asked
        assert set(more.keys) == {"i-a", "i-f"}

    # The server is gone: what the cache holds is still served, offline.
    offline = resolve(url, [sample("i-f", "me/lib", sha["f"])], cache)
    assert offline.checkout("i-f").refs == ((PIN_PREFIX + sha["f"], sha["f"]),)


def test_a_base_commit_the_remote_does_not_have_is_one_line_naming_url_and_commit(served, tmp_path):
    root, sha = served
    absent = "e" * 40
    with http_git_server(root) as server:
        url = f"{server.url}/lib.git"
        with pytest.raises(UserError) as error:
            resolve(
                url,
                [sample("i-b", "me/lib", sha["b"]), sample("i-x", "me/lib", absent)],
                tmp_path / "cache",
            )
    message = str(error.value)
    assert "\n" not in message
    assert f"base commit {absent} of instance 'i-x'" in message
    assert f"(remote {url})" in message


def test_a_commit_only_the_remote_objects_hold_is_fetched_by_id(served, tmp_path):
    root, sha = served
    with http_git_server(root) as server:
        got = resolve(f"{server.url}/lib.git", [sample("i-d", "me/lib", sha["d"])], tmp_path / "c")
    assert got.checkout("i-d").has_commit(sha["d"])


def test_a_protocol_v0_server_still_serves_what_its_branches_reach(served, tmp_path):
    # Such a server refuses to send an object by id; its branches and tags are fetched.
    root, sha = served
    with http_git_server(root, v2=False) as server:
        url = f"{server.url}/lib.git"
        got = resolve(url, [sample("i-f", "me/lib", sha["f"])], tmp_path / "cache")
        assert got.checkout("i-f").refs == ((PIN_PREFIX + sha["f"], sha["f"]),)
        with pytest.raises(UserError, match=f"base commit {sha['d']} of instance 'i-d'"):
            resolve(url, [sample("i-d", "me/lib", sha["d"])], tmp_path / "cache")


def test_a_remote_that_cannot_be_reached_makes_its_instances_unavailable(served, tmp_path):
    root, sha = served
    with http_git_server(root) as server:
        url = f"{server.url}/lib.git"
    got = resolve(url, [sample("i-b", "me/lib", sha["b"])], tmp_path / "cache")
    assert got.keys == {} and got.checkouts == {}
    assert got.unavailable["i-b"].startswith(f"remote {url}: cannot fetch from {url}")


def test_a_token_in_the_url_never_reaches_a_message(served, tmp_path):
    root, _ = served
    with http_git_server(root) as server:
        host = server.url.removeprefix("http://")
        url = f"http://someone:s3cret-token@{host}/lib.git"
        with pytest.raises(UserError) as error:
            resolve(url, [sample("i-x", "me/lib", "e" * 40)], tmp_path / "cache")
    assert "s3cret" not in str(error.value)
    assert f"http://***@{host}/lib.git" in str(error.value)

    # Nor the reason a remote is unavailable (git's own message names the URL too).
    gone = resolve(url, [sample("i-x", "me/lib", "e" * 40)], tmp_path / "cache")
    assert "s3cret" not in gone.unavailable["i-x"]
    assert f"cannot fetch from http://***@{host}/lib.git" in gone.unavailable["i-x"]


def test_a_git_daemon_url_is_fetched_over_git_protocol(served, tmp_path):
    root, sha = served
    with git_daemon(root) as base:
        got = resolve(f"{base}/lib.git", [sample("i-f", "me/lib", sha["f"])], tmp_path / "c")
    got.checkout("i-f").export_history(tmp_path / "history.git")
    assert commits_in(tmp_path / "history.git") == {sha["a"], sha["b"], sha["f"]}


def test_a_file_url_is_fetched_into_the_cache_not_used_in_place(served, tmp_path):
    root, sha = served
    got = resolve(
        f"file://{root / 'lib.git'}", [sample("i-b", "me/lib", sha["b"])], tmp_path / "cache"
    )
    checkout = got.checkout("i-b")
    assert checkout.git_dir.is_relative_to(tmp_path / "cache")
    assert checkout.refs == ((PIN_PREFIX + sha["b"], sha["b"]),)


def test_mirrors_of_one_history_share_one_source_key(served, tmp_path):
    # The same base commits from two URLs are the same history layer.
    root, sha = served
    samples = [sample("i-1", "me/lib", sha["b"]), sample("i-2", "mirror/lib", sha["b"])]
    with http_git_server(root) as server:
        config = SourceConfig(
            repos={
                "me/lib": RemoteRepo(url=f"{server.url}/lib.git"),
                "mirror/lib": RemoteRepo(url=f"file://{root / 'lib.git'}"),
            }
        )
        got = resolve_sources(config, samples, tmp_path / "cache", dataset="mine")
    assert got.keys["i-1"] == got.keys["i-2"] and len(got.checkouts) == 1


def test_a_selection_gets_the_history_of_the_whole_dataset(served, tmp_path):
    # A remote's history is the ancestry of every base commit it serves in the dataset,
    # so running one instance builds the same history layer as running them all.
    root, sha = served
    url = f"file://{root / 'lib.git'}"
    samples = [sample("i-b", "me/lib", sha["b"]), sample("i-f", "me/lib", sha["f"])]
    everything = resolve(url, samples, tmp_path / "cache")
    one = resolve(url, samples, tmp_path / "cache", selected={"i-b"})
    assert set(one.keys) == {"i-b"}
    assert one.keys["i-b"] == everything.keys["i-b"]
    assert one.checkout("i-b").refs == everything.checkout("i-b").refs
    alone = resolve(url, samples[:1], tmp_path / "cache")
    assert alone.keys["i-b"] != everything.keys["i-b"]  # why `selected` exists


def test_a_remote_fork_before_upstream_serves_only_what_upstream_lacks(served, tmp_path):
    # Several sources per repo, over the network: a fork (first) and its upstream.
    root, sha = served
    fork = root / "fork.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(root / "lib.git"), str(fork)], check=True)
    work = tmp_path / "fork-work"
    subprocess.run(["git", "clone", "-q", str(fork), str(work)], check=True)
    forked = commit(work, {"lib.py": "fork\n"}, "fork only")
    git(work, "push", "-q", "origin", "main")
    git(root / "lib.git", "update-ref", "refs/heads/main", sha["a"])  # upstream: a only
    samples = [sample("i-a", "me/lib", sha["a"]), sample("i-fork", "me/lib", forked)]
    with http_git_server(root) as server:
        config = SourceConfig(
            repos={
                "me/lib": [
                    RemoteRepo(url=f"{server.url}/lib.git"),
                    RemoteRepo(url=f"{server.url}/fork.git"),
                ]
            }
        )
        got = resolve_sources(config, samples, tmp_path / "cache", dataset="mine")
    assert got.checkout("i-a").name == f"remote {server.url}/lib.git"
    assert got.checkout("i-fork").name == f"remote {server.url}/fork.git"
