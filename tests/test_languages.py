"""Every language's real project (``tests/languages``), end to end in rootless podman.

One dataset holds one instance per project, each repo a ``local`` git source, each spec
with ``debs`` = the union of all projects' debs, so that all share ONE base image; the
dataset declares no test lists. Then, once for the module:

* ``evalrepro validate`` derives FAIL_TO_PASS / PASS_TO_PASS (repeats enough to find
  the flaky test made flaky on purpose);
* the same tests are run by hand, in a plain ``podman run`` of each instance's image:
  at the base commit with the test patch, then with the gold patch too, then with the
  attack patch instead; each output is read by the spec's registered parser;
* ``evalrepro run`` of the validated dataset with a target of 4 samples per instance
  (0 gold, 1 wrong, 2 empty, 3 attack); ``verify`` of that run; ``report --json``;
* ``bundle --with-images`` of the run, which the root-podman test reproduces as root
  (the images are loaded, not built again).

``EVALREPRO_TEST_LANGUAGES=go,rust`` keeps some projects. The derived lists must be the
ones found by hand, and each project's own ``fail_to_pass``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalrepro.demo import DEMO_DIR
from evalrepro.grade.parsers.base import Status
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.plan.lockfile import read_lockfile
from evalrepro.publish.reproduce import REPRODUCTION_NAME
from evalrepro.records.reproduce import Reproduction
from evalrepro.records.trial import TrialResult
from evalrepro.records.validation import ValidationReport
from evalrepro.run.rundir import RunDirectory
from evalrepro.runtimes.podman import backend_files
from evalrepro.validation.dataset import report_path
from tests.languages import Project, projects
from tests.podman_support import cache_dir, needs_podman, polyglot_debs

pytestmark = needs_podman

#: The target's samples, in order.
SAMPLES = ("gold", "wrong", "empty", "attack")
#: Runs of each side in validate: a test that fails half the time is missed (all 2 x 4
#: runs agree) with probability 2 / 2**8, under 1%.
REPEATS = 4
#: Where the rootless run's bundle is left for the root-podman test (scripts/test runs the
#: rootless suite first, as the user EVALREPRO_USER names: a folder of that user's, which
#: root reads).
BUNDLE = Path(
    os.environ.get("EVALREPRO_LANGUAGES_BUNDLE")
    or Path(tempfile.gettempdir())
    / f"evalrepro-languages-{os.environ.get('EVALREPRO_USER') or 'evalrepro'}"
    / "run.bundle.tar.gz"
)
POLYGLOT_INSTANCES = DEMO_DIR / "polyglot" / "instances.jsonl"
#: What separates the by-hand runs' outputs in one container's log.
SEPARATOR = "=== evalrepro by hand: "


def instance_id(project: Project) -> str:
    return f"{project.language}__{project.repo.split('/')[1]}-1"


def evalrepro(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The command, from "/" (every path given is absolute): a base built from pytest's
    0700 folder fails on main, where mmdebstrap runs from the caller's folder."""
    env = {**os.environ, "EVALREPRO_CACHE": str(cache_dir()), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", *args],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    return done


@dataclass
class ByHand:
    """A project's tests run by hand: each run's statuses, as its parser reads them."""

    runs: dict[str, dict[str, Status | str]] = field(default_factory=dict)

    def passed(self, run: str) -> set[str]:
        return {t for t, s in self.runs[run].items() if s == Status.PASSED}


@dataclass
class World:
    root: Path
    conf: Path
    projects: list[Project]
    overrides: list[str]
    validation: ValidationReport
    run_dir: Path
    results: dict[tuple[str, int], TrialResult]
    by_hand: dict[str, ByHand]
    seconds: dict[str, float]


def _dataset(root: Path, chosen: list[Project]) -> tuple[Path, list[str]]:
    """The config tree (dataset, target, experiment) and the overrides every command takes."""
    conf = root / "conf"
    for folder in ("data", "dataset", "target", "experiment"):
        (conf / folder).mkdir(parents=True, exist_ok=True)
    cache = cache_dir() / "languages"
    # demo_polyglot's packages hold every project's: one base for the demo and them all.
    union = polyglot_debs()
    for project in chosen:
        assert set(project.debs) <= set(union), (project.language, set(project.debs) - set(union))
    instances, predictions, repos, specs = [], [], {}, {}
    for project in chosen:
        name = instance_id(project)
        base = project.make_repo(root / "repos" / f"{project.language}.git", cache)
        repos[project.repo] = {"kind": "local", "path": f"../repos/{project.language}.git"}
        spec = dict(project.spec) | {"debs": union}
        specs[project.repo] = {project.version: spec}
        instances.append(
            {
                "instance_id": name,
                "repo": project.repo,
                "version": project.version,
                "base_commit": base,
                "patch": project.gold_patch,
                "test_patch": project.test_patch,
            }
        )
        patches = (project.gold_patch, project.wrong_patch, "", project.attack_patch)
        for index, patch in enumerate(patches):
            predictions.append(
                {
                    "instance_id": name,
                    "model_name_or_path": "languages",
                    "sample_index": index,
                    "model_patch": patch,
                }
            )
    families = {get_parser(str(p.spec["parser"])).family for p in chosen}
    assert len(families) == 1, f"one dataset, one parser family: {families}"
    lines = "".join(json.dumps(i) + "\n" for i in instances)
    (conf / "data" / "languages.jsonl").write_text(lines)
    (conf / "data" / "four.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    dataset = {
        "name": "languages",
        "instances": "data/languages.jsonl",
        "test_ids": str(families.pop()),
        "repos": repos,
        "specs": specs,
    }
    (conf / "dataset" / "languages.yaml").write_text(json.dumps(dataset, indent=1) + "\n")
    target = {"kind": "predictions", "name": "four", "path": "data/four.jsonl", "samples": 4}
    (conf / "target" / "four.yaml").write_text(json.dumps(target) + "\n")
    (conf / "experiment" / "languages.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /dataset: languages\n"
        "  - override /target: four\nname: languages\n"
    )
    (conf / "target" / "polyglot_wrong.yaml").write_text(
        "kind: predictions\nname: polyglot_wrong\npath: ${pkg:demo/polyglot/wrong.jsonl}\n"
    )
    return conf, []


def _podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(backend_files() / "containers.conf")}


