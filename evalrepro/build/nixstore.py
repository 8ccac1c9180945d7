"""The Nix store, through Nix's own commands: what is there, adding files by hash, building.

Root talks to the store directly; any other user through the nix-daemon
(``NIX_REMOTE=daemon``, a member of ``nix-users``). Builds are sandboxed and never ask a
binary cache (``scripts/setup`` writes both into /etc/nix/nix.conf; root passes them on
the command line as well, since a root build does not go through the daemon).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from evalrepro.errors import UserError

STORE = "/nix/store"
DAEMON_SOCKET = Path("/nix/var/nix/daemon-socket/socket")
#: Nix's base-32 alphabet (no e, o, u, t).
_BASE32 = "0123456789abcdfghijklmnpqrsvwxyz"
#: Settings of every command: sandboxed builds, no binary cache, flakes on.
OPTIONS = (
    "--option",
    "substituters",
    "",
    "--option",
    "sandbox",
    "true",
    "--option",
    "experimental-features",
    "nix-command flakes",
)


class NixError(Exception):
    """A Nix command failed; ``log`` is its output."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


def rootless() -> bool:
    return os.geteuid() != 0


def env() -> dict[str, str]:
    environment = {**os.environ}
    if rootless():
        environment["NIX_REMOTE"] = "daemon"
    return environment


def options() -> list[str]:
    # An untrusted user's settings are ignored by the daemon (with a warning each): the
    # daemon's own nix.conf sandboxes its builds, and a build checks it (layers.py).
    return [] if rootless() else list(OPTIONS)


def check() -> None:
    """Nix is installed and (rootless) its daemon answers; else a UserError saying how."""
    if shutil.which("nix-build") is None:
        raise UserError("Nix is not installed; run scripts/setup (it installs nix-bin)")
    if rootless():
        if not DAEMON_SOCKET.exists():
            raise UserError(
                "the nix-daemon is not running (rootless builds go through it); "
                "as root: scripts/nix-daemon-start"
            )
        done = run(["nix-store", "--version"], check=False)
        probe = run(["nix", "store", "ping"], check=False)
        if done.returncode != 0 or probe.returncode != 0:
            raise UserError(
                "cannot reach the nix-daemon: this user must be in the nix-users group "
                f"(scripts/setup adds it): {_last_line(probe.stderr)}"
            )


def run(
    args: Sequence[str], *, check: bool = True, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    command = [*args[:1], *_extra(args[0]), *args[1:]]
    done = subprocess.run(
        command,
        env=env(),
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise NixError(f"{args[0]} failed: {_last_line(done.stderr)}", done.stderr)
    return done


def _extra(program: str) -> list[str]:
    if program == "nix":
        return ["--extra-experimental-features", "nix-command flakes"]
    return []


# --- store paths ------------------------------------------------------------------------


def _base32(digest: bytes) -> str:
    length = (len(digest) * 8 - 1) // 5 + 1
    chars = []
    for n in range(length - 1, -1, -1):
        bit = n * 5
        i, j = divmod(bit, 8)
        c = digest[i] >> j
        if i + 1 < len(digest):
            c |= digest[i + 1] << (8 - j)
        chars.append(_BASE32[c & 0x1F])
    return "".join(chars)


def _store_path(kind: str, inner_hex: str, name: str) -> str:
    fingerprint = f"{kind}:sha256:{inner_hex}:{STORE}:{name}".encode()
    full = hashlib.sha256(fingerprint).digest()
    folded = bytearray(20)
    for index, byte in enumerate(full):
        folded[index % 20] ^= byte
    return f"{STORE}/{_base32(bytes(folded))}-{name}"


def fixed_path(name: str, sha256_hex: str, *, recursive: bool = False) -> str:
    """The store path of a fixed-output file (``nix-store --add-fixed [--recursive]``)."""
    if recursive:
        return _store_path("source", sha256_hex, name)
    inner = hashlib.sha256(f"fixed:out:sha256:{sha256_hex}:".encode()).hexdigest()
    return _store_path("output:out", inner, name)


def missing(paths: Sequence[str]) -> set[str]:
    """The paths the store does not hold (valid ones only count)."""
    if not paths:
        return set()
    done = run(["nix-store", "--check-validity", "--print-invalid", *paths])
    return set(done.stdout.split())


def add_fixed(files: Sequence[Path], *, recursive: bool = False) -> list[str]:
    """Add ``files`` to the store by sha256 (each under its own name); their paths."""
    if not files:
        return []
    flags = ["--recursive"] if recursive else []
    done = run(["nix-store", "--add-fixed", *flags, "sha256", *map(str, files)])
    return done.stdout.split()


def nar_sha256(path: Path) -> str:
    """The hex sha256 of ``path``'s NAR serialisation (a recursive fixed output's hash)."""
    done = run(["nix-hash", "--type", "sha256", str(path)])
    return done.stdout.strip()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith("error:")] or lines
    return (useful[-1] if useful else "no output")[:500]
