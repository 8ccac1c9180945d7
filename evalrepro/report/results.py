"""A run's results.json rebuilt from its trial results alone: the aggregate ``report``
writes again with ``--rebuild``.
"""

from __future__ import annotations

from evalrepro.plan.lockfile import read_lockfile
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.report import RunResults
from evalrepro.records.trial import TrialResult
from evalrepro.run.rundir import RunDirectory


def rebuild_results(
    directory: RunDirectory,
    lockfile: Lockfile | None = None,
    done: dict[str, TrialResult] | None = None,
) -> RunResults:
    """results.json recreated from the trial results alone (and the plan's order);
    ``done``: the trusted results, when the caller has them (``completed``)."""
    from evalrepro.report.run_report import aggregate  # statistics: loaded where used

    lockfile = lockfile or read_lockfile(directory.lockfile_path)
    done = done if done is not None else directory.completed(lockfile)
    ordered = [done[t.trial_id] for t in lockfile.trials if t.trial_id in done]
    return aggregate(
        lockfile.experiment,
        lockfile.target.target_id,
        ordered,
        planned=len(lockfile.trials),
        lockfile=lockfile,
    )
