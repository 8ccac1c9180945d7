"""Write evalrepro/demo/instances.jsonl and predictions/*.jsonl from edit scripts.

Run from the repo root: .venv/bin/python scripts/demo_author/author.py
(maintainers only: any change to a demo repo changes its commit SHAs, so every diff
must be regenerated with this script).
Each patch is produced by really editing a checkout at the base commit and taking git diff;
F2P / P2P are computed by running the tests before and after the gold patch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from evalrepro.demo import INSTANCES_PATH, PREDICTIONS_DIR  # noqa: E402
from evalrepro.sources.demo_repos import build_repo, repo_names  # noqa: E402
from tests import demo_harness as h  # noqa: E402
from defs import INSTANCES  # noqa: E402


def sh(repo: Path, *args: str) -> str:
    done = h.git(repo, *args)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def edit(repo: Path, edits: list[tuple]) -> None:
    for path, old, new in edits:
        target = repo / path
        if old is None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(new)
            continue
        text = target.read_text()
        assert text.count(old) == 1, (path, old)
        target.write_text(text.replace(old, new))


def make_diff(repo: Path, base: str, edits: list[tuple], stale: list[tuple] | None = None) -> str:
    """Diff of ``edits`` at ``base``; with ``stale``, against a base the model imagined."""
    sh(repo, "checkout", "--quiet", "--force", "--detach", base)
    sh(repo, "clean", "-fdxq")
    if stale:
        edit(repo, stale)
        sh(repo, "add", "-A")
        sh(repo, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "stale")
    edit(repo, edits)
    sh(repo, "add", "-A")
    diff = sh(repo, "diff", "--cached", "--no-color", "--no-ext-diff")
    sh(repo, "reset", "--quiet", "--hard")
    sh(repo, "checkout", "--quiet", "--force", "--detach", base)
    sh(repo, "clean", "-fdxq")
    return diff


def main() -> None:
    work = Path(tempfile.mkdtemp())
    shas = {f"demo/{n}": build_repo(n, work / "src" / n) for n in repo_names()}
    repos = {f"demo/{n}": work / "src" / n for n in repo_names()}
    records, preds = [], {"model_a": [], "model_b": []}
    for number, d in enumerate(INSTANCES):
        repo = repos[d["repo"]]
        base = shas[d["repo"]][d["base"]]
        inst = {
            "instance_id": d["id"],
            "repo": d["repo"],
            "base_commit": base,
            "patch": make_diff(repo, base, d["gold"]),
            "test_patch": make_diff(repo, base, d["tests"]),
            "problem_statement": d["problem"].strip() + "\n",
            "hints_text": "",
            "version": "1.0",
            "created_at": f"2024-03-{number + 1:02d}T12:00:00Z",
            "FAIL_TO_PASS": [],
            "PASS_TO_PASS": [],
        }
        # Before: base + test patch; after: base + gold + test patch.
        wd = work / d["id"]
        before_repo = h.checkout(repos, inst, wd / "before")
        h.reset_and_apply_test_patch(before_repo, inst)
        before = h.run_tests(before_repo, inst).truth
        after_repo = h.checkout(repos, inst, wd / "after")
        assert h.apply_model_patch(after_repo, inst["patch"])
        h.reset_and_apply_test_patch(after_repo, inst)
        after = h.run_tests(after_repo, inst).truth
        assert set(before) == set(after), (set(before) ^ set(after))
        assert all(s == "PASSED" for s in after.values()), after
        inst["FAIL_TO_PASS"] = sorted(t for t in after if before[t] != "PASSED")
        inst["PASS_TO_PASS"] = sorted(t for t in after if before[t] == "PASSED")
        assert inst["FAIL_TO_PASS"] == sorted(d["expect_f2p"]), (d["id"], inst["FAIL_TO_PASS"])
        records.append(inst)
        for target in ("model_a", "model_b"):
            spec = d[target]
            patch = "" if spec["edits"] is None else make_diff(
                repo, base, spec["edits"], spec.get("stale")
            )
            preds[target].append(
                {"instance_id": d["id"], "model_name_or_path": target, "model_patch": patch}
            )
            timeout = 3 if spec["expect"] == "invalid" else 60
            got = h.run_trial(repos, inst, patch, wd / target, timeout).outcome
            flag = "" if got == spec["expect"] else "   <-- MISMATCH"
            print(f"{d['id']:18} {target}: {got:10} ({spec['kind']}){flag}")
        print(f"{d['id']:18} F2P={len(inst['FAIL_TO_PASS'])} P2P={len(inst['PASS_TO_PASS'])}")
    INSTANCES_PATH.write_text("".join(json.dumps(r) + "\n" for r in records))
    PREDICTIONS_DIR.mkdir(exist_ok=True)
    for target, rows in preds.items():
        (PREDICTIONS_DIR / f"{target}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
