"""Limits on inodes: files created cost almost no bytes, so they have a limit of their own.

``environment.limits.inodes`` counts the files and folders the tests create (net) in the
folders the test user can write; ``inodes_reserve`` stops any trial when the filesystem has
fewer free inodes. Both are the supervisor's watchdog's, the same in rootless and root
podman (no kernel quota here), and each trial's ``result.json`` says so. A flood of empty
files (in the repository, in ``/tmp``, in ``/dev/shm``) is stopped as ``limit_inodes``,
with a detail that names the count; a gold patch that creates a few hundred files
beside the flood still resolves. The watchdog's counting and the reserve are also tested
on this machine's own filesystem, without a container.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalrepro.config.experiment import compose
from evalrepro.records.trial import read_trial_result
from evalrepro.sandbox import watchdog as watchdog_module
from evalrepro.sandbox.watchdog import InodeCount, Watchdog, writable_roots
from tests.adversarial.attacks import Attack, write_adversary
from tests.podman_support import needs_podman, run_demo, sandboxes_left

#: The inode limit of these runs: far below the floods, far above what the demo needs
#: (the control keeps 500 files). Low enough that a flood reaches it well within the
#: floods' timeout on a slow disk: this machine's ext4 creates from about 100 to 2,500
#: empty files a second under load (measured in root containers and on the host), so a
#: flood that stopped itself after 30 s, as these did, often ended below a limit of 20,000:
#: in the repository then as a timeout (the tests ran on), in /tmp as tests_failed.
INODES = 5_000
#: The floods' timeout: a flood is stopped by the limit, whatever the disk's speed, long
#: before it (5,000 files in 240 s is 21 a second).
FLOOD_TIMEOUT = 240


def _flood(folder: str) -> str:
    """Library code that creates up to 300,000 empty files in ``folder``, as fast as it
    can, until it is stopped: a flood that stops itself below the limit is not one the
    limit has to stop."""
    return (
        "\nimport os as _o\n"
        f"_d = {folder!r}\n"
        "_o.makedirs(_d, exist_ok=True)\n"
        "for _i in range(300000):\n"
        "    if _i % 1000 == 0:\n"
        "        _sub = _o.path.join(_d, str(_i // 1000))\n"
        "        _o.mkdir(_sub)\n"
        "    _o.close(_o.open(_o.path.join(_sub, str(_i)), _o.O_CREAT | _o.O_WRONLY, 0o644))\n"
    )


#: The gold fix, and 500 files the code under test keeps: well below the limit.
SOME_FILES = (
    "\nimport os as _o\n"
    "_o.makedirs('/tmp/kept', exist_ok=True)\n"
    "for _i in range(500):\n"
    "    open(f'/tmp/kept/{_i}', 'w').close()\n"
)

ATTACKS = (
    Attack(
        "inode-flood-repository",
        "limits",
        "demo__calc-1",
        "300,000 empty files in folders of the repository",
        ("invalid", "limit_inodes"),
        {"calc/evaluator.py": _flood("/testbed/.flood")},
    ),
    Attack(
        "inode-flood-tmp",
        "limits",
        "demo__ledger-3",
        "300,000 empty files in /tmp",
        ("invalid", "limit_inodes"),
        {"ledger/model.py": _flood("/tmp/flood")},
    ),
    Attack(
        "inode-flood-shm",
        "limits",
        "demo__textkit-3",
        "300,000 empty files in /dev/shm (a tmpfs: inodes there are kernel memory)",
        ("invalid", "limit_inodes"),
        {"textkit/wrap.py": _flood("/dev/shm/flood")},
    ),
    Attack(
        "gold-with-some-files",
        "control",
        "demo__calc-2",
        "the gold fix plus 500 files the code under test keeps",
        ("resolved", "tests_passed"),
        {"calc/evaluator.py": SOME_FILES},
        with_gold=True,
    ),
)


@dataclass
class SmallRun:
    """A run of a few attacks, each beside its instance's gold patch (the last sample)."""

    run_dir: Path
    expected: dict[tuple[str, int], Attack]
    samples: int
    instances: list[str]
    planned: int

    def results(self) -> dict[tuple[str, int], object]:
        found = {}
        for path in (self.run_dir / "trials").glob("*/result.json"):
            result = read_trial_result(path)
            found[(result.instance_id, result.sample_index)] = result
        return found

    def result(self, name: str):
        key = next(k for k, attack in self.expected.items() if attack.name == name)
        return self.results()[key]

    def wrong(self) -> list[str]:
        results = self.results()
        wrong = []
        for key, attack in sorted(self.expected.items()):
            score = results[key].score
            if (str(score.outcome), score.reason) != attack.expect:
                wrong.append(f"{attack.name}: {score.outcome} {score.reason} ({score.detail})")
        return wrong

    def complete(self) -> bool:
        return len(self.results()) == self.planned

    def gold_outcomes(self) -> set[str]:
        return {
            str(r.score.outcome)
            for (_, index), r in self.results().items()
            if index == self.samples - 1
        }

    def supervisor_json(self, name: str) -> dict:
        attempt = self.result(name).attempts[-1]
        path = next(a.path for a in attempt.artifacts if a.path.endswith("/supervisor.json"))
        data = (self.run_dir / path).read_bytes()
        data.decode("utf-8")  # strict: UTF-8 text, no lone surrogate escaped either
        assert b"\\ud8" not in data.lower() and b"\\udc" not in data.lower()
        return json.loads(data)


