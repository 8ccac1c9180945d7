"""npm packages pinned against the real npm registry, fetched again by hash, unpacked into
a node_modules tree by the env layer's installer (evalrepro.build.npm,
backends/podman/npm-install.py), and a spec's ``npm`` field."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalrepro.build import npm
from evalrepro.build.images import layer_key
from evalrepro.build.inputs import KINDS
from evalrepro.build.npm import NpmPin, fetch_tarballs, lockfile_pins, resolve_npm, tarball_path
from evalrepro.config.spec import RepoSpec
from evalrepro.errors import UserError, validation_message
from evalrepro.records.image import PinnedInput
from evalrepro.records.testspec import TestSpec

INSTALLER = Path(__file__).resolve().parents[1] / "backends" / "podman" / "npm-install.py"
SPRINTF = "sprintf-js@1.0.3"
#: debug 4.3.4 depends on ms 2.1.2 (exactly one dependency, none below it).
DEBUG = "debug@4.3.4"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("npm-cache")


@pytest.fixture(scope="module")
def pins(cache: Path) -> list[NpmPin]:
    return resolve_npm([DEBUG, SPRINTF, "mkdirp@1.0.4"], cache_dir=cache)


# --- the spec ------------------------------------------------------------------------------


def _spec(npm_value: object) -> RepoSpec:
    return RepoSpec.model_validate({"test_cmd": "true", "parser": "eslint", "npm": npm_value})


def test_a_spec_takes_exact_specifiers_or_a_lockfile() -> None:
    assert _spec([SPRINTF, "@types/node@20.1.0"]).npm == [SPRINTF, "@types/node@20.1.0"]
    assert _spec("lockfile").npm == ["package-lock.json"]
    assert _spec("web/package-lock.json").npm == ["web/package-lock.json"]
    assert _spec([]).npm == []
    assert RepoSpec(test_cmd="true", parser="eslint").npm == []


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (["mocha@^10.2.0"], "'mocha@^10.2.0' is not an exact npm specifier"),
        (["mocha"], "'mocha' is not an exact npm specifier"),
        (["mocha@latest"], "'mocha@latest' is not an exact npm specifier"),
        (["mocha@10.2"], "'mocha@10.2' is not an exact npm specifier"),
        (["mocha@10.2.0", "mocha@10.3.0"], "npm package mocha is listed twice"),
        (["lockfile", SPRINTF], "list it alone"),
        (["../package-lock.json"], "is not a path inside the repository"),
    ],
)
def test_a_spec_refuses_what_is_not_exact_in_one_line(value: list[str], said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _spec(value)
    message = validation_message(caught.value, model=RepoSpec)
    assert said in message and "\n" not in message


def test_test_spec_version_2_reads_as_3_without_npm() -> None:
    # A TestSpec of the release before (schema 2) reads, with no npm packages.
    fields = TestSpec.model_fields
    assert TestSpec.pinned_version() == 3 and fields["npm"].default == []
    assert TestSpec.migrations[2]({"a": 1}).get("npm", []) == []


# --- resolving ----------------------------------------------------------------------------


def test_resolve_pins_the_closure_with_sha256_and_integrity(pins: list[NpmPin], cache: Path):
    by_path = {pin.path: pin for pin in pins}
    assert sorted(by_path) == ["debug", "mkdirp", "ms", "sprintf-js"]
    assert (by_path["debug"].version, by_path["ms"].version) == ("4.3.4", "2.1.2")
    assert (
        by_path["sprintf-js"].url == "https://registry.npmjs.org/sprintf-js/-/sprintf-js-1.0.3.tgz"
    )
    for pin in pins:
        data = tarball_path(cache, pin).read_bytes()
        assert hashlib.sha256(data).hexdigest() == pin.sha256
        assert pin.integrity.startswith("sha512-") and npm.integrity_matches(data, pin.integrity)


def test_a_resolve_is_kept_and_the_same(pins: list[NpmPin], cache: Path) -> None:
    assert resolve_npm([SPRINTF, "mkdirp@1.0.4", DEBUG], cache_dir=cache) == pins


@pytest.mark.parametrize(
    ("specifier", "said"),
    [
        ("evalrepro-no-such-package-3f9c1@1.0.0", "evalrepro-no-such-package-3f9c1"),
        ("sprintf-js@99.0.0", "sprintf-js@99.0.0"),
    ],
)
def test_an_unknown_package_or_version_is_one_line_naming_it(
    specifier: str, said: str, tmp_path: Path
) -> None:
    with pytest.raises(UserError) as caught:
        resolve_npm([specifier], cache_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith(f"npm cannot resolve {specifier} from https://registry.npmjs.org/")
    assert said in message.split(": ", 1)[1] and "\n" not in message


# --- a repository's lockfile --------------------------------------------------------------


def _lock(pins: list[NpmPin], **extra: dict) -> bytes:
    packages: dict[str, dict] = {"": {"name": "repo", "version": "1.0.0"}}
    for pin in pins:
        packages[f"node_modules/{pin.path}"] = {
            "version": pin.version,
            "resolved": pin.url,
            "integrity": pin.integrity,
            "dev": True,
        }
    packages.update(extra)
    return json.dumps({"lockfileVersion": 3, "packages": packages}).encode()


def test_a_lockfile_gives_its_closure_leaving_out_optional_packages_of_other_platforms(
    pins: list[NpmPin], cache: Path
) -> None:
    sprintf = next(p for p in pins if p.path == "sprintf-js")
    darwin = {
        "version": "2.3.3",
        "resolved": "https://registry.npmjs.org/fsevents/-/fsevents-2.3.3.tgz",
        "integrity": "sha512-x",
        "optional": True,
        "os": ["darwin"],
    }
    lock = _lock([sprintf], **{"node_modules/fsevents": darwin})
    assert lockfile_pins(lock, "repo's package-lock.json", cache_dir=cache) == [sprintf]
    not_optional = {**darwin, "optional": False}
    with pytest.raises(UserError, match=r"npm package fsevents is for os darwin, not the images'"):
        lockfile_pins(_lock([], **{"node_modules/fsevents": not_optional}), "lock", cache_dir=cache)


SPRINTF_URL = "https://registry.npmjs.org/sprintf-js/-/sprintf-js-1.0.3.tgz"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            {"version": "1.0.3", "resolved": SPRINTF_URL},
            "lock: npm package sprintf-js 1.0.3 has no integrity",
        ),
        (
            {
                "version": "1.0.3",
                "resolved": "git+ssh://git@x.example/b.git#a",
                "integrity": "sha512-x",
            },
            "has no registry tarball URL (git+ssh://git@x.example/b.git#a)",
        ),
        (
            {"version": "1.0.3", "resolved": SPRINTF_URL, "integrity": f"sha512-{'A' * 86}=="},
            "does not match its integrity",
        ),
    ],
)
def test_a_lockfile_entry_that_pins_nothing_is_refused_naming_it(
    entry: dict, said: str, tmp_path: Path
) -> None:
    lock = _lock([], **{"node_modules/sprintf-js": entry})
    with pytest.raises(UserError) as caught:
        lockfile_pins(lock, "lock", cache_dir=tmp_path)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_workspace_links_and_old_lockfiles_are_refused(cache: Path) -> None:
    link = {"node_modules/app": {"resolved": "packages/app", "link": True}}
    with pytest.raises(UserError, match="node_modules/app is a workspace or linked package"):
        lockfile_pins(_lock([], **link), "lock", cache_dir=cache)
    old = json.dumps({"lockfileVersion": 1, "dependencies": {}}).encode()
    with pytest.raises(UserError, match="lockfileVersion 1"):
        lockfile_pins(old, "lock", cache_dir=cache)


# --- fetching again -----------------------------------------------------------------------


def test_fetch_checks_the_cache_and_refuses_other_bytes(pins: list[NpmPin], tmp_path: Path):
    sprintf = next(p for p in pins if p.path == "sprintf-js")
    (path,) = fetch_tarballs([sprintf], tmp_path)  # downloaded into an empty cache
    assert path == tarball_path(tmp_path, sprintf)
    path.write_bytes(b"not the tarball")  # a corrupt cache entry is fetched again
    assert fetch_tarballs([sprintf], tmp_path)[0].read_bytes() != b"not the tarball"
    edited = sprintf.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(UserError) as caught:
        fetch_tarballs([edited], tmp_path)
    assert str(caught.value) == (
        f"npm package sprintf-js 1.0.3: the tarball at {sprintf.url} has sha256 "
        f"{sprintf.sha256}, not the pinned {'0' * 64}"
    )


def test_a_bundle_finds_tarballs_where_the_builder_keeps_them(pins: list[NpmPin], cache: Path):
    pin = pins[0]
    pinned = PinnedInput(kind="npm", name=pin.path, version=pin.version, digest=pin.digest)
    (place,) = KINDS[("containerfile", "npm")].places(pinned, cache.parent / "builder")
    assert place == tarball_path(cache.parent / "builder" / "npm", pin)


def test_inputs_without_integrity_are_written_and_digested_as_before() -> None:
    deb = PinnedInput(kind="deb", name="bash", version="5.2", digest="sha256:" + "1" * 64)
    assert "integrity" not in deb.model_dump_json() and "integrity" not in deb.identity()
    tarball = deb.model_copy(update={"kind": "npm", "integrity": "sha512-abc"})
    assert tarball.identity()["integrity"] == "sha512-abc"
    assert PinnedInput.model_validate_json(tarball.model_dump_json()) == tarball
    # an edited integrity is an edit of the layer (the key a lockfile's check recomputes)
    edited = tarball.model_copy(update={"integrity": "sha512-abd"})
    assert layer_key("containerfile", "env", [tarball], None) != layer_key(
        "containerfile", "env", [edited], None
    )


# --- the installer ------------------------------------------------------------------------


def test_the_installer_lays_out_the_tree_npm_would_with_bin_links(
    pins: list[NpmPin], cache: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "npm"
    folder.mkdir()
    for pin in pins:
        os.link(tarball_path(cache, pin), folder / f"{pin.sha256}.tgz")
    (folder / "manifest.json").write_text(json.dumps(npm.install_manifest(pins)))
    target = tmp_path / "root" / "node_modules"
    subprocess.run(
        [sys.executable, str(INSTALLER), str(folder), str(target)],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": "1700000000"},
    )
    assert sorted(p.name for p in target.iterdir()) == [
        ".bin",
        "debug",
        "mkdirp",
        "ms",
        "sprintf-js",
    ]
    link = target / ".bin" / "mkdirp"
    assert os.readlink(link) == "../mkdirp/bin/cmd.js" and os.access(link, os.X_OK)
    assert {p.stat().st_mtime for p in target.rglob("*") if not p.is_symlink()} == {1700000000}
    # node finds them from a project below, as it finds a project's own node_modules
    project = tmp_path / "root" / "testbed"
    project.mkdir()
    script = (
        "console.log(require('debug')('x').namespace, require('sprintf-js').sprintf('%03d', 7))"
    )
    done = subprocess.run(
        ["node", "-e", script], cwd=project, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["x", "007"]
    # a tarball that is not the pinned one is refused
    (folder / f"{pins[0].sha256}.tgz").unlink()
    (folder / f"{pins[0].sha256}.tgz").write_bytes(b"other")
    refused = subprocess.run(
        [sys.executable, str(INSTALLER), str(folder), str(tmp_path / "again")],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert re.fullmatch(
        r"npm-install: \S+\.tgz is not the pinned tarball of debug\n", refused.stderr
    )


# --- a spec's npm, as the builders take it ------------------------------------------------


def _test_spec(npm_value: object, base_commit: str):
    from evalrepro.config.protection import TestProtection
    from evalrepro.plan.testspec import compile_test_spec
    from tests.repo_support import sample

    spec = RepoSpec.model_validate(
        {"test_cmd": "/node_modules/.bin/mocha", "parser": "eslint", "npm": npm_value}
    )
    return compile_test_spec(
        sample("me__js-1", "me/js", base_commit),
        spec,
        parser="eslint",
        fail_only=True,
        protection=TestProtection(),
    )


def test_npm_lockfile_takes_the_repository_lockfile_at_the_base_commit(
    pins: list[NpmPin], cache: Path, tmp_path: Path
) -> None:
    from evalrepro.build.containerfile import _npm_request
    from evalrepro.sources.checkout import LocalCheckout
    from tests.repo_support import commit, make_repo

    sprintf = next(p for p in pins if p.path == "sprintf-js")
    repo = tmp_path / "js"
    without = make_repo(repo, {"index.js": "module.exports = 1;\n"})
    lock = _lock([sprintf]).decode()
    with_lock = commit(repo, {"web/package-lock.json": lock + "\n"}, "lock")
    checkout = LocalCheckout(name="local js", git_dir=repo / ".git", refs=())

    spec = _test_spec("web/package-lock.json", with_lock)
    assert spec.npm == ["web/package-lock.json"]
    request = _npm_request(spec, checkout)
    assert not isinstance(request, str) and request is not None
    (asked,) = request.inputs
    assert (asked.kind, asked.name, asked.source) == (
        "npm-lockfile",
        "web/package-lock.json",
        "me/js",
    )
    assert request.lock is not None and json.loads(request.lock) == json.loads(lock)
    assert lockfile_pins(request.lock, "me/js", cache_dir=cache) == [sprintf]

    missing = _npm_request(_test_spec("web/package-lock.json", without), checkout)
    assert missing == f"npm: me/js has no web/package-lock.json at its base commit {without[:12]}"
    assert _npm_request(_test_spec([], with_lock), checkout) is None
    (one,) = _npm_request(_test_spec([SPRINTF], with_lock), checkout).inputs
    assert (one.kind, one.name) == ("npm-request", SPRINTF)


def test_the_nix_builder_refuses_npm_packages_in_one_line() -> None:
    from evalrepro.build.nix import NixBuilder

    spec = _test_spec([SPRINTF], "a" * 40)
    with pytest.raises(UserError) as caught:
        NixBuilder._env(NixBuilder.__new__(NixBuilder), spec, "bookworm", None)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "the nix builder cannot install npm packages (me/js asks for sprintf-js@1.0.3): "
        "build it with environment.builder=containerfile"
    )


def test_a_bundle_carries_the_tarballs_and_seeds_a_cache_the_builder_fetches_from(
    pins: list[NpmPin], cache: Path, tmp_path: Path
) -> None:
    from evalrepro.build.containerfile import _npm_input, _npm_pin
    from evalrepro.build.images import inputs_digest
    from evalrepro.build.inputs import collect_inputs, seed_cache
    from evalrepro.plan.lockfile import read_lockfile
    from evalrepro.records.lockfile import LockedImage

    # The committed demo lockfile, its layers replaced by one env layer of npm tarballs
    # (no trials: no histories to export).
    demo = read_lockfile(Path(__file__).parents[1] / "lockfiles" / "demo.lock.json", checked=False)
    tarballs = [_npm_input(pin) for pin in pins]
    env = LockedImage(
        builder="containerfile",
        layer="env",
        key=layer_key("containerfile", "env", tarballs, None),
        inputs_digest=inputs_digest(tarballs),
        inputs=tarballs,
        parent_key=None,
        tag="localhost/evalrepro-env:npm",
        image_digest="sha256:" + "2" * 64,
    )
    lock = demo.model_copy(
        update={"environment": demo.environment.model_copy(update={"images": [env]}), "trials": []}
    )
    builder_cache = tmp_path / "author"
    for pin in pins:  # where the author's builder kept them
        (builder_cache / "npm" / "tarballs" / pin.sha256[:2]).mkdir(parents=True, exist_ok=True)
        os.link(tarball_path(cache, pin), tarball_path(builder_cache / "npm", pin))
    collected = collect_inputs(lock, builder_cache, tmp_path / "bundle")
    assert sorted((c.kind, c.name, c.version) for c in collected) == sorted(
        ("npm", pin.path, pin.version) for pin in pins
    )
    assert all(c.sha256 == c.digest.removeprefix("sha256:") for c in collected)
    reviewer = tmp_path / "reviewer"
    assert seed_cache(tmp_path / "bundle", lock, reviewer) == len(pins)
    # The reviewer's build takes them from the seeded cache: their URLs are not asked.
    offline = [
        _npm_pin(t).model_copy(update={"url": "http://127.0.0.1:9/gone.tgz"}) for t in tarballs
    ]
    assert [p.read_bytes() for p in fetch_tarballs(offline, reviewer / "npm")] == [
        tarball_path(cache, pin).read_bytes() for pin in pins
    ]
    # A bundled tarball whose bytes are not its pin's is refused, naming it.
    first = tmp_path / "bundle" / pins[0].sha256
    first.write_bytes(b"other bytes")
    with pytest.raises(
        UserError,
        match=rf"npm {pins[0].path} {pins[0].version}: .* has \w{{12}}, the lockfile pins",
    ):
        seed_cache(tmp_path / "bundle", lock, tmp_path / "third")
