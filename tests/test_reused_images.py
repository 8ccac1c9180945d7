"""A run that reused every image reports what those images took to build, apart from the
time it spent building itself, instead of "image builds 0.00 s".

Each build of a layer is kept in the cache (``builds/<key>.build.json``, by ``lock`` and
``run`` alike); a run that finds a layer ready lists it in ``images/builds.json`` as reused
with that recorded time (or none, when no build of it was recorded). The builder here is
the fake one reporting what a real one does: every layer built, taking 2.5 s, or found
ready (not built, 0 s).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build.fake import FakeBuilder
from evalrepro.build.images import ImageChain
from evalrepro.cli import main
from evalrepro.config.environment import FakeEnvironment
from evalrepro.config.experiment import compose
from evalrepro.pipeline import lock_experiment, run_experiment
from evalrepro.records.base import parse_record
from evalrepro.records.timing import ImageBuilds
from evalrepro.run.backend import Backend
from evalrepro.sample import load_samples
from tests.fake_backend import ScriptedRuntime, gold_scenario

SECONDS = 2.5


class TimedBuilder(FakeBuilder):
    """The fake builder as a real one reports: each layer built in ``SECONDS``, or (with
    ``ready``) found in the store, built earlier."""

    ready = False

    def prepare(self, specs, checkouts, locked=None):
        images = super().prepare(specs, checkouts, locked)
        update = {"built": not self.ready, "build_seconds": 0.0 if self.ready else SECONDS}
        return {
            instance: ImageChain(layers=[layer.model_copy(update=update) for layer in image.layers])
            if isinstance(image, ImageChain)
            else image
            for instance, image in images.items()
        }


@pytest.fixture(scope="module")
def config():
    return compose(["+experiment=demo", "environment=fake"])


def backend(config, *, ready: bool) -> Backend:
    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    runtime = ScriptedRuntime(gold_scenario(samples))
    builder = TimedBuilder(FakeEnvironment(), runtime, Path("/nonexistent"))
    builder.ready = ready
    return Backend(runtime=runtime, builder=builder)


def run(config, run_dir: Path, cache: Path, *, ready: bool):
    return run_experiment(
        config,
        Console(file=io.StringIO()),
        run_dir=run_dir,
        cache_dir=cache,
        backend=backend(config, ready=ready),
    )


def report(capsys, run_dir: Path, *args: str) -> str:
    main(["report", str(run_dir), *args, "--n-resamples", "200"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.out


def console_row(text: str, label: str) -> list[str]:
    """The cells of the console table's row that starts with ``label``."""
    line = next(line for line in text.splitlines() if label in line)
    return [cell.strip() for cell in line.strip("│ ").split("│")]


@pytest.fixture(scope="module")
def runs(config, tmp_path_factory):
    root = tmp_path_factory.mktemp("reuse")
    cache = root / "cache"
    built = run(config, root / "built", cache, ready=False)
    reused = run(config, root / "reused", cache, ready=True)
    # Found ready, but built by another cache (or by hand): no build of them recorded.
    unknown = run(config, root / "unknown", root / "other-cache", ready=True)
    return {"built": built, "reused": reused, "unknown": unknown}


def test_a_run_that_built_its_images_reports_its_own_build_time(runs):
    timing = runs["built"].report.timing
    assert timing.layers_built == 12 and timing.build_total == pytest.approx(12 * SECONDS)
    assert timing.layers_reused == 0 and timing.reused_build_seconds is None


def test_a_run_that_reused_every_image_reports_their_recorded_build_time_apart(runs):
    timing = runs["reused"].report.timing
    assert timing.layers_built == 0 and timing.build_total == 0
    assert timing.layers_reused == 12
    assert timing.reused_build_seconds == pytest.approx(12 * SECONDS)
    assert timing.reused_unrecorded == 0
    builds = json.loads((runs["reused"].run_dir / "images" / "builds.json").read_text())
    record = parse_record(builds, ImageBuilds, where="builds.json")
    assert record.builds == [] and len(record.reused) == 12
    assert {image.seconds for image in record.reused} == {SECONDS}


def test_every_format_says_both_times(runs, capsys, tmp_path):
    run_dir = runs["reused"].run_dir
    text = report(capsys, run_dir)
    assert console_row(text, "image builds in this run") == [
        "image builds in this run (0 layers built)",
        "0.00 s",
        "-",
    ]
    assert console_row(text, "images used") == [
        "images used, built earlier (12 layers): recorded build time",
        "30.0 s",
        "-",
    ]
    markdown = report(capsys, run_dir, "--markdown")
    assert "| image builds in this run (0 layers built) | 0.00 s |" in markdown
    assert "| images used, built earlier (12 layers): recorded build time | 30.0 s |" in markdown
    page = tmp_path / "r.html"
    report(capsys, run_dir, "--html", str(page))
    row = page.read_text().split('id="images-reused"')[1].split("</tr>")[0]
    assert "images used, built earlier (12 layers): recorded build time" in row
    assert "30.0 s" in row


def test_a_layer_without_a_recorded_build_says_so(runs, capsys):
    timing = runs["unknown"].report.timing
    assert timing.layers_reused == 12 and timing.reused_build_seconds is None
    assert timing.reused_unrecorded == 12
    row = console_row(report(capsys, runs["unknown"].run_dir), "images used")
    assert row[1] == "not recorded"


def test_lock_records_the_builds_a_later_run_reuses(config, tmp_path, capsys):
    cache = tmp_path / "cache"
    lock_experiment(
        config,
        Console(file=io.StringIO()),
        output=tmp_path / "demo.lock.json",
        cache_dir=cache,
        backend=backend(config, ready=False),
    )
    outcome = run(config, tmp_path / "run", cache, ready=True)
    assert outcome.report.timing.reused_build_seconds == pytest.approx(12 * SECONDS)
