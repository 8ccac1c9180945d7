"""The layers of evalrepro, bottom to top: the one place that says which folder may
import which (``tests/test_layers.py`` holds the package to it; docs/architecture.md
shows it).

A folder (or top-level module) imports only from its own layer and the layers below
it. Read bottom to top, the layers are the pipeline: what a run is made of, then what
it is asked (config), what it writes (records), how a verdict is reached (grade), what
produces a patch and where it runs (targets, runtimes, agents), how its image comes to
exist (build), which trials it is (plan), running them (run), what they mean (report),
the command that does all of that in order (pipeline), then what others can check and
keep of it (publish, store, database) and the commands around it.

A stage that an earlier stage of a run consults sits below it: the plan names each
trial's parser and image, so grading and building are below planning; the run records
and scores each attempt as it ends, so grading is below running.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    #: What the layer is called in the docs.
    name: str
    #: Its members: top-level folders or modules of ``evalrepro`` (without ``.py``).
    members: tuple[str, ...]
    #: What it is, in one line.
    what: str


#: Bottom first.
LAYERS: tuple[Layer, ...] = (
    Layer(
        "base",
        (
            "__init__",
            "errors",
            "text",
            "atomic",
            "digest",
            "files",
            "jsonfile",
            "console",
            "plugins",
            "cache",
            "sample",
            "npmnames",
            "layers",
        ),
        "the floor: errors, text, atomic writes, digests, files, JSON, consoles, the plugin "
        "groups, the cache folder, the dataset's instance (Sample), npm's names",
    ),
    Layer(
        "sandbox",
        ("sandbox",),
        "what runs inside a trial's container (supervisor, exit guard, plain driver; "
        "standard library only); the host imports only its protocol",
    ),
    Layer("demo", ("demo",), "the demo dataset's files (instances, predictions, repos): data only"),
    Layer(
        "sources",
        ("sources",),
        "where an instance's repository history comes from (local, archive, remote, demo)",
    ),
    Layer(
        "config",
        ("config",),
        "what the user asked for: the experiment's config models, and nothing that acts",
    ),
    Layer(
        "records",
        ("records",),
        "every record on disk: pydantic models with pinned versions, and their reader",
    ),
    Layer(
        "rules",
        ("rules",),
        "a trial's rules, made at plan time: patch checks, the eval script, protection",
    ),
    Layer(
        "grade",
        ("grade",),
        "from a test log to a verdict: parsers, canaries, fresh runs, re-runs, the "
        "observation, the judgement table",
    ),
    Layer("targets", ("targets",), "what produces each trial's patch, and what defines it"),
    Layer(
        "runtimes",
        ("runtimes",),
        "where a sandbox lives: the attempt seam, the sandbox interface, runtime kinds "
        "(podman, fake, recorded), the supervisor's channel, egress",
    ),
    Layer("agents", ("agents",), "agent runners: an agent's steps in a sandbox"),
    Layer(
        "build", ("build",), "how a trial's image comes to exist: builders, image records, archives"
    ),
    Layer(
        "plan", ("plan",), "which trials, exactly: the plan, test specs, the lockfile, the harness"
    ),
    Layer(
        "run",
        ("run",),
        "running the trials: executors, each trial's job, the agent phase, the recorder, "
        "the run directory",
    ),
    Layer("report", ("report",), "what a run means, for a reader: metrics, statistics, views"),
    Layer("pipeline", ("pipeline",), "lock and run: the stages above, in order"),
    Layer(
        "regrade",
        ("regrade", "validation"),
        "a pipeline of another kind: regrading logs, validating a dataset",
    ),
    Layer(
        "publish",
        ("publish",),
        "what someone else can check: verify, bundles, reproduce, attestations",
    ),
    Layer("store", ("store",), "a team's object store of published runs"),
    Layer(
        "database", ("database",), "a team's database of runs: publishing, queries, leaderboards"
    ),
    Layer("commands", ("commands", "cli", "__main__"), "the command line"),
)
