"""The built-in demo dataset: three small Python repos, their instances and two models.

* ``repos/<name>/<NN-label>/``: the files each commit of a repo adds or replaces;
  :func:`evalrepro.sources.demo_repos.build_repo` turns them into a git repo with the same
  commit SHAs on every machine.
* ``instances.jsonl``: SWE-bench-format instances (genuine bugs with gold patches).
* ``predictions/<model>.jsonl``: SWE-bench-format predictions of two demo models.
"""

from pathlib import Path

DEMO_DIR = Path(__file__).parent
INSTANCES_PATH = DEMO_DIR / "instances.jsonl"
PREDICTIONS_DIR = DEMO_DIR / "predictions"
