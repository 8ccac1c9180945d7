"""What "what runs is what was verified" costs, on this machine.

    .venv/bin/python benchmarks/verified_state.py [--files 7000] [--repeat 5]

* **Process start.** A Python that imports pytest, with the exit guard installed as the
  supervisor installs it: without a bytecode prefix (before), with the supervisor's
  empty prefix (after: the image's own caches are still read), and with the prefix but no
  guard (what the prefix alone would cost: everything compiles from source).
* **Saved state.** ``SavedState`` over a tree of ``--files`` files (Django's repository
  holds about 7,000) and an empty /tmp-like folder: saving it once before the run, and a
  restore after a run that changed nothing, changed 20 files, and left 1,000 new ones.

Medians of ``--repeat``; results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrepro.sandbox.tree import SavedState
from tests.test_verified_bytecode import planted_env

IMPORTS = "import pytest, _pytest.config, _pytest.python, unittest, json, decimal"


def median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def process_start(root: Path, repeat: int) -> None:
    prefix = root / "prefix"
    prefix.mkdir(parents=True)
    prefix.chmod(0o555)
    variables = {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
    cases = (
        ("guard, no prefix (before)", planted_env(root / "before", None), {}),
        ("guard and prefix (after)", planted_env(root / "after", prefix), variables),
        ("prefix without the guard", planted_env(root / "bare", None), variables),
    )
    for label, python, env in cases:
        argv = [str(python), "-c", IMPORTS]
        full = {"PATH": "/usr/bin:/bin", **env}
        subprocess.run(argv, env=full, check=True)  # warm the page cache
        seconds = median_seconds(
            lambda argv=argv, full=full: subprocess.run(argv, env=full, check=True), repeat
        )
        print(f"  {label}: {seconds * 1000:.0f} ms")


def make_tree(root: Path, files: int) -> None:
    for index in range(files):
        folder = root / f"pkg{index // 100}" / f"sub{index // 20 % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{index}.py").write_bytes(b"x = 1\n" * 1500)  # ~9 kB, Django's mean


def saved_state(root: Path, files: int, repeat: int) -> None:
    testbed, scratch = root / "testbed", root / "tmp"
    root.mkdir()
    make_tree(testbed, files)
    scratch.mkdir()

    def save() -> SavedState:
        store = Path(tempfile.mkdtemp(dir=root))
        return SavedState([str(testbed), str(scratch)], str(store), [])

    seconds = median_seconds(save, repeat)
    print(f"  save {files} files: {seconds * 1000:.0f} ms")
    state = save()

    def change_20() -> None:
        for index in range(20):
            (testbed / "pkg0" / "sub0" / f"module_{index}.py").write_text("x = 2\n")

    def new_1000() -> None:
        (scratch / "new").mkdir()
        for index in range(1000):
            (scratch / "new" / str(index)).write_bytes(b"")

    for label, act in (("nothing", lambda: None), ("20 files", change_20), ("1,000 new", new_1000)):
        times = []
        for _ in range(repeat):
            act()
            started = time.perf_counter()
            state.restore()
            times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        print(f"  restore after a run that changed {label}: {seconds * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=7000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as scratch:
        print("process start (import pytest):")
        process_start(Path(scratch) / "start", args.repeat)
        print("saved state:")
        saved_state(Path(scratch) / "state", args.files, args.repeat)


if __name__ == "__main__":
    main()
