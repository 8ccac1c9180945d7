"""The trial viewer (``evalrepro view``): a static site of a run, from hostile records.

Runs are made the way a real run makes them, without containers: evalrepro's own
executor runs each planned trial against a runtime whose "sandbox" is a framed
supervisor stream written here and read by the real ``StreamReader`` (so
``test_output.txt``, ``supervisor.json`` with its region, ``program.json``, the patches,
the Observation rebuilt from those files and the score are all what a run writes). The
trials include an empty patch, a rejected one, a retry after an infrastructure error, an
unfinished trial, a 50 MB log, and hostile text (script and markup, control characters,
bidi overrides, invalid UTF-8) in a log, a patch, test ids and instance ids; after the
run, artifacts are replaced by symbolic links. The pages are then checked as parsed
documents and in headless Chromium (no script ran, nothing injected, filters work,
every link resolves).
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from evalrepro import __version__
from evalrepro.build.buildlog import record_builds
from evalrepro.build.images import ImageChain, inputs_digest, layer_key
from evalrepro.config.environment import Limits, PodmanEnvironment
from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.config.gate import Gate, GateRule
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.grade.parsers import get_parser
from evalrepro.plan.harness import code_digest
from evalrepro.plan.plan import PlannedTrial
from evalrepro.records.image import ImageRecord
from evalrepro.records.lockfile import (
    Harness,
    LockedDataset,
    LockedEnvironment,
    LockedImage,
    LockedInstance,
    LockedPrediction,
    LockedTarget,
    LockedTrial,
    Lockfile,
)
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.records.testspec import ResolvedProtection, TestSpec
from evalrepro.records.trial import Trial, TrialKey, Usage
from evalrepro.report.view import MANIFEST, view_run
from evalrepro.rules.evalscript import compile_eval_script
from evalrepro.rules.patchcheck import check_patch, patch_bytes
from evalrepro.run.executors import run_trials
from evalrepro.run.rundir import RunDirectory
from evalrepro.run.trial_view import LOG
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.base import Runtime
from evalrepro.runtimes.supervision import StreamReader
from evalrepro.sample import Sample
from evalrepro.targets.base import Prediction
from tests.fake_backend import supervisor_stream

# --- hostile text ------------------------------------------------------------------------

#: What must never run or become an element: it would set the page's title.
PWN = "document.title='pwned'"
SCRIPT = f"<script>{PWN}</script>"
BREAKOUT = f'</pre></td></table><img src=x onerror="{PWN}"><svg onload="{PWN}">'
CONTROL = "\x00\x07\x08\x1b[31mred\x1b[0m\x7f\x85\u202eevil\u2066"
#: Ids are one safe path component (no separator, no control character: refused at
#: read time, tests/adversarial/test_inputs.py); markup is all they can hold.
HOSTILE_ID = f'hostile<img src=x onerror="{PWN}">&"\''
#: No file name of the viewer's own rule (markup, spaces): its page name is cleaned.
SLASHED_ID = f"<script>{PWN}<script> .. escape"
HOSTILE_TEST = f"tests/test_calc.py::test_{SCRIPT}{BREAKOUT}"
INVALID_UTF8 = b"\xff\xfe\xc3( \xed\xa0\x80 \xf0\x28\x8c\x28"
CANARY = "CANARY-outside-the-run-7f3a"

REPO = "demo/calc"
BASE = "0123456789abcdef0123456789abcdef01234567"
F2P = ("tests/test_calc.py::test_add",)
P2P = ("tests/test_calc.py::test_sub", "tests/test_calc.py::test_mul")


def diff(path: str, removed: str, added: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n"
        f"+++ b/{path}\n@@ -1,3 +1,3 @@\n def add(a, b):\n-{removed}\n+{added}\n"
        " # end\n"
    )


GOOD_PATCH = diff("calc/core.py", "    return a - b", "    return a + b")
TEST_PATCH = diff("tests/test_calc.py", "    assert True", "    assert add(1, 2) == 3")
# A removed line that looks like a file header: only hunk counting tells them apart.
TRICKY_PATCH = (
    "diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n"
    "@@ -1,2 +1,2 @@\n--- not a header\n+++ not a header either\n keep\n"
)


def pytest_output(passed: Iterable[str], failed: Iterable[str] = (), filler: bytes = b"") -> bytes:
    """A region as ``pytest -rA`` prints it (the short test summary is what is parsed)."""
    passed, failed = list(passed), list(failed)
    lines = [
        b"============================= test session starts ==============================\n",
        f"collected {len(passed) + len(failed)} items\n\n".encode(),
        filler,
        b"=========================== short test summary info ============================\n",
        *(f"PASSED {t}\n".encode() for t in passed),
        *(f"FAILED {t} - assert 1 == 2\n".encode() for t in failed),
        f"========== {len(failed)} failed, {len(passed)} passed in 0.12s ==========\n".encode(),
    ]
    return b"".join(lines)


# --- a run made by the executor, with a stream written here -----------------------------


@dataclass(frozen=True)
class Case:
    """One planned trial and how its "sandbox" goes."""

    instance_id: str
    patch: str = GOOD_PATCH
    test_patch: str = TEST_PATCH
    output: bytes = pytest_output([*F2P, *P2P])
    f2p: tuple[str, ...] = F2P
    p2p: tuple[str, ...] = P2P
    exit_code: int = 0
    rejected: bool = False
    #: Attempts that end in an infrastructure error before one runs.
    broken_attempts: int = 0
    #: False: planned, never run (an interrupted run).
    finished: bool = True
    sample_index: int = 0
    repo: str = REPO
    harness_log: str = "$ git apply --verbose /evalrepro/patch.diff\nApplied cleanly.\n"
    usage: Usage | None = None


def stream(case: Case) -> bytes:
    """The supervisor's framed stream of one attempt of ``case``."""
    return supervisor_stream(
        case.output,
        exit_code=case.exit_code,
        changed=["calc/core.py"],
        rejected=case.rejected,
        harness_log=case.harness_log,
        reject_detail="error: patch failed: calc/core.py:1",
    )


