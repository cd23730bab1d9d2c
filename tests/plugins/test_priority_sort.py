"""PrioritySort: higher priority first, then the earlier queue timestamp."""

from __future__ import annotations

import pytest

from kubeberth.framework import QueuedPodInfo
from kubeberth.plugins.priority_sort import PrioritySort
from tests.builders import make_pod

T0 = 1_700_000_000.0

# (id, (priority, timestamp) of p1, of p2, p1 sorts before p2)
CASES = [
    ("p1 higher priority", (100, T0), (50, T0), True),
    ("p2 higher priority", (50, T0), (100, T0), False),
    ("equal priority, p1 added earlier", (100, T0), (100, T0 + 1), True),
    ("equal priority, p2 added earlier", (100, T0 + 1), (100, T0), False),
    ("equal priority and timestamp", (100, T0), (100, T0), False),
    ("higher priority wins over an earlier timestamp", (10, T0 + 5), (1, T0), True),
    ("no priority counts as zero", (None, T0), (-1, T0 - 5), True),
    ("negative priority", (-5, T0), (None, T0 + 1), False),
]


@pytest.mark.parametrize(("p1", "p2", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_less(p1: tuple[int | None, float], p2: tuple[int | None, float], want: bool) -> None:
    a = QueuedPodInfo(make_pod("p1", priority=p1[0]), timestamp=p1[1])
    b = QueuedPodInfo(make_pod("p2", priority=p2[0]), timestamp=p2[1])
    assert PrioritySort(None, None).less(a, b) is want
