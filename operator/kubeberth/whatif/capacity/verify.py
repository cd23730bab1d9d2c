"""simulate given copies 1..K of the template beside the cluster (what capacity's answer must
agree with): how many whole copies it places, on which nodes, the pods they evicted, and the
message of the first copy it does not place. --verify checks an answer with it; with
--allow-preemption it is the answer (preemption's nominations make a copy placed one at a time
land elsewhere than the same copy queued with the others: capacity is then what simulate places)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from ...framework.registry import Registry
from ...scheduler import SCHEDULED
from ..engine import run_simulation
from ..inputs import Origins
from .copies import CopyMaker


@dataclass
class Simulated:
    """simulate's outcome for K copies."""

    copies: int
    placed: int
    per_node: dict[str, int]
    message: str | None  # the first copy not placed: its message (None: all placed)
    victims: list[str] = field(default_factory=list)


def simulate_copies(cluster: list[dict[str, Any]], maker: CopyMaker, count: int, registry: Registry, *,
                    seed: int, tie_break: str, percentage_of_nodes_to_score: int, warn: TextIO,
                    origins: Origins | None = None) -> Simulated:
    """simulate of `cluster` (pending pods left out) and copies 1..count."""
    copies = [o for i in range(1, count + 1) for o in maker.make(i)]
    outcomes, _ = run_simulation(cluster + copies, seed=seed, warn=warn, origins=origins, registry=registry,
                                 percentage_of_nodes_to_score=percentage_of_nodes_to_score, tie_break=tie_break)
    by_key = {o.pod: o for o in outcomes}
    nodes: Counter[str] = Counter()
    victims: list[str] = []
    placed, message = 0, None
    for i in range(1, count + 1):
        outs = [by_key[k] for k in maker.pod_keys(i)]
        if all(o.status == SCHEDULED for o in outs):
            placed += 1
            nodes.update(str(o.node) for o in outs)
            victims += [v for o in outs for v in o.victims]
        elif message is None:
            message = next(o.message for o in outs if o.status != SCHEDULED)
    return Simulated(count, placed, dict(nodes), message, victims)
