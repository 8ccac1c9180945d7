"""Python environments of agents that run on the host (mini-swe-agent): one per package
and version, made once in evalrepro's cache folder and reused.

An agent's package is never installed beside evalrepro: its dependencies (litellm's,
textual's) pin versions evalrepro's own cannot share, and a run must not change what
evalrepro imports. The environment is made under a lock (two workers of one machine make
it once) and marked complete only when pip has finished, so an interrupted install is
made again, never half used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from evalrepro.atomic import write_bytes
from evalrepro.runtimes.interactive import SandboxError

#: Seconds pip may take to install an agent's package.
_INSTALL_SECONDS = 1800
_MARKER = ".evalrepro-complete"


def agents_home() -> Path:
    """Where agents' environments are: ``$EVALREPRO_AGENT_HOME``, else
    ``$XDG_CACHE_HOME/evalrepro/agents`` (``~/.cache`` by default)."""
    if os.environ.get("EVALREPRO_AGENT_HOME"):
        return Path(os.environ["EVALREPRO_AGENT_HOME"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "evalrepro" / "agents"


def agent_python(package: str, version: str) -> Path:
    """The Python of an environment that has ``package==version`` installed, made now if
    there is none; a failure is a :class:`SandboxError` naming pip's last line."""
    home = agents_home()
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    folder = home / f"{package}-{version}-{tag}"
    python = folder / "bin" / "python"
    if (folder / _MARKER).is_file():
        return python
    try:
        home.mkdir(parents=True, exist_ok=True)
        with FileLock(str(home / f"{folder.name}.lock")):
            if (folder / _MARKER).is_file():
                return python
            shutil.rmtree(folder, ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(folder)], f"cannot make {folder}")
            _run(
                [str(python), "-m", "pip", "install", "-q", f"{package}=={version}"],
                f"cannot install {package} {version} into {folder}",
            )
            write_bytes(folder / _MARKER, f"{package}=={version}\n".encode())
    except OSError as error:
        raise SandboxError(f"cannot make {folder}: {error.strerror or error}") from None
    return python


def _run(argv: list[str], doing: str) -> None:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_INSTALL_SECONDS,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
    except subprocess.TimeoutExpired:
        raise SandboxError(f"{doing}: not done in {_INSTALL_SECONDS} s") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        errors = [line for line in lines if "ERROR" in line] or lines or ["no output"]
        raise SandboxError(f"{doing}: {errors[-1].strip()[:300]}")
