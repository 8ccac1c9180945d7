"""Which source serves each instance (:func:`resolve_sources`), or one source alone.

An instance's ``instance_repos`` entry if it has one, else its repo's ``repos`` entry; of a
list, the first source (in the order listed) whose history has the base commit. A source
that cannot be read (a remote that cannot be reached) before the commit is found makes the
instance unavailable (an infrastructure error), never silently served by a later source:
which source serves an instance depends on what the sources hold, not on what the network
did today.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter

from evalrepro.errors import UserError
from evalrepro.sample import Sample
from evalrepro.sources.archive import ArchiveRepo, open_archive
from evalrepro.sources.checkout import GitDir, LocalCheckout
from evalrepro.sources.config import RepoSource, SourceConfig
from evalrepro.sources.demo import DemoRepo, open_demo
from evalrepro.sources.git import FULL_ID, RepoError
from evalrepro.sources.local import LocalRepo, open_local
from evalrepro.sources.remote import Remote, RemoteRepo, redacted

_Source = GitDir | Remote
_T = TypeVar("_T")
_R = TypeVar("_R")
#: Sources asked at once (each a git process, or a fetch from a remote).
_ASKED_AT_ONCE = 8


_SOURCE = TypeAdapter(RepoSource)


def open_source(source: RepoSource, cache_dir: Path) -> _Source:
    if isinstance(source, LocalRepo):
        return open_local(source)
    if isinstance(source, ArchiveRepo):
        return open_archive(source, cache_dir)
    if isinstance(source, RemoteRepo):
        return Remote(source.url, cache_dir)
    if isinstance(source, DemoRepo):
        return open_demo(source, cache_dir)
    raise AssertionError(f"unhandled repo source {source!r}")


@dataclass(frozen=True)
class ResolvedSources:
    """Which source serves each instance, and the checkouts their history layers need."""

    #: source key (the checkout's ``source_digest``) -> checkout; one per distinct history
    checkouts: dict[str, LocalCheckout]
    #: instance id -> source key, for each instance whose source is ready
    keys: dict[str, str]
    #: instance id -> why its source could not be read (an infrastructure error)
    unavailable: dict[str, str]

    def checkout(self, instance_id: str) -> LocalCheckout:
        return self.checkouts[self.keys[instance_id]]


def resolve_sources(
    config: SourceConfig,
    samples: Sequence[Sample],
    cache_dir: Path,
    *,
    dataset: str,
    selected: Collection[str] | None = None,
) -> ResolvedSources:
    """Find each instance's base commit in its sources, first source first.

    ``samples`` are all the dataset's instances; ``selected`` the ids to resolve (default
    all). The others still count where they share a source with a selected instance: a
    remote source's history is the ancestry of every base commit it serves, so a
    selection of instances gets the same history layers as the whole dataset.

    Refuses (one line) an instance without sources or whose base commit is in none of
    them, and ``instance_repos`` entries that name no instance.
    """
    cache_dir = Path(cache_dir).absolute()
    known = {sample.instance_id for sample in samples}
    stray = sorted(set(config.instance_repos) - known)
    if stray:
        raise UserError(
            f"dataset '{dataset}': instance_repos names {len(stray)} instance(s) not in the "
            f"dataset: {', '.join(stray[:5])}"
        )
    chosen = [s for s in samples if selected is None or s.instance_id in selected]
    for sample in chosen:
        if not config.sources_for(sample):
            raise UserError(
                f"dataset '{dataset}': no source for repo '{sample.repo}' (instance "
                f"'{sample.instance_id}'): add it under repos: or instance_repos:"
            )
    needed = {source for sample in chosen for source in config.sources_for(sample)}
    chosen_ids = {sample.instance_id for sample in chosen}
    others = [
        s
        for s in samples
        if s.instance_id not in chosen_ids and needed & set(config.sources_for(s))
    ]
    walk = _Walk(config, cache_dir, dataset, strict=chosen_ids)
    walk.run([*chosen, *others])

    nowhere = [sample for sample in chosen if sample.instance_id in walk.nowhere]
    if nowhere:
        first = nowhere[0]
        listed = ", ".join(walk.label(s) for s in config.sources_for(first))
        hint = "" if FULL_ID.fullmatch(first.base_commit) else " (not a full commit id)"
        more = f"; and {len(nowhere) - 1} more instance(s)" if len(nowhere) > 1 else ""
        raise UserError(
            f"dataset '{dataset}': base commit {first.base_commit}{hint} of instance "
            f"'{first.instance_id}' is in none of its sources ({listed}){more}"
        )

    served: dict[RepoSource, set[str]] = {}
    for source, oid in walk.landed.values():
        served.setdefault(source, set()).add(oid)
    checkouts: dict[str, LocalCheckout] = {}
    keys: dict[str, str] = {}
    unavailable = {i: reason for i, reason in walk.failed.items() if i in chosen_ids}
    # Each source serving a chosen instance makes its checkout, all at once (each asks
    # its own repository); they are kept in the order the instances name them.
    needed_sources = list(
        dict.fromkeys(walk.landed[s.instance_id][0] for s in chosen if s.instance_id in walk.landed)
    )

    def checkout(source: RepoSource) -> LocalCheckout | RepoError:
        try:
            return walk.opened(source).checkout(served[source])
        except RepoError as error:
            return error

    by_source: dict[RepoSource, str | Exception] = {}
    for source, made in zip(needed_sources, at_once(checkout, needed_sources), strict=True):
        if isinstance(made, RepoError):
            by_source[source] = made
        else:
            by_source[source] = checkouts.setdefault(made.source_digest, made).source_digest
    for sample in chosen:
        if sample.instance_id not in walk.landed:
            continue
        key = by_source[walk.landed[sample.instance_id][0]]
        if isinstance(key, Exception):
            unavailable[sample.instance_id] = f"{walk.label(sample)}: {key}"
        else:
            keys[sample.instance_id] = key
    return ResolvedSources(checkouts=checkouts, keys=keys, unavailable=unavailable)


class _Walk:
    """Instances walk their source lists in rounds; each round asks each source once for
    all the commits that reached it (one fetch per remote, not one per instance)."""

    def __init__(
        self, config: SourceConfig, cache_dir: Path, dataset: str, strict: Collection[str]
    ) -> None:
        self.config = config
        self.cache_dir = cache_dir
        self.dataset = dataset
        self.strict = strict
        self._opened: dict[RepoSource, _Source | Exception] = {}
        #: instance id -> (source, full commit id)
        self.landed: dict[str, tuple[RepoSource, str]] = {}
        #: instance id -> why a source before its commit could not be read
        self.failed: dict[str, str] = {}
        #: instances whose every source was read, none with the commit
        self.nowhere: set[str] = set()

    def opened(self, source: RepoSource) -> _Source:
        made = self._opened[source]
        assert not isinstance(made, Exception)
        return made

    def label(self, sample_or_source: Sample | RepoSource) -> str:
        if isinstance(sample_or_source, Sample):
            source = self.landed.get(sample_or_source.instance_id, (None,))[0]
            if source is None:
                return "its source"
            return self.label(source)
        made = self._opened.get(sample_or_source)
        if made is not None and not isinstance(made, Exception):
            return made.name
        described = {
            "local": "path",
            "archive": "path",
            "remote": "url",
            "demo": "name",
        }[sample_or_source.kind]
        value = str(getattr(sample_or_source, described))
        if sample_or_source.kind == "remote":
            value = redacted(value)
        return f"{sample_or_source.kind} {value}"

    def _open(self, source: RepoSource, strict: bool) -> _Source | Exception:
        if source not in self._opened:
            try:
                self._opened[source] = open_source(source, self.cache_dir)
            except (UserError, RepoError) as error:
                self._opened[source] = error
        made = self._opened[source]
        if isinstance(made, UserError) and strict:
            # Bad config is refused, but only when an instance being run needs it.
            raise UserError(f"dataset '{self.dataset}': {made}")
        return made

    def run(self, samples: Sequence[Sample]) -> None:
        lists = {s.instance_id: self.config.sources_for(s) for s in samples}
        commit = {s.instance_id: s.base_commit for s in samples}
        position = dict.fromkeys(lists, 0)
        pending = [s.instance_id for s in samples if lists[s.instance_id]]
        while pending:
            rounds: dict[RepoSource, list[str]] = {}
            for instance in pending:
                rounds.setdefault(lists[instance][position[instance]], []).append(instance)
            pending = []

            def ask(item: tuple[RepoSource, list[str]]) -> tuple[dict[str, str], str | None]:
                source, instances = item
                made = self._open(source, strict=any(i in self.strict for i in instances))
                if isinstance(made, Exception):
                    return {}, str(made)
                return made.find({commit[i] for i in instances})

            # Every source of the round is asked at once (each its own repository or
            # remote); the answers are read in the round's order, as is a refusal.
            answers = at_once(ask, list(rounds.items()))
            for (source, instances), (found, error) in zip(rounds.items(), answers, strict=True):
                for instance in instances:
                    if commit[instance] in found:
                        self.landed[instance] = (source, found[commit[instance]])
                    elif error is not None:
                        self.failed[instance] = f"{self.label(source)}: {error}"
                    elif position[instance] + 1 < len(lists[instance]):
                        position[instance] += 1
                        pending.append(instance)
                    else:
                        self.nowhere.add(instance)


def at_once(work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``work`` of each item, in threads (each runs git, or reads a remote), the results
    in the items' order; the first item's exception in that order is raised."""
    if len(items) < 2:
        return [work(item) for item in items]
    with ThreadPoolExecutor(min(_ASKED_AT_ONCE, len(items))) as pool:
        return list(pool.map(work, items))


def materialize(repo: str, source: object, cache_dir: Path) -> LocalCheckout:
    """One source alone, with its branches and tags (no base commits pinned).

    What ``plan.py`` called before :func:`resolve_sources`; it also takes the source
    models ``dataset.py`` defined before they moved to :mod:`evalrepro.sources`.
    """
    if not isinstance(source, LocalRepo | ArchiveRepo | RemoteRepo | DemoRepo):
        source = _SOURCE.validate_python(source.model_dump())  # type: ignore[attr-defined]
    try:
        return open_source(source, Path(cache_dir).absolute()).checkout(())
    except UserError as error:
        raise UserError(f"repo '{repo}': {error}") from None
