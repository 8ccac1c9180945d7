"""The config's walk from ``evalrepro run`` to the written result, counted on the import
graph (docs/architecture.md, "The config's walk"): at most 15 files, at most 3 climbs
back.

* **A config model**: anything from ``evalrepro.config``, and any pydantic model of
  ``ExperimentConfig``'s tree defined elsewhere (each registered kind included, and the
  bases of each model): a target kind's model lives with its kind in ``targets/``, a
  repo source's in ``sources/``; where a model is defined must not change the count.
  The modules that define them are the config itself, not files it passes through.
* **The walk** of a run's config: the other modules of evalrepro reachable by imports
  from ``evalrepro/commands/run.py`` that import a config model (an import statement
  at module level, in a function or under ``TYPE_CHECKING`` that names one, or any name
  of ``evalrepro.config``): the files the config, or a part of it, passes through.
  "By imports": the import statements (``tests/test_layers.py``'s graph), and the one
  import a registry makes at run time: a kind's config model opens its
  ``implementation`` (``plugins.implementation``), an edge from the module that opens
  it to the implementation of the kind the config selects (not to every kind there is:
  a run walks one runtime, one builder, one executor; a new kind lengthens no run).
* **A climb back**: an import of one file of the walk by another (both in it) that goes
  from a stage to an earlier stage, by ``evalrepro/layers.py``'s order, a stage being a
  layer from ``rules`` to ``report``. The top (``commands``, ``pipeline``) handing each
  stage its part is the walk going forward; the records that hold the config, the
  sources and the floor are below the stages. A climb is a later stage that hands the
  config on to an earlier stage's code, or reads it through that code, instead of
  receiving its part from the top: each one ties two stages to the config's shape.

The demo's walk (podman, the local executor, the gold target) is held to it; the agent
demo's to its own, longer bound (``CONFIGS``); other kinds' walks are shown with ``-s``.
"""

from __future__ import annotations

import ast
import importlib
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from evalrepro.config.experiment import ExperimentConfig, compose
from evalrepro.layers import LAYERS
from evalrepro.targets.agent import AgentTarget
from tests.test_layers import import_edges, layer_index, module_files, unit_of

START = "evalrepro.commands.run"
MAX_FILES = 15
MAX_CLIMBS = 3

#: The stages: the layers from ``rules`` to ``report`` (below them the floor, the
#: sources, the config and the records; above them the conductors).
_NAMES = [layer.name for layer in LAYERS]
STAGES = frozenset(
    member
    for layer in LAYERS[_NAMES.index("rules") : _NAMES.index("report") + 1]
    for member in layer.members
)

#: Who opens each kind a config selects (each calls ``plugins.implementation``).
OPENERS = {
    "environment": "evalrepro.runtimes",
    "builder": "evalrepro.build",
    "executor": "evalrepro.run.executors",
    "adapter": "evalrepro.run.agent_phase",
}


def _models(annotation: Any, seen: set[type]) -> None:
    """Every pydantic model in ``annotation``'s tree of fields (unions opened), with
    their bases."""
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel) and annotation not in seen:
            seen.add(annotation)
            for info in annotation.model_fields.values():
                _models(info.annotation, seen)
            for base in annotation.__mro__[1:]:
                if issubclass(base, BaseModel) and base is not BaseModel:
                    _models(base, seen)
        return
    for argument in typing.get_args(annotation):
        _models(argument, seen)


@cache
def every_config_model() -> frozenset[type]:
    """The models of ``ExperimentConfig``'s tree, every registered kind included."""
    seen: set[type] = set()
    _models(ExperimentConfig, seen)
    return frozenset(model for model in seen if model.__module__.startswith("evalrepro."))


def config_modules() -> frozenset[str]:
    """The modules that define a config model (``evalrepro/config/``, and the kinds'
    models in ``targets/`` and ``sources/``): the config itself."""
    return frozenset(model.__module__ for model in every_config_model())


def models_of(config: BaseModel) -> frozenset[type]:
    """The models a config is made of: the model of each of its parts (the kinds it
    selects, not every kind there is), with their bases."""
    seen: set[type] = set()

    def visit(value: object) -> None:
        if isinstance(value, BaseModel):
            seen.update(
                base
                for base in type(value).__mro__
                if isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel
            )
            for field_name in type(value).model_fields:
                visit(getattr(value, field_name))
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    visit(config)
    return frozenset(seen)


def _in_config_package(module: str) -> bool:
    return module == "evalrepro.config" or module.startswith("evalrepro.config.")


