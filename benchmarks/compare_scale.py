"""Time and memory of the statistics at SWE-bench scale.

    .venv/bin/python benchmarks/compare_scale.py [--resamples 10000] [--repeat 5]

1. ``compare_outcomes`` on two synthetic runs of 2,294 instances (SWE-bench's full test
   split) in 12 repositories, 0/1 outcomes: Wilson, Tango's score interval, exact
   McNemar, MDE and the cluster bootstrap (``--resamples`` resamples).
2. The same on per-instance rates (5 samples each, as a multi-sample target compares its
   per-sample rate): the paired BCa bootstrap over instances instead of Tango.
3. pass@k of a run of 500 instances x 10 samples for every reported k, each with a BCa
   bootstrap over instances (instances resampled, each keeping its own samples).

Times are medians over ``--repeat`` runs (after one warm-up); peak memory is the largest
traced allocation of one run (tracemalloc, which numpy reports to), measured on its own
run since tracing slows the code. Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import scipy

from evalrepro.report import stats


def two_runs(n: int = 2294, repos: int = 12, seed: int = 0):
    """Runs A and B with rates 0.40 and 0.45, correlated within instance (an instance's
    difficulty is shared), and each instance's repository."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1.2, n)
    a = rng.random(n) < 1 / (1 + np.exp(-(difficulty - 0.45)))
    b = rng.random(n) < 1 / (1 + np.exp(-(difficulty - 0.24)))
    return a, b, rng.integers(0, repos, n)


def samples_run(instances: int = 500, samples: int = 10, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    rates = rng.beta(0.6, 0.9, instances)
    return list(rng.random((instances, samples)) < rates[:, None])


def measure(action: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median seconds, peak MB) of ``action``."""
    action()  # warm-up: imports, caches
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    action()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__},"
        f" {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}"
    )

    a, b, repos = two_runs()
    comparison = stats.compare_outcomes(a, b, repos, n_resamples=args.resamples)

    def compare() -> object:
        return stats.compare_outcomes(a, b, repos, n_resamples=args.resamples)

    seconds, peak = measure(compare, args.repeat)
    print(
        f"compare_outcomes, {a.size} instances, {len(set(repos))} repos, {args.resamples}"
        f" resamples: {seconds:.3f} s, peak {peak:.0f} MB"
    )
    print(f"  {comparison.verdict()}")

    rng = np.random.default_rng(2)
    rate_a = (rng.random((a.size, 5)) < a[:, None] * 0.8 + 0.1).mean(1)
    rate_b = (rng.random((b.size, 5)) < b[:, None] * 0.8 + 0.1).mean(1)

    def compare_rates() -> object:
        return stats.compare_outcomes(rate_a, rate_b, repos, n_resamples=args.resamples)

    seconds, peak = measure(compare_rates, args.repeat)
    print(
        f"compare_outcomes on per-instance rates (5 samples), {a.size} instances,"
        f" {args.resamples} resamples: {seconds:.3f} s, peak {peak:.0f} MB"
    )

    outcomes = samples_run()
    ks = stats.pass_k_values(10)

    def pass_at_ks() -> object:
        return [stats.pass_at_k_interval(outcomes, k, n_resamples=args.resamples) for k in ks]

    seconds, peak = measure(pass_at_ks, args.repeat)
    print(
        f"pass@k, {len(outcomes)} instances x 10 samples, k in {ks}, {args.resamples}"
        f" resamples each: {seconds:.3f} s, peak {peak:.0f} MB"
    )
    for k, interval in zip(ks, pass_at_ks(), strict=True):
        print(f"  pass@{k}: {interval.estimate:.3f} ({interval.low:.3f} to {interval.high:.3f})")


if __name__ == "__main__":
    main()
