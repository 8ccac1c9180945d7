"""The layering of evalrepro, checked on the code and on a run.

* Folders import one way: each top-level folder (or module) of ``evalrepro/`` imports
  only from its own layer and the layers below it, as ``evalrepro/layers.py`` orders
  them, and no folders import each other in a loop.
* No import cycle inside ``evalrepro/`` (the modules' import graph, by ``ast``).
* The path from the config to a trial's result is short: at most 12 evalrepro modules on
  the call stack from ``evalrepro.pipeline.run_experiment`` down to
  ``Recorder.record_trial``.
* Each artifact of a run is hashed once in that run: when it is recorded.
* Each command reads the lockfile once.

The runs are the demo experiment with the fake backend of ``tests/fake_backend.py`` (as
``tests/test_pipeline.py`` runs it): no container, the real pipeline.
"""

from __future__ import annotations

import ast
import hashlib
import io
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from rich.console import Console

import evalrepro
from evalrepro.config.experiment import compose
from evalrepro.layers import LAYERS
from evalrepro.pipeline import run_experiment
from evalrepro.records.artifact import Artifact
from evalrepro.records.trial import Attempt
from evalrepro.run.recorder import Recorder
from evalrepro.sample import load_samples
from tests.fake_backend import fake_backend, gold_scenario, trial_dirs

PACKAGE_DIR = Path(evalrepro.__file__).parent
#: Little test projects of their own, not modules of evalrepro.
NOT_MODULES = PACKAGE_DIR / "demo" / "repos"


# --- 1. the import graph ----------------------------------------------------------------


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int


def module_files() -> dict[str, Path]:
    """Every module of evalrepro by its dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path.is_relative_to(NOT_MODULES):
            continue
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_ours(name: str) -> bool:
    return name == "evalrepro" or name.startswith("evalrepro.")


def import_edges(name: str, path: Path, modules: set[str]) -> list[Edge]:
    """What module ``name`` imports of evalrepro: every ``import`` statement anywhere in
    it (module level, in functions, under ``if TYPE_CHECKING:``), relative ones resolved.
    ``from pkg import x`` imports the submodule ``pkg.x`` when there is one, else ``pkg``.
    A string handed to importlib is not an import statement, and not an edge."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges += [
                Edge(name, alias.name, node.lineno) for alias in node.names if _is_ours(alias.name)
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level > 1:
                    base_parts = base_parts[: -(node.level - 1)]
                base = ".".join(base_parts)
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if not _is_ours(source):
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                target = submodule if submodule in modules else source
                edges.append(Edge(name, target, node.lineno))
    return [edge for edge in edges if edge.imported != name]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def test_tarjan_finds_a_cycle_and_leaves_a_chain_alone():
    # The checker itself, on a graph whose answer is known.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}}
    found = [c for c in strongly_connected(graph) if len(c) > 1]
    assert found == [["a", "b", "c"]]


def test_no_import_cycle_inside_evalrepro():
    files = module_files()
    assert "evalrepro.pipeline" in files and "evalrepro.run.recorder" in files
    edges = [edge for name, path in files.items() for edge in import_edges(name, path, set(files))]
    graph: dict[str, set[str]] = {name: set() for name in files}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.imported)
        graph.setdefault(edge.imported, set())
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    lines = []
    for component in cycles:
        members = set(component)
        lines.append(f"a cycle of {len(component)} modules: {', '.join(component)}")
        lines += [
            f"    {e.importer} (line {e.line}) imports {e.imported}"
            for e in sorted(set(edges), key=lambda e: (e.importer, e.line, e.imported))
            if e.importer in members and e.imported in members
        ]
    assert not cycles, "import cycles inside evalrepro:\n" + "\n".join(lines)


# --- 1b. the folders' import graph: one way, bottom to top ------------------------------


