"""The harness in trial identity: its version and a digest of the code that can change a
result, so that a change to grading gives new trial ids without a version bump."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from rich.console import Console

from evalrepro.config.experiment import compose
from evalrepro.pipeline import lock_experiment
from evalrepro.plan.harness import PACKAGE_DIR, RESULT_NEUTRAL, code_digest, code_files
from evalrepro.plan.lockfile import differences, lockfile_problems
from evalrepro.sandbox import SUPERVISOR_MODULES
from tests.fake_backend import Tests, fake_backend


def package_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "evalrepro"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_the_digest_covers_parsers_grading_scoring_and_the_in_container_scripts():
    files = code_files()
    for path in (
        "grade/parsers/pytest.py",
        "grade/grading.py",
        "grade/score.py",
        "rules/evalscript.py",
        "sandbox/__init__.py",  # how the supervisor is shipped
        *(f"sandbox/{name}" for name in SUPERVISOR_MODULES),
        "sandbox/guard.py",
    ):
        assert path in files
    for presentation in (
        "report/run_report.py",
        "cli.py",
        "report/view.py",
        "build/containerfile.py",
    ):
        assert presentation not in files


def _imported(path: Path) -> set[str]:
    """The evalrepro modules ``path`` imports (at any depth of its code), as paths
    relative to the package."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        for name in names:
            if name == "evalrepro" or name.startswith("evalrepro."):
                module = PACKAGE_DIR.joinpath(*name.split(".")[1:])
                for candidate in (module / "__init__.py", module.with_suffix(".py")):
                    if candidate.is_file():
                        found.add(candidate.relative_to(PACKAGE_DIR).as_posix())
                        break
    return found


def test_every_module_the_result_code_imports_is_digested_or_declared_neutral():
    # The effect, not a list kept by hand: a new module that the parsers, the score or the
    # supervisor come to use (the twins' transform, say) changes results, so it changes
    # the digest unless it is declared unable to.
    covered = set(code_files())
    seen, todo = set(covered), list(covered)
    while todo:
        for module in _imported(PACKAGE_DIR / todo.pop()):
            if module not in seen:
                seen.add(module)
                todo.append(module)
    undeclared = sorted(seen - covered - set(RESULT_NEUTRAL))
    assert undeclared == [], f"result code imports modules outside the digest: {undeclared}"
    assert not set(RESULT_NEUTRAL) & covered


def test_a_changed_parser_changes_the_digest_and_a_changed_report_does_not(tmp_path):
    copy = package_copy(tmp_path)
    before = code_digest(copy)
    (copy / "report" / "run_report.py").write_text(
        (copy / "report" / "run_report.py").read_text() + "\n# a comment\n"
    )
    assert code_digest(copy) == before
    parser = copy / "grade" / "parsers" / "pytest.py"
    parser.write_text(parser.read_text() + "\nSTRICT = True\n")
    assert code_digest(copy) != before


def test_verify_names_a_harness_code_change_and_the_trial_ids_move(tmp_path):
    config = compose(["+experiment=demo"])

    def lock(name: str):
        return lock_experiment(
            config,
            Console(file=open("/dev/null", "w")),
            output=tmp_path / name,
            cache_dir=tmp_path / "cache",
            backend=fake_backend(lambda instance_id, patch: Tests()),
        )

    first = lock("a.lock.json")
    other = "sha256:" + "e" * 64
    # The same lockfile as a harness with other grading code would have made it.
    moved = first.model_copy(
        update={
            "harness": first.harness.model_copy(update={"code_digest": other}),
            "trials": [
                t.model_copy(update={"key": t.key.model_copy(update={"harness_digest": other})})
                for t in first.trials
            ],
        }
    )
    found = [d for d in differences(first, moved) if d.kind == "harness"]
    assert found and "harness code" in found[0].detail and "grading" in found[0].detail
    # Its trial ids are now stale: the lockfile's own check names the harness code.
    problems = lockfile_problems(moved)
    assert any("trial_id" in p for p in problems)
    fixed = moved.model_copy(
        update={
            "trials": [t.model_copy(update={"trial_id": t.key.trial_id()}) for t in moved.trials]
        }
    )
    assert not lockfile_problems(fixed)
    assert {t.trial_id for t in fixed.trials}.isdisjoint({t.trial_id for t in first.trials})