class StreamBackend(Runtime):
    """A runtime whose sandbox is the stream of each trial's case."""

    kind = "podman"

    def __init__(self, cases: dict[str, Case]) -> None:
        self.cases = cases  # by trial label

    def check(self) -> None:
        pass

    def run(self, spec: AttemptSpec) -> AttemptOutput:
        case = self.cases[spec.label]
        log = f"podman run {spec.sandbox_name}\n".encode()
        if spec.number <= case.broken_attempts:
            report = SupervisorReport(
                runtime=RuntimeFacts(exit_code=125, error="podman: the container runtime died")
            )
            return AttemptOutput(
                artifacts={"runtime.log": log}, report=report, limits={"memory": "cgroup"}
            )
        reader = StreamReader(spec.output_limit)
        reader.feed(stream(case))
        report = reader.finish(RuntimeFacts(exit_code=0, seconds=0.4))
        return AttemptOutput(
            artifacts={"test_output.txt": reader.output, "runtime.log": log},
            report=report,
            limits={"memory": "cgroup"},
        )


PROTECTION = ResolvedProtection(
    policy="restore", suspect="invalid", patterns=["conftest.py"], test_dirs=["tests"]
)
IMAGE = ImageChain(
    layers=[
        ImageRecord(
            builder="containerfile",
            layer="instance",
            inputs=[],
            key=layer_key("containerfile", "instance", [], None),
            inputs_digest=inputs_digest([]),
            tag="localhost/evalrepro-instance:calc",
            parent_key=None,
            image_digest="sha256:" + "c" * 64,
            built=True,
            build_seconds=12.5,
        )
    ]
)


def _sample(case: Case) -> Sample:
    return Sample(
        instance_id=case.instance_id,
        repo=case.repo,
        base_commit=BASE,
        test_patch=case.test_patch,
        FAIL_TO_PASS=list(case.f2p),
        PASS_TO_PASS=list(case.p2p),
    )


def _spec(sample: Sample) -> TestSpec:
    script = compile_eval_script(
        base_commit=BASE,
        test_command="pytest -rA tests/test_calc.py",
        test_files=["tests/test_calc.py"],
        test_patch_empty=not sample.test_patch,
        protection=PROTECTION,
    )
    return TestSpec(
        instance_id=sample.instance_id,
        repo=sample.repo,
        version="1.0",
        base_commit=BASE,
        packages=[],
        install=None,
        test_cmd="pytest -rA",
        test_directives=["tests/test_calc.py"],
        parser="pytest",
        fail_only=False,
        test_patch_digest=sha256_bytes(patch_bytes(sample.test_patch)),
        fail_to_pass=sample.fail_to_pass,
        pass_to_pass=sample.pass_to_pass,
        eval_script=script,
    )


