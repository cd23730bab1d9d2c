"""The brute-force check on random clusters (fuzz_cases.py): capacity's N is what simulate places of
N+1 copies (copies 1..N on the nodes capacity says, copy N+1 unschedulable with its diagnosis), and
the per-node path agrees with the exact one. A few cases by default; KUBEBERTH_CAPACITY_CASES=240
runs 240 (the issue's check: at least 200)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from .brute import check, write_yaml
from .fuzz_cases import features_of, fuzz_case, per_node_case

COUNT = int(os.environ.get("KUBEBERTH_CAPACITY_CASES", "16"))
FULL = 240


@pytest.mark.parametrize("number", range(COUNT))
def test_capacity_is_what_simulate_places(tmp_path: Path, number: int) -> None:
    case = fuzz_case(number)
    got = check(case.objects, write_yaml(tmp_path / "pod.yaml", case.template), case.options, case.gates)
    if case.options.allow_preemption:
        assert got.verified is True


def test_the_full_run_covers_every_kind_of_constraint() -> None:
    """The full run's templates exercise each of these (and the per-node path is not the only one)."""
    seen: Counter[str] = Counter()
    for number in range(FULL):
        seen.update(features_of(fuzz_case(number)))
    wanted = {"gang", "pod-affinity", "node-affinity", "spreading", "volumes", "dra", "host-ports", "preemption"}
    assert wanted <= set(seen), f"not covered: {sorted(wanted - set(seen))}"


@pytest.mark.parametrize("number", range(COUNT))
def test_per_node_path_is_exact(tmp_path: Path, number: int) -> None:
    """Templates the per-node path counts: the answer is simulate's, and the exact path's (check)."""
    case = per_node_case(number)
    got = check(case.objects, write_yaml(tmp_path / "pod.yaml", case.template), case.options, case.gates)
    assert got.path == "per-node" or got.not_per_node.startswith("PodTopologySpread"), got.not_per_node
