"""Prebuilt images pinned by digest, pulled for real from a registry on 127.0.0.1.

The test starts Debian's ``docker-registry`` on a free port of 127.0.0.1, with its
storage in a temporary folder, and pushes images made here: one on top of the demo's
calc-1 instance image (so that a real trial runs in it), one without Python. Nothing
leaves the machine.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build.image import CONTRACT_CHECK, PrebuiltImageBuilder
from evalrepro.build.images import ImageChain, package_manifest_name
from evalrepro.digest import sha256_bytes
from evalrepro.errors import UserError
from evalrepro.pipeline import lock_experiment, run_experiment
from evalrepro.plan.dataset import instance_test_spec
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.plan.plan import build_plan
from evalrepro.publish.verify import check_run
from evalrepro.records.image import BuildFailure, PinnedInput
from evalrepro.run.backend import Backend
from evalrepro.run.rundir import RunDirectory
from evalrepro.sandbox import shipped_supervisor
from tests.podman_support import cache_dir, demo_config, needs_podman, run_demo

INSTANCE = "demo__calc-1"
REGISTRY = shutil.which("docker-registry")
needs_registry = [
    *needs_podman,
    pytest.mark.skipif(
        REGISTRY is None and not os.environ.get("CI"),
        reason="docker-registry is not installed (scripts/setup installs it)",
    ),
]


def with_marks(test):
    for mark in reversed(needs_registry):
        test = mark(test)
    return test


def image_config(reference: str, *overrides: str):
    return demo_config(
        "demo",
        f"dataset.instance_ids=[{INSTANCE}]",
        "environment.builder[kind]=image",
        "environment.builder[tls_verify]=false",
        f"environment.builder.images[{INSTANCE}]={reference}",
        *overrides,
    )


def prepare(reference: str, locked=None):
    """The image builder's prepare for the calc-1 instance: (its chain or failure, builder)."""
    config = image_config(reference)
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    (sample,) = config.dataset.load()
    spec = instance_test_spec(config.dataset, sample)
    return backend.builder.prepare([spec], {}, locked)[INSTANCE], backend


# --- the registry and the images in it -------------------------------------------------


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """``host:port`` of a docker-registry on 127.0.0.1, and its storage folder."""
    folder = tmp_path_factory.mktemp("registry")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"127.0.0.1:{port}"
    (folder / "config.yml").write_text(
        "version: 0.1\nlog:\n  level: warn\n"
        f"storage:\n  filesystem:\n    rootdirectory: {folder / 'storage'}\n"
        f"http:\n  addr: {address}\n"
    )
    log = (folder / "registry.log").open("wb")
    process = subprocess.Popen(
        [REGISTRY or "docker-registry", "serve", str(folder / "config.yml")],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"docker-registry did not start: {folder / 'registry.log'}")
            time.sleep(0.1)
        yield address, folder / "storage"
    finally:
        process.terminate()
        process.wait(10)
        log.close()


@pytest.fixture(scope="module")
def runtime():
    backend = Backend.open(demo_config("demo").environment, cache_dir())
    backend.check()
    return backend.runtime


@pytest.fixture(scope="module")
def instance_tag():
    """The demo's calc-1 instance image (built by the demo's own builder if missing)."""
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]")
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    (planned,) = build_plan(config, backend.builder, cache_dir()).trials
    assert isinstance(planned.image, ImageChain), planned.image
    return planned.image.image.tag


@pytest.fixture(scope="module")
def pushed(registry, runtime, tmp_path_factory):
    """push(containerfile text, name) -> the pinned reference of an image made from it,
    pushed to the registry and then removed from the store (so that it must be pulled)."""
    address, _ = registry
    made = []

    def push(containerfile: str, name: str, files: dict[str, bytes] | None = None) -> str:
        context = tmp_path_factory.mktemp("context")
        for file, data in (files or {}).items():
            (context / file).write_bytes(data)
        label = uuid.uuid4().hex[:12]
        (context / "Containerfile").write_text(f"{containerfile}\nLABEL evalrepro.test={label}\n")
        local = f"localhost/evalrepro-imgtest-{name}:{label}"
        # No layer cache (as evalrepro's own builds): its lookup walks every image of the
        # shared store and fails on one another test removes meanwhile ("layer not known").
        runtime.podman("build", "--pull=never", "--layers=false", "--tag", local, str(context))
        digest_file = context / "digest"
        remote = f"{address}/evalrepro/{name}"
        runtime.podman(
            "push", "--tls-verify=false", "--digestfile", str(digest_file), local, remote
        )
        runtime.podman("rmi", local)
        reference = f"{remote}@{digest_file.read_text().strip()}"
        made.append(reference)
        return reference

    yield push
    for reference in made:
        runtime.podman("rmi", "--force", reference, check=False)