def unit_of(module: str) -> str:
    """The top-level folder or module of ``evalrepro`` that ``module`` is in (``__init__``
    for the package's own ``__init__.py``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_index() -> dict[str, int]:
    index: dict[str, int] = {}
    for number, layer in enumerate(LAYERS):
        for member in layer.members:
            assert member not in index, f"{member} is in two layers"
            index[member] = number
    return index


#: The climbs left, each with why: (file, module it imports) -> the reason. Empty: an
#: entry is a debt to name here, with the work that removes it.
ALLOWED_CLIMBS: dict[tuple[str, str], str] = {}


def folder_violations(
    files: dict[str, Path], root: Path = PACKAGE_DIR
) -> tuple[list[str], list[str]]:
    """The imports that climb to a higher layer, each named by file and line, and the
    loops among the folders of one layer (a loop across layers is a climb)."""
    index = layer_index()
    climbs: list[str] = []
    within: dict[str, set[str]] = defaultdict(set)
    lines_within: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, path in sorted(files.items()):
        # One line per import statement and module (``from x import a, b``: one).
        for edge in sorted(set(import_edges(name, path, set(files))), key=lambda e: e.line):
            source, target = unit_of(edge.importer), unit_of(edge.imported)
            if source == target:
                continue
            where = f"{path.relative_to(root.parent)}:{edge.line} imports {edge.imported}"
            allowed = (path.relative_to(root.parent).as_posix(), edge.imported) in ALLOWED_CLIMBS
            if index[target] > index[source] and not allowed:
                climbs.append(
                    f"{where} ({source}, layer {LAYERS[index[source]].name}, imports "
                    f"{target}, layer {LAYERS[index[target]].name} above it)"
                )
            elif index[target] == index[source]:
                within[source].add(target)
                lines_within[(source, target)].append(where)
    loops = []
    for component in strongly_connected({u: within.get(u, set()) for u in index}):
        if len(component) > 1:
            loops.append(f"a loop of {', '.join(component)}:")
            loops += [
                f"    {line}"
                for a in component
                for b in component
                for line in lines_within.get((a, b), [])
            ]
    return climbs, loops


def test_every_folder_and_top_level_module_has_a_layer():
    """A new folder is placed in ``evalrepro/layers.py`` before it is imported."""
    index = layer_index()
    units = {unit_of(name) for name in module_files()}
    assert not units - set(index), f"not in evalrepro/layers.py: {sorted(units - set(index))}"
    assert not set(index) - units, f"in layers.py but not in the package: {set(index) - units}"


def test_folders_import_only_from_their_layer_and_below():
    """Every import of evalrepro in evalrepro (module level, in functions, under
    ``TYPE_CHECKING``; ``import x`` and ``from x import y``) goes down the layers of
    ``evalrepro/layers.py`` or stays in its own layer, and no folders loop."""
    climbs, loops = folder_violations(module_files())
    message = [f"{len(climbs)} import(s) climb to a higher layer:", *climbs] if climbs else []
    if loops:
        message += ["folders of one layer importing each other in a loop:", *loops]
    assert not climbs and not loops, "\n".join(message)


def test_the_architecture_doc_lists_the_layers_in_their_order():
    """docs/architecture.md shows the layers as they are: one row each, the top first,
    with each layer's folders and modules."""
    doc = (PACKAGE_DIR.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## Where things live", 1)[1].splitlines()
    first = next(i for i, line in enumerate(section) if line.startswith("| layer |"))
    table = section[first + 2 :]  # past the header and its rule
    table = table[: next(i for i, line in enumerate(table) if not line.startswith("|"))]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    assert [row[0] for row in rows] == [layer.name for layer in reversed(LAYERS)]
    for row, layer in zip(rows, reversed(LAYERS), strict=True):
        named = {part.strip("`/").removesuffix(".py") for part in row[1].split(", ")}
        assert named <= set(layer.members), (row[0], named - set(layer.members))


def test_every_allowed_climb_is_still_there():
    """An allowed climb that is gone leaves the list with it (the list only shrinks)."""
    files = module_files()
    seen = {
        (path.relative_to(PACKAGE_DIR.parent).as_posix(), edge.imported)
        for name, path in files.items()
        for edge in import_edges(name, path, set(files))
    }
    assert not set(ALLOWED_CLIMBS) - seen, f"gone: {sorted(set(ALLOWED_CLIMBS) - seen)}"


def test_the_folder_check_sees_a_climb_in_a_function(tmp_path):
    # The checker itself: a function-level import of a higher layer, by either form.
    package = tmp_path / "evalrepro"
    (package / "records").mkdir(parents=True)
    (package / "report").mkdir()
    for init in (package, package / "records", package / "report"):
        (init / "__init__.py").write_text("")
    (package / "report" / "view.py").write_text("from evalrepro.records import trial\n")
    (package / "records" / "trial.py").write_text(
        "def late():\n    import evalrepro.report.view\n\n\n"
        "def later():\n    from evalrepro.report import view\n"
    )
    files = {
        "evalrepro.records.trial": package / "records" / "trial.py",
        "evalrepro.report.view": package / "report" / "view.py",
    }
    climbs, loops = folder_violations(files, root=package)
    assert [c.split(" (")[0] for c in climbs] == [
        "evalrepro/records/trial.py:2 imports evalrepro.report.view",
        "evalrepro/records/trial.py:6 imports evalrepro.report.view",
    ]
    assert not loops


#: What a record may stand on: other records, the config models a lockfile holds, the
#: helpers of every layer, and the sandbox's protocol (standard-library constants).
RECORD_FLOOR = (
    "evalrepro",
    "evalrepro.atomic",
    "evalrepro.config",
    "evalrepro.digest",
    "evalrepro.errors",
    "evalrepro.files",
    "evalrepro.jsonfile",
    "evalrepro.records",
    "evalrepro.sandbox",
    "evalrepro.text",
)


def _on_floor(module: str) -> bool:
    return any(module == floor or module.startswith(f"{floor}.") for floor in RECORD_FLOOR[1:]) or (
        module == RECORD_FLOOR[0]
    )


def test_records_stand_on_nothing_above_them():
    """The records package is the bottom of the pipeline: every stage reads and writes
    records, and no record needs a stage to be read."""
    files = module_files()
    upward = [
        f"{edge.importer} (line {edge.line}) imports {edge.imported}"
        for name, path in files.items()
        if name.startswith("evalrepro.records")
        for edge in import_edges(name, path, set(files))
        if not _on_floor(edge.imported)
    ]
    assert not upward, "records importing a stage:\n" + "\n".join(upward)


def _persisted_models(model: type, seen: set[type]) -> None:
    import enum
    import typing

    from pydantic import BaseModel

    if isinstance(model, type):
        if issubclass(model, BaseModel | enum.Enum) and model not in seen:
            seen.add(model)
            if issubclass(model, BaseModel):
                for field_info in model.model_fields.values():
                    _persisted_models(field_info.annotation, seen)
        return
    for argument in typing.get_args(model):
        _persisted_models(argument, seen)


def test_every_record_and_what_it_holds_is_defined_in_the_records_package():
    """Records in one place: a record, and every model or enum written inside one, is
    defined in ``evalrepro.records`` (the config models a lockfile embeds are config)."""
    from evalrepro.records.base import records

    seen: set[type] = set()
    for model in records().values():
        _persisted_models(model, seen)
    elsewhere = sorted(
        f"{model.__module__}.{model.__qualname__}"
        for model in seen
        if model.__module__.startswith("evalrepro.")
        and not model.__module__.startswith(("evalrepro.records.", "evalrepro.config."))
    )
    assert len(seen) > 40
    assert not elsewhere, "persisted outside evalrepro.records: " + ", ".join(elsewhere)


# --- the runs ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def config():
    return compose(["+experiment=demo"])


@pytest.fixture(scope="module")
def scenario(config):
    return gold_scenario({s.instance_id: s for s in load_samples(Path(config.dataset.instances))})


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def run_demo(config, scenario, run_dir: Path, cache_dir: Path):
    return run_experiment(
        config, quiet(), run_dir=run_dir, cache_dir=cache_dir, backend=fake_backend(scenario)
    )


@dataclass(frozen=True)
class Frame:
    module: str
    function: str
    line: int

    def __str__(self) -> str:
        return f"{self.module}.{self.function}:{self.line}"


def frames_of(frame: FrameType | None) -> list[Frame]:
    """The stack from ``frame`` outwards (innermost first)."""
    found = []
    while frame is not None:
        code = frame.f_code
        found.append(Frame(frame.f_globals.get("__name__", "?"), code.co_qualname, frame.f_lineno))
        frame = frame.f_back
    return found


def ours(stack: list[Frame]) -> list[Frame]:
    return [f for f in stack if _is_ours(f.module) or f.module.startswith("tests.")]


def shown(stack: list[Frame]) -> str:
    """A stack outermost first, evalrepro's (and the tests') frames only."""
    return "\n".join(f"        {f}" for f in reversed(ours(stack)))


# --- 2. the config's way to the trial results --------------------------------------------

RUN_EXPERIMENT = run_experiment.__code__
RECORD_TRIAL = Recorder.record_trial.__code__
MAX_MODULES = 12


def _reaches(stack: list[Frame]) -> bool:
    return any(f.module == "evalrepro.pipeline" and f.function == "run_experiment" for f in stack)


@pytest.mark.parametrize("executor", ["local", "serial"])
def test_the_config_reaches_the_trial_results_through_at_most_12_modules(
    executor, scenario, tmp_path
):
    """Each time a trial's result is recorded, the call stack from
    ``evalrepro.pipeline.run_experiment`` down to ``Recorder.record_trial`` passes through
    at most 12 evalrepro modules. An executor's worker thread has its own stack: it is
    continued by the stack of the thread that runs ``run_experiment`` (waiting in the
    executor for it)."""
    config = compose(["+experiment=demo", f"executor={executor}"])
    assert config.executor.kind == executor
    stacks: list[list[Frame]] = []
    lock = threading.Lock()
    runner: list[int] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is RUN_EXPERIMENT:
            runner.append(threading.get_ident())
        if event != "call" or frame.f_code is not RECORD_TRIAL:
            return
        stack = frames_of(frame)
        if not _reaches(stack) and runner:
            # A worker thread: the rest of its way is the waiting run_experiment's stack.
            parent = sys._current_frames().get(runner[-1])
            stack += frames_of(parent)
        with lock:
            stacks.append(stack)

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        outcome = run_demo(config, scenario, tmp_path / "run", tmp_path / "cache")
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert outcome.results.planned == 12 and len(stacks) == 12

    problems = []
    ways = set()
    for stack in stacks:
        assert _reaches(stack), "record_trial not reached from run_experiment:\n" + shown(stack)
        top = max(
            i
            for i, f in enumerate(stack)
            if f.module == "evalrepro.pipeline" and f.function == "run_experiment"
        )
        path = list(reversed(stack[: top + 1]))  # run_experiment first
        modules = tuple(dict.fromkeys(f.module for f in path if _is_ours(f.module)))
        ways.add(modules)
        if len(modules) > MAX_MODULES:
            problems.append((modules, path))
    if problems:
        modules, path = max(problems, key=lambda p: len(p[0]))
        pytest.fail(
            f"{len(problems)} of {len(stacks)} trial results are reached through more than "
            f"{MAX_MODULES} evalrepro modules; the longest way, {len(modules)} modules:\n"
            + "\n".join(f"    {m}" for m in modules)
            + "\n  its stack (run_experiment first):\n"
            + "\n".join(f"        {f}" for f in path if _is_ours(f.module))
        )
    for modules in sorted(ways):  # shown with -s
        print(f"{executor}: {len(modules)} modules: {' -> '.join(modules)}")


# --- 3. each artifact hashed once ------------------------------------------------------


@dataclass(frozen=True)
class HashEvent:
    seq: int
    hexdigest: str
    #: Where the hash was made (innermost first).
    stack: list[Frame] = field(compare=False)

    @property
    def in_sandbox(self) -> bool:
        """Made by the runtime's side of an attempt (in a container or on another
        machine: the fake runtime does in process what the supervisor does there)."""
        return any(f.module.startswith("evalrepro.runtimes.") for f in self.stack)


class Hashes:
    """Every sha256 computed while installed: hashlib.sha256, hashlib.new("sha256") and
    hashlib.file_digest(..., "sha256"), wherever they are looked up, each recorded once
    with the digest of the bytes it consumed and the stack that made it."""

    def __init__(self) -> None:
        self.events: list[HashEvent] = []
        self._lock = threading.Lock()
        self._seq = 0
        self.sha256 = hashlib.sha256
        self.new = hashlib.new
        self.file_digest = hashlib.file_digest

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def made(self, real: Any, stack: list[Frame]) -> _Counted:
        return _Counted(self, real, stack)

    def record(self, hexdigest: str, stack: list[Frame]) -> None:
        event = HashEvent(self.next_seq(), hexdigest, stack)
        with self._lock:
            self.events.append(event)

    def counted_sha256(self, *args: Any, **kwargs: Any) -> _Counted:
        return self.made(self.sha256(*args, **kwargs), _caller())

    def counted_new(self, name: str, *args: Any, **kwargs: Any) -> Any:
        real = self.new(name, *args, **kwargs)
        return self.made(real, _caller()) if name.lower() == "sha256" else real

    def counted_file_digest(self, fileobj: Any, digest: Any, /, **kwargs: Any) -> Any:
        if digest == "sha256" or digest is self.sha256 or digest == self.counted_sha256:
            stack = _caller()
            return self.file_digest(fileobj, lambda: self.made(self.sha256(), stack), **kwargs)
        return self.file_digest(fileobj, digest, **kwargs)


class _Counted:
    """A sha256 object that records its digest the first time it is asked for it."""

    def __init__(self, hashes: Hashes, real: Any, stack: list[Frame]) -> None:
        self._hashes, self._real, self._stack = hashes, real, stack
        self._recorded = False

    def update(self, data: Any) -> None:
        self._real.update(data)

    def _record(self) -> None:
        if not self._recorded:
            self._recorded = True
            self._hashes.record(self._real.hexdigest(), self._stack)

    def digest(self) -> bytes:
        self._record()
        return self._real.digest()

    def hexdigest(self) -> str:
        self._record()
        return self._real.hexdigest()

    def copy(self) -> _Counted:
        return _Counted(self._hashes, self._real.copy(), self._stack)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _caller() -> list[Frame]:
    """The stack of the code that asked for the hash (this file's frames left out)."""
    return [f for f in frames_of(sys._getframe(1)) if f.module != __name__]


def replace_everywhere(monkeypatch, original: object, replacement: object) -> list[str]:
    """Every module attribute that is ``original`` set to ``replacement`` (modules import
    functions by name: each importing module has its own reference); where."""
    where = []
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            if value is original:
                monkeypatch.setattr(module, attribute, replacement)
                where.append(f"{name}.{attribute}")
    return where


@contextmanager
def replaced(original: Callable, replacement: Callable) -> Iterator[list[str]]:
    """``replace_everywhere`` for the duration; after, the original is back everywhere,
    also in the modules first imported meanwhile (they took ``replacement`` from the
    module that defines it)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            yield replace_everywhere(monkeypatch, original, replacement)
        finally:
            for module in list(sys.modules.values()):
                namespace = getattr(module, "__dict__", None)
                if isinstance(namespace, dict):
                    for attribute, value in list(namespace.items()):
                        if value is replacement:
                            setattr(module, attribute, original)


def recorded_artifacts(run_dir: Path) -> list[Artifact]:
    artifacts = []
    for trial in trial_dirs(run_dir):
        for record in sorted(trial.glob("attempt-*/result.json")):
            artifacts += Attempt.model_validate_json(record.read_bytes()).artifacts
    return artifacts


def test_each_artifact_is_hashed_once_per_run(config, scenario, tmp_path):
    """In a run, an artifact's bytes are hashed once: the recorder hashes what it writes,
    and nothing hashes the file again (not the report, not the SWE-bench layout, not the
    run's own checks). Counted: every sha256 over the bytes of an artifact from the moment
    its attempt's recording begins (before, the same bytes are the plan's: a patch is
    digested for the trial's identity); the runtime's own hashing (a sandbox's) is not
    the host's and not counted. Several artifacts with the same bytes may be hashed once
    each."""
    hashes = Hashes()
    recording_began: dict[str, int] = {}  # attempt folder (relative to the run) -> seq
    record_attempt = Recorder.record_attempt

    def recording(self, spec, *args, **kwargs):
        folder = (self.trial_dir(spec.label) / f"attempt-{spec.number}").relative_to(self.run_dir)
        recording_began.setdefault(folder.as_posix(), hashes.next_seq())
        return record_attempt(self, spec, *args, **kwargs)

    run_dir = tmp_path / "run"
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        replaced(hashlib.sha256, hashes.counted_sha256),
        replaced(hashlib.new, hashes.counted_new),
        replaced(hashlib.file_digest, hashes.counted_file_digest),
    ):
        monkeypatch.setattr(Recorder, "record_attempt", recording)
        outcome = run_demo(config, scenario, run_dir, tmp_path / "cache")
    assert outcome.results.planned == 12

    artifacts = recorded_artifacts(run_dir)
    assert artifacts and len(recording_began) >= 12
    by_digest: dict[str, list[Artifact]] = defaultdict(list)
    for artifact in artifacts:
        by_digest[artifact.sha256.removeprefix("sha256:")].append(artifact)
    # The recorder's hashes are among those counted: the counting sees what it must.
    assert {e.hexdigest for e in hashes.events} >= set(by_digest)

    problems = []
    for digest, same in sorted(by_digest.items(), key=lambda item: item[1][0].path):
        began = min(recording_began[a.path.rpartition("/")[0]] for a in same)
        counted = [
            e for e in hashes.events if e.hexdigest == digest and e.seq > began and not e.in_sandbox
        ]
        if len(counted) > len(same):
            problems.append((same, counted))
    if problems:
        ways: dict[tuple[Frame, ...], int] = Counter()
        lines = [
            f"{len(problems)} of {len(by_digest)} artifact contents hashed more often than "
            "there are artifacts with them (artifacts: hashes, by the function that hashed):"
        ]
        for same, counted in problems:
            for event in counted:
                ways[tuple(ours(event.stack))] += 1
            by = Counter(_hasher(e.stack) for e in counted)
            lines.append(
                f"  {', '.join(a.path for a in same)}: {len(counted)} for {len(same)} ("
                + ", ".join(f"{n} x {where}" for where, n in by.items())
                + ")"
            )
        lines.append("the stacks that hashed them (run_experiment first), and how often:")
        for way, times in sorted(ways.items(), key=lambda item: -item[1]):
            lines.append(f"  {times} x")
            lines += [f"        {f}" for f in reversed(way)]
        pytest.fail("\n".join(lines))


def _hasher(stack: list[Frame]) -> str:
    """The innermost two evalrepro frames: what hashed, and who asked it to."""
    inner = [f for f in stack if _is_ours(f.module)][:2]
    return " <- ".join(f"{f.module}.{f.function}" for f in inner)


# --- 4. one read of the lockfile per command ----------------------------------------------


@dataclass(frozen=True)
class Read:
    function: str
    stack: list[Frame]


class LockfileReads:
    """Every read of a lockfile: a call of ``read_lockfile``, or of ``read_record`` with
    the Lockfile model that is not inside one (that is the same read)."""

    def __init__(self) -> None:
        from evalrepro.plan import lockfile
        from evalrepro.records import base

        self.lockfile_model = lockfile.Lockfile
        self.read_lockfile = lockfile.read_lockfile
        self.read_record = base.read_record
        self.reads: list[Read] = []
        self._inside = threading.local()

    def counted_read_lockfile(self, *args: Any, **kwargs: Any) -> Any:
        self.reads.append(Read("read_lockfile", _caller()))
        depth = getattr(self._inside, "depth", 0)
        self._inside.depth = depth + 1
        try:
            return self.read_lockfile(*args, **kwargs)
        finally:
            self._inside.depth = depth

    def counted_read_record(self, path: Any, model: Any, *args: Any, **kwargs: Any) -> Any:
        is_lockfile = isinstance(model, type) and issubclass(model, self.lockfile_model)
        if is_lockfile and not getattr(self._inside, "depth", 0):
            self.reads.append(Read("read_record(..., Lockfile)", _caller()))
        return self.read_record(path, model, *args, **kwargs)

    @contextmanager
    def counting(self) -> Iterator[list[str]]:
        with (
            replaced(self.read_lockfile, self.counted_read_lockfile) as first,
            replaced(self.read_record, self.counted_read_record) as second,
        ):
            yield first + second

    def take(self) -> list[Read]:
        taken, self.reads = self.reads, []
        return taken


def test_the_lockfile_is_read_once_per_command(config, scenario, tmp_path, capsys):
    """``run`` (into a fresh run directory, and resuming it), ``verify RUN`` and
    ``report RUN`` each read the run's lockfile at most once: one reading, handed on to
    what needs it."""
    from evalrepro.cli import main

    run_dir = tmp_path / "run"
    counter = LockfileReads()
    per_command: dict[str, list[Read]] = {}
    with counter.counting() as patched:
        assert "evalrepro.plan.lockfile.read_lockfile" in patched
        outcome = run_demo(config, scenario, run_dir, tmp_path / "cache")
        assert outcome.results.resolved == 12
        per_command["run (a fresh run directory)"] = counter.take()

        # As if the run had been killed before its last four trials finished.
        for trial in trial_dirs(run_dir)[-4:]:
            (trial / "result.json").unlink()
        outcome = run_demo(config, scenario, run_dir, tmp_path / "cache")
        assert outcome.results.resolved == 12
        per_command["run (resuming it)"] = counter.take()

        assert main(["verify", str(run_dir)]) == 0, capsys.readouterr()
        per_command["verify RUN"] = counter.take()
        assert main(["report", str(run_dir)]) == 0, capsys.readouterr()
        per_command["report RUN"] = counter.take()

    lines = []
    for command, reads in per_command.items():
        lines.append(f"{command}: {len(reads)} read(s)")
        for number, read in enumerate(reads, start=1):
            lines.append(f"  {number}. {read.function}, from:")
            lines += [f"        {f}" for f in reversed(ours(read.stack))]
    report = "\n".join(lines)
    print(report)  # shown with -s
    too_many = [command for command, reads in per_command.items() if len(reads) > 1]
    assert not too_many, f"the lockfile read more than once by {too_many}:\n{report}"
