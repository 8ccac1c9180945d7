"""Checks on a model patch before any container runs it: a patch is bytes from an adversary.

Two checks, each a table:

* **Paths.** Every file name a patch tool could act on (``diff --git``, ``---`` / ``+++``
  outside hunks, ``rename`` / ``copy`` lines, ``Index:``, context-diff headers) must stay
  inside the repository: no absolute path, no ``..``, nothing under ``.git``, no
  control characters, and no symbolic link whose target leaves the tree (or points
  into ``.git``). A patch that breaks this is *unsafe*: the trial is scored
  ``unresolved`` with reason ``patch_unsafe`` (patch status ``invalid``: it breaks the
  input contract, per the semantics) and never reaches a container. Hunk bodies are
  skipped by their line counts, as the tools do, so removed lines such as ``-- a/b``
  are not mistaken for headers.
* **Suspect code.** Added lines of library files (what the protection policy does not
  restore anyway) are scanned for code that reaches into the test framework: assigning
  to unittest's classes, pytest internals and hooks outside a conftest, ``sys.modules``
  games with test modules, leaving by ``os._exit``, rewiring stdout, printing text shaped
  like test results, naming test infrastructure files. Findings make the trial
  *suspect*; the dataset's ``protection.suspect`` policy says whether that makes it
  ``invalid`` (default) or is only recorded. Heuristic by nature: see docs/threat-model.md's
  threat model for what it can and cannot see.

Any byte sequence is handled: nothing here raises on input.
"""

from __future__ import annotations

import codecs
import fnmatch
import posixpath
import re
from collections import Counter
from dataclasses import dataclass

from evalrepro.records.observation import SuspectFinding
from evalrepro.records.testspec import ResolvedProtection
from evalrepro.sandbox.infra import SECTION_FILES
from evalrepro.sandbox.protocol import name_bytes, quote_name, shown


def _surrogates(error: UnicodeError) -> tuple[bytes, int]:
    """Lone surrogates as bytes: U+DC80..U+DCFF are the undecodable bytes they stand for
    (Python's surrogateescape: a patch read from a file with invalid UTF-8), any other
    is written as its three bytes (a JSON string can hold one)."""
    assert isinstance(error, UnicodeEncodeError)
    chars = error.object[error.start : error.end]
    data = b"".join(
        bytes([ord(c) - 0xDC00])
        if 0xDC80 <= ord(c) <= 0xDCFF
        else c.encode("utf-8", "surrogatepass")
        for c in chars
    )
    return data, error.end


codecs.register_error("evalrepro.patch", _surrogates)


def patch_bytes(text: str | None) -> bytes:
    """A patch as the bytes a tool reads; lone surrogates kept, never a crash."""
    return (text or "").encode("utf-8", "evalrepro.patch")


@dataclass(frozen=True)
class PatchCheck:
    #: None, "empty", or "unsafe: <why>".
    problem: str | None
    suspects: tuple[SuspectFinding, ...]
    #: The files the patch names (new names), for the record.
    files: tuple[str, ...]


# --- paths ---------------------------------------------------------------------------

_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_GIT_DIR = re.compile(rb"^\.git[\s.]*$", re.IGNORECASE)
_ESCAPE = {
    b"n": b"\n",
    b"t": b"\t",
    b'"': b'"',
    b"\\": b"\\",
    b"a": b"\a",
    b"b": b"\b",
    b"f": b"\f",
    b"r": b"\r",
    b"v": b"\v",
}


