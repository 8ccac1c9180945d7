"""The Nix builder, for real: sandboxed Nix builds from pinned inputs, loaded into podman.

* the demo's trials end exactly as with the Containerfile builder (every gold resolves);
* the committed lockfile re-locks byte for byte (image digests included) as root and
  as a rootless user, each with a cold evalrepro cache, and ``nix-store --check``
  rebuilds every derivation without finding non-determinism;
* the flake passes ``nix flake check`` offline in a fresh clone, and ``nix build``
  gives the image the lockfile records;
* builds really are sandboxed, store paths are computed as Nix does, and a tampered
  pin is refused naming the package.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from evalrepro.build import nixstore
from evalrepro.build.images import ImageChain
from evalrepro.build.nix import BUSYBOX
from tests.demo_expectations import EXPECTED
from tests.nix_support import (
    LOCKFILE,
    REPO,
    git_visible_copy,
    needs_nix,
    rootless_user,
    start_daemon,
)
from tests.podman_support import cache_dir, demo_config, run_demo

pytestmark = needs_nix


@pytest.fixture(scope="module", autouse=True)
def nix_daemon():
    start_daemon()


def _lock(output: Path, cache: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """``evalrepro lock`` of the demo with the nix builder (CLI, as users run it)."""
    command = [sys.executable, "-m", "evalrepro", "lock", "+experiment=demo"]
    command += ["environment.builder=nix", *overrides, "--output", str(output)]
    command += ["--cache-dir", str(cache)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)


def _assert_relocks_the_committed_lockfile(path: Path) -> None:
    """The lockfile at ``path`` is the committed one, byte for byte."""
    assert path.read_text() == LOCKFILE.read_text()


def _image_digest(lockfile: dict, instance_id: str) -> str:
    (trial,) = [t for t in lockfile["trials"] if t["key"]["instance_id"] == instance_id][:1]
    (image,) = [i for i in lockfile["environment"]["images"] if i["key"] == trial["image_key"]]
    return image["image_digest"]


def test_store_paths_are_computed_as_nix_computes_them(tmp_path):
    data = tmp_path / "flat.txt"
    data.write_bytes(uuid.uuid4().hex.encode())
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    assert nixstore.add_fixed([data]) == [nixstore.fixed_path("flat.txt", sha)]
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "x").write_text(uuid.uuid4().hex)
    nar = nixstore.nar_sha256(folder)
    assert nixstore.add_fixed([folder], recursive=True) == [
        nixstore.fixed_path("tree", nar, recursive=True)
    ]
    assert nixstore.missing([nixstore.fixed_path("tree", nar, recursive=True)]) == set()


def test_builds_are_sandboxed_for_this_user(tmp_path):
    """A derivation looks for the host's /usr, /home and the network: none is there (the
    rootless suite builds through the daemon, whose nix.conf must sandbox)."""
    folder = tmp_path / "evalrepro-busybox"
    folder.mkdir()
    shutil.copyfile(BUSYBOX, folder / "busybox")
    (folder / "busybox").chmod(0o755)
    (store,) = nixstore.add_fixed([folder], recursive=True)
    probe = (
        "for p in /usr /home /etc/nix; do [ -e $p ] && echo saw-$p; done; "
        "$bb nc -w 2 1.1.1.1 80 </dev/null 2>/dev/null && echo saw-network; echo done"
    )
    # builtins.storePath: the path is an input of the derivation (visible in the sandbox).
    expression = (
        f'let bb = "${{builtins.storePath {store}}}/busybox"; in '
        f'derivation {{ name = "sandbox-probe"; system = "x86_64-linux"; builder = bb; '
        f'inherit bb; nonce = "{uuid.uuid4().hex}"; args = [ "sh" "-c" "({probe}) > $out" ]; }}'
    )
    done = nixstore.run(["nix-build", "--no-out-link", "-E", expression, *nixstore.options()])
    assert Path(done.stdout.strip()).read_text().split() == ["done"]


@pytest.mark.parametrize("experiment", ["demo", "model_a", "model_b"])
def test_the_demo_ends_as_with_the_containerfile_builder(experiment, tmp_path):
    results, text = run_demo(demo_config(experiment, "environment.builder=nix"), tmp_path)
    target = "gold" if experiment == "demo" else experiment
    outcomes = {line.instance_id: line.outcome for line in results.trials}
    expected = {i: outcome for (t, i), outcome in EXPECTED.items() if t == target}
    assert outcomes == expected, text


def test_demo_nix_experiment_and_its_records():
    from evalrepro.plan.plan import build_plan
    from evalrepro.run.backend import Backend

    config = demo_config("demo_nix")
    assert config.environment.builder.kind == "nix"
    backend = Backend.open(config.environment, cache_dir())
    plan = build_plan(config, backend.builder, cache_dir())
    chain = plan.trials[0].image
    assert isinstance(chain, ImageChain)
    assert [r.layer for r in chain.layers] == ["base", "env", "history", "instance"]
    kinds = {i.kind for r in chain.layers for i in r.inputs}
    assert {"deb", "tool", "history", "tree", "recipe", "setting"} <= kinds
    debs = [i for i in chain.layers[0].inputs if i.kind == "deb"]
    assert {"libc6", "python3", "git", "patch"} <= {i.name for i in debs}
    assert all(i.digest.startswith("sha256:") and i.version and i.source for i in debs)
    # The image Id podman reports is the config digest the archive carries.
    assert backend.runtime.image_id(chain.image.tag) == chain.image.image_digest.split(":")[1]


def test_an_install_command_runs_in_the_sandbox_reproducibly():
    """The install step runs in the image (a chroot in Nix's sandbox): its files land in
    the instance layer (the testbed the test user's), a removed file is whited out, and
    Nix rebuilds the layer to the same bytes (.pyc files written by it included)."""
    from evalrepro.plan.plan import build_plan
    from evalrepro.run.backend import Backend

    install = (
        "echo ok > /opt/evalrepro/installed && mkdir -p build && echo x > build/out "
        "&& rm /etc/motd && python -c 'import json'"
    )
    config = demo_config(
        "demo", "environment.builder=nix", f"dataset.specs[demo/ledger][1.0].install={install}"
    )
    backend = Backend.open(config.environment, cache_dir())
    plan = build_plan(config, backend.builder, cache_dir())
    (chain,) = {
        p.image.image.tag: p.image for p in plan.trials if "ledger-1" in p.sample.instance_id
    }.values()
    assert isinstance(chain, ImageChain), chain
    probe = "cat /opt/evalrepro/installed; stat -c %U /testbed/build/out; "
    probe += "test -e /etc/motd || echo gone"
    done = backend.runtime.podman(
        "run", "--rm", "--network", "none", chain.image.tag, "sh", "-c", probe
    )
    assert done.stdout.split() == ["ok", "tester", "gone"]
    key = chain.image.key.removeprefix("sha256:")[:24]
    (layer,) = Path("/nix/store").glob(f"*-evalrepro-instance-{key}.tar")
    deriver = nixstore.run(["nix-store", "--query", "--deriver", str(layer)]).stdout.strip()
    check = nixstore.run(
        ["nix-store", "--realise", "--check", deriver, *nixstore.options()], check=False
    )
    assert check.returncode == 0, check.stderr


def test_a_tampered_pin_is_refused_naming_the_package(tmp_path):
    lockfile = json.loads(LOCKFILE.read_text())
    for image in lockfile["environment"]["images"]:
        for pin in image["inputs"]:
            if pin["kind"] == "deb" and pin["name"] == "libc6":
                pin["digest"] = "sha256:" + "0" * 64
                version = pin["version"]
    output = tmp_path / "demo-nix.lock.json"
    output.write_text(json.dumps(lockfile, indent=2))
    done = _lock(output, tmp_path / "cache")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"deb libc6 {version}: sha256 mismatch" in line and "Traceback" not in done.stderr


def test_the_flake_checks_offline_and_builds_the_locked_image(tmp_path):
    # Re-locking with the committed pins puts every input into the store (and must give
    # the committed lockfile, byte for byte, for this user with a cold cache).
    relocked = tmp_path / "demo-nix.lock.json"
    shutil.copyfile(LOCKFILE, relocked)
    done = _lock(relocked, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    _assert_relocks_the_committed_lockfile(relocked)

    clone = git_visible_copy(tmp_path / "clone")
    flags = ["--option", "substituters", ""]
    check = nixstore.run(["nix", "flake", "check", *flags, str(clone)], check=False)
    assert check.returncode == 0, check.stderr
    out = tmp_path / "result"
    build = nixstore.run(
        ["nix", "build", *flags, "-o", str(out), f"{clone}#demo__calc-1"], check=False
    )
    assert build.returncode == 0, build.stderr
    with tarfile.open(out) as archive:
        manifest = json.load(archive.extractfile("manifest.json"))  # type: ignore[arg-type]
    config_digest = "sha256:" + manifest[0]["Config"].removesuffix(".json")
    assert config_digest == _image_digest(json.loads(LOCKFILE.read_text()), "demo__calc-1")


@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root and rootless: scripts/test runs this as root")
def test_the_lockfile_relocks_identically_as_root_and_rootless_and_nix_finds_no_drift(
    tmp_path,
):
    # root: a cold evalrepro cache, the local store
    root_lock = tmp_path / "root" / "demo-nix.lock.json"
    root_lock.parent.mkdir()
    shutil.copyfile(LOCKFILE, root_lock)
    done = _lock(root_lock, tmp_path / "root" / "cache")
    assert done.returncode == 0, done.stderr
    _assert_relocks_the_committed_lockfile(root_lock)

    # rootless: another user, through the daemon, in a copy of the checkout
    user = rootless_user()
    shared = Path(f"/tmp/evalrepro-nix-{uuid.uuid4().hex[:12]}")
    shared.mkdir(mode=0o777)
    try:
        shutil.copyfile(LOCKFILE, shared / "demo-nix.lock.json")
        shutil.chown(shared, user)
        shutil.chown(shared / "demo-nix.lock.json", user)
        command = [
            str(REPO / "scripts" / "as-rootless-user"),
            ".venv/bin/python", "-m", "evalrepro", "lock", "+experiment=demo",
            "environment.builder=nix", "--output", str(shared / "demo-nix.lock.json"),
            "--cache-dir", str(shared / "cache"),
        ]  # fmt: skip
        rootless = subprocess.run(
            command,
            env={**os.environ, "EVALREPRO_USER": user},
            capture_output=True,
            text=True,
            check=False,
        )
        assert rootless.returncode == 0, rootless.stderr[-2000:]
        _assert_relocks_the_committed_lockfile(shared / "demo-nix.lock.json")
    finally:
        subprocess.run(["rm", "-rf", str(shared)], check=False)

    # Nix builds every derivation of the images again and compares: no difference.
    images = json.loads(LOCKFILE.read_text())["environment"]["images"]
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {"records": images, "build": [i["key"] for i in images if i["layer"] == "instance"]}
        )
    )
    recipe = str(REPO / "backends" / "nix" / "build.nix")
    drvs = nixstore.run(["nix-instantiate", recipe, "--argstr", "spec", str(spec)]).stdout.split()
    closure = nixstore.run(["nix-store", "--query", "--requisites", *drvs]).stdout.split()
    ours = [d for d in closure if d.endswith(".drv") and "-evalrepro-" in d and "busybox" not in d]
    assert len(ours) > len(drvs)  # the images, their layers and the Python that writes them
    check = nixstore.run(
        ["nix-store", "--realise", "--check", *ours, *nixstore.options()], check=False
    )
    assert check.returncode == 0 and "may not be deterministic" not in check.stderr, check.stderr