def build_run(run_dir: Path, cases: list[Case], *, target_id: str = "org/model-v") -> Lockfile:
    """A run directory as ``evalrepro run`` leaves it: the lockfile, run.json, the image
    builds, and every finished case's trial folder, written by the real executor."""
    parser = get_parser("pytest")
    planned: list[PlannedTrial] = []
    instances: dict[str, LockedInstance] = {}
    for case in cases:
        sample = _sample(case)
        spec = _spec(sample)
        key = TrialKey(
            instance_id=case.instance_id,
            target_id=target_id,
            repository_commit=BASE,
            image_digest=IMAGE.image.image_digest,
            test_spec_digest=spec.digest(),
            harness_version=__version__,
            harness_digest=code_digest(),
            sample_index=case.sample_index,
        )
        prediction = Prediction(
            instance_id=case.instance_id,
            model_name_or_path=target_id,
            model_patch=case.patch,
            sample_index=case.sample_index,
            usage=case.usage,
        )
        check = check_patch(patch_bytes(case.patch), PROTECTION)
        planned.append(PlannedTrial(Trial.of(key), sample, spec, parser, prediction, IMAGE, check))
        instances[case.instance_id] = LockedInstance(
            instance_id=case.instance_id,
            repo=case.repo,
            base_commit=BASE,
            digest=sample.digest(),
            test_spec_digest=spec.digest(),
            parser="pytest",
        )
    predictions = [
        LockedPrediction(
            instance_id=p.sample.instance_id,
            sample_index=p.prediction.sample_index,
            patch_digest=p.prediction.patch_digest,
        )
        for p in planned
    ]
    samples = max(case.sample_index for case in cases) + 1
    lockfile = Lockfile(
        experiment="viewer",
        harness=Harness(version=__version__, code_digest=code_digest()),
        config={},
        config_digest=sha256_json({}),
        dataset=LockedDataset(
            name="calc-demo",
            test_ids="swebench",
            digest=sha256_json([i.digest for i in instances.values()]),
            instances=list(instances.values()),
        ),
        target=LockedTarget(
            kind="predictions",
            target_id=target_id,
            samples=samples,
            digest=sha256_json([p.model_dump(mode="json") for p in predictions]),
            predictions=predictions,
        ),
        environment=LockedEnvironment(
            kind="podman",
            builder="containerfile",
            digest=sha256_json({}),
            limits=Limits(),
            timeout=600,
            network="none",
            images=[
                LockedImage(**layer.model_dump(exclude={"built", "build_seconds"}))
                for layer in IMAGE.layers
            ],
        ),
        gate=Gate(
            name="viewer",
            rules=[GateRule(metric="resolved_rate", op=">=", threshold=0.3)],
        ),
        trials=[
            LockedTrial(trial_id=p.trial.trial_id, key=p.trial.key, image_key=IMAGE.image.key)
            for p in planned
        ],
    )
    directory = RunDirectory(run_dir)
    with directory.exclusive():
        directory.begin(lockfile, {"kind": "podman", "mode": "rootless", "podman": "4.3.1"})
        record_builds(directory.path, [IMAGE])
        runnable = [
            p
            for p, case in zip(planned, cases, strict=True)
            if case.finished and "/" not in p.label
        ]
        backend = StreamBackend({p.label: c for p, c in zip(planned, cases, strict=True)})
        run_trials(
            runnable,
            runtime=backend,
            run_dir=directory.path,
            environment=PodmanEnvironment(timeout=600),
            executor=LocalExecutorConfig(max_workers=2, max_attempts=3),
        )
    return lockfile


def hostile_log() -> bytes:
    text = (
        f"{SCRIPT}\n{BREAKOUT}\ncontrol: {CONTROL}\n".encode()
        + b"invalid utf-8: "
        + INVALID_UTF8
        + b"\n"
    )
    return pytest_output([HOSTILE_TEST, *F2P, *P2P], filler=text)


MIXED = [
    Case("demo__calc-1", usage=Usage(input_tokens=1200, output_tokens=300, cost_usd=0.05)),
    Case(
        "demo__calc-2",
        output=pytest_output(P2P, failed=F2P),
        exit_code=1,
        usage=Usage(input_tokens=900, output_tokens=200, cost_usd=0.03),
    ),
    Case("demo__calc-3", patch=""),
    Case("demo__calc-4", rejected=True),
    Case("demo__calc-5", broken_attempts=1),
    Case("demo__calc-6", finished=False),
    Case("demo__calc-7", patch=TRICKY_PATCH),
    Case(
        HOSTILE_ID,
        patch=diff("calc/core.py", "    return a - b", f"    return a + b  # {SCRIPT}{BREAKOUT}")
        + f"+# {CONTROL}\n",
        output=hostile_log(),
        f2p=(HOSTILE_TEST, *F2P),
        harness_log=f"harness says {SCRIPT} {CONTROL}\n",
    ),
    Case(SLASHED_ID, finished=False),
    Case("demo__links-1"),
]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("mixed") / "run"
    build_run(run_dir, MIXED)
    outside = run_dir.parent / "secret.txt"
    outside.write_text(f"{CANARY}\n")
    # After the run: the links trial's log and patch are links out of the run.
    attempt = next((run_dir / "trials").glob("demo__links-1--*")) / "attempt-1"
    for name in ("test_output.txt", "patch.diff"):
        (attempt / name).unlink()
        (attempt / name).symlink_to(outside)
    return run_dir


def trial_folder(run_dir: Path, instance_id: str) -> Path:
    return next(p for p in (run_dir / "trials").iterdir() if p.name.startswith(instance_id))


@pytest.fixture(scope="module")
def site(mixed):
    return view_run(mixed, n_resamples=200)


# --- the parsed pages ----------------------------------------------------------------------


class Page(HTMLParser):
    """Every element with its attributes, the text of each, and the links."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._skip += tag == "style"
        self._in_title = tag == "title" and not self.title  # the page's, not an SVG's

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        self._skip -= tag == "style"
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if not self._skip:
            self.texts.append(data)

    @property
    def tags(self) -> set[str]:
        return {tag for tag, _ in self.elements}

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def links(self) -> list[str]:
        return [a["href"] for tag, a in self.elements if tag == "a" and a.get("href")]

    def handlers(self) -> list[str]:
        return [k for _, a in self.elements for k in a if k.startswith("on")]


def page_of(site, instance_id: str) -> str:
    pages = [p for p in (site.root / "trials").iterdir() if p.name.startswith(instance_id)]
    assert len(pages) == 1, [p.name for p in pages]
    return pages[0].read_text(encoding="utf-8")


#: Every element a trial page of ours is made of.
OUR_TAGS = set(
    "html head meta title style body main nav a span h1 h2 h3 p section code table thead "
    "tbody tr th td pre details summary strong br ul li div".split()
)


def listed_tests(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(list, test id) -> (result, status in the log), from a trial page's test table."""
    table = text.split('id="test-table"')[1].split("</table>")[0]
    cells = r"<tr><td[^>]*>([^<]*)</td><td><code>(.*?)</code></td>\s*<td[^>]*>([^<]*)</td>"
    rows = re.findall(cells + r"<td>([^<]*)</td></tr>", table, re.S)
    return {(group, html.unescape(test)): (result, status) for group, test, result, status in rows}


