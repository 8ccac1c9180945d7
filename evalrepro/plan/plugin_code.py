"""Kinds from other packages in the trial identity: each is part of what it can change.

evalrepro's own code that can change a result is in the harness digest
(``evalrepro.plan.harness``). A kind another package declares by entry point (a parser,
a runtime, a builder, ...) runs beside that code and can change a verdict as much, so a
trial that uses one has a harness digest that covers it too: its distribution, its
version and a digest of its code (:class:`~evalrepro.records.lockfile.PluginCode`).

Which kinds a trial uses, by group (:class:`TrialKinds`):

=========  ======================================================  ====================
group      why it can change a verdict                             trials it covers
=========  ======================================================  ====================
parsers    it reads the test log into statuses                     those graded with it
runtimes   it runs the attempt and hands back its output           every trial of a run
builders   it makes the image and reports its digest               every trial of a run
executors  it carries each attempt to a runtime, the output back   every trial of a run
targets    it gives the patch (or the log) a trial judges          every trial of a run
agents     its adapter drives the agent that makes the patch       an agent target's
=========  ======================================================  ====================

Report formats, the CLI and everything else that only shows recorded verdicts are
never part of a trial id. With evalrepro's own kinds only, the harness digest is
``code_digest()`` exactly as before: the committed lockfiles stay valid.

The code digest of a kind is sha256 over the canonical JSON of ``{path: sha256 of the
file's bytes}`` for every ``*.py`` file of the regular package that defines it (the
outermost package of the module that defines the kind's class; a module of no package
is its own file), read where Python imports it from. Not the distribution's ``RECORD``:
an editable install's RECORD lists no source file, and RECORD's hashes are what the
installer wrote, not the bytes that run. The package taken whole covers the helpers the
defining module imports from its own package. Not covered (as for evalrepro itself):
the plugin's dependencies and data files; a plugin is code the user chose to install,
and this makes its changes visible in the trial ids, it is no defence against a plugin
that hides them (it could rewrite evalrepro itself).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

from evalrepro import plugins
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.plugins import Group
from evalrepro.records.lockfile import LockedTrial, Lockfile, PluginCode


@dataclass(frozen=True)
class TrialKinds:
    """The kind a trial uses of each plugin group whose code can change its verdict
    ("" for a group it uses none of)."""

    parser: str
    runtime: str
    builder: str
    executor: str
    target: str
    agent: str = ""

    def by_group(self) -> dict[Group, str]:
        kinds: dict[Group, str] = {
            "parsers": self.parser,
            "runtimes": self.runtime,
            "builders": self.builder,
            "executors": self.executor,
            "targets": self.target,
            "agents": self.agent,
        }
        return {group: kind for group, kind in kinds.items() if kind}


def locked_kinds(lock: Lockfile, trial: LockedTrial) -> TrialKinds:
    """The kinds the locked ``trial`` used, from the lockfile alone."""
    parsers = {i.instance_id: i.parser for i in lock.dataset.instances}
    target = lock.config.get("target", {})
    adapter = target.get("adapter") if isinstance(target, dict) else None
    executor = lock.config.get("executor", {})
    return TrialKinds(
        parser=parsers.get(trial.key.instance_id, ""),
        runtime=lock.environment.kind,
        builder=lock.environment.builder,
        # A lockfile older than executors in the config ran the local one.
        executor=executor.get("kind", "local") if isinstance(executor, dict) else "local",
        target=lock.target.kind,
        agent=adapter.get("kind", "") if isinstance(adapter, dict) else "",
    )


def trial_digest(code_digest: str, used: Iterable[PluginCode]) -> str:
    """A trial's harness digest: evalrepro's ``code_digest`` alone when the trial uses
    no kind of another package (today's digest, unchanged), else sha256 over the
    canonical JSON of it and the plugins' records."""
    found = sorted((p.model_dump(mode="json") for p in used), key=lambda p: (p["group"], p["kind"]))
    if not found:
        return code_digest
    return sha256_json({"code": code_digest, "plugins": found})


def used_plugins(kinds: TrialKinds) -> list[PluginCode]:
    """The installed kinds of other packages among ``kinds`` (evalrepro's own: none)."""
    found = [installed(group, kind) for group, kind in kinds.by_group().items()]
    return [plugin for plugin in found if plugin is not None]


def locked_plugins(lock: Lockfile, trial: LockedTrial) -> list[PluginCode]:
    """The plugins of ``lock.harness`` that ``trial`` used."""
    kinds = locked_kinds(lock, trial).by_group()
    return [p for p in lock.harness.plugins if kinds.get(p.group) == p.kind]  # type: ignore[call-overload]


@cache
def installed(group: Group, kind: str) -> PluginCode | None:
    """Kind ``kind`` of ``group`` as installed here: None for one of evalrepro's own; a
    UserError for a kind that is not installed. Once per process: the code that is
    running does not change under it."""
    defined_by = _DEFINED_BY.get(group)
    if defined_by is None:
        raise UserError(f"unknown plugin group '{group}' (known: {', '.join(_DEFINED_BY)})")
    foreign = [m for m in defined_by(group, kind) if not _ours(m)]
    if not foreign:
        return None
    files: dict[str, Path] = {}
    for module in foreign:
        files.update(package_files(module))
    name, version = _distribution(foreign[0], files)
    code = {rel: sha256_bytes(path.read_bytes()) for rel, path in files.items()}
    return PluginCode(
        group=group, kind=kind, distribution=name, version=version, code_digest=sha256_json(code)
    )


def package_files(module_name: str) -> dict[str, Path]:
    """The ``*.py`` files of the outermost regular package holding ``module_name``, by
    their path relative to the folder the package is in (a module of no package: its
    own file). A namespace package has no files of its own: the search goes deeper."""
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        module = importlib.import_module(".".join(parts[:depth]))
        file = getattr(module, "__file__", None)
        if file is None:
            continue
        path = Path(file)
        if path.name == "__init__.py":
            found = sorted(p for p in path.parent.rglob("*.py") if "__pycache__" not in p.parts)
            base = path.parent.parent
        else:
            found, base = [path], path.parent
        return {p.relative_to(base).as_posix(): p for p in found}
    return {}


def _ours(module: str) -> bool:
    return module == "evalrepro" or module.startswith("evalrepro.")


def _parser_modules(group: Group, kind: str) -> list[str]:
    # A parser module may register several parsers, and a parser class may live in a
    # module its entry point imports: the class that answers to the name is what grades.
    from evalrepro.grade.parsers import get_parser

    return [type(get_parser(kind)).__module__]


def _model_modules(group: Group, kind: str) -> list[str]:
    # The kind's config model, and the implementation it opens when it is used.
    model = plugins.load(group, kind)
    implementation = getattr(model, "implementation", None)
    modules = [model.__module__]
    if isinstance(implementation, str):
        modules.append(implementation.partition(":")[0])
    return modules


#: How each group's kind names the modules that define it.
_DEFINED_BY: dict[Group, Callable[[Group, str], list[str]]] = {
    "parsers": _parser_modules,
    "runtimes": _model_modules,
    "builders": _model_modules,
    "executors": _model_modules,
    "targets": _model_modules,
    "agents": _model_modules,
}


@cache
def _distributions() -> dict[str, list[str]]:
    return packages_distributions()


def _distribution(module: str, files: dict[str, Path]) -> tuple[str, str]:
    """The distribution that installed ``module`` and its version ("", "" for none): of
    several that share its top-level name (a namespace), the one that lists its files."""
    names = sorted(set(_distributions().get(module.partition(".")[0], [])))
    found = []
    for name in names:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        listed = {f.as_posix() for f in dist.files or []}
        found.append((not listed.intersection(files), dist.metadata["Name"], dist.version))
    if not found:
        return "", ""
    _, name, version = min(found)
    return name, version