@pytest.fixture(scope="module")
def demo_reference(pushed, instance_tag):
    return pushed(f"FROM {instance_tag}", "demo-calc")


def inspect(runtime, reference: str) -> dict:
    (found,) = json.loads(runtime.podman("image", "inspect", "--format", "json", reference).stdout)
    return found


def other_digit(reference: str) -> str:
    """The reference with the last hex digit of its digest changed."""
    return reference[:-1] + ("0" if reference[-1] != "0" else "1")


# --- pulled by digest -------------------------------------------------------------------


@with_marks
def test_an_image_pinned_by_digest_is_pulled_and_both_digests_are_recorded(demo_reference, runtime):
    chain, _ = prepare(demo_reference)
    assert isinstance(chain, ImageChain), chain
    (record,) = chain.layers
    repository, manifest_digest = demo_reference.split("@")
    assert record.builder == "image" and record.built and record.tag == demo_reference
    assert record.inputs == [
        PinnedInput(kind="image", name=repository, digest=manifest_digest, source=demo_reference)
    ]
    found = inspect(runtime, demo_reference)
    # The manifest digest is what was asked for; the Id (config digest) is what runs.
    assert record.image_digest == f"sha256:{found['Id']}" != manifest_digest
    assert demo_reference in found["RepoDigests"]
    assert record.package_manifest_digest is not None  # a Debian image: its dpkg list

    again, _ = prepare(demo_reference)
    assert isinstance(again, ImageChain) and not again.image.built  # in the store: no pull
    assert again.image.image_digest == record.image_digest


@with_marks
def test_a_trial_runs_in_the_pulled_image_and_the_lockfile_pins_its_id(
    demo_reference, runtime, tmp_path
):
    results, text = run_demo(image_config(demo_reference), tmp_path / "run")
    (line,) = results.trials
    assert line.instance_id == INSTANCE and line.outcome == "resolved", text
    lockfile = read_lockfile(RunDirectory(tmp_path / "run").lockfile_path)
    assert lockfile.environment.builder == "image"
    (image,) = lockfile.environment.images
    assert image.tag == demo_reference
    assert image.image_digest == f"sha256:{inspect(runtime, demo_reference)['Id']}"


# --- made the way SWE-bench's are, adapted ---------------------------------------------

#: A SWE-bench instance image's layout, from Debian packages (no Docker Hub here): the
#: demo's calc-1 image turned into one made as SWE-bench's Dockerfiles make theirs. The
#: repo cloned into /testbed by root and reset to the base commit, its remote removed;
#: the tests' Python in an environment at conda's place, "activated" by a script; no
#: harness store; uid 1000 is "nonroot" (SWE-bench's base adds it), there is no "tester".
SWEBENCH_LIKE = """FROM {instance}
RUN set -eu; export PATH=/usr/sbin:/usr/bin:/sbin:/bin; \\
    mkdir -p /opt/miniconda3/envs /opt/miniconda3/bin; \\
    cp -a /opt/venv /opt/miniconda3/envs/testbed; rm -rf /opt/venv; \\
    for f in /opt/miniconda3/envs/testbed/bin/* /opt/miniconda3/envs/testbed/pyvenv.cfg; do \\
      if [ -f "$f" ] && [ ! -L "$f" ]; then sed -i 's|/opt/venv|{env}|g' "$f"; fi; \\
    done; \\
    echo 'export PATH={env}/bin:$PATH' > /opt/miniconda3/bin/activate; \\
    git clone -q --no-local --no-checkout /opt/evalrepro/repo.git /testbed.new; \\
    git -C /testbed.new reset -q --hard {base}; git -C /testbed.new remote remove origin; \\
    rm -rf /testbed /opt/evalrepro; mv /testbed.new /testbed; \\
    sed -i '/^tester:/d' /etc/passwd /etc/group /etc/shadow /etc/gshadow; rm -rf /home/tester; \\
    useradd --create-home --uid 1000 --user-group nonroot
WORKDIR /testbed
"""
CONDA_ENV = "/opt/miniconda3/envs/testbed"
#: Not a fix of calc-1: a new file, the fail-to-pass test still fails.
WRONG_PATCH = (
    "diff --git a/calc/notes.py b/calc/notes.py\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/calc/notes.py\n"
    "@@ -0,0 +1 @@\n"
    '+NOTE = "not a fix"\n'
)


