"""argparse value types shared by the command line's verbs and the operator's flags."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(low: int) -> Callable[[str], int]:
    """An argparse `type`: a whole number of at least `low`; anything else is refused with the
    reason ("must be a whole number, not 'x'", "must be at least 1, not 0")."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {n}")
        return n

    parse.__name__ = f"whole number >= {low}"
    return parse


positive = whole_number(1)
"""A whole number of at least 1."""
