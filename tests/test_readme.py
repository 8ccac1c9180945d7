"""The README is a page a newcomer reads in five minutes: what evalrepro is, the two
commands first, the main uses, what is guaranteed, only detected and not prevented, and
where the rest is (docs/). Reference material lives in docs/, where the README links."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
MAX_LINES = 300


def test_the_readme_stays_a_five_minute_page():
    assert len(README.splitlines()) <= MAX_LINES


def test_the_two_commands_come_first():
    first_block = README.split("```")[1]
    assert "./scripts/demo" in first_block and "./scripts/test" in first_block
    assert README.index("```") < README.index("\n## ")


def test_it_says_what_is_guaranteed_only_detected_and_not_prevented():
    section = README.split("## What is guaranteed")[1].split("\n## ")[0]
    for kind in ("**Guaranteed", "**Only detected", "**Not prevented"):
        assert kind in section, kind
    assert "(docs/threat-model.md)" in section


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_of_the_readme_reaches_a_file_and_its_heading():
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / path
        if not file.is_file():
            broken.append(target)
            continue
        if anchor:
            headings = re.findall(r"^#+ (.+)$", file.read_text(), flags=re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    assert broken == []
