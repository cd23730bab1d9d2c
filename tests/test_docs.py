"""The README's links lead somewhere: its relative links name files of the checkout (the pages
under docs/, HACKING.md, ...) or its own headings. The site's own links are checked by `mkdocs build --strict`
(`make docs`, run by `make test`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LINKS = sorted({target for target in re.findall(r"\]\(([^)\s]+)\)", README) if "://" not in target})


def test_the_readme_links_to_the_docs() -> None:
    assert any(link.startswith("docs/") for link in LINKS)


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("link", LINKS)
def test_a_relative_link_names_a_file(link: str) -> None:
    path, _, anchor = link.partition("#")
    if path:
        assert (ROOT / path).exists(), link
    else:
        headings = re.findall(r"^#+ (.+)$", README, re.M)
        assert anchor in {github_anchor(h) for h in headings}, link
