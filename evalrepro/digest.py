"""Content digests. Two kinds, always named: over raw bytes, or over canonical JSON.

Canonical JSON = ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` encoded as UTF-8: sorted keys, no whitespace. Every identity in
evalrepro (trial ids, test-spec digests, instance digests) is sha256 over that form.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_json(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def sha256_bytes(data: bytes) -> str:
    """``sha256:<hex>`` of raw bytes (files, patches, logs)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """``sha256:<hex>`` of a file's raw bytes, read in chunks (images, .debs, bundles)."""
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()


def short_digest(digest: str) -> str:
    """The first 12 hex digits of a ``sha256:`` digest, for messages."""
    return digest.removeprefix("sha256:")[:12]
