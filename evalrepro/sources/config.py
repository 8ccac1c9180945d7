"""A dataset's sources: ``repos:`` per repo, ``instance_repos:`` per instance id.

Each entry is one source, a model selected by its ``kind`` (:mod:`~evalrepro.sources.local`,
:mod:`~evalrepro.sources.archive`, :mod:`~evalrepro.sources.remote`,
:mod:`~evalrepro.sources.demo`), or a list of them searched in order.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from evalrepro.sample import Sample
from evalrepro.sources.archive import ArchiveRepo
from evalrepro.sources.demo import DemoRepo
from evalrepro.sources.local import LocalRepo
from evalrepro.sources.remote import RemoteRepo

RepoSource = Annotated[LocalRepo | ArchiveRepo | RemoteRepo | DemoRepo, Field(discriminator="kind")]


def _shape(value: object) -> str:
    return "sources" if isinstance(value, list) else "source"


#: One source, or several searched in order (the first whose history has the commit).
#: The tag (``source`` / ``sources``) keeps a config error to the shape that was meant.
Sources = Annotated[
    Annotated[RepoSource, Tag("source")]
    | Annotated[Annotated[list[RepoSource], Field(min_length=1)], Tag("sources")],
    Discriminator(_shape),
]


class SourceConfig(BaseModel):
    """Where a dataset's base commits are: per repo, and per instance id (which wins)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: Where each repo's history is, by repo name (the instances' `repo`): one source, or
    #: a list of them searched in order (the first whose history has the commit serves).
    repos: dict[str, Sources] = Field(default_factory=dict)
    #: Where an instance's history is, by instance id, instead of its repo's: one source
    #: or a list, as under `repos`.
    instance_repos: dict[str, Sources] = Field(default_factory=dict)

    def sources_for(self, sample: Sample) -> tuple[RepoSource, ...]:
        """The sources searched for ``sample``'s base commit, in order (empty: none)."""
        found = self.instance_repos.get(sample.instance_id, self.repos.get(sample.repo, []))
        return tuple(found) if isinstance(found, list) else (found,)