def run_small(tmp: Path, attacks: tuple[Attack, ...], *extra: str) -> SmallRun:
    """The attacks and their instances' gold patches, and nothing else of the demo."""
    adversary = write_adversary(tmp, attacks, every_instance=False)
    instances = f"dataset.instance_ids=[{','.join(adversary.instances)}]"
    run_dir = tmp / "run"
    run_demo(compose(adversary.config(instances, *extra)), run_dir)
    planned = len(adversary.instances) * adversary.samples
    return SmallRun(run_dir, adversary.expected, adversary.samples, adversary.instances, planned)


FLOOD_SETTINGS = (f"environment.limits.inodes={INODES}", f"environment.timeout={FLOOD_TIMEOUT}")


@pytest.fixture(scope="module")
def flood_run(tmp_path_factory) -> SmallRun:
    return run_small(tmp_path_factory.mktemp("inodes"), ATTACKS, *FLOOD_SETTINGS)


def check_floods(run: SmallRun) -> None:
    assert run.wrong() == []
    assert run.complete()
    assert run.gold_outcomes() == {"resolved"}
    for attack in ATTACKS:
        result = run.result(attack.name)
        # The same enforcement in both modes, and the trial says which.
        assert result.limits["inodes"].startswith(f"supervisor watchdog: {INODES} files"), (
            result.limits
        )
        assert "reserve 100000 free inodes" in result.limits["inodes"]
        if attack.kind != "control":
            detail = result.score.detail
            count = int(detail.split()[0])
            # Stopped while the tests ran, or counted after tests that ended at once.
            assert detail.removesuffix(" (counted after the tests)").endswith(
                f"files and folders created, limit {INODES}"
            ), detail
            assert INODES < count < 300_000, detail
            peak = run.supervisor_json(attack.name)["tests"]["peak"]["inodes"]
            assert peak == count


class TestInContainers:
    pytestmark = needs_podman

    def test_an_inode_flood_is_stopped_by_its_own_limit_and_the_run_completes(self, flood_run):
        check_floods(flood_run)

    def test_the_floods_go_with_their_sandboxes(self, flood_run):
        # Every container is gone from podman's store, with the files it made. (Not the
        # host's count of free inodes, which whatever else runs here moves.)
        assert sandboxes_left(flood_run.run_dir) == []


@pytest.mark.podman
@pytest.mark.xdist_group("podman")
@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_as_root_an_inode_flood_is_stopped_the_same_way(tmp_path):
    check_floods(run_small(tmp_path, ATTACKS, *FLOOD_SETTINGS))


# --- the watchdog's part, on this machine -----------------------------------------------

#: A uid with no process here: the watchdog measures nothing but the files.
NOBODY = 54_321


def _limits(**changes: int) -> dict:
    limits = {
        "memory": 1 << 40,
        "pids": 1 << 20,
        "disk": 1 << 50,
        "memory_reserve": 0,
        "disk_reserve": 0,
        "inodes": 1000,
        "inodes_reserve": 0,
    }
    return limits | changes


