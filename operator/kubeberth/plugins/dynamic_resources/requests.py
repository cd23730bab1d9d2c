"""A claim's device requests as the allocator reads them (exactly / firstAvailable subrequests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXACT_COUNT = "ExactCount"
ALL = "All"
FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize: Score's scale
RESULTS_MAX = 32  # resourceapi.AllocationResultsMaxSize


class Request:
    """One request (or one subrequest of a firstAvailable list)."""

    __slots__ = ("admin_access", "capacity", "class_name", "count", "mode", "name", "parent", "selectors",
                 "tolerations")

    def __init__(self, name: str, raw: Mapping[str, Any], parent: str = "") -> None:
        self.name = name
        self.parent = parent
        self.class_name = str(raw.get("deviceClassName") or "")
        self.selectors: list[Mapping[str, Any]] = list(raw.get("selectors") or ())
        self.mode = str(raw.get("allocationMode") or EXACT_COUNT)
        self.count = int(raw.get("count") or 1) if self.mode == EXACT_COUNT else 0
        self.admin_access = bool(raw.get("adminAccess"))
        self.tolerations: list[Mapping[str, Any]] = list(raw.get("tolerations") or ())
        self.capacity = raw.get("capacity")

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


def claim_requests(claim: Mapping[str, Any]) -> list[tuple[str, list[Request]]]:
    """(request name, alternatives): one alternative for `exactly`, the subrequests in order for
    `firstAvailable`. A request with neither has no alternative."""
    out: list[tuple[str, list[Request]]] = []
    for raw in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        name = str(raw.get("name") or "")
        if raw.get("exactly") is not None:
            out.append((name, [Request(name, raw["exactly"])]))
        elif raw.get("firstAvailable"):
            out.append((name, [Request(str(s.get("name") or ""), s, parent=name) for s in raw["firstAvailable"]]))
        else:
            out.append((name, []))
    return out