def _run_by_hand(project: Project, image: str) -> ByHand:
    """The project's tests by hand in one plain container of its instance image: in a copy
    of /testbed each, the test patch; the test and gold patches; the test and attack
    patches. Each run's output, read by the spec's parser."""
    runs = {
        "test": [project.test_patch],
        "gold": [project.test_patch, project.gold_patch],
        "attack": [project.test_patch, project.attack_patch],
    }
    script = []
    env = []
    for run, patches in runs.items():
        names = []
        for number, patch in enumerate(patches):
            variable = f"PATCH_{run}_{number}".upper()
            env += ["-e", f"{variable}={patch}"]
            names.append(variable)
        applied = " && ".join(f'printf %s "${n}" | patch -p1 -s --batch' for n in names)
        script.append(
            f"echo '{SEPARATOR}{run}'; d=$(mktemp -d) && cp -a /testbed/. $d && cd $d"
            f" && {applied} && ( {project.by_hand} ); cd /"
        )
    done = subprocess.run(
        ["podman", "run", "--rm", "--network", "none", "--user", "tester", *env, image,
         "bash", "-c", "\n".join(script)],
        capture_output=True, text=True, timeout=1800, check=False, env=_podman_env(),
    )  # fmt: skip
    parser = get_parser(str(project.spec["parser"]))
    found = ByHand()
    for chunk in done.stdout.split(SEPARATOR)[1:]:
        run, _, text = chunk.partition("\n")
        parsed = parser.parse(text)
        assert not parsed.problems, (project.language, run, parsed.problems, text[-3000:])
        found.runs[run] = dict(parsed.statuses)
    assert set(found.runs) == set(runs), (project.language, done.stdout[-3000:], done.stderr)
    return found


