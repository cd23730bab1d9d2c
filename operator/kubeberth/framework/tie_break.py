"""How the scheduler chooses among candidates that share the highest score (select_host's ties).

Two rules, chosen once per scheduler (`SchedulerContext.tie_break`):

- `reservoir` (RESERVOIR_RULE, the default everywhere): upstream kube-scheduler's rule. Among the
  tied candidates, in their order, one draw `rng.randrange(count)` names the winner: the outcome
  of upstream's reservoir sampling (each tied node equally likely, a fresh draw per cycle).
- `fixed-order` (FixedNodeOrder): the first tied candidate in a seeded random but fixed order of
  the node names, the same for every cycle, with no draw. This is the rule of the FGD paper's
  simulator (its scheduler takes the smallest name among the tied nodes, after prefixing every
  node's name with its position in a random permutation drawn from the run's seed), and what
  `--protocol artifact` uses. The order is defined by a key per name: the first 8 bytes of
  BLAKE2b over the seed and the name, smallest first (the name itself on the impossible equal
  key). Keys being pseudo-random, the order of any set of nodes is a permutation drawn from the
  seed; a node added later takes the position its key gives it among the others, so the order
  of the nodes present at an instant depends on the seed and their names only, not on the
  order in which they came (a replay's decision at an instant is the one `simulate` makes of
  the cluster at that instant under the same seed). The pod-group path's tied placements are
  ordered the same way, by placement name.

Neither rule reproduces the artifact's own random stream (Go's math/rand): only the kind of rule.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

RESERVOIR = "reservoir"
FIXED_ORDER = "fixed-order"
TIE_BREAKS = (RESERVOIR, FIXED_ORDER)

__all__ = ["FIXED_ORDER", "RESERVOIR", "RESERVOIR_RULE", "TIE_BREAKS", "FixedNodeOrder", "Reservoir",
           "TieBreak", "tie_break_rule"]


class TieBreak:
    """A tie-breaking rule: `pick` chooses one of the tied candidates."""

    name = ""

    def pick(self, tied: Sequence[int], name_of: Callable[[int], str], rng: random.Random) -> int:
        """One of `tied` (candidate indexes, in candidate order; at least two), given each
        candidate's name (`name_of(index)`) and the scheduler's random generator."""
        raise NotImplementedError

    def pick_rows(self, top: np.ndarray, nodes: Sequence[Any]) -> int | None:
        """`pick` over the vectorised path's candidates: `top` indexes into `nodes` (a NodeView
        over the snapshot's arrays); None when the rule has no faster way (then `pick`)."""
        return None


class Reservoir(TieBreak):
    """Upstream's rule: a uniform draw among the tied candidates (one `rng.randrange`)."""

    name = RESERVOIR

    def pick(self, tied: Sequence[int], name_of: Callable[[int], str], rng: random.Random) -> int:
        return tied[rng.randrange(len(tied))]

    def __repr__(self) -> str:
        return "Reservoir()"


class FixedNodeOrder(TieBreak):
    """The first tied candidate in the seeded fixed order of names (see the module's text); the
    scheduler's random generator is not used."""

    name = FIXED_ORDER
    __slots__ = ("_keys", "_row_keys", "_rows_of", "_salt", "seed")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._salt = f"{seed}\0".encode()
        self._keys: dict[str, int] = {}
        # the keys of the snapshot's node names, row by row (the vectorised path), and those names
        self._rows_of: list[str] = []
        self._row_keys = np.zeros(0, dtype=np.uint64)

    def key(self, name: str) -> int:
        """The name's position key: smaller comes first."""
        k = self._keys.get(name)
        if k is None:
            digest = hashlib.blake2b(self._salt + name.encode(), digest_size=8).digest()
            k = self._keys[name] = int.from_bytes(digest, "big")
        return k

    def order(self, names: Sequence[str]) -> list[str]:
        """`names` in the fixed order."""
        return sorted(names, key=lambda n: (self.key(n), n))

    def pick(self, tied: Sequence[int], name_of: Callable[[int], str], rng: random.Random) -> int:
        best = tied[0]
        best_name = name_of(best)
        best_key = self.key(best_name)
        for i in tied[1:]:
            name = name_of(i)
            k = self.key(name)
            if k < best_key or (k == best_key and name < best_name):
                best, best_name, best_key = i, name, k
        return best

    def pick_rows(self, top: np.ndarray, nodes: Sequence[Any]) -> int | None:
        arrays = getattr(nodes, "arrays", None)
        if arrays is None:
            return None
        names: list[str] = arrays.names
        if self._rows_of != names:  # the snapshot's node list changed: the keys of its rows again
            self._rows_of = list(names)
            self._row_keys = np.fromiter((self.key(n) for n in names), dtype=np.uint64, count=len(names))
        idx = getattr(nodes, "idx", None)
        rows = top if idx is None else idx[top]
        return int(top[int(np.argmin(self._row_keys[rows]))])

    def __repr__(self) -> str:
        return f"FixedNodeOrder(seed={self.seed})"


RESERVOIR_RULE = Reservoir()


def tie_break_rule(name: str, seed: int) -> TieBreak:
    """The rule called `name` (one of TIE_BREAKS) for a scheduler seeded with `seed`; ValueError
    for another name."""
    if name == RESERVOIR:
        return RESERVOIR_RULE
    if name == FIXED_ORDER:
        return FixedNodeOrder(seed)
    raise ValueError(f"unknown tie-break rule {name!r} (one of: {', '.join(TIE_BREAKS)})")
