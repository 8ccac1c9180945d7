"""Every adversarial patch of ``attacks.py``, run for real in podman, gets its documented
score; the host is untouched; the run completes; the next trial is still right.

All attacks run in one experiment: a predictions target whose samples 0.. are the
attacks on an instance and whose last sample is the instance's gold patch (the control
that runs beside and after them). Rootless (the users' mode) by default; the same run in
root podman is the ``root_podman`` test at the end.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalrepro.config.experiment import compose
from evalrepro.records.trial import read_trial_result
from tests.adversarial.attacks import ATTACKS, Attack, write_adversary
from tests.podman_support import needs_podman, run_demo, sandboxes_left, strays

pytestmark = needs_podman


@dataclass
class AdversarialRun:
    results: object
    console: str
    run_dir: Path
    expected: dict[tuple[str, int], Attack]
    samples: int
    canary: Path
    canary_bytes: bytes
    canary_mtime: int


def run_attacks(tmp: Path, *extra: str) -> AdversarialRun:
    adversary = write_adversary(tmp, ATTACKS)
    # A host file no trial may touch: in the home of the user who runs the containers.
    canary = Path.home() / f".evalrepro-canary-{secrets.token_hex(4)}"
    canary.write_bytes(secrets.token_bytes(64))
    canary_bytes, canary_mtime = canary.read_bytes(), canary.stat().st_mtime_ns
    run_dir = tmp / "run"
    results, console = run_demo(compose(adversary.config(*extra)), run_dir)
    return AdversarialRun(
        results,
        console,
        run_dir,
        adversary.expected,
        adversary.samples,
        canary,
        canary_bytes,
        canary_mtime,
    )


@pytest.fixture(scope="module")
def rootless(tmp_path_factory) -> AdversarialRun:
    return run_attacks(tmp_path_factory.mktemp("adversarial"))


def trial_results(run: AdversarialRun) -> dict[tuple[str, int], object]:
    results = {}
    for path in (run.run_dir / "trials").glob("*/result.json"):
        result = read_trial_result(path)
        results[(result.instance_id, result.sample_index)] = result
    return results


def check_attacks(run: AdversarialRun) -> None:
    results = trial_results(run)
    wrong = []
    for key, attack in sorted(run.expected.items()):
        result = results[key]
        got = (str(result.score.outcome), result.score.reason)
        if got != attack.expect:
            wrong.append(f"{attack.name}: {got} ({result.score.detail}), expected {attack.expect}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_each_attack_gets_its_documented_score(rootless, attack):
    results = trial_results(rootless)
    index = next(i for (iid, i), a in rootless.expected.items() if a is attack)
    result = results[(attack.instance, index)]
    assert (str(result.score.outcome), result.score.reason) == attack.expect, result.score.detail
    assert result.score.outcome != "resolved" or attack.kind == "control"


def test_the_gold_patch_beside_every_attack_still_resolves(rootless):
    results = trial_results(rootless)
    gold = {iid: r for (iid, index), r in results.items() if index == rootless.samples - 1}
    assert len(gold) == 12
    assert {iid: str(r.score.outcome) for iid, r in gold.items()} == dict.fromkeys(gold, "resolved")


def test_the_run_completes_with_every_planned_trial(rootless):
    planned = 12 * rootless.samples
    assert rootless.results.planned == planned
    assert len(trial_results(rootless)) == planned


def test_the_host_is_untouched(rootless):
    assert rootless.canary.read_bytes() == rootless.canary_bytes
    assert rootless.canary.stat().st_mtime_ns == rootless.canary_mtime
    # The attacks tried 30 GiB of memory and of disk: every sandbox is gone from podman's
    # store, and what it held (files written, memory taken) with it. (Not the machine's
    # free memory or disk, which whatever else runs here moves.)
    assert sandboxes_left(rootless.run_dir) == []


def test_nothing_the_trials_ran_is_left_running(rootless):
    if os.geteuid() == 0:
        pytest.skip("rootless only: as root the test uid is a host uid")
    test_uid = _subordinate_start() + 999  # the container's uid 1000 on the host
    # A removed container's processes may take a moment to be reaped, and a container of
    # another test may be starting meanwhile (seen before podman lists it): the first
    # empty look within the bound settles it.
    deadline = time.monotonic() + 30
    left = strays(rootless.run_dir, test_uid)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = strays(rootless.run_dir, test_uid)
    assert left == []


def test_the_run_directory_holds_only_the_users_own_files(rootless):
    owner = os.getuid()
    for path in rootless.run_dir.rglob("*"):
        stat = path.lstat()
        assert stat.st_uid == owner, path
        assert path.is_dir() or path.is_file(), f"{path}: neither a file nor a directory"


def test_a_refused_patch_never_reaches_a_container(rootless):
    results = trial_results(rootless)
    for key, attack in rootless.expected.items():
        if attack.expect[1] == "patch_unsafe":
            attempt = results[key].attempts[0]
            names = {Path(a.path).name for a in attempt.artifacts}
            assert "supervisor.json" not in names
            assert "unsafe" in attempt.observation.patch_problem


def test_test_infrastructure_changes_are_recorded_against_the_trial(rootless):
    results = trial_results(rootless)
    touched = {
        attack.name: [p.path for p in results[key].attempts[-1].observation.protected]
        for key, attack in rootless.expected.items()
        if attack.kind in ("infrastructure", "control")
    }
    assert touched["root-conftest"] == ["conftest.py"]
    assert touched["tests-conftest"] == ["tests/conftest.py"]
    assert touched["tests-init-result-class"] == ["tests/__init__.py"]
    assert touched["pyproject-test-section"] == ["pyproject.toml"]
    # Only pytest's own reading of setup.cfg sees these sections: it is what decides.
    assert touched["setup-cfg-carriage-return"] == ["setup.cfg"]
    assert touched["setup-cfg-file-separator"] == ["setup.cfg"]
    assert touched["gold-with-benign-conftest"] == ["conftest.py"]
    assert touched["gold-next-to-tests"] == []


def test_limits_name_what_stopped_the_trial(rootless):
    results = trial_results(rootless)
    details = {
        attack.name: results[key].score.detail
        for key, attack in rootless.expected.items()
        if attack.kind == "limits" or attack.name == "stdout-flood"
    }
    assert "limit of 256" in details["fork-bomb"]
    assert "limit 1.0 GiB" in details["memory-hogs"]
    assert "limit 1.0 GiB" in details["memfd-hoard"]
    assert "written, limit 1.0 GiB" in details["disk-filler"]
    assert "more than 8.0 MiB" in details["stdout-flood"]


def _subordinate_start() -> int:
    import pwd

    name = pwd.getpwuid(os.getuid()).pw_name
    for line in Path("/etc/subuid").read_text().splitlines():
        user, start, _count = line.split(":")
        if user in (name, str(os.getuid())):
            return int(start)
    raise AssertionError("no subordinate uids")


@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_as_root_every_attack_gets_the_same_score(tmp_path):
    run = run_attacks(tmp_path)
    check_attacks(run)
    assert run.canary.read_bytes() == run.canary_bytes
    assert sandboxes_left(run.run_dir) == []