def _results(run_dir: Path) -> dict[tuple[str, int], TrialResult]:
    directory = RunDirectory(run_dir)
    done = directory.completed(read_lockfile(directory.lockfile_path))
    return {(r.instance_id, r.sample_index): r for r in done.values()}


def _images(run_dir: Path) -> dict[str, str]:
    """Each instance's image tag, from the run's lockfile."""
    lock = read_lockfile(RunDirectory(run_dir).lockfile_path)
    tags = {image.key: image.tag for image in lock.environment.images}
    return {trial.key.instance_id: tags[trial.image_key] for trial in lock.trials}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    chosen = projects()
    if not chosen:
        pytest.skip("EVALREPRO_TEST_LANGUAGES keeps no project")
    root = tmp_path_factory.mktemp("languages")
    BUNDLE.unlink(missing_ok=True)  # an earlier run's: the root test must not reproduce it
    seconds: dict[str, float] = {}
    start = time.monotonic()
    conf, overrides = _dataset(root, chosen)
    seconds["repos"] = time.monotonic() - start
    output = conf / "data" / "validated.jsonl"
    start = time.monotonic()
    evalrepro(
        "validate", "+dataset=languages", f"validation.repeats={REPEATS}", *overrides,
        "--config-dir", str(conf), "--runs", str(root / "validate"), "--output", str(output),
    )  # fmt: skip
    seconds["validate"] = time.monotonic() - start
    validation = ValidationReport.model_validate_json(report_path(output).read_text())
    run_dir = root / "run"
    start = time.monotonic()
    evalrepro(
        "run", "+experiment=languages", "dataset.instances=data/validated.jsonl", *overrides,
        "--config-dir", str(conf), "--run-dir", str(run_dir),
    )  # fmt: skip
    seconds["run"] = time.monotonic() - start
    images = _images(run_dir)
    start = time.monotonic()
    by_hand = {instance_id(p): _run_by_hand(p, images[instance_id(p)]) for p in chosen}
    seconds["by hand"] = time.monotonic() - start
    return World(
        root, conf, chosen, overrides, validation, run_dir, _results(run_dir), by_hand, seconds
    )


def test_validate_derives_the_lists_found_by_hand(world):
    found = {i.instance_id: i for i in world.validation.instances}
    for project in world.projects:
        name = instance_id(project)
        report, hand = found[name], world.by_hand[name]
        assert report.verdict in ("valid", "flaky_tests"), (name, report.verdict, report.detail)
        flaky = {project.flaky} if project.flaky else set()
        before, after = hand.passed("test") - flaky, hand.passed("gold") - flaky
        assert sorted(after - before) == report.fail_to_pass, name
        assert sorted(after & before) == report.pass_to_pass, name
        assert report.fail_to_pass == sorted(project.fail_to_pass), name
        assert report.disagreements == []


def test_the_flaky_test_is_reported_flaky(world):
    found = {i.instance_id: i for i in world.validation.instances}
    flaky = [p for p in world.projects if p.flaky]
    for project in flaky:
        report = found[instance_id(project)]
        assert report.verdict == "flaky_tests", (report.verdict, report.detail)
        assert report.flaky == [project.flaky]
        counts = {t.test: (t.before_passed, t.after_passed) for t in report.transitions}
        assert 0 < sum(counts[project.flaky]) < 2 * REPEATS
    # The validated dataset carries it apart from the lists.
    written = {
        row["instance_id"]: row
        for row in map(
            json.loads, (world.conf / "data" / "validated.jsonl").read_text().splitlines()
        )
    }
    for project in flaky:
        assert written[instance_id(project)]["FLAKY"] == [project.flaky]


def test_each_sample_ends_as_its_patch_deserves(world):
    for project in world.projects:
        name = instance_id(project)
        outcome = {
            sample: world.results[(name, index)].score for index, sample in enumerate(SAMPLES)
        }
        assert str(outcome["gold"].outcome) == "resolved", (name, outcome["gold"])
        assert str(outcome["wrong"].outcome) == "unresolved", (name, outcome["wrong"])
        assert str(outcome["empty"].outcome) == "unresolved", (name, outcome["empty"])
        assert outcome["empty"].reason == "patch_empty", name
        assert str(outcome["attack"].outcome) in ("unresolved", "invalid"), (
            name,
            outcome["attack"],
        )


