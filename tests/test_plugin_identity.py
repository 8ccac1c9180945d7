"""A kind from another package is part of the trial identity of the trials it can change.

A real third-party package, built into a wheel here (by its own in-tree PEP 517 backend:
no build tool from outside) and installed by pip, registers a log parser by entry point.
The trials graded with it change id when its code or its version changes; with it
installed but unused, no trial id changes; ``verify`` of a run names the plugin that is
installed differently now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evalrepro import PACKAGE_DIR
from evalrepro.plan.harness import code_digest
from evalrepro.plan.lockfile import differences, lockfile_problems, read_lockfile

#: The package's build backend: writes the wheel of the one module, with its entry
#: points, as any backend would (PEP 427: a zip with a .dist-info and its RECORD).
BACKEND = """
import base64, hashlib, tomllib, zipfile
from pathlib import Path

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    stem = name.replace("-", "_") + "-" + version
    info = stem + ".dist-info"
    points = "".join(
        f"[{group}]\\n" + "".join(f"{k} = {v}\\n" for k, v in table.items())
        for group, table in project["entry-points"].items()
    )
    files = {
        "tinyparser.py": Path("tinyparser.py").read_bytes(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n".encode()
        ),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\\nGenerator: tiny\\nRoot-Is-Purelib: true\\n"
            b"Tag: py3-none-any\\n"
        ),
        f"{info}/entry_points.txt": points.encode(),
    }
    record = "".join(
        f"{path},sha256="
        + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        + f",{len(data)}\\n"
        for path, data in files.items()
    ) + f"{info}/RECORD,,\\n"
    wheel = f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", record)
    return wheel
"""

PYPROJECT = """
[build-system]
requires = []
build-backend = "tinybackend"
backend-path = ["."]

[project]
name = "evalrepro-tinyparser"
version = "{version}"

[project.entry-points."evalrepro.parsers"]
pytest_tiny = "tinyparser"
"""

#: The plugin: pytest_full's reading, under its own name (``pytest_...``: the fake
#: runtime writes pytest's output for it).
MODULE = """
from typing import ClassVar

from evalrepro.grade.parsers.pytest_full import PytestFullParser
from evalrepro.grade.parsers.registry import register


@register
class TinyParser(PytestFullParser):
    name: ClassVar[str] = "pytest_tiny"
    aliases: ClassVar[tuple[str, ...]] = ()
"""


def install_plugin(tmp_path: Path, name: str, *, version: str = "1.0", extra: str = "") -> Path:
    """The plugin's source built and installed by pip into a folder of its own (put on
    PYTHONPATH to have it installed)."""
    source = tmp_path / f"{name}-src"
    source.mkdir()
    (source / "tinybackend.py").write_text(BACKEND)
    (source / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    (source / "tinyparser.py").write_text(MODULE + extra)
    site = tmp_path / f"{name}-site"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"),
            *("--no-index", "--no-build-isolation", "--no-deps", "--target", str(site)),
            str(source),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    assert (site / "tinyparser.py").is_file()
    return site


def evalrepro(tmp_path: Path, site: Path | None, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site) if site else ""}
    return subprocess.run(
        [sys.executable, "-m", "evalrepro", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )


def tiny_instances(tmp_path: Path) -> Path:
    """The demo's instances, calc's graded with the plugin's parser."""
    lines = []
    for line in (PACKAGE_DIR / "demo" / "instances.jsonl").read_text().splitlines():
        instance = json.loads(line)
        if instance["repo"] == "demo/calc":
            instance["parser"] = "pytest_tiny"
        lines.append(json.dumps(instance))
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def trial_ids(tmp_path: Path, site: Path | None, name: str, *overrides: str) -> dict[str, str]:
    """instance id -> trial id of the demo locked with the fake environment."""
    output = tmp_path / f"{name}.lock.json"
    done = evalrepro(
        tmp_path,
        site,
        "lock",
        "+experiment=demo",
        "environment=fake",
        *overrides,
        "--output",
        str(output),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lock = read_lockfile(output)
    assert lockfile_problems(lock) == []
    return {t.key.instance_id: t.trial_id for t in lock.trials}


def test_a_plugin_parser_is_in_the_ids_of_the_trials_it_grades_and_no_others(tmp_path):
    tiny = f"dataset.instances={tiny_instances(tmp_path)}"
    first = install_plugin(tmp_path, "first")
    edited = install_plugin(tmp_path, "edited", extra="\n# the same parser, other code\n")
    newer = install_plugin(tmp_path, "newer", version="1.1")

    # Installed but unused: every trial id is what it is without the plugin.
    assert trial_ids(tmp_path, first, "unused") == trial_ids(tmp_path, None, "plain")

    ids = trial_ids(tmp_path, first, "first", tiny)
    lock = read_lockfile(tmp_path / "first.lock.json")
    (plugin,) = lock.harness.plugins
    assert (plugin.group, plugin.kind, plugin.distribution, plugin.version) == (
        "parsers",
        "pytest_tiny",
        "evalrepro-tinyparser",
        "1.0",
    )
    calc = {iid for iid in ids if iid.startswith("demo__calc")}
    # Only calc's trials are graded by the plugin: the rest keep evalrepro's own digest.
    for trial in lock.trials:
        own = trial.key.harness_digest == code_digest()
        assert own == (trial.key.instance_id not in calc)

    for other, name in ((edited, "edited"), (newer, "newer")):
        moved = trial_ids(tmp_path, other, name, tiny)
        changed = {iid for iid in ids if ids[iid] != moved[iid]}
        assert changed == calc, name
        # verify A B (and resume) name the plugin that differs, as a harness difference.
        found = differences(lock, read_lockfile(tmp_path / f"{name}.lock.json"))
        assert [d.kind for d in found if "plugin parser 'pytest_tiny'" in d.detail] == ["harness"]


def test_verify_names_the_plugin_a_run_used_that_is_installed_otherwise_now(tmp_path):
    tiny = f"dataset.instances={tiny_instances(tmp_path)}"
    first = install_plugin(tmp_path, "first")
    run = tmp_path / "run"
    done = evalrepro(
        tmp_path,
        first,
        "run",
        "+experiment=demo",
        "environment=fake",
        tiny,
        "--run-dir",
        str(run),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert evalrepro(tmp_path, first, "verify", str(run)).returncode == 0

    edited = install_plugin(tmp_path, "edited", version="1.1", extra="\n# other code\n")
    done = evalrepro(tmp_path, edited, "verify", "--json", str(run))
    assert done.returncode == 1
    problems = json.loads(done.stdout)["problems"]
    plugin = [p["detail"] for p in problems if p["kind"] == "plugin"]
    assert len(plugin) == 1
    assert "parser 'pytest_tiny' of evalrepro-tinyparser 1.0" in plugin[0]
    assert "here it is parser 'pytest_tiny' of evalrepro-tinyparser 1.1" in plugin[0]

    # Without it, the run's parser is gone: said once, by name.
    done = evalrepro(tmp_path, None, "verify", "--json", str(run))
    plugin = [p["detail"] for p in json.loads(done.stdout)["problems"] if p["kind"] == "plugin"]
    assert plugin == [
        f"the run used {read_lockfile(run).harness.plugins[0].describe()}; it is not installed here"
    ]
