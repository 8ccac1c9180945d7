"""The warm image check: are N locked image records in the store, with their digests?

    .venv/bin/python benchmarks/image_presence.py [--records 500 2294] [--repeat 5] [--keep-tags]

Tags one image of the store N times (one ``podman tag`` call), makes N image records of
those tags, then times ``Builder.missing(records)`` (one ``podman images`` listing),
against one ``podman image inspect`` per record (what a per-layer check costs; timed
on 50 records and scaled). The tags are removed afterwards. Run it as the user who runs
evalrepro (rootless), after the demo has built its images; results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from evalrepro.config.experiment import compose
from evalrepro.records.image import ImageRecord
from evalrepro.run.backend import Backend

REPOSITORY = "localhost/evalrepro-presence-bench"
SAMPLE = 50


def median(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[500, 2294])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep-tags", action="store_true", help="leave the tags for next time")
    args = parser.parse_args()
    config = compose(["+experiment=demo"])
    backend = Backend.open(config.environment, Path(tempfile.mkdtemp()))
    runtime = backend.runtime
    store = runtime.image_ids()  # type: ignore[attr-defined]
    source = next((ref for ref in store if "evalrepro-" in ref), None)
    if source is None:
        raise SystemExit("no evalrepro image in the store: run the demo first")
    digest = store[source]
    most = max(args.records)
    tags = [f"{REPOSITORY}:{i:05d}" for i in range(most)]
    # Tagging is slow (podman rewrites its image list for every name): keep what exists.
    new = [tag for tag in tags if tag not in store]
    for start in range(0, len(new), 500):
        runtime.podman("tag", source, *new[start : start + 500])  # type: ignore[attr-defined]
    try:
        print(f"{len(store)} images in the store before the benchmark's tags")
        for n in args.records:
            records = [
                ImageRecord(
                    builder="containerfile",
                    layer="instance",
                    key=f"sha256:{i:064x}",
                    inputs_digest=f"sha256:{i:064x}",
                    inputs=[],
                    tag=tag,
                    parent_key=None,
                    image_digest=digest,
                )
                for i, tag in enumerate(tags[:n])
            ]
            assert backend.builder.missing(records) == []
            listing = median(lambda records=records: backend.builder.missing(records), args.repeat)
            one = median(
                lambda records=records: [runtime.image_id(r.tag) for r in records[:SAMPLE]],  # type: ignore[attr-defined]
                1,
            )
            print(
                f"{n} records: one listing {listing:.3f} s; one inspect per record "
                f"{one / SAMPLE * n:.1f} s (from {SAMPLE})"
            )
    finally:
        for start in range(0, most if not args.keep_tags else 0, 500):
            runtime.podman("untag", source, *tags[start : start + 500], check=False)  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
