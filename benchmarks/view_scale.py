"""Time of the trial viewer and the run report at scale, without containers.

    .venv/bin/python benchmarks/view_scale.py [--trials 2000]

1. ``evalrepro view`` of a run of ``--trials`` trials (12 repos, a third failing, some
   empty patches), built by the real Executor with the tests' stand-in backend
   (``tests/test_view.py``): reading and checking the run, its report, every page.
2. The same for a run of one trial whose log is over 50 MB (the page shows excerpts).

Times are wall times of one run each after the run directory is built; results go in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from evalrepro.report.view import view_run
from tests.test_view import F2P, P2P, Case, build_run, many_trials, pytest_output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        run_dir = many_trials(root / "many", args.trials)
        started = time.perf_counter()
        site = view_run(run_dir, n_resamples=200)
        print(f"view of {site.pages} trials: {time.perf_counter() - started:.1f} s")

        filler = b"".join(f"filler {i:07d} ".encode() + b"." * 64 + b"\n" for i in range(700_000))
        big = root / "big"
        build_run(big, [Case("demo__big-1", output=pytest_output([*F2P, *P2P], filler=filler))])
        log = next((big / "trials").glob("*/attempt-1/test_output.txt"))
        started = time.perf_counter()
        site = view_run(big, n_resamples=200)
        elapsed = time.perf_counter() - started
        page = next((site.root / "trials").glob("*.html"))
        print(
            f"view of one trial with a {log.stat().st_size / (1 << 20):.0f} MiB log: "
            f"{elapsed:.2f} s, page {page.stat().st_size / 1024:.0f} KiB"
        )


if __name__ == "__main__":
    main()
