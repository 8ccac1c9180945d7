"""Agent targets with the ``command`` adapter, in real podman: the agent runs in a sandbox
of the instance's image, the harness takes the diff of what it left, and the tests run
with that patch as with a saved one. How the agent ended decides where it did not leave
a patch to test: no diff, an error of its own, a budget run out.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.publish.verify import check_run
from evalrepro.records.trial import read_trial_result
from evalrepro.report.view import view_run
from evalrepro.sample import load_samples
from evalrepro.targets.agent import AgentBudgets, AgentTarget, CommandAgent
from tests.podman_support import (
    demo_config,
    needs_podman,
    processes_with,
    run_demo,
    sandboxes_left,
)

pytestmark = needs_podman

#: Hostile agents run in both podman modes: here (rootless, as scripts/test runs the
#: suite) and, in scripts/test's root pass, as root.
both_modes = pytest.mark.parametrize(
    "mode",
    [
        "here",
        pytest.param(
            "root",
            marks=[
                pytest.mark.root_podman,
                pytest.mark.skipif(os.geteuid() != 0, reason="root podman: the root pass"),
            ],
        ),
    ],
)

INSTANCE = "demo__calc-1"


def gold_patch() -> str:
    config = demo_config("demo")
    (sample,) = [
        s for s in load_samples(Path(config.dataset.instances)) if s.instance_id == INSTANCE
    ]
    return sample.patch


def agent_run(tmp_path: Path, name: str, command: str, **target: object):
    """One trial of calc-1 by a command agent; its result and run folder."""
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]")
    agent = AgentTarget(
        name=name,
        adapter=CommandAgent(command=command, env={"FIX": gold_patch()}),
        **target,
    )
    config = config.model_copy(update={"target": agent})
    run_dir = tmp_path / name
    run_demo(config, run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    return read_trial_result(path), run_dir


def attempt_files(run_dir: Path) -> Path:
    (folder,) = (run_dir / "trials").glob("*/attempt-1")
    return folder


def test_an_agent_that_fixes_the_bug_resolves_and_its_diff_is_the_patch(tmp_path):
    result, run_dir = agent_run(tmp_path, "fixer", 'printf "%s" "$FIX" | git apply')
    assert (str(result.score.outcome), result.score.reason) == ("resolved", "tests_passed")
    folder = attempt_files(run_dir)
    outcome = json.loads((folder / "agent.json").read_text())
    assert outcome["status"] == "submitted" and outcome["adapter"] == "command"
    patch = (folder / "patch.diff").read_bytes()
    assert outcome["patch_bytes"] == len(patch) > 0
    assert b"calc/evaluator.py" in patch
    assert "$ agent (exit 0" in (folder / "agent_log.txt").read_text()
    # The record is the evidence: verify observes it again from the files alone.
    assert check_run(run_dir).ok
    # The viewer shows the agent's end and what it printed beside the patch.
    site = view_run(run_dir, n_resamples=200)
    (page,) = (site.root / "trials").glob("*.html")
    html = page.read_text()
    assert '<section id="agent">' in html and "agent_log.txt" in html
    assert html.index('id="agent"') < html.index('id="patch"')


def test_an_agent_that_changes_nothing_is_unresolved_no_diff(tmp_path):
    result, _ = agent_run(tmp_path, "idle", 'cat "$EVALREPRO_PROBLEM" > /dev/null')
    assert (str(result.score.outcome), result.score.reason) == ("unresolved", "agent_no_diff")


def test_an_agent_that_fails_is_unresolved_agent_error_not_infrastructure(tmp_path):
    result, _ = agent_run(tmp_path, "crasher", 'printf "%s" "$FIX" | git apply; exit 3')
    assert (str(result.score.outcome), result.score.reason) == ("unresolved", "agent_error")
    assert result.score.detail == "the agent exited 3"
    assert len(result.attempts) == 1  # its own failure: never retried


def test_an_agent_past_its_wall_time_is_unresolved_budget_exhausted(tmp_path):
    result, run_dir = agent_run(
        tmp_path,
        "slow",
        'printf "%s" "$FIX" | git apply; sleep 120',
        budgets=AgentBudgets(wall_seconds=3),
    )
    assert (str(result.score.outcome), result.score.reason) == (
        "unresolved",
        "agent_budget_exhausted",
    )
    assert result.score.detail == "wall time: 3 s"
    outcome = json.loads((attempt_files(run_dir) / "agent.json").read_text())
    # Ended by its budget, not by its own `sleep 120`.
    assert outcome["budget"] == "wall_time" and outcome["seconds"] < 120
    # What it left is kept (not tested: it did not stop by itself).
    assert (attempt_files(run_dir) / "patch.diff").stat().st_size > 0


@both_modes
def test_what_an_agent_writes_into_git_never_reaches_the_patch(tmp_path, mode):
    command = (
        'printf "%s" "$FIX" | git apply && '
        "git config --file .git/config diff.external /bin/false && "
        "mkdir -p .git/info && printf '* -diff\\n' > .git/info/attributes && "
        "printf '\\000\\001binary\\377' > calc/blob.bin && printf 'x = 1\\n' > calc/extra.py"
    )
    result, run_dir = agent_run(tmp_path, "git-poisoner", command)
    assert str(result.score.outcome) == "resolved"
    patch = (attempt_files(run_dir) / "patch.diff").read_bytes()
    assert b"GIT binary patch" in patch and b"calc/extra.py" in patch
    assert b".git/" not in patch


def test_what_defines_the_agent_is_the_trial_id(tmp_path):
    one = AgentTarget(name="a", adapter=CommandAgent(command="true"))
    other_command = one.model_copy(update={"adapter": CommandAgent(command="false")})
    more_time = one.model_copy(update={"budgets": AgentBudgets(wall_seconds=60)})
    more_samples = one.model_copy(update={"samples": 3})
    (prediction,) = one.patches(
        [next(iter(load_samples(Path(demo_config("demo").dataset.instances))))]
    )
    digests = {t.identity(prediction) for t in (one, other_command, more_time)}
    assert len(digests) == 3
    assert more_samples.identity(prediction) == one.identity(prediction)


@pytest.mark.parametrize("secret", ["EVALREPRO_TEST_KEY"])
def test_a_secret_reaches_the_agent_by_name_and_is_written_nowhere(tmp_path, monkeypatch, secret):
    monkeypatch.setenv(secret, "s3cr3t-value")
    digest = hashlib.sha256(b"s3cr3t-value").hexdigest()[:16]
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]")
    agent = AgentTarget(
        name="keyed",
        # The command checks the key by its digest: the value itself is in no config.
        adapter=CommandAgent(
            command=f'test "$(printf %s "${secret}" | sha256sum | cut -c1-16)" = {digest}',
            secrets=[secret],
        ),
    )
    run_dir = tmp_path / "run"
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    # It saw the key (exit 0), changed nothing; the key is in no file of the run.
    assert read_trial_result(path).score.reason == "agent_no_diff"
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert b"s3cr3t-value" not in file.read_bytes(), file


def test_the_agent_sees_no_history_after_the_base_commit_and_a_clean_index(tmp_path):
    # The harness's copy of the history holds later commits ("Variables" comes after
    # calc-1's base); an agent reads what it can and prints it.
    samples = load_samples(Path(demo_config("demo").dataset.instances))
    (later,) = {s.base_commit for s in samples if s.instance_id.startswith("demo__calc-")} - {
        s.base_commit for s in samples if s.instance_id == INSTANCE
    }
    command = (
        "git log --all --format=%s; echo refs:; git for-each-ref; git tag; echo reflog:; "
        "git reflog | wc -l; echo status:; git status --porcelain | wc -l; "
        "ls /opt/evalrepro/repo.git 2>&1 | head -1; "
        "echo repos:; find / -xdev -type d -name objects 2>/dev/null | grep -vc '^/testbed/'; "
        f"git cat-file -t {later} 2>&1 | head -1"
    )
    _, run_dir = agent_run(tmp_path, "historian", command)
    log = (attempt_files(run_dir) / "agent_log.txt").read_text()
    subjects = log.split("refs:")[0].split("\n", 1)[1].split()
    assert "Variables" not in log
    assert subjects and "Initial" in subjects
    refs = log.split("refs:")[1].split("reflog:")[0].strip().splitlines()
    assert len(refs) == 1 and refs[0].endswith("refs/heads/main")
    assert log.split("status:")[1].split()[0] == "0"  # the index is the base commit's
    assert "No such file or directory" in log.split("status:")[1]
    # No other git repository anywhere: no copy of the history to read the future from.
    assert log.split("repos:")[1].split()[0] == "0"
    # A later commit (calc-2's base) is not in the repository at all, by its id.
    assert log.strip().splitlines()[-1].startswith("fatal:")


def test_a_huge_diff_or_tree_is_the_agents_error_not_a_crash(tmp_path):
    result, _ = agent_run(
        tmp_path,
        "verbose",
        "head -c 3000000 /dev/zero | tr '\\0' x > big.txt",
        max_patch_bytes=1 << 20,
    )
    assert (str(result.score.outcome), result.score.reason) == ("unresolved", "agent_error")
    assert "over the limit of 1048576" in result.score.detail
    result, _ = agent_run(
        tmp_path, "hoarder", "head -c 3000000 /dev/urandom > blob.bin", max_tree_bytes=1 << 20
    )
    assert (str(result.score.outcome), result.score.reason) == ("unresolved", "agent_error")
    assert "is over 1048576 bytes as a tar" in result.score.detail


def test_reproducing_an_agent_run_evaluates_its_patches_again_without_the_agent(tmp_path):
    from evalrepro.publish.bundle import write_bundle
    from evalrepro.publish.reproduce import reproduce
    from tests.podman_support import cache_dir

    _, run_dir = agent_run(tmp_path, "fixer", 'printf "%s" "$FIX" | git apply')
    bundle = tmp_path / "fixer.bundle.tar.gz"
    write_bundle(run_dir, bundle)
    console = Console(file=io.StringIO(), width=200)
    reproduction = reproduce(bundle, console, run_dir=tmp_path / "again", cache_dir=cache_dir())
    assert reproduction.agents_replayed
    assert (reproduction.agreeing, len(reproduction.trials)) == (1, 1)
    # The agent did not run: its recorded patch was evaluated, and the record says so.
    (log,) = (tmp_path / "again" / "trials").glob("*/attempt-1/agent_log.txt")
    assert "not run again" in log.read_text()
    assert "agents are not run again" in console.file.getvalue()


@both_modes
def test_an_agent_that_fills_the_disk_is_stopped_at_the_reserve(tmp_path, mode):
    import shutil

    # A reserve 1 GiB below what is free now: the agent writes until it is stopped (at
    # most 6 GB, far past the reserve whatever else writes or frees meanwhile).
    reserve = shutil.disk_usage(tmp_path).free - (1 << 30)
    config = demo_config(
        "demo",
        f"dataset.instance_ids=[{INSTANCE}]",
        f"environment.limits.disk_reserve='{reserve // 1024}k'",
    )
    marker = f"filler-{os.urandom(4).hex()}"
    budget = AgentBudgets(wall_seconds=120)
    agent = AgentTarget(
        name="filler",
        adapter=CommandAgent(command=f"head -c 6000000000 /dev/zero > /tmp/{marker}; sleep 60"),
        budgets=budget,
    )
    run_dir = tmp_path / "run"
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    result = read_trial_result(path)
    assert str(result.score.outcome) == "invalid"
    assert result.score.reason == "infrastructure_error"
    assert "below the reserve" in result.score.detail
    # Stopped at the reserve, not at its wall time; its sandbox, and what it wrote there,
    # gone with it. (Not the machine's free disk: other writers move that.)
    assert all(
        (a.finished_at - a.started_at).total_seconds() < budget.wall_seconds
        for a in result.attempts
    )
    assert sandboxes_left(run_dir) == []
    assert processes_with(marker.encode()) == []


@both_modes
def test_a_process_that_outlives_the_agent_goes_with_its_sandbox(tmp_path, mode):
    command = 'printf "%s" "$FIX" | git apply; setsid nohup sleep 7771 >/dev/null 2>&1 &'
    result, _ = agent_run(tmp_path, "leaver", command)
    assert str(result.score.outcome) == "resolved"
    assert processes_with(b"sleep\x007771") == []


@both_modes
def test_a_fork_bomb_is_stopped_at_the_process_limit_and_is_the_agents_error(tmp_path, mode):
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched\n")
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]", "environment.limits.pids=64")
    agent = AgentTarget(
        name="bomber",
        adapter=CommandAgent(
            command="setsid nohup sleep 7772 >/dev/null 2>&1 & "
            "bomb() { bomb | bomb & }; bomb; sleep 100"
        ),
        budgets=AgentBudgets(wall_seconds=90),
    )
    run_dir = tmp_path / "run"
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    result = read_trial_result(path)
    assert (str(result.score.outcome), result.score.reason) == ("unresolved", "agent_error")
    assert "over the limit of 64" in result.score.detail
    assert len(result.attempts) == 1  # its own doing: never retried
    # Stopped at the limit, not at its wall time, with everything it started; the host
    # untouched.
    (attempt,) = result.attempts
    assert (attempt.finished_at - attempt.started_at).total_seconds() < 90
    assert processes_with(b"sleep\x007772") == []
    assert canary.read_text() == "untouched\n"


PROBE = r"""
import json, os, socket, sys, urllib.error, urllib.request
allowed, other = sys.argv[1], sys.argv[2]
seen = {}
def fetch(name, url, data=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as r:
            seen[name] = json.load(r).get("object", "reached")
    except urllib.error.HTTPError as error:
        seen[name] = f"http {error.code}"
    except Exception as error:
        seen[name] = f"refused: {type(error).__name__}"
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
fetch("allowed", allowed + "/chat/completions", body)
fetch("other", other + "/chat/completions", body)
fetch("other_tls", other.replace("http:", "https:") + "/chat/completions", body)
for address in json.loads(os.environ["DIRECT"]):
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        seen[address] = "reached"
    except OSError as error:
        seen[address] = f"refused: {type(error).__name__}"
print("PROBE " + json.dumps(seen))
"""


@both_modes
def test_model_only_reaches_exactly_the_named_endpoint_and_nothing_else(tmp_path, mode):
    from evalrepro.agents.replay import Recording, ReplayServer

    recording = Recording(conversations=[])
    with ReplayServer(recording) as allowed, ReplayServer(recording) as other:
        hosts = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
        direct = [
            f"127.0.0.1:{allowed.port}",
            f"127.0.0.1:{other.port}",
            *(f"{h}:{allowed.port}" for h in sorted(hosts - {"127.0.0.1"})),
            "10.0.2.2:22",
            "1.1.1.1:53",
        ]
        config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]")
        agent = AgentTarget(
            name="prober",
            adapter=CommandAgent(
                command=f'python3 -c "$PROBE" {allowed.url} {other.url}',
                env={"PROBE": PROBE, "DIRECT": json.dumps(direct)},
                endpoints=[allowed.url],
            ),
            network="model_only",
        )
        run_dir = tmp_path / "run"
        run_demo(config.model_copy(update={"target": agent}), run_dir)
    log = (attempt_files(run_dir) / "agent_log.txt").read_text()
    (line,) = [line for line in log.splitlines() if line.startswith("PROBE ")]
    seen = json.loads(line.removeprefix("PROBE "))
    assert seen.pop("allowed") == "chat.completion"
    assert seen.pop("other") == "http 403"
    assert seen.pop("other_tls").startswith("refused")
    assert seen and all(v.startswith("refused") for v in seen.values()), seen


def test_model_only_needs_the_endpoints_it_allows():
    with pytest.raises(ValueError, match="needs the endpoints"):
        AgentTarget(name="a", adapter=CommandAgent(command="true"), network="model_only")
    with pytest.raises(ValueError, match="not an http"):
        CommandAgent(command="true", endpoints=["ftp://x"])


@both_modes
def test_an_agent_that_hogs_memory_is_stopped_at_the_reserve(tmp_path, mode):
    from evalrepro.sandbox.watchdog import _mem_available

    available = _mem_available()
    assert available is not None
    # A reserve 1 GiB below what is available now: the agent takes memory until it is
    # stopped (at most 6 GiB, far past the reserve whatever else takes or frees meanwhile).
    reserve = available - (1 << 30)
    config = demo_config(
        "demo",
        f"dataset.instance_ids=[{INSTANCE}]",
        f"environment.limits.memory_reserve='{reserve // 1024}k'",
        "environment.limits.memory='16g'",
    )
    marker = f"hog-{os.urandom(4).hex()}"
    hog = (
        "import time\n"
        "held = []\n"
        "for _ in range(96):\n"
        "    held.append(b'x' * (64 << 20))\n"
        "    time.sleep(0.01)\n"
        "time.sleep(60)\n"
    )
    budget = AgentBudgets(wall_seconds=120)
    agent = AgentTarget(
        name="hog",
        adapter=CommandAgent(command=f'python3 -c "$HOG" {marker}', env={"HOG": hog}),
        budgets=budget,
    )
    run_dir = tmp_path / "run"
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    result = read_trial_result(path)
    assert (str(result.score.outcome), result.score.reason) == ("invalid", "infrastructure_error")
    assert "below the reserve" in result.score.detail
    # Stopped at the reserve, not at its wall time; the sandbox and every process of the
    # agent gone (what evalrepro controls: not the machine's free memory, which everything
    # else running here moves).
    assert all(
        (a.finished_at - a.started_at).total_seconds() < budget.wall_seconds
        for a in result.attempts
    )
    assert sandboxes_left(run_dir) == []
    assert processes_with(marker.encode()) == []


# --- a program folder ------------------------------------------------------------------------


def program_folder(root: Path) -> Path:
    """An agent's program as a folder: a script over the 128 KiB a ``bash -c`` argument
    can hold (the gold patch inside, then padding), which fixes calc-1 after trying to
    write into its own folder."""
    folder = root / "program"
    (folder / "lib").mkdir(parents=True)
    padding = "".join(f"# padding line {i:06d} of the agent's program\n" for i in range(4000))
    script = (
        "#!/bin/bash\nset -u\n"
        'here="$EVALREPRO_AGENT_PROGRAM"\n'
        'stat -c "program %n %u %a" "$here" "$here/fix.sh" "$here/lib"\n'
        'if touch "$here/new" 2>/dev/null || echo x >> "$here/fix.sh" 2>/dev/null '
        '|| chmod u+w "$here" 2>/dev/null || rm -f "$here/lib/gold.diff" 2>/dev/null; then\n'
        "  echo WROTE-INTO-ITS-PROGRAM; exit 9\nfi\n"
        'echo "its program is read-only"\n'
        'git apply "$here/lib/gold.diff"\n' + padding
    )
    (folder / "fix.sh").write_text(script)
    (folder / "fix.sh").chmod(0o755)
    (folder / "lib" / "gold.diff").write_text(gold_patch())
    (folder / "lib" / "same").symlink_to("gold.diff")  # a link inside: kept
    assert (folder / "fix.sh").stat().st_size > 128 << 10
    return folder


def program_agent(folder: Path, name: str = "program") -> AgentTarget:
    return AgentTarget(
        name=name,
        adapter=CommandAgent(
            command='"$EVALREPRO_AGENT_PROGRAM/fix.sh"', program={"source": str(folder)}
        ),
    )


@both_modes
def test_an_agent_whose_program_is_a_folder_runs_it_read_only_and_fixes_calc_1(tmp_path, mode):
    agent = program_agent(program_folder(tmp_path))
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]")
    run_dir = tmp_path / "run"
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    result = read_trial_result(path)
    log = (attempt_files(run_dir) / "agent_log.txt").read_text()
    assert (str(result.score.outcome), result.score.reason) == ("resolved", "tests_passed"), log
    # Root's, no write bit, at the documented place; the agent could not change it.
    assert "program /opt/agent 0 555" in log and "program /opt/agent/fix.sh 0 555" in log
    assert "program /opt/agent/lib 0 555" in log
    assert "its program is read-only" in log and "WROTE" not in log
    assert b"opt/agent" not in (attempt_files(run_dir) / "patch.diff").read_bytes()
    # The locked digest is the record: verify reads the run again without the folder's
    # being hashed anew.
    assert check_run(run_dir).ok


def test_one_byte_of_the_program_folder_changes_the_target_id(tmp_path):
    folder = program_folder(tmp_path)
    (prediction,) = program_agent(folder).patches(
        [next(iter(load_samples(Path(demo_config("demo").dataset.instances))))]
    )
    before = program_agent(folder).identity(prediction)
    # The same content elsewhere is the same agent: where it is is not what it is.
    moved = folder.rename(tmp_path / "moved")
    assert program_agent(moved).identity(prediction) == before
    gold = moved / "lib" / "gold.diff"
    gold.write_bytes(gold.read_bytes()[:-1] + b"\x00")
    assert program_agent(moved).identity(prediction) != before
    # An agent without a program keeps the identity it had before programs existed.
    plain = AgentTarget(name="a", adapter=CommandAgent(command="true"))
    assert "program" not in json.dumps(plain.adapter.model_dump(exclude_none=True))


def test_a_program_folder_changed_after_it_was_locked_never_runs(tmp_path):
    folder = program_folder(tmp_path)
    agent = program_agent(folder)
    (folder / "lib" / "gold.diff").write_text("changed after the lock\n")
    config = demo_config("demo", f"dataset.instance_ids=[{INSTANCE}]")
    run_dir = tmp_path / "run"
    run_demo(config.model_copy(update={"target": agent}), run_dir)
    (path,) = (run_dir / "trials").glob("*/result.json")
    result = read_trial_result(path)
    assert (str(result.score.outcome), result.score.reason) == ("invalid", "infrastructure_error")
    assert "changed since it was locked" in result.score.detail


def test_a_program_folder_with_a_link_out_of_it_is_refused_in_one_line(tmp_path):
    from evalrepro.config.experiment import compose
    from evalrepro.errors import UserError

    folder = program_folder(tmp_path)
    (folder / "lib" / "out").symlink_to("../../..")
    target = (
        "+target={kind: agent, name: a, adapter: {kind: command, command: 'true', "
        f"program: {{source: '{folder}'}}}}}}"
    )
    with pytest.raises(UserError) as refused:
        compose(["+experiment=demo", "~target", target])
    message = str(refused.value)
    assert message == (
        f"config: field 'target.adapter.program': Value error, agent program {folder}: "
        "lib/out is a link out of the folder (-> ../../..)"
    )
