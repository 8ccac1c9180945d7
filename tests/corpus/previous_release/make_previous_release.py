"""Write this folder's run directories with evalrepro 0.2.0's own code (commit 65f2d36).

Not a test, and it imports nothing of today's evalrepro: run it from a worktree of that
commit, with that worktree first on the path (README.md says how)::

    cd /tmp/prev && PYTHONPATH=/tmp/prev python .../make_previous_release.py ROOT

ROOT (absolute) receives demo-run/, regrade-run/, logs/ and instances.jsonl; the
regrade's lockfile records ROOT's absolute paths. The modules are 0.2's (its flat
layout), imported by name.
"""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path


def previous(module: str, *names: str) -> list:
    """Names of a module of the previous release (or of its tests)."""
    loaded = importlib.import_module(module)
    return [getattr(loaded, name) for name in names]


def main(root: Path) -> None:
    sys.path.insert(0, os.getcwd())
    [evalrepro_file] = previous("evalrepro", "__file__")
    assert Path(evalrepro_file).resolve().parent == Path.cwd() / "evalrepro", evalrepro_file
    assert previous("evalrepro", "__version__") == ["0.2.0"]

    from rich.console import Console
    from swebench.harness.grading import get_eval_report

    [compose] = previous("evalrepro.config", "compose")
    [run_experiment] = previous("evalrepro.run", "run_experiment")
    [load_samples] = previous("evalrepro.sample", "load_samples")
    fake_backend, gold_scenario = previous("tests.fake_backend", "fake_backend", "gold_scenario")
    honest, model, run_id, spec = previous(
        "tests.test_regrade", "HONEST", "MODEL", "RUN_ID", "_spec"
    )
    logs_text, instance = previous("tests.test_swebench_layout", "LOGS", "instance")

    assert root.is_absolute()
    root.mkdir(parents=True, exist_ok=True)
    quiet = Console(file=open(os.devnull, "w"), width=120)

    # (a) The demo experiment, gold patches, 0.2's fake backend (as its test_pipeline.py).
    config = compose(["+experiment=demo"])
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    run_experiment(
        config,
        quiet,
        run_dir=root / "demo-run",
        cache_dir=root / ".cache",
        backend=fake_backend(gold_scenario(samples)),
    )

    # (b) A regrade of a SWE-bench logs folder, built as 0.2's test_regrade.py builds its
    # `tree`: four instances, one with a report.json that contradicts its log.
    chosen = [
        p
        for p in honest
        if p.instance_id
        in {
            "corpus__pytest-tb_no",
            "corpus__pytest-pass_fail",
            "corpus__django-mixed",
            "corpus__mocha-min_passing",
        }
    ]
    logs = root / "logs" / "run_evaluation" / run_id / model.replace("/", "__")
    theirs = {}
    for planned in chosen:
        folder = logs / planned.instance_id
        folder.mkdir(parents=True)
        (folder / "test_output.txt").write_text(logs_text[planned.instance_id].text)
        prediction = {
            "instance_id": planned.instance_id,
            "model_patch": planned.patch,
            "model_name_or_path": model,
        }
        (folder / "patch.diff").write_text(planned.patch)
        log = str(folder / "test_output.txt")
        report = get_eval_report(spec(planned), prediction, log, True)
        theirs[planned.instance_id] = report[planned.instance_id]["resolved"]
        (folder / "report.json").write_text(json.dumps(report, indent=4))
    doctored = next(p.instance_id for p in chosen if not theirs[p.instance_id])
    report = json.loads((logs / doctored / "report.json").read_text())
    report[doctored]["resolved"] = True
    (logs / doctored / "report.json").write_text(json.dumps(report))
    dataset = root / "instances.jsonl"
    rows = [
        {**instance(p).model_dump(mode="json", by_alias=True), "log_parser": p.parser}
        for p in chosen
    ]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["regrade", logs, "--dataset", dataset, "--run-dir", root / "regrade-run"]
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    print("resolved per swebench's get_eval_report:", theirs, "doctored:", doctored)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