def _unquote(name: bytes) -> bytes:
    """git's C-style quoting ("a/\\303\\244") undone; other names as they are."""
    if len(name) < 2 or not (name.startswith(b'"') and name.endswith(b'"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i : i + 1]
        if char == b"\\" and i + 1 < len(body):
            nxt = body[i + 1 : i + 2]
            if nxt.isdigit() and re.match(rb"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out += _ESCAPE.get(nxt, nxt)
            i += 2
            continue
        out += char
        i += 1
    return bytes(out)


def _name_problem(raw: bytes) -> str | None:
    name = _unquote(raw.strip())
    if not name or name == b"/dev/null":
        return None
    label = quote_name(name)[:120]
    if any(byte < 0x20 or byte == 0x7F for byte in name):
        return f"a path with a control character ({label})"
    if name.startswith(b"/"):
        return f"an absolute path ({label})"
    parts = name.split(b"/")
    if b".." in parts:
        return f"a path that leaves the repository ({label})"
    if any(_GIT_DIR.match(part) for part in parts):
        return f"a path inside .git ({label})"
    return None


def _stripped(name: bytes) -> set[str]:
    """Where a tool may put ``name``: without a/ or b/, and without any first component
    (``-p1``, which git apply and patch both use, strips whatever comes first)."""
    name = _unquote(name.strip())
    found = {name[2:] if name.startswith((b"a/", b"b/")) else name}
    if b"/" in name:
        found.add(name.split(b"/", 1)[1])
    return {variant.decode("utf-8", "surrogateescape") for variant in found}


def _link_problems(links: list[tuple[bytes, bytes]]) -> str | None:
    """A link of the patch that resolves outside the tree or into .git, through any chain
    of the patch's own links."""
    targets: dict[str, str] = {}
    for name, target in links:
        for path in _stripped(name):
            targets[path] = target.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
    for path, target in sorted(targets.items()):
        link = f"{shown(path)} -> {shown(target)}"[:200]
        if target.startswith("/"):
            return f"a symbolic link to an absolute path ({link})"
        resolved = _resolve(posixpath.dirname(path), target, targets)
        if resolved is None:
            return f"a symbolic link that leaves the repository ({link})"
        if any(_GIT_DIR.match(name_bytes(part)) for part in resolved):
            return f"a symbolic link into .git ({link})"
    return None


def _resolve(folder: str, target: str, links: dict[str, str]) -> list[str] | None:
    """The components ``target`` resolves to from ``folder`` (None: above the root)."""
    done: list[str] = [part for part in folder.split("/") if part]
    todo = [part for part in target.split("/") if part]
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        done.append(part)
        link = links.get("/".join(done))
        if link is not None:
            hops += 1
            if hops > 40 or link.startswith("/"):
                return None
            done.pop()
            todo = [p for p in link.split("/") if p] + todo
    return done


_NAME_HEADER = re.compile(rb"^(?:---|\+\+\+|\*\*\*)[ \t]+(.*)$|^Index:[ \t]*(.*)$")


def path_problem(data: bytes) -> tuple[str | None, list[str]]:
    """The first unsafe thing in the patch (or None), and the files it names."""
    lines = data.split(b"\n")
    files: list[str] = []
    links: list[tuple[bytes, bytes]] = []
    problem: str | None = None
    symlink = False
    new_name = b""
    i = 0
    while i < len(lines) and problem is None:
        line = lines[i].rstrip(b"\r")
        header = _NAME_HEADER.match(line)
        if line.startswith(b"diff --git "):
            symlink = False
            rest = line[len(b"diff --git ") :]
            for token in re.findall(rb'"(?:[^"\\]|\\.)*"|\S+', rest):
                problem = problem or _name_problem(token)
        elif header is not None:
            name = header.group(1) if header.group(1) is not None else header.group(2)
            name = name.split(b"\t", 1)[0]
            problem = _name_problem(name)
            if line.startswith(b"+++"):
                new_name = _unquote(name.strip())
                if new_name != b"/dev/null":
                    files.append(shown(sorted(_stripped(new_name))[0]))
        elif line.startswith((b"rename from ", b"rename to ", b"copy from ", b"copy to ")):
            problem = _name_problem(line.split(b" ", 2)[2])
        elif re.match(rb"^(new file mode|new mode|old mode|deleted file mode) 120000", line) or (
            line.startswith(b"index ") and line.endswith(b" 120000")
        ):
            symlink = line.startswith((b"new file mode", b"new mode", b"index "))
        elif line.startswith(b"GIT binary patch") and symlink:
            problem = "a symbolic link written as a binary patch (its target cannot be checked)"
        elif (match := _HUNK.match(line)) is not None:
            old_count = int(match.group(1)) if match.group(1) is not None else 1
            new_count = int(match.group(2)) if match.group(2) is not None else 1
            i += 1
            added: list[bytes] = []
            while i < len(lines) and (old_count > 0 or new_count > 0):
                body = lines[i]
                tag = body[:1]
                if tag == b" " or body == b"":
                    old_count, new_count = old_count - 1, new_count - 1
                elif tag == b"-":
                    old_count -= 1
                elif tag == b"+":
                    new_count -= 1
                    added.append(body[1:])
                elif tag != b"\\":
                    break  # the hunk ended early: the tools read on as headers too
                i += 1
            if symlink and added:
                links.append((new_name, added[0]))
            continue
        i += 1
    if problem is None and links:
        problem = _link_problems(links)
    return problem, files


# --- suspect code -------------------------------------------------------------------------

#: (rule, what it means, pattern); matched on each added line of a library file. The
#: words a reviewer reads of each rule (what the line does, why it matters) are in
#: ``records/words.py``, which the findings carry.
SUSPECT_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "framework_reassigned",
        "assigns to an attribute of unittest or its classes",
        re.compile(
            r"\b(?:unittest(?:\.\w+)*|TestCase|TestResult|TextTestResult|TextTestRunner|"
            r"TestProgram|TestLoader|TestSuite|IsolatedAsyncioTestCase)\.\w+\s*[-+*/|&^]?=(?!=)"
        ),
    ),
    (
        "framework_setattr",
        "sets attributes of a test framework object",
        re.compile(
            r"\bsetattr\(\s*(?:unittest|_pytest|pytest|pluggy|TestCase|TestResult|"
            r"TextTestResult)\b"
        ),
    ),
    (
        "pytest_internals",
        "reaches into pytest's internals",
        re.compile(
            r"^\s*(?:import\s+_pytest\b|from\s+_pytest\b)|\b_pytest(?:\.\w+)+\s*[-+*/|&^]?=(?!=)"
        ),
    ),
    (
        "pytest_hook",
        "defines a pytest hook outside a conftest",
        re.compile(
            r"^\s*def\s+pytest_(?:runtest_\w+|report_\w+|terminal_summary|session\w+|"
            r"collection\w*|collectreport|make_collect_report|pycollect_makeitem|pyfunc_call|"
            r"configure|unconfigure|load_initial_conftests|cmdline_\w+|assertrepr_compare|"
            r"exception_interact|itemcollected|deselected|warning_recorded)\s*\("
        ),
    ),
    (
        "sys_modules_tests",
        "replaces test or framework modules in sys.modules",
        re.compile(
            r"\bsys\.modules\s*\[[^\]]*(?:test|unittest|pytest|conftest)[^\]]*\]\s*=(?!=)|"
            r"\bsys\.modules\.(?:pop|update|setdefault|__setitem__|__delitem__)\("
            r"[^)]*(?:test|unittest|pytest)|\bdel\s+sys\.modules\s*\[[^\]]*test"
        ),
    ),
    ("hard_exit", "leaves the interpreter without its shutdown", re.compile(r"\bos\._exit\s*\(")),
    (
        "exit_replaced",
        "replaces the interpreter's exit",
        re.compile(r"\b(?:sys\.exit|builtins\.exit|atexit\._run_exitfuncs)\s*=(?!=)"),
    ),
    (
        "stdout_rewired",
        "rewires the process's stdout or stderr descriptors",
        re.compile(
            r"\bos\.dup2\s*\([^,]*,\s*[12]\s*\)|/proc/self/fd/[12]\b|"
            r"\bos\.(?:close|closerange)\s*\(\s*[12]\s*[,)]"
        ),
    ),
    (
        "result_text",
        "writes text shaped like a test result",
        re.compile(
            r"\b(?:PASSED|FAILED|XFAIL|XPASS)\s+\S+::|\.\.\.\s+ok\b|\b\d+\s+passed\b|"
            r"\bRan\s+\d+\s+tests?\b|>>>>>\s"
        ),
    ),
    (
        "infrastructure_named",
        "names a test infrastructure file",
        re.compile(r"conftest\.py|sitecustomize|usercustomize|pytest\.ini|\.pth['\"]"),
    ),
)
#: Rules a file is exempt from by its path: a conftest defines hooks (and is test
#: infrastructure, judged by the protection policy). No folder name exempts a file: a
#: ``_pytest/`` inside a repository is the repository's code, not pytest's, unless the
#: dataset declares it the framework's own source (``protection.framework_sources``).
_EXEMPT = {
    "pytest_hook": lambda path: path.rsplit("/", 1)[-1] == "conftest.py",
}
_FRAMEWORK_RULES = ("pytest_hook", "pytest_internals")


def _exempt(rule: str, path: str, protection: ResolvedProtection) -> bool:
    by_name = _EXEMPT.get(rule)
    if by_name is not None and by_name(path):
        return True
    return rule in _FRAMEWORK_RULES and any(
        fnmatch.fnmatchcase(path, pattern) for pattern in protection.framework_sources
    )


def suspect_code(text: str, protection: ResolvedProtection) -> list[SuspectFinding]:
    """Findings in the added lines of the files the protection policy leaves in place."""

    def restored(path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return protection.policy == "restore" and (
            protection.reason(path) is not None or name in SECTION_FILES
        )

    findings: list[SuspectFinding] = []
    for paths, number, line in _added_lines(text):
        # A hunk under two names (--- x, +++ y) may be written to either (patch --fuzz
        # picks the one that exists): it is skipped only when both are restored.
        if all(restored(path) for path in paths):
            continue  # put back before the tests run: its content cannot act
        path = paths[-1]
        for rule, _, pattern in SUSPECT_RULES:
            if pattern.search(line) and not _exempt(rule, path, protection):
                findings.append(SuspectFinding.of(rule, path, number, line.strip()[:200]))
                if len(findings) >= 50:
                    return findings
    return findings


#: Lines that add text in any diff format GNU patch reads: unified (+), normal (>),
#: context (+ and !).
_RAW_ADDED = re.compile(r"^(?:\+(?!\+\+[ \t])|> |! |\+ )")


def _added_lines(text: str) -> list[tuple[tuple[str, ...], int, str]]:
    """(paths, line number, text) of every added line: unidiff's reading of each file,
    then every added-looking line unidiff did not place (other diff formats, garbage the
    fuzzy tools may still apply), with path "?"."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    placed: list[tuple[tuple[str, ...], int, str]] = []
    try:
        for patched in PatchSet(text):
            names = tuple(
                dict.fromkeys(
                    _display(name)
                    for name in (patched.source_file, patched.target_file)
                    if name and name != "/dev/null"
                )
            ) or (_display(patched.path),)
            for hunk in patched:
                for line in hunk:
                    if line.is_added:
                        placed.append((names, line.target_line_no or 0, line.value))
    except (UnidiffParseError, ValueError, IndexError, TypeError):
        placed = []
    unplaced = Counter(value.rstrip("\r\n") for _, _, value in placed)
    rest = []
    for line in text.splitlines():
        match = _RAW_ADDED.match(line)
        if match is None:
            continue
        value = line[match.end() :].rstrip("\r")
        if unplaced[value] > 0:
            unplaced[value] -= 1
            continue
        rest.append((("?",), 0, value))
    return placed + rest


def _display(path: str) -> str:
    """A name as unidiff read it (git's quoting kept) as names are shown: its bytes
    (quoting undone, without a/ or b/) through ``quote_name``."""
    raw = _unquote(path.encode("utf-8", "surrogateescape"))
    return quote_name(raw[2:] if raw.startswith((b"a/", b"b/")) else raw)


def check_patch(
    data: bytes, protection: ResolvedProtection, *, without_patch: bool = False
) -> PatchCheck:
    """The checks on a patch's bytes (as written to the attempt's patch.diff);
    ``without_patch``: of a run that applies no patch, whose patch must be empty."""
    if without_patch:
        problem = "unsafe: a patch for a run that applies none" if data.strip() else None
        return PatchCheck(problem=problem, suspects=(), files=())
    if not data.strip():
        return PatchCheck(problem="empty", suspects=(), files=())
    problem, files = path_problem(data)
    if problem is not None:
        return PatchCheck(problem=f"unsafe: {problem}", suspects=(), files=tuple(files))
    decoded = data.decode("utf-8", "replace")
    return PatchCheck(
        problem=None, suspects=tuple(suspect_code(decoded, protection)), files=tuple(files)
    )
