"""Storage capacity: the CSIStorageCapacity check of dynamic provisioning (for CSI drivers
whose CSIDriver sets `storageCapacity: true`) and StorageCapacityScoring's score.

Upstream picks the first capacity object the lister returns (in no set order); here they
are taken in (namespace, name) order so that a decision can be repeated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...framework import MAX_NODE_SCORE, LabelSelector, ModelError, quantity_value
from .._scoring_strategies import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION, broken_linear_function
from .._volume_util import Obj, meta, spec

CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"


def _quantity(raw: Any) -> int | None:
    if raw is None:
        return None
    try:
        return quantity_value(raw)
    except ModelError:
        return None


def volume_limit(capacity: Obj) -> int | None:
    """maximumVolumeSize when set (the more precise), else capacity; None when neither."""
    if capacity.get("maximumVolumeSize") is not None:
        return _quantity(capacity["maximumVolumeSize"])
    return _quantity(capacity.get("capacity"))


def capacity_bytes(capacity: Obj) -> int:
    return _quantity(capacity.get("capacity")) or 0


def node_has_access(node_labels: Mapping[str, str], capacity: Obj) -> bool:
    topology = capacity.get("nodeTopology")
    if topology is None:
        return False
    try:
        return LabelSelector.from_dict(topology).matches(node_labels)
    except ModelError:
        return False


def storage_requested(pvc: Obj) -> int | None:
    """The claim's storage request in bytes; None when it asks for none."""
    requests = (spec(pvc).get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        return None
    return _quantity(requests["storage"]) or 0


def has_enough_capacity(objects: Any, provisioner: str, pvc: Obj, class_name: str,
                        node_labels: Mapping[str, str]) -> tuple[bool, Obj | None]:
    """hasEnoughCapacity: (enough room, the CSIStorageCapacity that has it). Only drivers
    that opt in (CSIDriver.spec.storageCapacity) are checked; the rest always fit."""
    size = storage_requested(pvc)
    if size is None:
        return True, None
    driver = objects.get(CSI_DRIVER, provisioner)
    if driver is None or spec(driver).get("storageCapacity") is not True:
        return True, None
    capacities = sorted(objects.list(CSI_STORAGE_CAPACITY),
                        key=lambda c: (str(meta(c).get("namespace") or ""), str(meta(c).get("name") or "")))
    for capacity in capacities:
        limit = volume_limit(capacity)
        if (capacity.get("storageClassName") == class_name and limit is not None and limit >= size
                and node_has_access(node_labels, capacity)):
            return True, capacity
    return False, None


@dataclass
class StorageResource:
    requested: int = 0
    capacity: int = 0


Scorer = Callable[[Mapping[str, StorageResource]], int]


def build_scorer(shape: Sequence[tuple[int, int]]) -> Scorer:
    """The node's score: each class's utilisation (requested / capacity, 100 when over or
    unknown) through the shape (scores 0..10 scaled to 0..100), averaged over classes."""
    raw = broken_linear_function([(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape])

    def class_score(r: StorageResource) -> int:
        if r.capacity == 0 or r.requested > r.capacity:
            return raw(MAX_UTILIZATION)
        return raw(r.requested * MAX_UTILIZATION // r.capacity)

    def score(classes: Mapping[str, StorageResource]) -> int:
        if not classes:
            return 0
        total = sum(class_score(r) for r in classes.values())
        return math.floor(total / len(classes) + 0.5)  # Go's math.Round of a positive number
    return score