def _imported(name: str, path: Path) -> Iterator[tuple[str, object]]:
    """What module ``name`` (at ``path``) imports of evalrepro, by any import statement
    in it: (the module it names, the object it takes; a module for ``import x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("evalrepro"):
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if source.startswith("evalrepro"):
                for alias in node.names:
                    yield f"{source}.{alias.name}", _attribute(source, alias.name)


def imports_the_config(name: str, path: Path, models: frozenset[type]) -> bool:
    """Whether module ``name`` (at ``path``) imports a model of the config (``models``),
    or a name of ``evalrepro.config`` that is not a model (a function or a constant: it
    acts on any config)."""
    for where, found in _imported(name, path):
        if isinstance(found, type) and issubclass(found, BaseModel):
            if found in models:
                return True
        elif _in_config_package(where):
            return True
    return False


def _attribute(module: str, name: str) -> object:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _opens_a_kind(path: Path) -> bool:
    """The module calls ``plugins.implementation`` (it opens a kind's implementation)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "implementation"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "plugins"
        for node in ast.walk(tree)
    )


def selected_kinds(config: ExperimentConfig) -> dict[str, object]:
    """The kinds a config selects, by the part of the config that names each."""
    kinds: dict[str, object] = {"environment": config.environment, "executor": config.executor}
    builder = getattr(config.environment, "builder", None)
    if builder is not None:
        kinds["builder"] = builder
    if isinstance(config.target, AgentTarget):
        kinds["adapter"] = config.target.adapter
    return kinds


@dataclass(frozen=True)
class Walk:
    files: tuple[str, ...]
    climbs: tuple[tuple[str, str], ...]

    def shown(self) -> str:
        index = layer_index()
        return "\n".join(
            [
                f"{len(self.files)} files:",
                *(f"    {m}" for m in self.files),
                f"{len(self.climbs)} climbs back:",
                *(
                    f"    {a} ({LAYERS[index[unit_of(a)]].name}) imports {b} "
                    f"({LAYERS[index[unit_of(b)]].name})"
                    for a, b in self.climbs
                ),
            ]
        )


def walk(
    config: ExperimentConfig,
    files: dict[str, Path] | None = None,
    start: str = START,
    kinds: dict[str, object] | None = None,
) -> Walk:
    """The walk of ``config`` from ``start`` (see the module's docstring); ``kinds``: the
    implementations it opens (default: ``selected_kinds(config)``)."""
    files = files if files is not None else module_files()
    kinds = selected_kinds(config) if kinds is None else kinds
    graph: dict[str, set[str]] = {
        name: {edge.imported for edge in import_edges(name, path, set(files))}
        for name, path in files.items()
    }
    for part, model in kinds.items():
        opener = OPENERS[part]
        assert _opens_a_kind(files[opener]), f"{opener} no longer opens the {part}'s kind"
        graph[opener].add(type(model).implementation.partition(":")[0])  # type: ignore[attr-defined]
    reached = {start}
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target in graph and target not in reached:
                reached.add(target)
                todo.append(target)
    itself = config_modules()
    models = models_of(config)
    walked = {
        name
        for name in reached
        if not _in_config_package(name)
        and name not in itself
        and imports_the_config(name, files[name], models)
    }
    index = layer_index()
    climbs = sorted(
        (a, b)
        for a in walked
        for b in graph[a]
        if b in walked
        and unit_of(a) in STAGES
        and unit_of(b) in STAGES
        and index[unit_of(b)] < index[unit_of(a)]
    )
    return Walk(tuple(sorted(walked)), tuple(climbs))


# --- the measure itself, on packages whose answer is known -------------------------------


def _package(tmp_path: Path, sources: dict[str, str]) -> dict[str, Path]:
    files = {}
    for name, text in sources.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        files[name] = path
    return files


@pytest.fixture(scope="module")
def demo() -> ExperimentConfig:
    return compose(["+experiment=demo"])


@pytest.fixture(scope="module")
def demo_agent() -> ExperimentConfig:
    return compose(["+experiment=demo_agent"])


