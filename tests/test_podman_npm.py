"""JavaScript instances whose specs ask for npm packages, in rootless podman.

mocha and sprintf-js come from the npm registry: resolved and pinned at plan time, then
unpacked into the env layer's ``/node_modules`` by a build without network; node comes
from the base's Debian packages. One spec names them (``name@version``), the other takes
the repository's own package-lock.json (written by npm when the fixture is made). The
test command is mocha's ``.bin`` link, the code under test ``require``\\s sprintf-js
from /testbed, and the gold patch resolves under both.
"""

from __future__ import annotations

import json
import subprocess

from evalrepro.build import npm
from evalrepro.config.experiment import compose
from evalrepro.plan.lockfile import read_lockfile
from tests.podman_support import cache_dir, needs_podman, polyglot_debs, run_demo

pytestmark = needs_podman

CODE = (
    "const { sprintf } = require('sprintf-js');\n"
    "exports.add = (a, b) => a - b;\n"
    "exports.pad = (n) => sprintf('%03d', n);\n"
)
TESTS = (
    "const assert = require('assert');\n"
    "const math = require('../lib/math');\n"
    "describe('math', function () {\n"
    "  it('pads', function () { assert.strictEqual(math.pad(7), '007'); });\n"
    "});\n"
)
NEW_TESTS = TESTS.replace(
    "});\n});\n",
    "});\n  it('adds', function () { assert.strictEqual(math.add(2, 3), 5); });\n});\n",
)


def git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def diff(repo, path, new_text):
    old = (repo / path).read_text()
    (repo / path).write_text(new_text)
    patch = git(repo, "diff")
    (repo / path).write_text(old)
    return patch


def test_javascript_instances_run_mocha_from_pinned_npm_packages(tmp_path):
    repo = tmp_path / "mathjs"
    (repo / "lib").mkdir(parents=True)
    (repo / "test").mkdir()
    (repo / "lib" / "math.js").write_text(CODE)
    (repo / "test" / "math.test.js").write_text(NEW_TESTS)
    assert NEW_TESTS != TESTS
    (repo / "test" / "math.test.js").write_text(TESTS)
    wanted = {"mocha": "10.2.0", "sprintf-js": "1.0.3"}
    (cache_dir() / "npm").mkdir(parents=True, exist_ok=True)
    lock = npm._npm_lock(wanted, npm.DEFAULT_REGISTRY, cache_dir() / "npm")
    (repo / "package-lock.json").write_bytes(lock)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "initial")
    one = {
        "instance_id": "me__mathjs-1",
        "repo": "me/mathjs",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "patch": diff(repo, "lib/math.js", CODE.replace("a - b", "a + b")),
        "test_patch": diff(repo, "test/math.test.js", NEW_TESTS),
        "FAIL_TO_PASS": ["math adds:"],
        "PASS_TO_PASS": ["math pads:"],
        "version": "1",
    }
    two = {**one, "instance_id": "me__mathjs-2", "version": "2"}
    (tmp_path / "instances.jsonl").write_text(f"{json.dumps(one)}\n{json.dumps(two)}\n")
    conf = tmp_path / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "dataset" / "js.yaml").write_text(
        f"name: js\ninstances: {tmp_path / 'instances.jsonl'}\ntest_ids: swebench\n"
        f"repos:\n  me/mathjs: {{kind: local, path: '{repo}'}}\n"
        "specs:\n  me/mathjs:\n    '1':\n"
        # node from the base the language tests build (nodejs among its toolchains)
        f"      debs: &debs [{', '.join(polyglot_debs())}]\n"
        "      npm: [mocha@10.2.0, sprintf-js@1.0.3]\n"
        "      test_cmd: /node_modules/.bin/mocha --reporter min\n"
        "      parser: eslint\n"
        "    '2':\n"
        "      debs: *debs\n"
        "      npm: lockfile\n"
        "      test_cmd: /node_modules/.bin/mocha --reporter min\n"
        "      parser: eslint\n"
    )
    (conf / "experiment" / "js.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /dataset: js\nname: js\n"
        "environment:\n  timeout: 60\n"
    )
    config = compose(["+experiment=js"], config_dir=conf)
    results, text = run_demo(config, tmp_path / "run")
    assert (results.resolved, results.planned) == (2, 2), text

    locked = read_lockfile(tmp_path / "run")
    envs = [image for image in locked.environment.images if image.layer == "env"]
    asked = {}
    for env in envs:
        tarballs = {i.name: i for i in env.inputs if i.kind == "npm"}
        assert tarballs["mocha"].version == "10.2.0" and tarballs["sprintf-js"].version == "1.0.3"
        assert len(tarballs) > 50  # mocha's closure, nested packages included
        assert all(i.integrity and i.integrity.startswith("sha512-") for i in tarballs.values())
        assert [i.name for i in env.inputs if i.kind == "recipe"][:1] == ["Containerfile.env-npm"]
        assert not [i for i in env.inputs if i.kind == "wheel"]
        (kind,) = {i.kind for i in env.inputs if i.kind.startswith("npm-")}
        asked[kind] = {i.name: i.digest for i in env.inputs if i.kind == "npm"}
    # the specifiers and the lockfile npm wrote for them: the same closure, two layers
    assert sorted(asked) == ["npm-lockfile", "npm-request"]
    assert asked["npm-lockfile"] == asked["npm-request"]