def assert_inert(text: str) -> Page:
    """Nothing of the run became markup: no script, image, frame, handler or style."""
    page = Page(text)
    assert not page.tags & {"script", "img", "iframe", "object", "embed", "link", "base"}
    assert page.handlers() == []
    assert sum(tag == "style" for tag, _ in page.elements) == 1
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    csp = [a["content"] for t, a in page.elements if t == "meta" and a.get("http-equiv")]
    assert csp and csp[0].startswith("default-src 'none'; style-src 'sha256-")
    assert "http://" not in text and "https://" not in text
    return page


# --- the site --------------------------------------------------------------------------


def test_the_site_has_an_index_and_one_page_per_planned_trial(site, mixed):
    assert site.root == mixed / "view" and site.pages == len(MIXED)
    pages = sorted(p.name for p in (site.root / "trials").iterdir())
    assert len(pages) == len(MIXED) and all(p.endswith(".html") for p in pages)
    index = (site.root / "index.html").read_text(encoding="utf-8")
    page = assert_inert(index)
    assert page.text.count("demo__calc-") >= 7
    assert "Provenance" in page.text and "podman rootless (4.3.1)" in page.text
    assert json.loads((site.root / MANIFEST).read_text())["pages"] == pages


def test_every_link_is_relative_and_resolves_to_a_file_of_the_site(site):
    for html_file in [site.root / "index.html", *(site.root / "trials").iterdir()]:
        for link in Page(html_file.read_text(encoding="utf-8")).links():
            parts = urlsplit(link)
            assert not parts.scheme and not parts.netloc and not link.startswith("/"), link
            target = (html_file.parent / unquote(parts.path)).resolve()
            assert target.is_file(), f"{html_file.name}: {link}"
            assert site.root in target.parents


def test_trial_pages_link_back_to_the_index_and_to_their_neighbours(site):
    names = [json.loads((site.root / MANIFEST).read_text())["pages"]]
    index = Page((site.root / "index.html").read_text(encoding="utf-8"))
    order = [unquote(link).removeprefix("trials/") for link in index.links()]
    assert len(order) == len(MIXED) and sorted(order) == names[0]
    for number, name in enumerate(order):
        links = [unquote(x) for x in Page((site.root / "trials" / name).read_text()).links()]
        assert links[0] == "../index.html"
        expected = [*order[max(0, number - 1) : number], *order[number + 1 : number + 2]]
        assert links[1:] == expected


def test_a_resolved_trial_shows_its_patch_eval_script_log_tests_and_timing(site):
    text = page_of(site, "demo__calc-1")
    page = assert_inert(text)
    # The patch as a diff: file header, hunk, removed and added lines styled apart.
    assert '<span class="file">+++ b/calc/core.py</span>' in text
    assert '<span class="hunk">@@ -1,3 +1,3 @@</span>' in text
    assert '<span class="del">-    return a - b</span>' in text
    assert '<span class="add">+    return a + b</span>' in text
    # The eval script: the supervisor's program, readable.
    assert "git_apply: git apply --verbose /evalrepro/patch.diff" in page.text
    assert "pytest -rA tests/test_calc.py" in page.text
    assert "timeout: 600 s" in page.text
    assert '<span class="add">+    assert add(1, 2) == 3</span>' in text  # the test patch
    # The log, with the graded region marked where the supervisor recorded it.
    assert "graded region: bytes" in page.text and "end of the graded region" in page.text
    assert '<span class="graded">PASSED tests/test_calc.py::test_add</span>' in text
    assert '<span class="line">&gt;&gt;&gt;&gt;&gt; Start Test Output</span>' in text
    # Each listed test, passed or failed, and the status map.
    assert listed_tests(text)["FAIL_TO_PASS", F2P[0]] == ("passed", "PASSED")
    assert listed_tests(text)["PASS_TO_PASS", P2P[1]] == ("passed", "PASSED")
    assert "Status map: 3 tests" in page.text
    assert "$0.05" in page.text and "1,200 / 300" in page.text  # tokens and cost


def test_a_failed_test_reads_failed_and_the_trial_unresolved(site):
    text = page_of(site, "demo__calc-2")
    assert listed_tests(text)["FAIL_TO_PASS", F2P[0]] == ("failed", "FAILED")
    assert '<span class="badge unresolved">unresolved</span> tests failed' in text


def test_an_empty_patch_reads_as_an_empty_patch_never_as_invalid(site):
    text = page_of(site, "demo__calc-3")
    page = Page(text)
    assert '<span class="badge unresolved">unresolved</span> empty patch' in text
    assert "An empty patch: nothing to apply." in page.text
    patch_status = re.search(r"patch_status</th><td>([^<]*)</td>", text)
    assert (
        patch_status and patch_status.group(1) == "empty patch: nothing to apply, no container ran"
    )
    index = (site.root / "index.html").read_text()
    row = next(r for r in index.split("<tr") if "demo__calc-3" in r)
    assert 'class="o-unresolved' in row and "empty patch" in row and "invalid" not in row