def test_a_stage_that_imports_an_earlier_stages_config_code_climbs_back(tmp_path, demo):
    files = _package(
        tmp_path,
        {
            "evalrepro.commands.run": "from evalrepro import pipeline\n",
            "evalrepro.pipeline": (
                "from evalrepro.plan import plan\nfrom evalrepro.run import execute\n"
                "from evalrepro.config.experiment import ExperimentConfig\n"
            ),
            "evalrepro.plan.plan": "from evalrepro.config.dataset import DatasetConfig\n",
            "evalrepro.plan.trial": "from evalrepro.targets.base import Prediction\n",
            "evalrepro.run.execute": (
                "from evalrepro.plan.plan import PlannedTrial\n"
                "def settings():\n    from evalrepro.config import environment\n"
            ),
            "evalrepro.report.metrics": "from evalrepro.config.gate import Gate\n",
        },
    )
    found = walk(demo, files, kinds={})
    # report.metrics takes a config but no import reaches it from the command;
    # plan.trial is reached but imports no config model (a prediction is not one).
    assert found.files == ("evalrepro.pipeline", "evalrepro.plan.plan", "evalrepro.run.execute")
    # pipeline -> plan is the top handing a stage its part: not a climb.
    assert found.climbs == (("evalrepro.run.execute", "evalrepro.plan.plan"),)

    # The plan's product apart from the code that reads the config: no climb.
    files["evalrepro.run.execute"].write_text(
        "from evalrepro.plan.trial import PlannedTrial\n"
        "from evalrepro.config.environment import Limits\n"
    )
    assert walk(demo, files, kinds={}).climbs == ()


def test_a_config_model_defined_outside_the_config_package_counts(tmp_path, demo, demo_agent):
    # The agent target's model lives in targets/: importing it is importing the config,
    # when the config has one (a gold run's config never reaches code that knows only
    # the agent target).
    files = _package(
        tmp_path,
        {
            "evalrepro.commands.run": "from evalrepro.run import execute\n",
            "evalrepro.run.execute": "from evalrepro.targets.agent import AgentBudgets\n",
        },
    )
    assert walk(demo_agent, files, kinds={}).files == ("evalrepro.run.execute",)
    assert walk(demo, files, kinds={}).files == ()
    # A prediction is made from the config, not a part of it.
    files["evalrepro.run.execute"].write_text("from evalrepro.targets.base import Prediction\n")
    assert walk(demo_agent, files, kinds={}).files == ()
    # A function of the config package acts on any config.
    files["evalrepro.run.execute"].write_text("from evalrepro.config.identity import settings\n")
    assert walk(demo, files, kinds={}).files == ("evalrepro.run.execute",)


def test_a_kind_is_walked_only_when_the_config_selects_it(tmp_path, demo):
    """The registry's import: from the module that opens a kind to the implementation
    the config names, and to no other kind."""
    files = _package(
        tmp_path,
        {
            "evalrepro.commands.run": "from evalrepro import runtimes\n",
            "evalrepro.runtimes": (
                "from evalrepro import plugins\n\n"
                "def open_runtime(config):\n    return plugins.implementation(config)\n"
            ),
            "evalrepro.runtimes.podman": (
                "from evalrepro.config.environment import PodmanEnvironment\n"
            ),
            "evalrepro.runtimes.docker": (
                "from evalrepro.config.environment import DockerEnvironment\n"
            ),
        },
    )
    assert demo.environment.kind == "podman"
    assert walk(demo, files, kinds={}).files == ()
    opened = {"environment": demo.environment}
    assert walk(demo, files, kinds=opened).files == ("evalrepro.runtimes.podman",)


# --- the walk of evalrepro run -------------------------------------------------------------

