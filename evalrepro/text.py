"""Strings from inputs and sandboxes are data: one rule shows them, one rule names files.

* :func:`visible`: every string that came from an input (a dataset, a predictions file, a
  lockfile, a bundle) or a sandbox (test names, log lines, error details) is shown
  through it at the presentation edge: the console (``commands._common.make_console``),
  the one-line errors (``cli``), Markdown, HTML, LaTeX and the viewer. A control
  character, a bidi override or a lone surrogate becomes a visible mark, so that no raw
  control byte reaches a terminal, a report or a page (docs/threat-model.md, "Inputs").
* :func:`component_problem`: an instance id becomes one folder name (``trials/<label>``,
  SWE-bench's layout): it must be one safe path component, refused at read time.
* :func:`inside`: a path under a folder, checked to resolve inside it before anything
  is written or removed there.
* :func:`clip` and :func:`size`: a long string and a count of bytes as every page and
  record of what is shown cut and say them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from evalrepro.errors import UserError

# C0 controls but tab and newline, DEL, C1 controls, bidi overrides and isolates, other
# invisible format characters, lone surrogates (a JSON string can hold one; UTF-8 cannot).
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)

_C0 = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB "
    "CAN EM SUB ESC FS GS RS US"
).split()


def _mark(match: re.Match[str]) -> str:
    # Guillemets and a name: in every font (the Control Pictures block is in few).
    code = ord(match.group())
    if code < 0x20:
        return f"\u00ab{_C0[code]}\u00bb"
    if code == 0x7F:
        return "\u00abDEL\u00bb"
    return f"\u00abU+{code:04X}\u00bb"


def visible(text: str) -> str:
    """``text`` with every character that would hide, reorder or break what is shown
    (or drive a terminal: ESC, CSI, OSC) replaced by a visible mark such as ``«ESC»``;
    tab and newline kept."""
    return _HIDDEN.sub(_mark, text)


def has_hidden(text: str) -> bool:
    """Whether :func:`visible` would change ``text``."""
    return _HIDDEN.search(text) is not None


#: The longest instance id, in UTF-8 bytes: a trial's folder adds its sample and digest
#: (``--s0--`` and 12 hex digits) and a file system allows 255 bytes in a name.
MAX_COMPONENT_BYTES = 200


def component_problem(value: str) -> str | None:
    """Why ``value`` cannot be one path component (a folder's name), or None."""
    if value in ("", ".", ".."):
        return f"is {value!r}, not a name"
    if "/" in value or "\\" in value:
        return "holds a path separator ('/' or '\\')"
    if has_hidden(value):
        return "holds a control or invisible character"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        return f"is longer than {MAX_COMPONENT_BYTES} bytes"
    return None


def inside(root: Path, path: Path, what: str = "path") -> Path:
    """``root / path``, checked to resolve inside ``root`` (links followed) before anything
    is written or removed there; one line otherwise."""
    base = Path(os.path.realpath(root))
    resolved = Path(os.path.realpath(root / path))
    if resolved != base and base not in resolved.parents:
        raise UserError(f"{visible(str(path))}: the {what} leaves {base}, refused")
    return root / path


def _one_component(value: str) -> str:
    problem = component_problem(value)
    if problem is not None:
        raise ValueError(f"an instance id must be one safe path component: it {problem}")
    return value


#: An instance id: it names a trial's folder, so it is one safe path component (refused
#: at read time, naming the file and line, in a dataset, a predictions file or a lockfile).
InstanceId = Annotated[str, AfterValidator(_one_component)]


def clip(text: object, limit: int = 200) -> str:
    """At most ``limit`` characters, cut in the middle: ids differ at both ends."""
    text = str(text)
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 3
    return text[: limit - 1 - tail] + "\u2026" + text[-tail:]


def size(count: int) -> str:
    """Bytes as people read them: 812 bytes, 48.0 KiB, 52.4 MiB."""
    if count < 1024:
        return f"{count} byte" + ("" if count == 1 else "s")
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