def test_a_rejected_patch_and_a_retry_show_every_attempt_with_its_reason(site):
    assert "patch does not apply" in Page(page_of(site, "demo__calc-4")).text
    text = Page(page_of(site, "demo__calc-5")).text
    assert "retry after infrastructure error: podman: the container runtime died" in text
    assert "infrastructure error" in text and "2 attempts" in text


def test_an_unfinished_trial_has_a_page_that_says_it_has_no_result(site):
    text = Page(page_of(site, "demo__calc-6")).text
    assert "No result: this trial has not run" in text


def test_hunks_are_counted_so_removed_lines_like_headers_stay_removed(site):
    text = page_of(site, "demo__calc-7")
    assert '<span class="del">--- not a header</span>' in text
    assert '<span class="add">+++ not a header either</span>' in text


def test_hostile_ids_logs_patches_and_test_ids_are_text_never_markup(site):
    text = page_of(site, "hostile")
    page = assert_inert(text)
    shown = page.text
    # The script and the break-out, in the log, the patch and a test id, shown as text.
    assert shown.count(SCRIPT) >= 4 and shown.count(BREAKOUT) >= 3
    # Control characters and bidi overrides as visible marks; invalid UTF-8 replaced.
    assert "\u00abESC\u00bb[31mred" in shown and "\u00abU+202E\u00bbevil" in shown
    assert "\u00abNUL\u00bb\u00abBEL\u00bb\u00abBS\u00bb" in shown and "\ufffd\ufffd" in shown
    assert page.tags <= OUR_TAGS
    # The parser cut the hostile test id at its first space: absent, so failed.
    assert listed_tests(text)["FAIL_TO_PASS", HOSTILE_TEST] == ("failed", "not in the status map")
    index = assert_inert((site.root / "index.html").read_text())
    assert 'hostile<img src=x onerror="' in index.text


def test_an_instance_id_that_is_no_file_name_gets_a_safe_page_name(site):
    names = [p.name for p in (site.root / "trials").iterdir()]
    slashed = [n for n in names if n.startswith("_script_")]
    assert len(slashed) == 1 and "/" not in slashed[0] and re.fullmatch(r"[\w.+~-]+", slashed[0])
    assert not (site.root.parent / "escape").exists()


def test_artifacts_replaced_by_links_are_not_followed(site, mixed):
    text = page_of(site, "demo__links-1")
    assert CANARY not in text
    assert text.count("a symbolic link (or one in its path): not followed") >= 2
    assert "changed since it was recorded" in text or "Evidence problems" in text


def test_a_link_in_place_of_the_trial_folder_is_not_followed(tmp_path):
    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__calc-1"), Case("demo__calc-2")])
    folder = trial_folder(run_dir, "demo__calc-2")
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    (elsewhere / "attempt-1" / "test_output.txt").write_text(CANARY)
    site = view_run(run_dir, n_resamples=200)
    text = page_of(site, "demo__calc-2")
    assert CANARY not in text
    # The run's own reader leaves such a trial out (missing) and lists why.
    assert "nothing more to show" in text
    index = (site.root / "index.html").read_text()
    assert "a symbolic link where a trial folder belongs" in index and CANARY not in index


# --- big logs ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    filler = b"".join(f"filler {i:07d} ".encode() + b"." * 64 + b"\n" for i in range(700_000))
    assert len(filler) > 50 << 20
    run_dir = tmp_path_factory.mktemp("big") / "run"
    build_run(run_dir, [Case("demo__big-1", output=pytest_output([*F2P, *P2P], filler=filler))])
    return run_dir


def test_a_50_mb_log_renders_into_a_small_page_that_says_what_was_cut(big):
    # How fast: benchmarks/view_scale.py measures it.
    site = view_run(big, n_resamples=200)
    text = page_of(site, "demo__big-1")
    log = next((big / "trials").glob("*/attempt-1/test_output.txt"))
    assert log.stat().st_size > 50 << 20
    assert len(text.encode()) < 1 << 20
    page = Page(text)
    assert f"test_output.txt: {log.stat().st_size / (1 << 20):.1f} MiB" in page.text
    assert "cut (each cut is marked where it is)" in page.text
    assert "not shown (inside the graded region): bytes" in page.text
    # The region's start and end stay visible: its first lines and the summary.
    assert "graded region: bytes" in page.text and "end of the graded region" in page.text
    assert '<span class="graded">PASSED tests/test_calc.py::test_add</span>' in text
    assert "collected 3 items" in page.text


def test_a_log_of_very_many_short_lines_is_cut_by_lines_too(tmp_path):
    output = pytest_output([*F2P, *P2P], filler=b"\n" * 150_000)
    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__lines-1", output=output)])
    text = page_of(view_run(run_dir, n_resamples=200), "demo__lines-1")
    assert text.count("<span") < 3 * LOG.max_lines + 1000
    assert re.search(r"[\d,]+ lines \([\d.]+ KiB\) not shown", text)


# --- foreign logs --------------------------------------------------------------------------