#: The configs held to a bound: (overrides, most files, most climbs back). The agent
#: demo's walk is longer by the agent's own (the attempt spec carries the agent target to
#: the worker that runs it: ``runtimes/attempt.py``, ``agents/``; docs/architecture.md).
CONFIGS = {
    "demo": (["+experiment=demo"], MAX_FILES, MAX_CLIMBS),
    "demo_agent": (["+experiment=demo_agent"], 18, 2),
}
#: Other kinds' walks, shown with ``-s``.
SHOWN = {
    "demo, dask": ["+experiment=demo", "executor=dask"],
    "demo, docker": ["+experiment=demo", "environment=docker"],
    "demo, serial": ["+experiment=demo", "executor=serial"],
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_configs_walk_from_run_is_short(name):
    overrides, most_files, most_climbs = CONFIGS[name]
    found = walk(compose(overrides))
    print(f"{name}: {found.shown()}")  # shown with -s
    # It is the run's walk: the command, the plan, the runtime it opens, the executor.
    assert {
        "evalrepro.commands.run",
        "evalrepro.pipeline",
        "evalrepro.plan.plan",
        "evalrepro.runtimes.podman",
        "evalrepro.run.executors.local",
    } <= set(found.files)
    assert len(found.files) <= most_files and len(found.climbs) <= most_climbs, found.shown()


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_other_kinds_walks(name):
    found = walk(compose(SHOWN[name]))
    print(f"{name}: {found.shown()}")
    assert "evalrepro.pipeline" in found.files


#: Who may take the whole config on the run's walk: the command, the pipeline, the plan's
#: entry (which makes the trials and the lockfile from all of it) and the lockfile's
#: record, which holds it. Every other stage takes its own part.
WHOLE_CONFIG = {
    "evalrepro.commands.run",
    "evalrepro.pipeline",
    "evalrepro.plan.plan",
    "evalrepro.plan.lockfile",
    "evalrepro.records.lockfile",
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_only_the_top_of_the_walk_takes_the_whole_config(name):
    config = compose(CONFIGS[name][0])
    files = module_files()
    takes_all = {
        module
        for module in walk(config, files).files
        if any(found is ExperimentConfig for _, found in _imported(module, files[module]))
    }
    assert takes_all <= WHOLE_CONFIG, sorted(takes_all - WHOLE_CONFIG)


# --- the walk checked on a run: what the import graph cannot see --------------------------

#: Who receives a part of the config at run time without importing its model (a part
#: typed ``object`` or ``Any`` on its way to the kind that opens it): the registry and the
#: bases of the kinds. The fake runtime stands in for podman's (the demo's walk counts
#: ``runtimes/podman.py``); the executors' base is in ``run/executors/``.
UNTYPED_PASSES = {
    "evalrepro.plugins": "the registry: opens the kind a config part names",
    "evalrepro.build.base": "Builder.__init__ keeps the environment for its builder",
    "evalrepro.run.executors.base": "Executor.__init__/starting keep their executor part",
    "evalrepro.runtimes.fake": "the fake backend's runtime, in place of podman's",
    "evalrepro.build.fake": "the fake backend's builder, in place of podman's",
}


@dataclass
class Received:
    #: Module -> the functions that received a config model as an argument.
    parts: dict[str, set[str]]
    #: Module -> the functions that received the whole config.
    whole: dict[str, set[str]]


def received_in_a_run(config: ExperimentConfig, tmp_path: Path) -> Received:
    """Run the demo with the fake backend (``tests/fake_backend.py``: the real pipeline,
    no container) and note every evalrepro function called with a config model (the
    config, or a part of it) among its arguments."""
    import io
    import sys
    import threading

    from rich.console import Console

    from evalrepro.pipeline import run_experiment
    from evalrepro.sample import load_samples
    from tests.fake_backend import fake_backend, gold_scenario

    models = tuple(every_config_model())
    parts: dict[str, set[str]] = {}
    whole: dict[str, set[str]] = {}
    lock = threading.Lock()

    def profile(frame: Any, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event != "call" or not module.startswith("evalrepro"):
            return
        code = frame.f_code
        for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
            value = frame.f_locals.get(name)
            if isinstance(value, models) and name != "self":
                with lock:
                    parts.setdefault(module, set()).add(code.co_qualname)
                    if isinstance(value, ExperimentConfig):
                        whole.setdefault(module, set()).add(code.co_qualname)

    samples = {s.instance_id: s for s in load_samples(Path(config.dataset.instances))}
    backend = fake_backend(gold_scenario(samples))
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        outcome = run_experiment(
            config,
            Console(file=io.StringIO()),
            run_dir=tmp_path / "run",
            cache_dir=tmp_path / "cache",
            backend=backend,
        )
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert outcome.results.resolved == outcome.results.planned == 12
    return Received(parts, whole)


def test_on_a_run_the_whole_config_goes_only_to_the_top_and_every_part_is_walked(demo, tmp_path):
    """What the count cannot see, seen on a run: a function that takes the whole config
    (typed or not) is the pipeline's or the plan's entry; every module whose function
    receives a part of it is on the walk, is the config's own, or is a named pass."""
    received = received_in_a_run(demo, tmp_path)
    assert set(received.whole) == {
        "evalrepro.pipeline",
        "evalrepro.plan.plan",
        "evalrepro.plan.lockfile",
    }, received.whole
    walked = set(walk(demo).files)
    itself = config_modules()
    unseen = {
        module: sorted(functions)
        for module, functions in received.parts.items()
        if module not in walked
        and module not in itself
        and not _in_config_package(module)
        and module not in UNTYPED_PASSES
    }
    assert not unseen, f"receive a part of the config but are not on the walk: {unseen}"
    assert {"evalrepro.run.execute", "evalrepro.plan.testspec"} <= set(received.parts)