@pytest.fixture(scope="module")
def swebench_reference(pushed, instance_tag, runtime):
    (sample,) = image_config("127.0.0.1:1/x@sha256:" + "a" * 64).dataset.load()
    containerfile = SWEBENCH_LIKE.format(
        instance=instance_tag, env=CONDA_ENV, base=sample.base_commit
    )
    yield pushed(containerfile, "swebench-like")
    # The adapter layers built on it go before it (pushed's own cleanup).
    for tag in ADAPTED_TAGS:
        runtime.podman("rmi", "--force", tag, check=False)


#: The adapter layers this session made (removed with the image they were made on).
ADAPTED_TAGS: set[str] = set()


def adapted(*overrides: str) -> list[str]:
    return ["+environment.builder.adapt={}", *overrides]


def prepare_adapted(reference: str, *overrides: str, locked=None):
    config = image_config(reference, *adapted(*overrides))
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    (sample,) = config.dataset.load()
    spec = instance_test_spec(config.dataset, sample)
    chain = backend.builder.prepare([spec], {}, locked)[INSTANCE]
    if isinstance(chain, ImageChain):
        ADAPTED_TAGS.add(chain.image.tag)
    return chain


@with_marks
def test_an_image_made_the_way_swebench_does_is_refused_as_it_is(swebench_reference, runtime):
    failure, _ = prepare(swebench_reference)
    assert isinstance(failure, BuildFailure)
    assert "/testbed is owned by uid 0, not by the test user (uid 1000)" in failure.reason
    assert "no /opt/evalrepro/repo.git" in failure.reason


@with_marks
def test_the_adapter_layer_is_built_from_pins_on_the_pulled_image_and_found_again(
    swebench_reference, runtime
):
    chain = prepare_adapted(swebench_reference)
    assert isinstance(chain, ImageChain), chain
    pulled, adapter = chain.layers
    repository, manifest_digest = swebench_reference.split("@")
    assert pulled.layer == "image" and pulled.inputs == [
        PinnedInput(
            kind="image", name=repository, digest=manifest_digest, source=swebench_reference
        )
    ]
    assert pulled.image_digest == f"sha256:{inspect(runtime, swebench_reference)['Id']}"
    assert pulled.package_manifest_digest is not None  # the pulled image's dpkg list
    # The adapter: a layer on the pulled image's key, its recipe and settings its inputs.
    assert adapter.builder == "image" and adapter.layer == "adapt"
    assert adapter.parent_key == pulled.key and adapter.tag.startswith("localhost/evalrepro-adapt:")
    recipe = runtime.files / "Containerfile.adapt"
    assert (
        PinnedInput(
            kind="recipe", name="Containerfile.adapt", digest=sha256_bytes(recipe.read_bytes())
        )
        in adapter.inputs
    )
    assert {(i.name, i.version) for i in adapter.inputs if i.kind == "setting"} >= {
        ("python_env", CONDA_ENV)
    }
    assert adapter.image_digest == f"sha256:{runtime.image_id(adapter.tag)}"
    assert inspect(runtime, adapter.tag)["Parent"] in ("", pulled.image_digest.split(":")[1])

    # What the supervisor needs is there now, made by the layer.
    done = runtime.podman(
        "run", "--rm", "--network", "none", adapter.image_digest, "/bin/sh", "-c",
        "stat -c %u /testbed /home/tester; readlink /opt/venv; stat -c %u /opt/evalrepro/repo.git;"
        " git --git-dir /opt/evalrepro/repo.git cat-file -t HEAD; id -u tester; id -g tester",
    )  # fmt: skip
    assert done.stdout.split() == ["1000", "1000", CONDA_ENV, "0", "commit", "1000", "1000"]
    # An agent's sandbox names its user: tester is one, beside the image's own uid 1000.
    done = runtime.podman(
        "run", "--rm", "--network", "none", "--user", "tester", adapter.image_digest,
        "/bin/sh", "-c", 'id -u; echo "$HOME"; getent passwd nonroot | cut -d: -f3',
    )  # fmt: skip
    assert done.stdout.split() == ["1000", "/home/tester", "1000"]

    # Found again, not rebuilt; a setting changed is another layer (another key).
    again = prepare_adapted(swebench_reference)
    assert isinstance(again, ImageChain) and not again.image.built
    assert again.image.key == adapter.key and again.image.image_digest == adapter.image_digest
    # Built again from the same pins: the same bytes, the same Id.
    runtime.podman("rmi", adapter.tag)
    rebuilt = prepare_adapted(swebench_reference)
    assert isinstance(rebuilt, ImageChain) and rebuilt.image.built
    assert rebuilt.image.image_digest == adapter.image_digest
    elsewhere = prepare_adapted(
        swebench_reference, "environment.builder.adapt.python_env=/opt/elsewhere"
    )
    assert isinstance(elsewhere, BuildFailure) and elsewhere.layer == "adapt"
    assert elsewhere.key != adapter.key
    assert elsewhere.reason.startswith(f"instance {INSTANCE}: building the adapter on ")
    assert elsewhere.reason.endswith(" failed: no /opt/elsewhere/bin/python"), elsewhere.reason
    assert [layer.key for layer in elsewhere.below] == [pulled.key]


