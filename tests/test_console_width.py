"""The console is as wide as the reader's: ``$COLUMNS``, else the terminal, and a value too
long for its column wraps over lines, never cut with "…".

The runs are made by the real executor without containers (``tests/test_view.py``'s
``build_run``), with ids, a target and a folder longer than a narrow column; the commands
run as a user runs them, their output piped.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.test_view import F2P, P2P, Case, build_run, pytest_output

IDS = [
    f"acme__{'a-rather-long-repository-name' if i % 2 else 'calc'}-{i}-with-a-long-suffix-{i:04d}"
    for i in range(1, 5)
]
TARGETS = ("acme/a-model-whose-name-is-long-2026-01-01-instruct-preview", "acme/other-model-v2")
WIDE = 400
#: Box drawing rich's tables are made of.
BORDERS = "│┃┏┓┗┛┡┩└┘┌┐┳┻╇┯┷┼━─╍ "


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("width") / "a-folder-with-a-long-name" / "runs-of-2026-12-06"
    a, b = root / "run-of-the-first-model", root / "run-of-the-second-model"
    for run_dir, target, failing in ((a, TARGETS[0], None), (b, TARGETS[1], IDS[0])):
        cases = []
        for instance_id in IDS:
            passed, failed = (P2P, F2P) if instance_id == failing else ((*F2P, *P2P), ())
            output = pytest_output([*passed], [*failed])
            cases.append(Case(instance_id, output=output, exit_code=int(bool(failed))))
        build_run(run_dir, cases, target_id=target)
    return SimpleNamespace(a=a, b=b)


def evalrepro(*args: str | Path, columns: int | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    # stdout and stderr are pipes, stdin is not a terminal: only $COLUMNS says the width.
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return done.stdout + done.stderr


def readings(output: str) -> list[str]:
    """Where a whole value may be read, whitespace removed: the text as a whole (a value
    wrapped at the end of a line), and each table column's cells one after the other (a
    value folded within its column)."""
    found = ["".join(output.split())]
    block: list[list[str]] = []
    for line in [*output.splitlines(), ""]:
        if line.startswith(("│", "┃")):
            cells = re.split("[│┃]", line)[1:-1]
            block.append(cells)
            continue
        if line.startswith(("┏", "┡", "┌", "└", "┗")):
            continue
        for column in range(max((len(cells) for cells in block), default=0)):
            found.append("".join("".join(c[column].split()) for c in block if column < len(c)))
        block = []
    return found


def values(output: str) -> set[str]:
    """The words of a wide output, table borders aside."""
    return {word for word in re.split(f"[{BORDERS}\\s]+", output) if word}


def assert_narrow_and_whole(*args: str | Path) -> None:
    wide, narrow = evalrepro(*args, columns=None), evalrepro(*args, columns=100)
    assert max(len(line) for line in wide.splitlines()) > 100, "the check would be empty"
    too_wide = [line for line in narrow.splitlines() if len(line) > 100]
    assert too_wide == []
    assert "…" not in narrow
    places = readings(narrow)
    cut = sorted(value for value in values(wide) if not any(value in place for place in places))
    assert cut == []


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{a}"],
        ["compare", "{a}", "{b}"],
        ["verify", "{a}"],
        ["verify", "{a}", "{b}"],
    ],
    ids=["report", "compare", "verify-run", "verify-two"],
)
def test_piped_with_columns_no_line_is_wider_and_no_value_is_cut(runs, command):
    assert_narrow_and_whole(*(part.format(a=runs.a, b=runs.b) for part in command))


def test_without_columns_or_a_terminal_a_line_is_not_wrapped(runs):
    # A CI log or a file: the provenance line stays one line, for grep.
    first = evalrepro("report", runs.a, columns=None).splitlines()[0]
    assert len(first) > 200 and TARGETS[0] in first and first.endswith("UTC")


def test_in_a_terminal_without_columns_the_terminal_s_width(runs):
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 90, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with subprocess.Popen(
        [sys.executable, "-m", "evalrepro", "report", str(runs.a)],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env={**env, "TERM": "xterm-256color", "NO_COLOR": "1"},
    ) as process:
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the command is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=600) in (0, 3)
    os.close(controller)
    # Styles (bold, dim) aside: what the reader sees.
    lines = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).splitlines()
    assert max(len(line) for line in lines) <= 90
    assert any(len(line) > 80 for line in lines)


def test_every_table_is_made_in_the_one_place_that_folds_its_values():
    root = Path(__file__).resolve().parents[1] / "evalrepro"
    direct = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "console.py"
        and re.search(r"from rich\.table import|rich\.table\.Table|Console\(", path.read_text())
    ]
    assert direct == ["regrade.py"]  # its console only swallows a run's progress lines
