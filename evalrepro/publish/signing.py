"""Signing a bundle with a key its author already has: an SSH key (``ssh-keygen -Y``).

The signature is over the bag's tag manifest, which holds the sha256 of the payload
manifest, which holds the sha256 of every payload file: one signature covers every byte
of the payload. The namespace keeps a bundle signature from being taken for a signature
of anything else (an email, a git commit). A reviewer checks it against an
allowed-signers file (``ssh-keygen(1)``, ALLOWED SIGNERS): who may sign, by key.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from evalrepro.errors import UserError

NAMESPACE = "evalrepro-bundle"


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise UserError("ssh-keygen is not installed (Debian: apt-get install openssh-client)")
    return found


def sign(path: Path, key: Path) -> Path:
    """``path``.sig: the SSH signature of ``path`` with the private ``key``."""
    signature = path.with_name(path.name + ".sig")
    signature.unlink(missing_ok=True)
    done = subprocess.run(
        [_ssh_keygen(), "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE, str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0 or not signature.is_file():
        why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise UserError(f"--sign {key}: ssh-keygen could not sign ({why})")
    return signature


def verify(path: Path, signature: Path, allowed_signers: Path) -> tuple[str | None, str | None]:
    """(the signer's principal, None) when ``signature`` is a good signature of
    ``path`` by a key ``allowed_signers`` lists; (None, why not) otherwise."""
    keygen = _ssh_keygen()
    if not allowed_signers.is_file():
        raise UserError(f"--allowed-signers {allowed_signers}: no such file")
    found = subprocess.run(
        [keygen, "-Y", "find-principals", "-f", str(allowed_signers), "-s", str(signature)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    principals = found.stdout.split()
    if found.returncode != 0 or not principals:
        return None, "signed by a key the allowed-signers file does not list"
    with open(path, "rb") as message:
        checked = subprocess.run(
            [
                keygen,
                "-Y",
                "verify",
                "-f",
                str(allowed_signers),
                "-I",
                principals[0],
                "-n",
                NAMESPACE,
                "-s",
                str(signature),
            ],
            stdin=message,
            capture_output=True,
            text=True,
        )
    if checked.returncode != 0:
        why = (checked.stderr.strip() or checked.stdout.strip()).splitlines() or ["bad signature"]
        return None, f"the signature does not verify ({why[-1]})"
    return principals[0], None
