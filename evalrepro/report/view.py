"""The trial viewer: a run as a static site that needs no server (``evalrepro view``).

``RUN/view/`` (or ``--output DIR``) holds ``index.html`` (the run's headline numbers, its
provenance and every planned trial, filtered by outcome and reason with radio buttons
and CSS alone: without CSS support every row shows) and one page per trial,
``trials/<label>.html``: the patch as a diff, the eval script (the attempt's
``program.json``) and the test patch, the test log with the graded region marked, each
FAIL_TO_PASS / PASS_TO_PASS test passed or failed, the parsed status map, the
observation, the score, every attempt, the image the trial ran in (the lockfile's locked
layers, by the trial's image key; a run of evalrepro 0.2 kept it as the attempt's
``image.json``, shown as it is), the timing, and links to the index and to the previous
and next trial. Links are relative and no page names an absolute path, so the site reads
the same from a copied folder or an unpacked bundle.

The pages are drawn from records alone: the run's ``RunReport`` and one ``TrialView`` per
trial (``evalrepro.records.view``), which ``evalrepro.run.trial_view`` builds where the
trial's evidence is read, with its bounds:

* a file is opened only at a path from the trial's ``result.json`` that stays inside the
  trial's folder (no absolute path, no ``..``), walking down from the run directory
  without following a symbolic link at any step, and only if it is a regular file;
* a log or patch is never read whole: the first and last KiB (and, for a log, the graded
  region's start and end, with some context) are shown, each cut said with its size;
  a window of very many short lines is cut to its first and last lines;
* lists (tests, status map) are cut at ``MAX_LISTED`` entries, with a count of the rest.

Here, what is shown is escaped, and control characters, bidi overrides and invalid UTF-8
are shown as visible marks (``evalrepro.text.visible``): :func:`render_site` reads no
file of a trial, parses nothing and words no verdict (``tests/test_view_record.py``).

The site is written file by file atomically; pages an earlier ``view`` wrote into the
same folder that no longer belong to a trial are removed (``view.json`` lists them).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalrepro import atomic
from evalrepro.errors import UserError
from evalrepro.records.base import read_record
from evalrepro.records.compare import run_label
from evalrepro.records.report import RunReport, TrialRow
from evalrepro.records.trial import TrialResult
from evalrepro.records.view import TrialView, ViewManifest
from evalrepro.report.html import (
    OUTCOMES,
    href,
    relative_problems,
    render_page,
    run_sections,
    trial_page,
)
from evalrepro.report.run_report import build_run_report
from evalrepro.run.trial_view import trial_views
from evalrepro.text import clip

if TYPE_CHECKING:
    from evalrepro.records.lockfile import Lockfile

VIEW_DIR = "view"
MANIFEST = "view.json"


@dataclass(frozen=True)
class Nav:
    """Where a trial's page sits in the site: its neighbours, the index, its problems."""

    number: int
    total: int
    index: str
    previous: tuple[str, TrialRow] | None
    next: tuple[str, TrialRow] | None
    #: The run's evidence problems that name this trial's folder.
    problems: list[str]


# --- the site --------------------------------------------------------------------------


@dataclass(frozen=True)
class ViewSite:
    root: Path
    #: Trial pages written (one per planned trial).
    pages: int
    #: Pages of an earlier view that no longer belong to a trial, removed.
    removed: int

    @property
    def index(self) -> Path:
        return self.root / "index.html"


def _checked_output(run_dir: Path, output: Path) -> Path:
    output = Path(os.path.abspath(output))
    for path in (output, output / "trials"):
        if path.is_symlink():
            raise UserError(f"--output {path}: a symbolic link; refusing to write through it")
    resolved = output.resolve()
    trials = run_dir / "trials"
    if resolved == run_dir or resolved == trials or trials in resolved.parents:
        raise UserError(
            f"--output {output}: the viewer would write among the run's own records; "
            "choose another folder (default: RUN/view)"
        )
    if resolved.exists() and not resolved.is_dir():
        raise UserError(f"--output {output}: exists and is not a directory")
    return resolved


def _previous_pages(root: Path) -> list[str]:
    try:
        manifest = read_record(root / MANIFEST, ViewManifest)
    except UserError:
        return []
    # Only plain page names inside trials/: the manifest is a file anyone could edit.
    return [p for p in manifest.pages if re.fullmatch(r"[^/\\\0]+\.html", p) and p[0] != "."]


def _names_folder(problem: str, label: str) -> bool:
    return re.search(rf"trials/{re.escape(label)}(?:[/: ]|$)", problem) is not None


