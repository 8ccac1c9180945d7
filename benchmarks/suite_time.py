"""Where the test command's time goes (issue 42's measure).

    .venv/bin/python benchmarks/suite_time.py [--junit FILE ...] [--cache DIR ...]
        [--since ISO-TIME] [--top 15]

``scripts/test`` prints how long each of its phases took (setup, ruff, the rootless
suite, the root suite) and leaves pytest's JUnit report of each suite in
``$EVALREPRO_SUITE_REPORTS`` (default ``/tmp``): ``evalrepro-suite-rootless.xml`` and
``evalrepro-suite-root.xml``. This script reads those reports and the image caches the
suites built into (``LayerBuild`` records under ``<cache>/builds``) and prints:

- test seconds by kind of test: real containers (``podman`` marker), real runners
  (``live``), the rest; the seconds of xdist's two workers add up, so the sum is about
  twice the suite's wall time;
- the slowest test files;
- image builds by layer (base, env, instance, ...): how many, and their seconds. A cache
  keeps one record per layer key, so a key built twice in one cache shows once; give
  every cache the suite built into (the user's, a test's own) to see a layer built in
  two of them.

Nothing is timed here: it reads what a run recorded. Results go in docs/development.md.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ElementTree
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

KINDS = ("podman", "live")


def test_seconds(reports: list[Path]) -> tuple[dict[str, float], dict[str, float], int]:
    """Seconds by kind and by file, and the number of tests, from JUnit reports."""
    by_kind: dict[str, float] = defaultdict(float)
    by_file: dict[str, float] = defaultdict(float)
    count = 0
    marked = _marked_files()
    for report in reports:
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            seconds = float(case.get("time") or 0)
            module = case.get("classname", "").split(".")
            # classname is tests.test_x[.Class]: the file is the part that starts with test_
            name = next((p for p in module if p.startswith("test_")), module[-1])
            path = "/".join(module[: module.index(name) + 1]) + ".py" if name in module else name
            by_file[path] += seconds
            by_kind[marked.get(path, "other")] += seconds
            count += 1
    return dict(by_kind), dict(by_file), count


def _marked_files() -> dict[str, str]:
    """Each test file's kind, from the markers it applies (a file of container tests
    marks them all; a file that mixes kinds counts as its first)."""
    kinds = {}
    for path in Path("tests").rglob("test_*.py"):
        text = path.read_text()
        for kind in KINDS:
            if f"mark.{kind}" in text or ("needs_podman" in text and kind == "podman"):
                kinds[str(path)] = kind
                break
    return kinds


def layer_builds(caches: list[Path], since: datetime | None) -> dict[str, tuple[int, int, float]]:
    """Per layer kind: (builds, distinct keys, seconds) of the LayerBuild records (a key
    in two caches is two builds of one key)."""
    builds: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for cache in caches:
        for path in (cache / "builds").glob("*.build.json"):
            record = json.loads(path.read_text())
            built = datetime.fromisoformat(record["built_at"].replace("Z", "+00:00"))
            if since is None or built >= since:
                builds[record["layer"]].append((record["key"], float(record["seconds"])))
    return {
        layer: (len(items), len({key for key, _ in items}), sum(s for _, s in items))
        for layer, items in builds.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--junit", type=Path, action="append", default=[])
    parser.add_argument("--cache", type=Path, action="append", default=[])
    parser.add_argument("--since", type=datetime.fromisoformat)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for report in args.junit:
        if not report.is_file():
            parser.error(f"--junit {report}: no such file (scripts/test leaves one per suite)")
    if args.junit:
        by_kind, by_file, count = test_seconds(args.junit)
        total = sum(by_kind.values())
        print(f"{count} tests, {total:.0f} test-seconds (both workers added up)")
        for kind, seconds in sorted(by_kind.items(), key=lambda item: -item[1]):
            print(f"  {kind:<8} {seconds:8.0f} s  {100 * seconds / total:5.1f}%")
        print(f"slowest {args.top} files:")
        for path, seconds in Counter(by_file).most_common(args.top):
            print(f"  {seconds:8.0f} s  {path}")
    if args.cache:
        print("image builds (layer: builds / distinct keys / seconds):")
        for layer, (built, keys, seconds) in sorted(layer_builds(args.cache, args.since).items()):
            print(f"  {layer:<10} {built:4d} / {keys:4d}  {seconds:8.0f} s")


if __name__ == "__main__":
    main()
