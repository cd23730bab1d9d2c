"""MkDocs hook (mkdocs.yml `hooks:`): lists and tables that follow a paragraph line, as GitHub reads them.

GitHub's Markdown lets a list or a table start right under a paragraph line; Python-Markdown, which
MkDocs uses, wants a blank line first and otherwise prints the items as running text. The files
the site includes whole (benchmarks/PROFILE.md, HACKING.md, ...) are written for GitHub, so every
page gets that blank line before it is converted: after pymdownx.snippets has included the files
(priority 32), before the fences are taken out (pymdownx.superfences, 25). Code stays untouched.
"""

from __future__ import annotations

import re
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

FENCE = re.compile(r"^\s*(```|~~~)")
STARTS_BLOCK = re.compile(r"^(?:[-*+] |1[.)] |\|)")  # a list item (an ordered one from 1) or a table row


def blank_lines_before_blocks(lines: list[str]) -> list[str]:
    out: list[str] = []
    fence = ""
    for line in lines:
        marker = FENCE.match(line)
        if fence:
            if marker and marker.group(1) == fence:
                fence = ""
        elif marker:
            fence = marker.group(1)
        elif STARTS_BLOCK.match(line) and out:
            prev = out[-1]
            # A paragraph line at the margin, not an item or a row of the same block.
            if prev.strip() and not prev[0].isspace() and not STARTS_BLOCK.match(prev) \
                    and not re.match(r"^(?:\d+[.)] |#)", prev):
                out.append("")
        out.append(line)
    return out


class _Preprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return blank_lines_before_blocks(lines)


class GfmLists(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_Preprocessor(md), "kubeberth_gfm_lists", 31)


def on_config(config: Any) -> Any:
    config.markdown_extensions.append(GfmLists())
    return config