def test_a_regraded_foreign_log_marks_no_region_and_says_why(tmp_path):
    from evalrepro.regrade import regrade

    logs = tmp_path / "logs" / "run_evaluation" / "r1" / "org__model"
    folder = logs / "demo__calc-1"
    folder.mkdir(parents=True)
    region = pytest_output([*F2P, *P2P]).decode()
    (folder / "test_output.txt").write_text(
        f"+ : '>>>>> Start Test Output'\n{region}+ : '>>>>> End Test Output'\n"
    )
    (folder / "patch.diff").write_text(GOOD_PATCH)
    sample = _sample(Case("demo__calc-1"))
    dataset = tmp_path / "instances.jsonl"
    row = sample.model_dump(mode="json", by_alias=True) | {"log_parser": "pytest"}
    dataset.write_text(json.dumps(row) + "\n")
    run_dir = tmp_path / "run"
    regrade(logs, dataset, run_dir=run_dir, parser=None, rules="swebench", model=None, run_id=None)
    site = view_run(run_dir, n_resamples=200)
    text = page_of(site, "demo__calc-1")
    page = assert_inert(text)
    assert "written by another harness (evalrepro regrade)" in page.text
    assert 'class="graded"' not in text and "graded region: bytes" not in page.text
    assert "No program.json" in page.text


# --- writing the site ----------------------------------------------------------------------


def test_stale_pages_of_an_earlier_view_are_removed_and_nothing_else(tmp_path):
    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__calc-1"), Case("demo__calc-2")])
    site = view_run(run_dir, n_resamples=200)
    manifest = json.loads((site.root / MANIFEST).read_text())
    stale = site.root / "trials" / "demo__gone--s0--000000000000.html"
    stale.write_text("old")
    mine = site.root / "trials" / "notes.html"
    mine.write_text("a user's file")
    (site.root / MANIFEST).write_text(
        json.dumps(manifest | {"pages": [*manifest["pages"], stale.name, "../../x.html"]})
    )
    again = view_run(run_dir, n_resamples=200)
    assert again.removed == 1 and not stale.exists() and mine.exists()
    assert len(list((site.root / "trials").glob("demo__calc-*.html"))) == 2


@pytest.mark.parametrize("where", ["", "trials", "trials/x"])
def test_the_site_is_never_written_among_the_runs_records(tmp_path, where):
    from evalrepro.errors import UserError

    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__calc-1")])
    with pytest.raises(UserError, match="among the run's own records"):
        view_run(run_dir, run_dir / where if where else run_dir)


def test_an_output_folder_elsewhere_gets_the_whole_site(tmp_path):
    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__calc-1")])
    site = view_run(run_dir, tmp_path / "elsewhere" / "site", n_resamples=200)
    assert site.index.is_file() and len(list((site.root / "trials").iterdir())) == 1
    assert not (run_dir / "view").exists()