@with_marks
def test_trials_run_in_the_adapted_image_and_the_lockfile_pins_both_layers(
    swebench_reference, runtime, tmp_path
):
    results, text = run_demo(image_config(swebench_reference, *adapted()), tmp_path / "gold")
    (line,) = results.trials
    assert line.outcome == "resolved", text
    predictions = tmp_path / "wrong.jsonl"
    predictions.write_text(
        json.dumps(
            {"instance_id": INSTANCE, "model_name_or_path": "wrong", "model_patch": WRONG_PATCH}
        )
        + "\n"
    )
    results, text = run_demo(
        image_config(
            swebench_reference, *adapted(), "target=model_a", f"target.path={predictions}"
        ),
        tmp_path / "wrong",
    )
    (line,) = results.trials
    assert line.outcome == "unresolved", text

    lockfile = read_lockfile(RunDirectory(tmp_path / "gold").lockfile_path)
    pulled, adapter = lockfile.environment.images
    assert pulled.layer == "image" and adapter.layer == "adapt"
    assert pulled.tag == swebench_reference
    assert pulled.inputs[0].digest == swebench_reference.split("@")[1]
    assert pulled.image_digest == f"sha256:{inspect(runtime, swebench_reference)['Id']}"
    assert adapter.parent_key == pulled.key
    assert adapter.image_digest == f"sha256:{runtime.image_id(adapter.tag)}"
    (trial,) = lockfile.trials
    assert trial.image_key == adapter.key
    # The pulled image's package list is kept beside the results, as the base's.
    manifest = tmp_path / "gold" / package_manifest_name(pulled.key)
    assert sha256_bytes(manifest.read_bytes()) == pulled.package_manifest_digest
    assert adapter.package_manifest_digest is None
    assert check_run(tmp_path / "gold").problems == []
    # Run again from the lockfile: the same plan, the same outcome.
    outcome = run_experiment(
        image_config(swebench_reference, *adapted()),
        Console(file=io.StringIO(), width=200),
        run_dir=tmp_path / "from-lock",
        cache_dir=cache_dir(),
        locked=lockfile,
    )
    assert [t.outcome for t in outcome.results.trials] == ["resolved"]

    # A second lock finds both layers: nothing is pulled or built, the same images.
    console = Console(file=io.StringIO(), width=200)
    again = lock_experiment(
        image_config(swebench_reference, *adapted()),
        console,
        output=tmp_path / "again.lock.json",
        cache_dir=cache_dir(),
    )
    assert "images: 2 layers ready (0 built now, 2 reused)" in console.file.getvalue()
    assert again.environment.images == lockfile.environment.images
    # Run again from the lockfile: the locked layers are the ones found.
    chain = prepare_adapted(
        swebench_reference, locked=[image.record() for image in lockfile.environment.images]
    )
    assert isinstance(chain, ImageChain) and not chain.image.built
    assert [r.image_digest for r in chain.layers] == [pulled.image_digest, adapter.image_digest]
    # The locked layer under another name only (as a bundle loads it): found, not built.
    other = f"localhost/evalrepro-imgtest-adapted:{adapter.key[7:19]}"
    runtime.podman("tag", adapter.image_digest, other)
    try:
        runtime.podman("rmi", adapter.tag)
        # (its contract is checked again, in that image)
        for verdict in (cache_dir() / "images").glob(f"{adapter.image_digest[7:]}.check-*"):
            verdict.unlink()
        chain = prepare_adapted(
            swebench_reference, locked=[image.record() for image in lockfile.environment.images]
        )
        assert isinstance(chain, ImageChain) and not chain.image.built
        assert chain.image.image_digest == adapter.image_digest
    finally:
        runtime.podman("rmi", other, check=False)


