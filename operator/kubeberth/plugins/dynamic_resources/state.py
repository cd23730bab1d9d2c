"""DynamicResources' CycleState (upstream's stateData): what PreFilter found of the pod's claims,
written under STATE_KEY and read by every later extension point (plugin.py, binding.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...framework.vector import AllNodes, NodeView
from ...model.selectors import NodeSelector
from . import counts
from .allocator import Allocator
from .requests import Request

NAME = "DynamicResources"
STATE_KEY = NAME
STATE_NOT_FOUND = "not found"


class State:
    __slots__ = ("allocator", "available_on", "claims", "count_rejects", "extended", "extended_index",
                 "invalid_rows", "lazy_nodes", "node_allocations", "node_extended", "pending", "plain",
                 "prioritized", "to_allocate", "unavailable")

    def __init__(self) -> None:
        self.claims: list[Mapping[str, Any]] = []
        self.available_on: list[NodeSelector | None] = []
        self.to_allocate: list[int] = []
        self.allocator: Allocator | None = None
        # node -> claim index -> allocation found by Filter
        self.node_allocations: dict[str, dict[int, dict[str, Any]]] = {}
        # Extended resources backed by DRA: the pod's requests of them, the index of the claim to be
        # made for them (while not made yet), and per node that claim with its requests and mappings.
        self.extended: dict[str, int] = {}
        self.extended_index: int | None = None
        self.node_extended: dict[str, tuple[dict[str, Any], list[dict[str, str]]]] = {}
        self.pending: dict[int, dict[str, Any]] = {}  # claim index -> allocation, from Reserve
        self.unavailable: set[int] = set()
        self.prioritized: dict[int, list[tuple[str, list[Request]]]] = {}  # claims with firstAvailable
        # filter_all: the pod's requests by predicate (None: not plain, or not looked at yet) and,
        # when it decided nodes without Filter, the nodes by name (Reserve allocates on its node).
        self.plain: list[tuple[counts.Predicate, int]] | None = None
        self.lazy_nodes: tuple[NodeView | AllNodes, Mapping[str, int]] | None = None
        # Per row: filter_all rejected it on the counts alone (its Filter status is known), and
        # whether it has an invalid pool (which that status names).
        self.count_rejects: np.ndarray | None = None
        self.invalid_rows: np.ndarray | None = None

    def clone(self) -> State:
        return self


# The state of every pod without claims or DRA-backed extended resources (most pods): nothing in it
# changes (each point returns at once on its empty claims), so one instance serves them all.
NO_CLAIMS = State()
