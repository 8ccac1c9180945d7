"""Produce the ``cargo test`` corpus: each case's crate run with libtest's pretty output
and with its JSON output, really.

Each case is one crate, run twice with the same sources (the tests are deterministic,
one thread): ``cargo test --no-fail-fast -- --test-threads=1 2>&1`` (what SWE-bench's
Rust instances run, read by the compatible ``cargo`` parser) and the same with ``-Z
unstable-options --format json`` (``RUSTC_BOOTSTRAP=1``; read by the native
``cargo_json``). Ground truth, for both logs, is libtest's own JSON event stream, read
here by these rules, independently of the parser: per test binary (cargo's ``Running
src (target/debug/deps/bin-HASH)`` -> ``bin:src``; ``Doc-tests crate`` -> ``crate:doc``)
``ok`` / ``failed`` / ``ignored`` -> PASSED / FAILED / SKIPPED under ``<target>::<name>``;
a test that started with no outcome -> ERROR, and a binary that never finished -> ERROR
under its target. Temp dirs are replaced by ``/corpus`` in the logs.

Run ``python -m tests.runners.cargo`` from the repo root to rewrite tests/corpus/cargo/
(needs ``cargo`` on PATH or in ``~/.cargo/bin``; no crates are downloaded).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.corpus import CorpusLog, write_corpus

RUNNER = "cargo"
COMPAT = ("cargo",)
NATIVE = "cargo_json"
SEPARATOR = "::"
WORKDIR_STAND_IN = "/corpus"
CRATE = "demo"
CARGO_TOML = f'[package]\nname = "{CRATE}"\nversion = "0.1.0"\nedition = "2021"\n'

PASSING = {
    "src/lib.rs": """\
/// Adds two numbers.
///
/// ```
/// assert_eq!(demo::add(1, 1), 2);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(1, 1), 2);
    }

    #[test]
    #[should_panic(expected = "boom")]
    fn panics_as_expected() {
        panic!("boom");
    }

    mod nested {
        #[test]
        fn deeper() {}
    }
}
""",
    "tests/integration.rs": """\
#[test]
fn uses_the_crate() {
    assert_eq!(demo::add(2, 2), 4);
}
""",
}

MIXED = {
    "src/lib.rs": """\
/// Adds two numbers.
///
/// ```
/// assert_eq!(demo::add(1, 1), 2);
/// ```
///
/// ```
/// assert_eq!(demo::add(1, 1), 3);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(1, 1), 2);
    }

    #[test]
    fn fails() {
        assert_eq!(super::add(1, 1), 3);
    }

    #[test]
    #[should_panic]
    fn panics() {
        panic!("expected");
    }

    #[test]
    #[should_panic(expected = "other")]
    fn panics_with_the_wrong_message() {
        panic!("expected");
    }

    #[test]
    #[should_panic]
    fn should_panic_but_does_not() {}

    #[test]
    #[ignore]
    fn slow() {}

    #[test]
    #[ignore = "needs network"]
    fn ignored_with_reason() {}

    #[test]
    fn forges_in_its_failure_output() {
        println!("test invented ... ok");
        panic!("really fails");
    }
}
""",
    "tests/a.rs": """\
#[test]
fn shared() {}
""",
    "tests/b.rs": """\
#[test]
fn shared() {
    panic!("same name, other binary");
}
""",
}

CRASH = {
    "src/lib.rs": """\
#[cfg(test)]
mod tests {
    #[test]
    fn a_first() {}

    #[test]
    fn b_aborts() {
        std::process::abort();
    }

    #[test]
    fn c_never_starts() {}
}
""",
    "tests/after.rs": """\