# --- refused ----------------------------------------------------------------------------


@with_marks
def test_a_digest_the_registry_does_not_have_is_refused_naming_the_instance(
    demo_reference, tmp_path
):
    wrong = other_digit(demo_reference)
    failure, _ = prepare(wrong)
    assert isinstance(failure, BuildFailure)
    assert failure.reason.startswith(f"instance {INSTANCE}: pulling {wrong} failed: ")
    assert "\n" not in failure.reason
    # evalrepro lock refuses, in one line.
    with pytest.raises(UserError) as refused:
        lock_experiment(
            image_config(wrong),
            _quiet_console(),
            output=tmp_path / "wrong.lock.json",
            cache_dir=cache_dir(),
        )
    message = str(refused.value)
    assert "\n" not in message and INSTANCE in message and wrong in message
    assert not (tmp_path / "wrong.lock.json").exists()


@with_marks
def test_a_registry_serving_other_bytes_under_the_digest_is_refused(pushed, registry):
    victim = pushed("FROM scratch\nCOPY hello /hello", "tampered", {"hello": b"victim\n"})
    other = pushed("FROM scratch\nCOPY hello /hello", "tampered", {"hello": b"other\n"})
    _, storage = registry
    blobs = storage / "docker" / "registry" / "v2" / "blobs" / "sha256"

    def blob(reference: str) -> Path:
        digest = reference.rsplit("@sha256:", 1)[1]
        return blobs / digest[:2] / digest / "data"

    # The registry now answers the victim's digest with the other image's manifest.
    shutil.copy(blob(other), blob(victim))
    failure, _ = prepare(victim)
    assert isinstance(failure, BuildFailure)
    assert failure.reason.startswith(f"instance {INSTANCE}: pulling {victim} failed: ")
    assert "does not match" in failure.reason  # podman's own check of the manifest's bytes


@with_marks
def test_an_id_other_than_the_locked_one_is_refused_naming_both_digests(demo_reference):
    chain, _ = prepare(demo_reference)
    assert isinstance(chain, ImageChain), chain
    pulled = chain.image.image_digest
    forged = "sha256:" + "0" * 64
    with pytest.raises(UserError) as refused:
        prepare(demo_reference, locked=[chain.image.model_copy(update={"image_digest": forged})])
    message = str(refused.value)
    assert "\n" not in message
    assert f"instance {INSTANCE}" in message and pulled in message and forged in message
    # The locked Id itself is accepted.
    same, _ = prepare(demo_reference, locked=[chain.image])
    assert isinstance(same, ImageChain) and same.image.image_digest == pulled


@with_marks
def test_an_image_without_python3_is_refused_before_any_trial(pushed):
    reference = pushed("FROM scratch\nCOPY hello /hello", "nopython", {"hello": b"hi\n"})
    failure, _ = prepare(reference)
    assert isinstance(failure, BuildFailure)
    assert failure.reason == (
        f"instance {INSTANCE}: {reference} has no /usr/bin/python3 to run the supervisor "
        "with (command not found)"
    )


@with_marks
def test_an_image_whose_python_path_the_test_user_may_write_is_refused(pushed, instance_tag):
    # A module planted there would be imported as the standard library or the framework.
    reference = pushed(
        f"FROM {instance_tag}\nRUN chmod o+w /opt/venv/lib/python3*/site-packages", "writable"
    )
    failure, _ = prepare(reference)
    assert isinstance(failure, BuildFailure)
    assert failure.reason.startswith(f"instance {INSTANCE}: {reference} cannot run trials: ")
    assert (
        "/site-packages is writable by the test user (uid 1000): code under test could "
        "plant a module there" in failure.reason
    ), failure.reason


# --- the contract check's Python path rule (the host's Python, no podman) ---------------


