"""Small clusters for the explanation tests."""

from __future__ import annotations

from typing import Any

from tests.builders import node_dict, pod_dict

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def with_time(obj: dict[str, Any], second: int) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{second:02d}Z"
    return obj


def small_cluster() -> list[dict[str, Any]]:
    """tainted: tainted and small; small: too little cpu; big-1, big-2: fit, the same."""
    return [
        node_dict("tainted", cpu="1", taints=[TAINT]),
        node_dict("small", cpu="1"),
        node_dict("big-1", cpu="8"),
        node_dict("big-2", cpu="8"),
        with_time(pod_dict("web", cpu="2"), 1),
    ]


def many_nodes(n: int, cpu: str = "4") -> list[dict[str, Any]]:
    return [node_dict(f"n{i:03d}", cpu=cpu) for i in range(n)]