def test_evalrepro_view_writes_the_site_and_says_where(tmp_path, capsys):
    from evalrepro.cli import main

    run_dir = tmp_path / "run"
    build_run(run_dir, [Case("demo__calc-1")])
    assert main(["view", str(run_dir), "--output", str(tmp_path / "site"), "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "trial viewer:" in out and "site/index.html (1 trial pages)" in out
    index = (tmp_path / "site" / "index.html").read_text()
    assert '<dd data-field="seed">3</dd>' in index


def test_evalrepro_view_of_no_run_is_a_one_line_error(tmp_path, capsys):
    from evalrepro.cli import main

    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a run directory" in err


def test_an_empty_graded_region_is_marked_where_it_is(tmp_path):
    from evalrepro.run.trial_view import excerpt

    log = tmp_path / "test_output.txt"
    log.write_bytes(b">>>>> Start Test Output\n>>>>> End Test Output\n")
    fd = os.open(log, os.O_RDONLY)
    try:
        rows, shown = excerpt(fd, log.stat().st_size, LOG, (24, 0))
    finally:
        os.close(fd)
    assert [(r.kind, r.text) for r in rows] == [
        ("line", ">>>>> Start Test Output"),
        ("mark", "\u25bc the graded region is empty (0 bytes at byte 24)"),
        ("line", ">>>>> End Test Output"),
    ]
    assert shown == log.stat().st_size


def test_page_names_are_file_names_and_unique(site, mixed):
    from evalrepro.report.html import trial_page

    assert trial_page("trials/django__django-11099--s0--0123456789ab") == (
        "trials/django__django-11099--s0--0123456789ab.html"
    )
    names = [trial_page(f"trials/{label}") for label in ("a/b", "a_b", "a b", ".hidden", "x" * 300)]
    assert len(set(names)) == len(names)
    for name in names:
        base = name.removeprefix("trials/")
        assert "/" not in base and not base.startswith(".") and len(base.encode()) < 255


# --- scale ------------------------------------------------------------------------------


def many_trials(run_dir: Path, count: int) -> Path:
    """A run of ``count`` trials in 12 repos: a third failing, some empty patches."""
    noise = b"".join(f"tests/test_calc.py::test_{i} PASSED\n".encode() for i in range(120))
    passing = pytest_output([*F2P, *P2P], filler=noise)
    failing = pytest_output(P2P, F2P, noise)
    cases = []
    for i in range(count):
        case = Case(f"org__repo-{i:04d}", repo=f"org/repo-{i % 12:02d}", output=passing)
        if i % 3 == 0:
            case = replace(case, output=failing, exit_code=1)
        elif i % 17 == 0:
            case = replace(case, patch="")
        cases.append(case)
    # Building the run is not what is looked at: its fsyncs are skipped.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", lambda fd: None)
        build_run(run_dir, cases)
    return run_dir


def test_every_trial_of_a_run_gets_its_page_and_its_row(tmp_path):
    # At scale (2,000 trials): benchmarks/view_scale.py.
    site = view_run(many_trials(tmp_path / "run", 120), n_resamples=200)
    assert site.pages == 120
    index = (site.root / "index.html").read_text()
    assert index.count('<tr class="o-') == 120


# --- in headless Chromium -------------------------------------------------------------------


class Chromium:
    """Headless Chromium driven over its DevTools pipe (fds 3 and 4): the standard library
    is all it needs. ``evaluate`` runs in the page despite its CSP (DevTools may), which is
    how a test reads the DOM after loading, clicks a label or follows a link."""

    def __init__(self, profile: Path) -> None:
        import fcntl
        import subprocess

        from tests.test_report_html import _chromium, _chromium_args

        commands, self._commands = os.pipe()
        self._events, replies = os.pipe()

        def pipes() -> None:  # in the child: its fd 3 reads commands, fd 4 writes replies
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands, replies)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [*_chromium_args(_chromium(), profile), "--remote-debugging-pipe", "about:blank"],
            preexec_fn=pipes,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands)
        os.close(replies)
        self._buffer = b""
        self._id = 0
        self.session = ""

    def send(self, method: str, params: dict | None = None, *, session: bool = True) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    assert "error" not in reply, reply
                    return reply["result"]
            chunk = os.read(self._events, 1 << 16)
            assert chunk, "chromium closed its pipe"
            self._buffer += chunk
        raise AssertionError(f"no reply to {method}")

    def open(self, path: Path) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )
        self.session = attached["sessionId"]
        viewport = {"width": 1200, "height": 1600, "deviceScaleFactor": 1, "mobile": False}
        self.send("Emulation.setDeviceMetricsOverride", viewport)
        self.go(path.as_uri())

    def go(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")

    def wait_for(self, condition: str) -> None:
        deadline = time.monotonic() + 20
        while not self._true_now(condition):
            assert time.monotonic() < deadline, f"never: {condition}"
            time.sleep(0.05)

    def _true_now(self, condition: str) -> bool:
        # An evaluation that meets a navigation under way is answered "navigated or
        # closed": not yet, ask again.
        try:
            return bool(self.evaluate(f"!!({condition})"))
        except AssertionError as error:
            if "navigated or closed" in str(error):
                return False
            raise

    def evaluate(self, expression: str):
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        import base64

        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        data = base64.b64decode(shot["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (AssertionError, OSError):
            pass
        self.process.wait(timeout=30)
        os.close(self._commands)
        os.close(self._events)


@pytest.fixture
def chromium(tmp_path):
    browser = Chromium(tmp_path / "profile")
    yield browser
    browser.close()


#: Every element a page of ours may have: anything else came from a run.
INJECTED = "script, img, iframe, object, embed, link[rel], base, form, input:not([type=radio])"
HANDLERS = (
    "[...document.querySelectorAll('*')].filter(e => [...e.attributes]"
    ".some(a => a.name.startsWith('on'))).length"
)
VISIBLE_ROWS = (
    "[...document.querySelectorAll('table.trial-table tbody tr')]"
    ".filter(r => getComputedStyle(r).display !== 'none').length"
)


def test_no_text_of_a_run_runs_or_becomes_an_element_in_chromium(site, chromium, tmp_path):
    for path in [site.root / "index.html", *(site.root / "trials").iterdir()]:
        chromium.open(path)
        expected = Page(path.read_text(encoding="utf-8")).title
        assert expected and chromium.evaluate("document.title") == " ".join(expected.split())
        assert chromium.evaluate(f"document.querySelectorAll({json.dumps(INJECTED)}).length") == 0
        assert chromium.evaluate(HANDLERS) == 0
        # The stylesheet applied: its hash is the one the policy allows.
        assert chromium.evaluate("document.styleSheets[0].cssRules.length") > 50
        assert chromium.evaluate("getComputedStyle(document.body).fontSize") == "15px"
    hostile = next((site.root / "trials").glob("hostile*"))
    chromium.go(hostile.as_uri())
    shown = chromium.evaluate("document.body.innerText")
    assert SCRIPT in shown and "\u00abESC\u00bb" in shown
    assert chromium.evaluate("document.title").startswith("hostile<img src=x")
    chromium.screenshot(tmp_path / "hostile.png")


def test_the_filters_show_only_the_chosen_outcome_and_reason_in_chromium(site, chromium):
    chromium.open(site.root / "index.html")
    assert chromium.evaluate(VISIBLE_ROWS) == len(MIXED)

    def pick(radio: str) -> int:
        chromium.evaluate(f"document.querySelector('label[for={radio}]').click()")
        return chromium.evaluate(VISIBLE_ROWS)

    assert pick("fo-resolved") == 4
    assert pick("fo-missing") == 2
    assert pick("fo-unresolved") == 4
    reasons = chromium.evaluate(
        "Object.fromEntries([...document.querySelectorAll('label[for^=fr-]')]"
        ".map(l => [l.textContent.split(' (')[0].split(' ').slice(0, 2).join(' '), l.htmlFor]))"
    )
    assert pick(reasons["tests failed"]) == 2
    assert pick(reasons["empty patch"]) == 1
    assert pick("fo-resolved") == 0  # an empty patch is never resolved
    assert pick("fo-all") == 1 and pick("fr-all") == len(MIXED)


def test_links_lead_from_the_index_to_each_trial_and_on_in_chromium(site, chromium, tmp_path):
    chromium.open(site.root / "index.html")
    root = site.root.as_uri()
    hrefs = chromium.evaluate("[...document.links].map(a => a.href)")
    assert len(hrefs) == len(MIXED) and all(h.startswith(root + "/trials/") for h in hrefs)
    chromium.evaluate("document.links[0].click()")
    chromium.wait_for("location.pathname.includes('/trials/demo__calc-1--')")
    chromium.wait_for("document.readyState === 'complete'")
    assert (
        chromium.evaluate("document.querySelector('h1').textContent") == "demo__calc-1 (sample 0)"
    )
    chromium.screenshot(tmp_path / "trial.png")
    chromium.evaluate("document.querySelector('a[rel=next]').click()")
    chromium.wait_for("location.pathname.includes('/trials/demo__calc-2--')")
    chromium.wait_for("document.readyState === 'complete'")
    chromium.evaluate("document.querySelector('nav a').click()")
    chromium.wait_for("location.pathname.endsWith('/index.html')")


def test_the_graded_region_and_the_diff_are_drawn_in_chromium(site, chromium, tmp_path):
    import numpy as np

    from tests.test_report_html import _png_pixels

    chromium.open(next((site.root / "trials").glob("demo__calc-1--*")))
    _, _, pixels = _png_pixels(chromium.screenshot(tmp_path / "calc-1.png"))
    colours = {
        "graded": (0xFF, 0xF8, 0xC5),
        "added": (0xE6, 0xFF, 0xEC),
        "removed": (0xFF, 0xEB, 0xE9),
        "hunk": (0xDD, 0xF4, 0xFF),
    }
    for what, colour in colours.items():
        assert np.any(np.all(pixels == colour, axis=2)), f"no {what} line drawn"


# --- findings in words -------------------------------------------------------------------

#: A patch line that prints what a log parser reads as a passing test.
RESULT_LINE = 'print("PASSED tests/test_calc.py::test_add <b>")'
SUSPECT_PATCH = diff("calc/evaluator.py", "    return a - b", f"    {RESULT_LINE}")


@pytest.fixture(scope="module")
def suspect_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("suspect") / "run"
    build_run(run_dir, [Case("demo__calc-9", patch=SUSPECT_PATCH)])
    return run_dir


def test_a_suspect_line_reads_in_words_with_its_code_on_the_trial_page(suspect_run, tmp_path):
    site = view_run(suspect_run, tmp_path / "site", n_resamples=200)
    raw = page_of(site, "demo__calc-9")
    text = Page(raw).text
    said = (
        f"calc/evaluator.py, line 2, prints text shaped like a test result (`{RESULT_LINE}`): "
        "a log parser could take it for a result the tests did not give, so the trial is "
        "suspect"
    )
    # In the score's detail and among the observation's facts, the code escaped.
    assert text.count(said) >= 2
    assert "<b>" not in raw.replace("<br>", "") and "&lt;b&gt;" in raw
    # The reason is a sentence too, not only its code.
    assert "suspect patch" in text
    assert "the log may not say what the tests did, so the trial is invalid" in text
    assert "result_text in calc/evaluator.py" not in text


def test_a_suspect_line_reads_in_words_with_its_code_in_the_markdown_report(suspect_run):
    from evalrepro.plan.lockfile import read_lockfile
    from evalrepro.report.run_printer import markdown_run_report
    from evalrepro.report.run_report import build_run_report

    directory = RunDirectory(suspect_run)
    lockfile = read_lockfile(directory.lockfile_path)
    report = build_run_report(suspect_run, lockfile, directory.completed(lockfile), n_resamples=200)
    markdown = markdown_run_report(report)
    row = next(line for line in markdown.splitlines() if line.startswith("| demo__calc-9"))
    assert (
        f"calc/evaluator.py, line 2, prints text shaped like a test result (`{RESULT_LINE}`): "
        "a log parser could take it for a result the tests did not give" in row
    )


def test_a_finding_of_an_older_observation_reads_with_its_rules_words(suspect_run):
    from evalrepro.records.trial import TrialResult

    result = next((suspect_run / "trials").glob("demo__calc-9--*")) / "result.json"
    data = json.loads(result.read_text())
    for attempt in data["attempts"]:
        seen = attempt["observation"]
        seen["schema_version"] = 7
        for finding in seen["suspects"]:
            del finding["what"], finding["why"]
    old = TrialResult.model_validate(data)
    [finding] = old.attempts[-1].observation.suspects
    assert finding.sentence.startswith(
        f"calc/evaluator.py, line 2, prints text shaped like a test result (`{RESULT_LINE}`)"
    )