def test_the_attack_passes_the_tests_by_hand_and_the_wrong_fix_does_not(world):
    found = {i.instance_id: i for i in world.validation.instances}
    for project in world.projects:
        name = instance_id(project)
        hand = world.by_hand[name]
        wanted = set(found[name].fail_to_pass) | set(found[name].pass_to_pass)
        assert wanted and wanted <= hand.passed("attack"), (name, wanted - hand.passed("attack"))
        assert wanted <= hand.passed("gold"), name


def test_verify_passes_and_report_reads_the_run(world):
    done = evalrepro("verify", str(world.run_dir), check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads(evalrepro("report", str(world.run_dir), "--json").stdout)
    assert json.dumps(report)  # a JSON document
    planned = 4 * len(world.projects)
    assert len(world.results) == planned
    # The bundle the root-podman test reproduces: this run, with its images.
    BUNDLE.parent.mkdir(parents=True, exist_ok=True)
    BUNDLE.parent.chmod(0o755)
    evalrepro("bundle", str(world.run_dir), "-o", str(BUNDLE), "--with-images")
    BUNDLE.chmod(0o644)
    print("languages: seconds", json.dumps({k: round(v) for k, v in world.seconds.items()}))


@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_as_root_the_rootless_run_reproduces(tmp_path):
    """The rootless run (the bundle the test above left, with its images) run again in
    root podman: every trial's verdict again, and no test differs but the flaky one.
    The images are loaded from the bundle: no base is built as root. Without the bundle
    (this test run alone, not after the rootless suite) there is nothing to reproduce."""
    if not BUNDLE.exists():
        pytest.skip(f"no {BUNDLE}: the rootless suite (scripts/test) makes it first")
    done = evalrepro("reproduce", str(BUNDLE), "--run-dir", str(tmp_path / "again"), check=False)
    assert done.returncode in (0, 1), done.stdout[-4000:] + done.stderr[-2000:]
    record = Reproduction.model_validate_json((tmp_path / "again" / REPRODUCTION_NAME).read_text())
    flaky = {p.flaky for p in projects() if p.flaky}
    assert len(record.trials) == 4 * len(projects())
    for trial in record.trials:
        # Every verdict again; a test may differ only if it is a project's flaky one (Go's
        # coin: reproduce rightly reports it, exit 1).
        assert trial.bundle_outcome == trial.reproduction_outcome, trial.label
        assert {t.test for t in trial.tests} <= flaky, (trial.label, trial.tests)
    assert done.returncode == 0 or any(t.tests for t in record.trials)


def test_the_polyglot_demo_resolves_with_its_gold_patches_and_not_with_wrong_fixes(world):
    """demo_polyglot on the base the projects share: each language's gold patch resolves,
    and a plausible wrong fix of each does not (its FAIL_TO_PASS test catches it)."""
    demo = {i["instance_id"] for i in map(json.loads, POLYGLOT_INSTANCES.read_text().splitlines())}
    gold, wrong = world.root / "polyglot-gold", world.root / "polyglot-wrong"
    evalrepro("run", "+experiment=demo_polyglot", "--run-dir", str(gold))
    failed = evalrepro(
        "run", "+experiment=demo_polyglot", "target=polyglot_wrong",
        "--config-dir", str(world.conf), "--run-dir", str(wrong), check=False,
    )  # fmt: skip
    assert failed.returncode == 3, failed.stdout[-4000:]  # the demo's gate fails, as it should
    for run_dir, outcome in ((gold, "resolved"), (wrong, "unresolved")):
        results = _results(run_dir)
        assert {name for name, _ in results} == demo
        assert {str(r.score.outcome) for r in results.values()} == {outcome}, {
            k: (str(r.score.outcome), r.score.reason) for k, r in results.items()
        }
