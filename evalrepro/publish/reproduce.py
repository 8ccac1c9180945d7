"""``evalrepro reproduce BUNDLE``: run a bundle's trials again and say, trial by trial,
whether they agree with it.

1. The bundle must verify (``bundle_verify``): a reproduction of evidence that does not
   hold up would measure nothing.
2. The images are loaded from the bundle (``--with-images``) or rebuilt from the
   lockfile's pins (the bundle's build inputs seed the cache when it has them). The plan
   made here must be the lockfile's: an image whose digest differs stops everything,
   naming the input (:class:`evalrepro.pipeline.PlanMismatch`). Only a harness difference is
   run anyway: it is one of the things a reproduction finds out.
3. All trials, or a seeded random sample of them, run into a run directory of their own.
   An agent target's agents are not run again (they are not deterministic): each trial's
   recorded agent phase (its ``agent.json`` and the diff it left) is replayed and its
   patch evaluated again, and the reproduction says so (``agents_replayed``).
4. Each trial agrees when its outcome, its resolution and every test's status are the
   bundle's. A test that disagrees is classified:

   ``harness change``  this evalrepro reads the bundle's own log differently from how it
                       was recorded: the grading changed, not the run;
   ``flaky``           run again (``--reruns`` times), the test does not give one status
                       every time, or gives the bundle's;
   ``environment drift`` the same images and harness give another status every time:
                       what differs is the machine (kernel, CPU, clock, limits).

The agreement is written to the reproduction's run directory as ``reproduction.json``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.text import Text

from evalrepro import __version__, atomic
from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.config.experiment import ExecutorConfig, ExperimentConfig
from evalrepro.console import Table
from evalrepro.digest import short_digest
from evalrepro.errors import UserError
from evalrepro.files import read_regular_file
from evalrepro.grade.foreign import MAX_PATCH_BYTES
from evalrepro.grade.parsers import get_parser
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.publish.bundle import OpenedBundle, open_bundle
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.base import read_record
from evalrepro.records.bundle import BundleIndex
from evalrepro.records.lockfile import Lockfile
from evalrepro.records.reproduce import Kind, Reproduction, TestDisagreement, TrialAgreement
from evalrepro.records.trial import TrialResult, trial_label
from evalrepro.run.backend import Backend
from evalrepro.run.evidence import reobserve
from evalrepro.runtimes.attempt import RecordedAgent
from evalrepro.sample import Sample
from evalrepro.targets.agent import AgentTarget

REPRODUCTION_NAME = "reproduction.json"
#: Lines of each log shown for a test that disagrees, and their width.
_LINES = 3
_WIDTH = 240

TrialKeyPair = tuple[str, int]


@dataclass(frozen=True)
class _Side:
    """One run's view of a trial: its result and its final attempt's folder."""

    result: TrialResult
    folder: Path

    @property
    def final(self) -> Path:
        return self.folder / f"attempt-{len(self.result.attempts)}"


def reproduce(
    bundle: Path,
    console: Console,
    *,
    run_dir: Path | None,
    cache_dir: Path,
    sample: int | None = None,
    seed: int = 0,
    reruns: int = 2,
    backends: Callable[[], Backend] | None = None,
    executor: ExecutorConfig | None = None,
) -> Reproduction:
    """Reproduce ``bundle``; PlanMismatch when an image (or anything locked) differs.

    ``backends``: opens the backend of each run (the config's, unless a test brings one).
    ``executor``: where the attempts run: the reproducer's choice (default: a local pool),
    never the bundle's (its lockfile's executor could name a scheduler of the author's)."""
    from evalrepro.publish.bundle_verify import check_bundle

    if sample is not None and sample < 1:
        raise UserError(f"--sample {sample}: run at least one trial")
    check = check_bundle(bundle)
    if not check.ok:
        first = check.problems[0]
        raise UserError(
            f"{bundle}: the bundle does not verify ({len(check.problems)} problem(s), first: "
            f"{first.kind}: {first.detail}); `evalrepro verify {bundle}` lists them"
        )
    with open_bundle(bundle) as opened:
        return _reproduce(
            opened,
            console,
            run_dir=run_dir,
            cache_dir=cache_dir,
            sample=sample,
            seed=seed,
            reruns=reruns,
            backends=backends,
            executor=executor or LocalExecutorConfig(),
        )


def _reproduce(
    opened: OpenedBundle,
    console: Console,
    *,
    run_dir: Path | None,
    cache_dir: Path,
    sample: int | None,
    seed: int,
    reruns: int,
    backends: Callable[[], Backend] | None,
    executor: ExecutorConfig,
) -> Reproduction:
    from evalrepro.digest import sha256_bytes
    from evalrepro.plan.harness import code_digest

    index = opened.index()
    lockfile = read_lockfile(opened.run / LOCKFILE_NAME)
    if lockfile.environment.kind == "recorded":
        raise UserError(
            f"{opened.source}: its logs were written by another harness (evalrepro regrade); "
            "there is no environment to run them in again"
        )
    config = _config(opened, index, lockfile, cache_dir)
    # The executor is not part of a trial's identity: the reproducer's, not the bundle's.
    config = config.model_copy(update={"executor": executor})
    keys = sorted((t.key.instance_id, t.key.sample_index) for t in lockfile.trials)
    chosen = (
        keys
        if sample is None or sample >= len(keys)
        else sorted(random.Random(seed).sample(keys, sample))
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = run_dir or Path("runs") / f"reproduce-{opened.bag.name}-{stamp}"
    _prepare_images(opened, index, lockfile, config, cache_dir, console)

    recorded = None
    if isinstance(config.target, AgentTarget):
        recorded = recorded_agents(opened.run, lockfile)
        console.print(
            Text(
                "note: an agent target: its agents are not run again; the patches they "
                "made (as the bundle records them) are evaluated again"
            ),
            highlight=False,
        )
    _run(config, lockfile, console, run_dir, cache_dir, chosen, backends, recorded)
    samples = {s.instance_id: s for s in config.dataset.load()}
    theirs = _sides(opened.run, lockfile)
    ours = _sides(run_dir, read_lockfile(run_dir / LOCKFILE_NAME))

    agreements = {
        key: _agreement(key, theirs[key], ours.get(key), samples[key[0]], lockfile)
        for key in chosen
        if key in theirs
    }
    disagreeing = [key for key, a in agreements.items() if not a.agrees]
    rerun_sides: list[dict[TrialKeyPair, _Side]] = []
    for number in range(1, reruns + 1 if disagreeing else 1):
        again = run_dir.with_name(f"{run_dir.name}.rerun-{number}")
        console.print(
            Text(f"rerunning {len(disagreeing)} disagreeing trial(s): {again}"), highlight=False
        )
        _run(config, lockfile, console, again, cache_dir, disagreeing, backends, recorded)
        rerun_sides.append(_sides(again, read_lockfile(again / LOCKFILE_NAME)))
    for key in disagreeing:
        agreements[key] = _classify(
            agreements[key],
            theirs[key],
            samples[key[0]],
            lockfile,
            [r.get(key) for r in rerun_sides],
        )
    reproduction = Reproduction(
        bundle=str(opened.source),
        lockfile_sha256=sha256_bytes((opened.run / LOCKFILE_NAME).read_bytes()),
        bundle_harness=f"{lockfile.harness.version} {short_digest(lockfile.harness.code_digest)}",
        reproduction_harness=f"{__version__} {short_digest(code_digest())}",
        planned=len(chosen),
        sample=sample,
        seed=seed,
        reruns=reruns,
        trials=[agreements[key] for key in chosen if key in agreements],
        agents_replayed=recorded is not None,
    )
    atomic.write_text(run_dir / REPRODUCTION_NAME, reproduction.model_dump_json(indent=2) + "\n")
    return reproduction


def _config(
    opened: OpenedBundle, index: BundleIndex, lockfile: Lockfile, cache_dir: Path
) -> ExperimentConfig:
    """The lockfile's config with its files taken from the bundle: the dataset and the
    predictions, and each repo's history when the bundle holds them."""
    from evalrepro.publish.bundle import BUILD_INPUTS
    from evalrepro.publish.bundle_verify import config_paths

    paths = config_paths(opened, index)
    if not any(item.role == "build" for item in index.inputs):
        return lockfile.experiment_config(paths)
    from evalrepro.build.inputs import offline_config

    config = offline_config(
        lockfile,
        opened.data / BUILD_INPUTS,
        cache_dir,
        instances=Path(paths["dataset.instances"]),
    )
    if "target.path" in paths:
        target = config.target.model_copy(update={"path": Path(paths["target.path"])})
        config = config.model_copy(update={"target": target})
    return config


def _prepare_images(
    opened: OpenedBundle,
    index: BundleIndex,
    lockfile: Lockfile,
    config: ExperimentConfig,
    cache_dir: Path,
    console: Console,
) -> None:
    """The bundle's images loaded (refused when one is not the locked image), or its
    build inputs put where the builders look for them."""
    from evalrepro.publish.bundle import BUILD_INPUTS

    if index.images:
        from evalrepro.build.image_archive import load_images
        from evalrepro.runtimes import open_runtime

        runtime = open_runtime(config.environment, cache_dir)
        try:
            runtime.check()
            problems = load_images(
                runtime.image_store(),
                [opened.data / archive for archive in index.images],
                lockfile.environment.images,
            )
        finally:
            runtime.close()
        if problems:
            from evalrepro.pipeline import PlanMismatch
            from evalrepro.records.lockfile import Difference

            raise PlanMismatch([Difference(kind="images", detail=line) for line in problems])
        console.print(f"loaded {len(lockfile.environment.images)} image layers from the bundle")
    if index.all_build_inputs:
        from evalrepro.build.inputs import seed_cache

        seeded = seed_cache(opened.data / BUILD_INPUTS, lockfile, cache_dir)
        console.print(
            Text(f"{seeded} pinned build inputs from the bundle put in {cache_dir}"),
            highlight=False,
        )


def _run(
    config: ExperimentConfig,
    lockfile: Lockfile,
    console: Console,
    run_dir: Path,
    cache_dir: Path,
    keys: list[TrialKeyPair],
    backends: Callable[[], Backend] | None,
    recorded: Mapping[str, RecordedAgent] | None = None,
) -> None:
    from evalrepro.pipeline import run_experiment

    run_experiment(
        config,
        console,
        run_dir=run_dir,
        cache_dir=cache_dir,
        locked=lockfile,
        tolerate={"harness"},
        only=keys,
        backend=backends() if backends else None,
        recorded_agents=recorded,
    )


def recorded_agents(run_dir: Path, lockfile: Lockfile) -> dict[str, RecordedAgent]:
    """Each trial's agent phase as ``run_dir`` recorded it (the last attempt that ran
    the agent: its ``agent.json`` and ``patch.diff``), by trial id, read with bounds."""
    found = {}
    for trial in lockfile.trials:
        label = trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)
        folders = sorted(
            (run_dir / "trials" / label).glob("attempt-*"),
            key=lambda folder: int(folder.name.removeprefix("attempt-") or 0),
            reverse=True,
        )
        for folder in folders:
            if not (folder / "agent.json").is_file():
                continue
            outcome = read_record(folder / "agent.json", AgentOutcome)
            patch = None
            if (folder / "patch.diff").is_file():
                patch = read_regular_file(folder / "patch.diff", MAX_PATCH_BYTES, "patch.diff")
            found[trial.trial_id] = RecordedAgent(outcome=outcome, patch=patch)
            break
    return found


def _sides(run_dir: Path, lockfile: Lockfile) -> dict[TrialKeyPair, _Side]:
    from evalrepro.run.rundir import RunDirectory

    results = RunDirectory(run_dir).survey(lockfile).results
    sides = {}
    for trial in lockfile.trials:
        result = results.get(trial.trial_id)
        if result is None:
            continue
        label = trial_label(trial.key.instance_id, trial.key.sample_index, trial.trial_id)
        sides[(trial.key.instance_id, trial.key.sample_index)] = _Side(
            result=result, folder=run_dir / "trials" / label
        )
    return sides


def _statuses(side: _Side | None) -> dict[str, str]:
    if side is None:
        return {}
    return dict(side.result.attempts[-1].observation.status_map)


def _agreement(
    key: TrialKeyPair, theirs: _Side, ours: _Side | None, sample: Sample, lockfile: Lockfile
) -> TrialAgreement:
    bundle_statuses, our_statuses = _statuses(theirs), _statuses(ours)
    tests = []
    for test in sorted(bundle_statuses.keys() | our_statuses.keys()):
        a, b = bundle_statuses.get(test, "absent"), our_statuses.get(test, "absent")
        if a != b:
            tests.append(
                TestDisagreement(
                    test=test,
                    bundle=a,
                    reproduction=b,
                    kind="environment drift",  # until the reruns say otherwise
                    bundle_lines=_lines(theirs.final, test),
                    reproduction_lines=_lines(ours.final, test) if ours else [],
                )
            )
    ours_score = ours.result.score if ours else None
    theirs_score = theirs.result.score
    return TrialAgreement(
        label=theirs.folder.name,
        instance_id=key[0],
        sample_index=key[1],
        agrees=not tests
        and ours_score is not None
        and (ours_score.outcome, ours_score.resolution)
        == (theirs_score.outcome, theirs_score.resolution),
        bundle_outcome=f"{theirs_score.outcome} ({theirs_score.reason})",
        reproduction_outcome=(
            f"{ours_score.outcome} ({ours_score.reason})" if ours_score else "missing"
        ),
        bundle_resolution=_value(theirs_score.resolution),
        reproduction_resolution=_value(ours_score.resolution) if ours_score else None,
        tests=tests,
    )


def _classify(
    agreement: TrialAgreement,
    theirs: _Side,
    sample: Sample,
    lockfile: Lockfile,
    reruns: list[_Side | None],
) -> TrialAgreement:
    regraded = _regraded_statuses(theirs, sample, lockfile)
    rerun_statuses = [_statuses(side) for side in reruns]
    tests = []
    for test in agreement.tests:
        seen = [statuses.get(test.test, "absent") for statuses in rerun_statuses]
        kind: Kind
        if regraded is not None and regraded.get(test.test, "absent") != test.bundle:
            kind = "harness change"
        elif test.bundle in seen or len({test.reproduction, *seen}) > 1:
            kind = "flaky"
        else:
            kind = "environment drift"
        tests.append(test.model_copy(update={"kind": kind, "reruns": seen}))
    kind = None
    if not tests:
        outcomes = {side.result.score.outcome for side in reruns if side is not None}
        kind = (
            "flaky"
            if theirs.result.score.outcome in outcomes or len(outcomes) > 1
            else ("environment drift")
        )
    return agreement.model_copy(update={"tests": tests, "kind": kind})


def _regraded_statuses(
    theirs: _Side, sample: Sample, lockfile: Lockfile
) -> Mapping[str, str] | None:
    """The bundle's own final log as this evalrepro reads it."""
    instance = next(i for i in lockfile.dataset.instances if i.instance_id == sample.instance_id)
    try:
        return reobserve(theirs.final, sample, get_parser(instance.parser)).status_map
    except (OSError, ValueError, UserError):
        return None


def _lines(attempt: Path, test: str) -> list[str]:
    """The lines of an attempt's log that name ``test`` (by its full id, else its name)."""
    log = attempt / "test_output.txt"
    try:
        text = log.read_bytes()[: 64 << 20].decode("utf-8", "replace")
    except OSError:
        return []
    needles = [test]
    short = test.rsplit("::", 1)[-1].split(" (", 1)[0]
    if short != test:
        needles.append(short)
    for needle in needles:
        found = [line[:_WIDTH] for line in text.splitlines() if needle in line]
        if found:
            return found[:_LINES]
    return []


def _value(resolution: object) -> str | None:
    return None if resolution is None else str(getattr(resolution, "value", resolution))


# --- output for people -----------------------------------------------------------------


def print_reproduction(console: Console, reproduction: Reproduction) -> None:
    total, agree = len(reproduction.trials), reproduction.agreeing
    if reproduction.agents_replayed:
        console.print(
            Text(
                "note: the agents were not run again: the patches they made, as the bundle "
                "records them, were evaluated again"
            ),
            highlight=False,
        )
    if reproduction.bundle_harness != reproduction.reproduction_harness:
        console.print(
            Text(
                f"note: the bundle was graded by evalrepro {reproduction.bundle_harness}, this "
                f"is {reproduction.reproduction_harness}"
            ),
            highlight=False,
        )
    for trial in reproduction.trials:
        if trial.agrees:
            continue
        console.print(
            Text(
                f"{trial.label}: {trial.bundle_outcome} in the bundle, "
                f"{trial.reproduction_outcome} here" + (f" [{trial.kind}]" if trial.kind else "")
            ),
            highlight=False,
            soft_wrap=True,
        )
        if trial.tests:
            table = Table("test", "bundle", "here", "reruns", "class", "log lines")
            for test in trial.tests:
                lines = [f"bundle: {line}" for line in test.bundle_lines] + [
                    f"here: {line}" for line in test.reproduction_lines
                ]
                table.add_row(
                    Text(test.test),
                    Text(test.bundle),
                    Text(test.reproduction),
                    Text(", ".join(test.reruns)),
                    Text(test.kind),
                    Text("\n".join(lines)),
                )
            console.print(table)
    sampled = "" if reproduction.sample is None else f" (a sample, seed {reproduction.seed})"
    style = "bold green" if agree == total else "bold red"
    console.print(Text(f"{agree}/{total} trials agree{sampled}", style=style), highlight=False)