def _filter_css(reasons: list[str]) -> str:
    """The filters' rules: a checked radio button hides the rows of every other value."""
    rules = [
        f"#fo-{outcome}:checked ~ table tbody tr:not(.o-{outcome}) {{ display: none; }}"
        for outcome in OUTCOMES
    ]
    rules += [
        f"#fr-{index}:checked ~ table tbody tr:not(.r-{index}) {{ display: none; }}"
        for index in range(len(reasons))
    ]
    return "\n" + "\n".join(rules) + "\n"


def render_site(run_dir: Path, report: RunReport, views: Sequence[TrialView]) -> dict[str, str]:
    """The site's pages by their path in the site (``index.html``, ``trials/<label>.html``),
    drawn from ``report`` and the view of each of its trials (in its order) alone;
    ``run_dir``: the run's directory, left out of the problems a page shows."""
    rows = report.trials
    if [view.trial_id for view in views] != [row.trial_id for row in rows]:
        raise ValueError("the trial views are not the report's trials, in its order")
    names = [trial_page(row.folder) for row in rows]
    problems = relative_problems(report.evidence_problems, run_dir)
    title = run_label(report.provenance.experiment, report.provenance.target_id)

    counts = Counter(row.reason for row in rows)
    reasons = [reason for reason, _ in counts.most_common()]
    reason_index = {reason: index for index, reason in enumerate(reasons)}
    outcomes = Counter(row.outcome for row in rows)

    pages = {
        "index.html": render_page(
            "view_index.html",
            title=f"Trials of {title}",
            extra_css=_filter_css(reasons),
            report=report,
            outcome_counts=[(o, outcomes[o]) for o in OUTCOMES],
            reasons=[(reason_index[r], r, counts[r]) for r in reasons],
            trial_href=lambda row: href(trial_page(row.folder)),
            row_classes=lambda row: f"o-{row.outcome} r-{reason_index[row.reason]}",
            **run_sections(report) | {"problems": problems},
        )
    }
    for number, (row, name, view) in enumerate(zip(rows, names, views, strict=True)):
        own = row.folder.removeprefix("trials/")
        nav = Nav(
            number=number + 1,
            total=len(rows),
            index="../index.html",
            previous=(href(names[number - 1].removeprefix("trials/")), rows[number - 1])
            if number
            else None,
            next=(href(names[number + 1].removeprefix("trials/")), rows[number + 1])
            if number + 1 < len(rows)
            else None,
            problems=[p for p in problems if _names_folder(p, own)],
        )
        pages[name] = render_page(
            "view_trial.html",
            title=f"{clip(row.instance_id, 150)} (sample {row.sample_index})",
            run_title=title,
            row=row,
            nav=nav,
            v=view,
        )
    return pages


def write_view(
    run_dir: Path,
    report: RunReport,
    results: Mapping[str, TrialResult],
    output: Path | None = None,
    lockfile: Lockfile | None = None,
) -> ViewSite:
    """The viewer site of a run whose ``report`` was built from ``results``; ``lockfile``:
    the run's (read from the run directory when not given), for each trial's image. Each
    trial's view is built where its evidence is read (``evalrepro.run.trial_view``);
    the pages are drawn from those records (:func:`render_site`)."""
    run_dir = run_dir.resolve()
    root = _checked_output(run_dir, output if output is not None else run_dir / VIEW_DIR)
    views = trial_views(run_dir, report.trials, results, lockfile)
    pages = render_site(run_dir, report, views)

    # fsync dominates writing many small files; it runs outside the GIL, so in parallel.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda item: atomic.write_text(root / item[0], item[1]), pages.items()))

    current = {name.removeprefix("trials/") for name in pages if name != "index.html"}
    removed = 0
    for stale in _previous_pages(root):
        if stale not in current:
            path = root / "trials" / stale
            if path.is_file() or path.is_symlink():
                path.unlink()
                removed += 1
    atomic.write_text(
        root / MANIFEST, ViewManifest(pages=sorted(current)).model_dump_json(indent=2) + "\n"
    )
    return ViewSite(root=root, pages=len(report.trials), removed=removed)


def view_run(
    run_dir: Path,
    output: Path | None = None,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> ViewSite:
    """``evalrepro view RUN``: the run's report and its viewer site."""
    from evalrepro.run.rundir import RunDirectory

    directory, lockfile = RunDirectory.open(run_dir)
    survey = directory.survey(lockfile)
    report = build_run_report(
        directory.path,
        lockfile,
        survey.results,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        evidence_problems=survey.messages(),
    )
    return write_view(directory.path, report, survey.results, output, lockfile)


def relative_link(target: Path, page: Path) -> str:
    """A link from a page to be written at ``page`` to ``target``, relative, encoded."""
    relative = os.path.relpath(target.resolve(), page.resolve().parent)
    return href(*Path(relative).as_posix().split("/"))
