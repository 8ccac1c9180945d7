"""Runs read back from the team database and the object store, as run folders: each is
materialized from its stored manifest into the cache (once: the manifest names every
file by digest, so a folder made from it is that run), then read by the ordinary code
path of ``report`` and ``compare``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def published_runs(
    db: str, store: str | None, references: list[str], cache_dir: Path
) -> Iterator[list[Path]]:
    """The run folders of ``references`` (run ids, or their first characters)."""
    from evalrepro.database import require_team_extra

    require_team_extra()
    from evalrepro.database.engine import open_database
    from evalrepro.database.queries import find_run
    from evalrepro.database.url import database_argument
    from evalrepro.store.objects import ObjectStore

    engine, url = open_database(database_argument(db), create=False)
    try:
        rows = [find_run(engine, url, reference) for reference in references]
    finally:
        engine.dispose()
    folders = []
    for row in rows:
        # The recorded store URL has no credentials: they come from the environment.
        objects = ObjectStore.open(store or row["store_url"])
        folders.append(materialized(objects, row["run_id"], row["manifest_digest"], cache_dir))
    yield folders


def materialized(store, run_id: str, manifest_digest: str, cache_dir: Path) -> Path:
    """The run folder of ``manifest_digest`` in the cache, made once: materialize_run
    builds it beside and moves it in whole, so a folder there is the complete run."""
    from evalrepro.store.runs import materialize_run

    hexdigest = manifest_digest.removeprefix("sha256:")
    folder = cache_dir / "published" / f"{run_id}-{hexdigest[:16]}"
    if folder.is_dir() and any(folder.iterdir()):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    return materialize_run(store, manifest_digest, folder)
