"""``demo`` sources: one of evalrepro's built-in demo repos, built here into the cache."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro import atomic
from evalrepro.errors import UserError
from evalrepro.sources.checkout import GitDir


class DemoRepo(BaseModel):
    """One of evalrepro's built-in demo repos, whose history is built at run time."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["demo"] = "demo"
    #: The demo repo's name (`calc`, `ledger`, `textkit`).
    name: str


def open_demo(source: DemoRepo, cache_dir: Path) -> GitDir:
    """The demo repo, built once per state of its sources and found again by their digest
    (building it takes dozens of git processes; its commits are the same every time)."""
    from evalrepro.sources.demo_repos import build_repo, polyglot_names, repo_names, source_digest

    known_names = [*repo_names(), *polyglot_names()]
    if source.name not in known_names:
        raise UserError(f"no demo repo '{source.name}' (known: {', '.join(known_names)})")
    parent = cache_dir / "repos"
    parent.mkdir(parents=True, exist_ok=True)
    # ``polyglot/roman`` -> ``polyglot-roman``: one folder of the cache per repo.
    flat = source.name.replace("/", "-")
    known = parent / f".demo-{flat}-{source_digest(source.name)[7:23]}.built"
    try:
        name = known.read_text()
    except OSError:
        name = ""
    if re.fullmatch(f"demo-{re.escape(flat)}-[0-9a-f]{{16}}", name) and (
        (parent / name / ".git").is_dir()
    ):
        return GitDir(f"demo {source.name}", parent / name / ".git")
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".demo-{flat}-"))
    try:
        commits = build_repo(source.name, staging / "repo")
        dest = parent / f"demo-{flat}-{commits[list(commits)[-1]][:16]}"
        if not dest.exists():
            try:
                os.replace(staging / "repo", dest)
            except OSError:
                if not dest.exists():  # else another process put the same repo there
                    raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    atomic.write_text(known, dest.name)
    return GitDir(f"demo {source.name}", dest / ".git")