def test_the_count_is_the_files_and_folders_created_since_the_start(tmp_path):
    (tmp_path / "before").mkdir()
    for i in range(50):
        (tmp_path / "before" / str(i)).write_bytes(b"")
    count = InodeCount([str(tmp_path)])
    assert count.baseline == 51
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    for i in range(300):
        (deep / str(i)).write_bytes(b"")
    # A wait for the next pass, bounded far above its period (a loaded machine is slow).
    deadline = time.monotonic() + 60
    while count.step() != 302 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert count.step() == 302
    for i in range(300):
        (deep / str(i)).unlink()
    deadline = time.monotonic() + 60
    while count.step() != 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert count.step() == 2  # net: removed files no longer count


def test_a_flood_costs_the_watchdog_a_bounded_slice_per_tick(tmp_path):
    count = InodeCount([str(tmp_path)])
    for i in range(60_000):
        os.close(os.open(tmp_path / str(i), os.O_CREAT | os.O_WRONLY))
    time.sleep(1.05)  # the next pass is due
    seen = count.step()
    assert 0 < seen < 60_000  # one slice, not the whole folder at once
    while count.step() < 60_000:
        pass
    assert count.step() == 60_000


def test_the_watchdog_stops_the_tests_above_the_inode_limit(tmp_path):
    watchdog = Watchdog(NOBODY, _limits(inodes=100), str(tmp_path), [str(tmp_path)])
    assert watchdog.check() is None
    for i in range(150):
        (tmp_path / str(i)).write_bytes(b"")
    time.sleep(1.05)
    stopped = watchdog.check()
    assert stopped == ("inodes", "150 files and folders created, limit 100")
    assert watchdog.peak["inodes"] == 150


def test_a_flood_made_between_two_passes_is_counted_after_the_tests(tmp_path, monkeypatch):
    # The next pass is far away: the flood comes, and the tests end, before it.
    monkeypatch.setattr(watchdog_module, "_INODE_PERIOD", 3600.0)
    watchdog = Watchdog(NOBODY, _limits(inodes=100), str(tmp_path), [str(tmp_path)])
    assert watchdog.check() is None
    for i in range(5000):
        (tmp_path / str(i)).write_bytes(b"")
    assert watchdog.check() is None  # the watchdog has not seen it
    limit, detail = watchdog.last_count()
    assert limit == "inodes"
    # The last count reads only as far as the limit needs, not the whole flood.
    assert detail == "101 files and folders created, limit 100 (counted after the tests)"
    assert watchdog.peak["inodes"] == 101


def test_what_the_tests_leave_below_the_limit_passes_the_last_count(tmp_path):
    watchdog = Watchdog(NOBODY, _limits(inodes=100), str(tmp_path), [str(tmp_path)])
    for i in range(40):
        (tmp_path / str(i)).write_bytes(b"")
    assert watchdog.last_count() is None
    assert watchdog.peak["inodes"] == 40


def test_the_filesystem_reserve_counts_free_inodes(tmp_path):
    fs = os.statvfs(tmp_path)
    if not fs.f_files:
        pytest.skip("this filesystem keeps no count of inodes")
    watchdog = Watchdog(NOBODY, _limits(inodes_reserve=fs.f_favail + 10**9), str(tmp_path))
    limit, detail = watchdog.check()
    assert limit == "inodes"
    assert "free inodes, below the reserve of" in detail


def test_the_folders_the_test_user_can_write_are_found_outermost_only(tmp_path):
    class User:
        uid, gid, home = NOBODY, NOBODY, str(tmp_path / "home")

    roots = writable_roots(User, str(tmp_path / "testbed"))
    for folder in (tmp_path / "testbed", tmp_path / "home"):  # itself, or a folder above
        assert any(str(folder) == r or str(folder).startswith(r + "/") for r in roots), roots
    if os.path.isdir("/tmp") and os.stat("/tmp").st_mode & 0o002:
        assert "/tmp" in roots
    assert not any(r.startswith(q + "/") for r in roots for q in roots if q != r)