#[test]
fn runs_after_the_crash() {}
""",
}


@dataclass(frozen=True)
class _Case:
    case: str
    files: dict[str, str]


CASES = (_Case("passing", PASSING), _Case("mixed", MIXED), _Case("crash", CRASH))
CASE_NAMES = [f"{spec.case}_{kind}" for spec in CASES for kind in ("pretty", "json")]

_RUNNING = re.compile(r"\s*Running (?:unittests )?(\S+) \(([^)]+)\)")
_DOC_TESTS = re.compile(r"\s*Doc-tests (\S+)")


def cargo_executable() -> str | None:
    found = shutil.which("cargo")
    fallback = Path.home() / ".cargo" / "bin" / "cargo"
    return found or (str(fallback) if fallback.exists() else None)


def json_truth(text: str) -> dict[str, str]:
    """libtest's JSON events as ``{id: status}``, by the rules of the module doc."""
    truth: dict[str, str] = {}
    target = "?"
    open_target: str | None = None
    for line in text.splitlines():
        if not line.startswith("{"):
            if match := _RUNNING.fullmatch(line):
                binary = match.group(2).rsplit("/", 1)[-1].rsplit("-", 1)[0]
                target = f"{binary}:{match.group(1)}"
            elif match := _DOC_TESTS.fullmatch(line):
                target = f"{match.group(1)}:doc"
            continue
        event: dict[str, Any] = json.loads(line)
        if event["type"] == "suite":
            if event["event"] == "started":
                open_target = target
                truth[target] = "ERROR"  # until it finishes
            elif open_target is not None:
                del truth[open_target]
                open_target = None
        elif event["type"] == "test":
            key = f"{target}{SEPARATOR}{event['name']}"
            if event["event"] == "started":
                truth.setdefault(key, "ERROR")
            elif event["event"] in ("ok", "failed", "ignored"):
                truth[key] = {"ok": "PASSED", "failed": "FAILED", "ignored": "SKIPPED"}[
                    event["event"]
                ]
    return truth


def _cargo(cargo: str, args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [cargo, *args],
        cwd=cwd,
        env={**os.environ, "RUST_BACKTRACE": "0", "CARGO_TERM_COLOR": "never", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=600,
        check=False,
    )
    return done.stdout.decode("utf-8")


def _clean(text: str, casedir: Path) -> str:
    for path in (str(casedir.resolve()), str(casedir)):
        text = text.replace(path, WORKDIR_STAND_IN)
    # rustdoc's temp dirs (panics in doc tests name them) differ on every run.
    return re.sub(r"/tmp/rustdoctest\w+", "/tmp/rustdoctest", text)


def _produce_case(spec: _Case, cargo: str, workdir: Path) -> list[CorpusLog]:
    src = workdir / spec.case
    src.mkdir(parents=True)
    (src / "Cargo.toml").write_text(CARGO_TOML, encoding="utf-8")
    for name, source in spec.files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(source, encoding="utf-8")
    base = ["test", "--offline", "--no-fail-fast", "--", "--test-threads=1"]
    json_args = ["-Z", "unstable-options", "--format", "json"]
    pretty = _cargo(cargo, base, src, {})
    events = _cargo(cargo, [*base, *json_args], src, {"RUSTC_BOOTSTRAP": "1"})
    truth = json_truth(events)
    return [
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_pretty",
            command="cargo test --offline --no-fail-fast -- --test-threads=1 2>&1",
            text=_clean(pretty, src),
            truth=truth,
            compat=COMPAT,
        ),
        CorpusLog(
            runner=RUNNER,
            case=f"{spec.case}_json",
            command="RUSTC_BOOTSTRAP=1 cargo test --offline --no-fail-fast --"
            " --test-threads=1 -Z unstable-options --format json 2>&1",
            text=_clean(events, src),
            truth=truth,
            native=NATIVE,
        ),
    ]


def produce(workdir: Path) -> list[CorpusLog]:
    cargo = cargo_executable()
    if cargo is None:
        raise FileNotFoundError("cargo is not installed (https://rustup.rs)")
    # Each case is its own crate and target dir; two at a time keeps the machine usable.
    with ThreadPoolExecutor(max_workers=2) as pool:
        produced = list(pool.map(lambda spec: _produce_case(spec, cargo, workdir), CASES))
    return [log for logs in produced for log in logs]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(RUNNER, produce(Path(tmp)))
    print(f"wrote {folder}")
