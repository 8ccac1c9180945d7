"""What a warm run costs in counted calls: processes started (git, podman, the supervisor's
git in the container) and fsyncs, for the whole run and per attempt.

    .venv/bin/python benchmarks/call_counts.py [--experiment demo] [--source DIR] [overrides ...]

Runs ``evalrepro run +experiment=demo`` once to warm whatever is missing (not counted),
then once more in a new run directory under ``strace -f`` (every process it starts,
the containers' too: conmon, runc and what runs inside are its descendants), tracing
``execve``, ``fsync`` and ``fdatasync`` only, and counts from the trace: each successful
``execve`` by program (``git`` by subcommand, and apart: the supervisor's, whose
``--git-dir`` is the harness's store in the container, and the model patch's ``git
apply``; ``podman`` by subcommand), and the fsyncs of the host's evalrepro process (its
threads) apart from podman's own. Counts, unlike times, do not depend on the machine's
load. ``--source DIR`` runs that checkout's code (``PYTHONPATH=DIR``): run it twice for
a before/after. Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(\w+)\((.*)")
_EXEC = re.compile(r'^(\d+)\s+execve\("([^"]+)", \[(.*?)\]')
_CLONE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(?:clone3?|vfork|fork)\b.*= (\d+)(?: <[^>]*>)?$")
_STORE = "/opt/evalrepro/repo.git"


def _args(text: str) -> list[str]:
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def _subcommand(args: list[str]) -> str:
    rest = iter(args[1:])
    for arg in rest:
        if arg in ("-c", "--git-dir", "-C", "--work-tree", "--root", "--url"):
            next(rest, None)
        elif arg.startswith("--") and "=" not in arg and arg in ("--log-level",):
            next(rest, None)
        elif not arg.startswith("-"):
            return arg
    return "?"


def count(trace: Path, root_pid: int) -> dict[str, object]:
    """Counts from an ``strace -f -o`` trace whose first process is ``root_pid``."""
    programs: Counter[str] = Counter()
    fsyncs: Counter[str] = Counter()
    parent: dict[int, int] = {}
    name: dict[int, str] = {root_pid: "evalrepro"}
    for line in trace.read_text(errors="replace").splitlines():
        clone = _CLONE.match(line)
        if clone:
            child, of = int(clone.group(2)), int(clone.group(1))
            parent[child] = of
            name.setdefault(child, name.get(of, "?"))
            continue
        found = _EXEC.match(line)
        if found and line.rstrip().endswith("= 0"):
            pid, path, args = int(found.group(1)), found.group(2), _args(found.group(3))
            program = os.path.basename(path)
            name[pid] = program
            if program == "git":
                sub = _subcommand(args)
                if _STORE in args:
                    programs[f"git {sub} (supervisor)"] += 1
                elif "/evalrepro/patch.diff" in args:
                    programs["git apply (the model patch)"] += 1
                else:
                    programs[f"git {sub} (host)"] += 1
            elif program == "podman":
                programs[f"podman {_subcommand(args)}"] += 1
            else:
                programs[program] += 1
            continue
        match = _LINE.match(line)
        if match and match.group(2) in ("fsync", "fdatasync"):
            pid = int(match.group(1))
            who = name.get(pid, "?")
            fsyncs["evalrepro (host)" if who in ("evalrepro", "python3", "python") else who] += 1
    return {"programs": dict(sorted(programs.items())), "fsyncs": dict(sorted(fsyncs.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="demo")
    parser.add_argument("--source", help="a checkout whose code runs (PYTHONPATH)")
    parser.add_argument("overrides", nargs="*")
    options = parser.parse_args()
    env = dict(os.environ)
    if options.source:
        env["PYTHONPATH"] = options.source
    command = [sys.executable, "-m", "evalrepro", "run", f"+experiment={options.experiment}"]
    with tempfile.TemporaryDirectory(prefix="call-counts-") as scratch:
        warm = [*command, "--run-dir", f"{scratch}/warm", *options.overrides]
        subprocess.run(warm, env=env, cwd=scratch, check=False, capture_output=True)
        trace = Path(scratch) / "trace"
        counted = [*command, "--run-dir", f"{scratch}/run", *options.overrides]
        process = subprocess.Popen(
            [
                "strace",
                "-f",
                "-qq",
                "-s",
                "256",
                "-e",
                "trace=execve,fsync,fdatasync,clone,clone3",
                "-e",
                "signal=none",
                "-o",
                str(trace),
                *counted,
            ],
            env=env,
            cwd=scratch,  # not this checkout: ``-m`` puts the working folder first
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        process.wait()
        first = trace.read_text(errors="replace").split(None, 1)[0]
        counts = count(trace, int(first))
        attempts = len(list(Path(scratch, "run", "trials").glob("*/attempt-*/result.json")))
    counts["attempts"] = attempts
    counts["exit_code"] = process.returncode
    print(json.dumps(counts, indent=2))


if __name__ == "__main__":
    main()