def test_the_contract_check_names_python_path_folders_the_test_user_may_write(tmp_path):
    """Run as it runs in an image, here: the host's /usr/bin/python3 is "the image's", and
    the folders the test puts on PYTHONPATH are its path (besides the host's own, which
    only root may write)."""
    if not os.path.exists("/usr/bin/python3"):
        pytest.skip("no /usr/bin/python3 to run the check with")
    me, other = os.getuid(), os.getuid() + 4242
    folders = {
        "mine": 0o755,  # owned by the test user, who may write it
        "mine-read-only": 0o555,
        "group-writable": 0o775,  # the test user's group may write it
        "world-writable": 0o777,
        "read-only": 0o755,
    }
    for name, mode in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name).chmod(mode)
    (tmp_path / "testbed").mkdir()  # the tree: the test user's by design
    archive = tmp_path / "supervisor.pyz"
    archive.write_bytes(shipped_supervisor().archive)

    def writable(uid: int, gid: int, *names: str) -> list[str]:
        path = [str(tmp_path / n) for n in (*names, "testbed")]
        done = subprocess.run(
            ["/usr/bin/python3", "-I", "-S", "-c", CONTRACT_CHECK, str(tmp_path / "testbed"),
             str(tmp_path / "no-store"), str(archive), "0" * 40, str(uid), str(gid)],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(path)},
            capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        problems = json.loads(done.stdout.splitlines()[-1])["problems"]
        return [p for p in problems if str(tmp_path) in p and "writable" in p]

    def line(name: str, uid: int) -> str:
        return (
            f"{tmp_path / name} is writable by the test user (uid {uid}): code under test "
            "could plant a module there"
        )

    assert writable(me, os.getgid() + 4242, "mine", "mine-read-only") == [line("mine", me)]
    assert writable(other, os.getgid(), "group-writable", "read-only") == [
        line("group-writable", other)
    ]
    assert writable(other, os.getgid() + 4242, "world-writable", "read-only", "mine") == [
        line("world-writable", other)
    ]
    # A writable folder below a read-only one is named too; a missing entry names the folder
    # it would be created in.
    (tmp_path / "read-only" / "pkg").mkdir()
    (tmp_path / "read-only" / "pkg").chmod(0o777)
    assert writable(other, os.getgid() + 4242, "read-only") == [line("read-only/pkg", other)]
    assert writable(other, os.getgid() + 4242, "world-writable/missing.zip") == [
        line("world-writable", other)
    ]


# --- config (no podman) -----------------------------------------------------------------


@pytest.mark.parametrize(
    "reference",
    [
        "127.0.0.1:5000/evalrepro/demo:latest",  # a tag, not a digest
        "evalrepro/demo@sha256:" + "a" * 64,  # no registry: a short name
        "127.0.0.1:5000/evalrepro/demo@sha256:abc",  # not a whole digest
        "127.0.0.1:5000/evalrepro/demo:1@sha256:" + "a" * 64,  # a tag and a digest
    ],
)
def test_a_reference_not_pinned_by_digest_is_a_one_line_config_error(reference):
    with pytest.raises(UserError) as refused:
        image_config(reference)
    message = str(refused.value)
    assert "\n" not in message and f"instance {INSTANCE}" in message and reference in message


@pytest.mark.parametrize("python_env", ["opt/env", "/opt/env;rm -rf /", "/opt/../etc", "/opt/a b"])
def test_an_adapter_python_env_not_a_plain_absolute_path_is_a_one_line_config_error(python_env):
    # It goes into the adapter layer's build command.
    with pytest.raises(UserError) as refused:
        image_config(
            "127.0.0.1:1/x@sha256:" + "a" * 64,
            *adapted(f"environment.builder.adapt.python_env='{python_env}'"),
        )
    message = str(refused.value)
    assert "\n" not in message and "environment.builder.adapt.python_env" in message
    assert "is not a plain absolute path" in message


def test_an_instance_without_an_image_is_a_one_line_error_naming_it():
    config = demo_config(
        "demo",
        "dataset.instance_ids=[demo__calc-1,demo__calc-2]",
        "environment.builder[kind]=image",
        f"environment.builder.images[demo__calc-1]=127.0.0.1:1/x@sha256:{'a' * 64}",
    )
    specs = [instance_test_spec(config.dataset, sample) for sample in config.dataset.load()]
    builder = PrebuiltImageBuilder(config.environment, None, cache_dir())  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"no image for instance demo__calc-2; "):
        builder.prepare(specs, {})


def _quiet_console() -> Console:
    return Console(file=io.StringIO(), width=200)
