"""The supervisor's stream to the host, and how a name from the tree is shown as text.

Everything the host learns of a trial comes from one framed stream on the supervisor's
own stdout (the code under test has no handle on it): ``FRAME`` headers (kind, length),
then events (JSON), harness log text, and the test output as data. The region of test
output is delimited by the framing, never by marker text that the tests can print.
Every name from the tree goes to the host as text by one rule, :func:`quote_name`.

The host imports this module for ``FRAME``, the kinds and the names' rule, so that each
is defined once; like every module of the supervisor it uses the standard library only.
"""

from __future__ import annotations

import json
import os
import struct

#: Version of the stream protocol.
PROTOCOL = 1
#: Version of the program this supervisor reads (``TrialProgram``'s schema): 2, canaries
#: of every language (their styles, their titles).
PROGRAM = 2
#: A frame: kind (one byte), payload length (big-endian), then the payload.
FRAME = struct.Struct(">cI")
KIND_EVENT = b"E"  # a JSON object with an "event" key
KIND_LOG = b"L"  # harness log text (for people: test_output.txt before the region)
KIND_OUTPUT = b"O"  # test output bytes, in order: the region
MAX_PAYLOAD = 1 << 20
OUTPUT_CHUNK = 1 << 16
#: Seconds for one patch tool or git call.
TOOL_TIMEOUT = 300


class HarnessError(Exception):
    """The harness could not do its own part (not something the patch did)."""


# --- the stream ------------------------------------------------------------------------


class Stream:
    """The one channel to the host: frames written to a private duplicate of stdout."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def frame(self, kind: bytes, payload: bytes) -> None:
        for start in range(0, max(len(payload), 1), MAX_PAYLOAD):
            chunk = payload[start : start + MAX_PAYLOAD]
            data = FRAME.pack(kind, len(chunk)) + chunk
            view = memoryview(data)
            while view:
                written = os.write(self.fd, view)
                view = view[written:]

    def event(self, name: str, **facts: object) -> None:
        event = as_text({"event": name, **facts})
        self.frame(KIND_EVENT, json.dumps(event, sort_keys=True).encode())

    def log(self, text: str) -> None:
        self.frame(KIND_LOG, neutralize(text).encode("utf-8", "backslashreplace"))


def neutralize(text: str) -> str:
    """Tool output in the harness log cannot pose as a harness line (``>>>>> ...``)."""
    lines = text.splitlines()
    return "".join(
        ("| " + line if line.lstrip().startswith((">>>>>", "+ : '>>>>>")) else line) + "\n"
        for line in lines
    )


# --- names: bytes shown as text --------------------------------------------------------

_C_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r"}
_C_UNESCAPES = {letter: chr(code) for code, letter in _C_ESCAPES.items()} | {'"': '"', "\\": "\\"}


def quote_name(raw: bytes) -> str:
    """A file name's bytes as text, losslessly and unambiguously (docs/threat-model.md).

    A name that is UTF-8 without control characters and does not start with ``"`` is
    itself. Any other is quoted as git quotes names: in double quotes, ``"`` and ``\\``
    escaped, control characters as C escapes (``\\n``, ``\\t``, ...) and every byte
    that is not part of a UTF-8 character as three octal digits (``"\\377.py"``); UTF-8
    characters stay as they are. :func:`unquote_name` gives the bytes back.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and not text.startswith('"') and not _has_control(text):
        return text
    out = []
    for char in raw.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\{code - 0xDC00:03o}")
        elif code in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        elif char in '"\\':
            out.append("\\" + char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def unquote_name(text: str) -> bytes:
    """The bytes of a name :func:`quote_name` showed as ``text``."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text.encode("utf-8", "surrogatepass")
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            digits = body[i + 1 : i + 4]
            if len(digits) == 3 and all(d in "01234567" for d in digits):
                out.append(int(digits, 8) & 0xFF)
                i += 4
                continue
            out += _C_UNESCAPES.get(body[i + 1], body[i + 1]).encode("utf-8", "surrogatepass")
            i += 2
            continue
        out += char.encode("utf-8", "surrogatepass")
        i += 1
    return bytes(out)


def _has_control(text: str) -> bool:
    return any(ord(char) < 0x20 or ord(char) == 0x7F for char in text)


def name_bytes(name: str) -> bytes:
    """The bytes of a name as this process holds it (``os`` decodes with surrogateescape;
    a surrogate that came through JSON is kept as its three bytes)."""
    try:
        return os.fsencode(name)
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def shown(name: str) -> str:
    """A file name from the tree as the host sees it: :func:`quote_name` of its bytes."""
    return quote_name(name_bytes(name))


def as_text(value: object) -> object:
    """Every string in ``value`` (JSON-shaped) that holds a lone surrogate (a name from
    the tree, an OS error quoting one, a guard record) escaped by :func:`shown`: what
    goes to the host is always Unicode text."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return shown(value)
        return value
    if isinstance(value, dict):
        return {as_text(key): as_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_text(item) for item in value]
    return value
