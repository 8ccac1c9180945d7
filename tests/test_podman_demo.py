"""The demo, for real: rootless podman builds three layers and runs every trial.

These tests are the written expectations of ../demo_expectations.py checked in
containers: gold resolves everywhere, the two models end exactly as expected (the
forged, looping, network-trying and test-editing patches included), and image layers
are rebuilt only when their inputs change.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import uuid

import pytest

from evalrepro.build.images import ImageChain
from evalrepro.config.environment import Limits
from evalrepro.config.spec import RepoSpec
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.plan.plan import build_plan
from evalrepro.records.image import BuildFailure
from evalrepro.records.trial import read_trial_result
from evalrepro.records.words import suspect_words
from evalrepro.report.run_report import build_run_report
from evalrepro.run.backend import Backend
from evalrepro.run.execute import AttemptSettings, TrialJob
from evalrepro.run.recorder import Recorder
from evalrepro.run.rundir import RunDirectory
from evalrepro.runtimes.supervision import region_text
from tests.demo_expectations import (
    EDITS_TEST_FILES,
    EXPECTED,
    FORGES_OUTPUT,
    SUSPECT,
    TIMES_OUT,
    USES_NETWORK,
)
from tests.podman_support import cache_dir, demo_config, needs_podman, run_demo

pytestmark = needs_podman


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """Each demo experiment run once: {target: (results, console text, run dir)}."""
    runs = {}
    for experiment, target in (("demo", "gold"), ("model_a", "model_a"), ("model_b", "model_b")):
        run_dir = tmp_path_factory.mktemp(experiment)
        results, text = run_demo(demo_config(experiment), run_dir)
        runs[target] = (results, text, run_dir)
    return runs


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda key: f"{key[0]}-{key[1]}")
def test_every_demo_trial_ends_as_written_down(demo_runs, key):
    target, instance_id = key
    results, _, _ = demo_runs[target]
    (line,) = [line for line in results.trials if line.instance_id == instance_id]
    assert line.outcome == EXPECTED[key], line


def test_the_looping_patch_is_killed_at_the_timeout_and_scored_invalid(demo_runs):
    for target, instance_id in TIMES_OUT:
        result = _trial_result(demo_runs[target][2], instance_id)
        assert result.score.reason == "timeout"
        log = _final_log(demo_runs[target][2], instance_id)
        assert log.rstrip().endswith(">>>>> Tests Timed Out")


def test_forged_result_lines_are_in_the_log_but_do_not_resolve(demo_runs):
    for (target, instance_id), forged in FORGES_OUTPUT.items():
        assert forged in _final_log(demo_runs[target][2], instance_id)
        assert _trial_result(demo_runs[target][2], instance_id).score.outcome != "resolved"


def test_a_patch_that_needs_the_network_does_not_get_it(demo_runs):
    for target, instance_id in USES_NETWORK:
        assert _trial_result(demo_runs[target][2], instance_id).score.outcome == "unresolved"


def test_trial_containers_have_no_network_interface_but_loopback(demo_runs, tmp_path):
    # The same backend.run a trial uses, with a test command that reports the network.
    plan, _ = _layers_built(demo_config("demo"))
    planned = plan.trials[0]
    probe = (
        'ls /sys/class/net; python3 -c "import socket; '
        "socket.create_connection(('192.0.2.1', 80), timeout=3)\" || echo NO-ROUTE; "
        "echo HOSTS; cat /etc/hosts /etc/resolv.conf; hostname"
    )
    script = planned.spec.eval_script.model_copy(update={"test_command": probe})
    probing = dataclasses.replace(
        planned, spec=planned.spec.model_copy(update={"eval_script": script})
    )
    settings = AttemptSettings(
        limits=Limits(),
        timeout=30,
        allow_user_namespaces=False,
        sandbox_prefix=f"evalrepro-net-{os.getpid()}-",
        max_attempts=1,
    )
    spec = TrialJob(probing, settings, Recorder(tmp_path)).next_spec()
    runtime = Backend.open(demo_config("demo").environment, cache_dir()).runtime
    output = runtime.attempt(spec)
    assert output.report.complete and output.report.runtime.error is None
    text = region_text(output.artifacts["test_output.txt"], output.report.region)
    assert text.split()[:1] == ["lo"] and "NO-ROUTE" in text
    # No name, address or resolver of the host's: the code under test learns nothing of
    # the machine it runs on.
    seen = text.split("HOSTS", 1)[1]
    host = {socket.gethostname(), socket.getfqdn(), "host.containers.internal"}
    host |= {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    for name in sorted(host - {"localhost", "127.0.0.1", "::1"}):
        assert name not in seen, (name, seen)
    assert "nameserver" not in seen


def test_every_attempt_keeps_its_artifacts_with_digests(demo_runs):
    _, _, run_dir = demo_runs["gold"]
    result = _trial_result(run_dir, "demo__calc-1")
    (attempt,) = result.attempts
    names = {artifact.path.rsplit("/", 1)[1] for artifact in attempt.artifacts}
    assert {
        "patch.diff",
        "program.json",
        "test.patch",
        "test_output.txt",
        "supervisor.json",
        "runtime.log",
    } <= names
    assert all(artifact.matches(run_dir) for artifact in attempt.artifacts)
    # The image it ran in is the lockfile's record (by the trial's image key), not a copy.
    lockfile = read_lockfile(run_dir)
    (trial,) = [t for t in lockfile.trials if t.trial_id == result.trial.trial_id]
    layers = {image.key: image for image in lockfile.environment.images}
    chain, key = [], trial.image_key
    while key:
        chain.insert(0, layers[key].layer)
        key = layers[key].parent_key
    assert chain == ["base", "env", "history", "instance"]


def test_the_trial_result_records_which_limits_the_host_enforced(demo_runs):
    result = _trial_result(demo_runs["gold"][2], "demo__calc-1")
    assert {"memory", "pids", "cpus", "disk", "output", "time", "nofile", "nproc"} <= set(
        result.limits
    )
    if os.geteuid() != 0:
        assert "not enforced" in result.limits["cpus"]


def test_the_patch_method_is_recorded(demo_runs):
    result = _trial_result(demo_runs["gold"][2], "demo__calc-1")
    assert result.attempts[0].observation.patch_method == "git_apply"


def test_a_second_run_builds_nothing(demo_runs, tmp_path):
    _, text, _ = demo_runs["gold"]  # the layers exist now, whatever the first run did
    results, text = run_demo(demo_config("demo"), tmp_path / "again")
    assert "0 built now" in text
    assert results.resolved == 12


def _layers_built(config):
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    plan = build_plan(config, backend.builder, cache_dir())
    chains = [p.image for p in plan.trials]
    assert not any(isinstance(chain, BuildFailure) for chain in chains)
    built = {
        (record.layer, record.key)
        for chain in chains
        if isinstance(chain, ImageChain)
        for record in chain.layers
        if record.built
    }
    return plan, built


def _with_spec(config, repo: str, **changes):
    specs = {name: dict(versions) for name, versions in config.dataset.specs.items()}
    specs[repo]["1.0"] = RepoSpec(**{**specs[repo]["1.0"].model_dump(), **changes})
    return config.model_copy(update={"dataset": config.dataset.model_copy(update={"specs": specs})})


def test_changing_a_test_command_rebuilds_nothing_but_changes_that_test_spec(demo_runs):
    config = demo_config("demo")
    before, _ = _layers_built(config)
    changed = _with_spec(config, "demo/calc", test_cmd="pytest -rA -vv -p no:cacheprovider")
    after, built = _layers_built(changed)
    assert built == set()
    digest = {p.sample.instance_id: p.trial.key.test_spec_digest for p in before.trials}
    for planned in after.trials:
        changed_spec = planned.sample.repo == "demo/calc"
        assert (planned.trial.key.test_spec_digest != digest[planned.sample.instance_id]) == (
            changed_spec
        )


def test_changing_packages_rebuilds_only_that_env_layer_and_its_instances(demo_runs):
    config = demo_config("demo")
    # A requirement whose marker is false changes the packages (so the env layer's key)
    # without a download; a fresh one each run makes this a real rebuild every time.
    inert = f"evalrepro-nonce==0.{uuid.uuid4().int % 10**9}; python_version < '3'"
    plan, built = _layers_built(
        _with_spec(
            config,
            "demo/calc",
            packages=[*config.dataset.specs["demo/calc"]["1.0"].packages, inert],
        )
    )
    try:
        calc_layers = {
            (record.layer, record.key)
            for planned in plan.trials
            if planned.sample.repo == "demo/calc"
            for record in planned.image.layers
            if record.layer != "base"
        }
        assert built == calc_layers
        assert {layer for layer, _ in built} == {"env", "history", "instance"}
    finally:
        tags = {
            record.tag
            for planned in plan.trials
            for record in planned.image.layers
            if (record.layer, record.key) in built
        }
        subprocess.run(["podman", "rmi", *sorted(tags)], capture_output=True, check=False)


def _trial_dir(run_dir, instance_id):
    (folder,) = (run_dir / "trials").glob(f"{instance_id}--s0--*")
    return folder


def _trial_result(run_dir, instance_id):
    return read_trial_result(_trial_dir(run_dir, instance_id) / "result.json")


def _final_log(run_dir, instance_id):
    result = _trial_result(run_dir, instance_id)
    folder = _trial_dir(run_dir, instance_id) / f"attempt-{len(result.attempts)}"
    return (folder / "test_output.txt").read_text(errors="replace")


def test_the_report_lists_the_trials_a_reviewer_should_look_at(demo_runs):
    run_dir = demo_runs["model_b"][2]
    directory = RunDirectory(run_dir)
    lockfile = read_lockfile(run_dir)
    report = build_run_report(run_dir, lockfile, directory.completed(lockfile))
    flagged = {f.instance_id: f for f in report.flagged}
    assert set(flagged) == {*(i for _, i in SUSPECT), *(i for _, i in EDITS_TEST_FILES)}
    for (_, instance_id), rule in SUSPECT.items():
        assert flagged[instance_id].reason == "suspect_patch"
        # Said in the rule's words, with the line of the patch.
        what, why = suspect_words(rule)
        assert any(f", {what} (`" in s and s.endswith(why) for s in flagged[instance_id].suspects)
    for _, instance_id in EDITS_TEST_FILES:
        assert flagged[instance_id].protected == ["tests/test_wrap.py (restored)"]
    gold = demo_runs["gold"][2]
    lockfile = read_lockfile(gold)
    assert build_run_report(gold, lockfile, RunDirectory(gold).completed(lockfile)).flagged == []
