"""Signing a bundle with a key its author already has: an SSH key (``ssh-keygen -Y``).

Two signatures by that one key: the SSH signature below, over every byte of the bag, and
a DSSE envelope around the in-toto Statement (:func:`sign_statement`), the form in-toto's
own tooling checks (``securesystemslib``, ``in-toto``): the key loaded with
``cryptography``, the signature over DSSE's PAE, verified against the public keys of the
same allowed-signers file (:func:`verify_envelope`).

The signature is over the bag's tag manifest, which holds the sha256 of the payload
manifest, which holds the sha256 of every payload file: one signature covers every byte
of the payload. The namespace keeps a bundle signature from being taken for a signature
of anything else (an email, a git commit). A reviewer checks it against an
allowed-signers file (``ssh-keygen(1)``, ALLOWED SIGNERS): who may sign, by key.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm

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


# --- the attestation's DSSE envelope -------------------------------------------------------

#: DSSE's payload type for an in-toto Statement (in-toto Attestation Framework, "Envelope").
PAYLOAD_TYPE = "application/vnd.in-toto+json"


@dataclass(frozen=True)
class SigningKey:
    #: A DSSE signer (``securesystemslib``'s CryptoSigner).
    signer: object
    #: The public key's fingerprint as ``ssh-keygen -l`` prints it (``SHA256:...``).
    fingerprint: str
    #: Its SSH key type (``ssh-ed25519``).
    kind: str


def load_signer(key: Path) -> SigningKey:
    """The DSSE signer (``securesystemslib``) for the SSH private ``key``: the same key file
    ``ssh-keygen -Y sign`` takes (ed25519, ECDSA or RSA; OpenSSH or PEM format). A
    passphrase is asked on a terminal; one line UserError otherwise."""
    import getpass
    import sys

    from cryptography.hazmat.primitives import serialization
    from securesystemslib.signer import CryptoSigner

    try:
        data = key.read_bytes()
    except OSError as error:
        raise UserError(f"--sign {key}: cannot read the key ({error.strerror})") from None
    loader = (
        serialization.load_ssh_private_key
        if b"BEGIN OPENSSH PRIVATE KEY" in data
        else serialization.load_pem_private_key
    )
    try:
        try:
            private = loader(data, None)
        except TypeError:  # encrypted: cryptography asks for the passphrase
            if not sys.stdin.isatty():
                raise UserError(
                    f"--sign {key}: the key has a passphrase and there is no terminal to ask it on"
                ) from None
            passphrase = getpass.getpass(f"passphrase for {key}: ").encode()
            private = loader(data, passphrase)
        signer = CryptoSigner(private)  # type: ignore[arg-type]
        kind, blob = (
            private.public_key()
            .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            .split()[:2]
        )
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:
        raise UserError(
            f"--sign {key}: not an ed25519, ECDSA or RSA private key this can sign with "
            f"({_library_reason(error)})"
        ) from None
    digest = hashlib.sha256(base64.b64decode(blob)).digest()
    fingerprint = "SHA256:" + base64.b64encode(digest).decode().rstrip("=")
    return SigningKey(signer=signer, fingerprint=fingerprint, kind=kind.decode())


def _library_reason(error: Exception) -> str:
    """The library's words without its pointers to a web page: one line of ours."""
    words = [w for w in str(error).split() if "://" not in w]
    text = " ".join(words).replace("See for more details.", "").strip()
    return " ".join(text.split()) or type(error).__name__


def sign_statement(statement: bytes, signer: object) -> dict:
    """The DSSE envelope of the in-toto ``statement`` (its exact bytes), signed over
    PAE("DSSEv1", type, body) by ``signer`` (:func:`load_signer`), as JSON-ready dict."""
    from securesystemslib.dsse import Envelope

    envelope = Envelope(payload=statement, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(signer)  # type: ignore[arg-type]
    return envelope.to_dict()


def allowed_keys(allowed_signers: Path) -> list[tuple[str, object]]:
    """(principal, public key) for each key an allowed-signers file (``ssh-keygen(1)``,
    ALLOWED SIGNERS) lets sign bundles: its namespaces option, when it has one, must
    name ours. A line this cannot read (a certificate authority, a key type
    ``cryptography`` does not load) is passed over."""
    import shlex

    from cryptography.hazmat.primitives.serialization import load_ssh_public_key
    from securesystemslib.signer import SSlibKey

    if not allowed_signers.is_file():
        raise UserError(f"--allowed-signers {allowed_signers}: no such file")
    found: list[tuple[str, object]] = []
    for line in allowed_signers.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            fields = shlex.split(line, comments=True)
        except ValueError:
            continue
        if len(fields) < 3:
            continue
        principals, rest = fields[0], fields[1:]
        options = []
        while rest and not rest[0].startswith(("ssh-", "ecdsa-", "sk-")):
            options += rest.pop(0).split(",")
        if len(rest) < 2 or any(o.lower() == "cert-authority" for o in options):
            continue
        namespaces = [o.split("=", 1)[1] for o in options if o.lower().startswith("namespaces=")]
        if namespaces and NAMESPACE not in ",".join(namespaces).split(","):
            continue
        try:
            public = load_ssh_public_key(f"{rest[0]} {rest[1]}".encode())
            key = SSlibKey.from_crypto(public)  # type: ignore[arg-type]
        except (ValueError, UnsupportedAlgorithm):
            continue
        found.append((principals.split(",")[0], key))
    return found


def verify_envelope(envelope: dict, allowed_signers: Path) -> tuple[str | None, str | None]:
    """(the signer's principal, None) when the DSSE ``envelope`` holds a signature by a
    key ``allowed_signers`` lists; (None, why not) otherwise."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    try:
        parsed = Envelope.from_dict(envelope)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        return None, f"not a DSSE envelope ({' '.join(str(error).split())})"
    for principal, key in allowed_keys(allowed_signers):
        try:
            parsed.verify([key], 1)  # type: ignore[list-item]
        except VerificationError:
            continue
        return principal, None
    return None, "no signature by a key the allowed-signers file lists verifies"
