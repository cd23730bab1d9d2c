"""Pods that no node of a replay's input could ever hold: a request above the allocatable of
every node (pods counted as one), checked per distinct shape of requests."""

from __future__ import annotations

from ...model import ModelError, Node, Pod
from ...model.resources import Resource
from .workload import Timed


def _amounts(r: Resource) -> dict[str, int]:
    out = {"cpu": r.milli_cpu, "memory": r.memory, "ephemeral-storage": r.ephemeral_storage}
    out.update(r.scalar)
    return out


def never_fits(timed: list[Timed]) -> list[tuple[str, str]]:
    """(pod key, why) for each pod whose requests no node of `timed` has room for even when
    empty; the reason names the resources short on the node that comes closest."""
    nodes = []
    for t in timed:
        if t.kind == "Node":
            try:
                nodes.append(_amounts(Node(t.obj).allocatable))
            except ModelError:
                continue
    verdicts: dict[tuple[tuple[str, int], ...], str] = {}
    out = []
    for t in timed:
        if t.kind != "Pod":
            continue
        try:
            pod = Pod(t.obj)
        except ModelError:
            continue
        want = tuple(sorted((k, v) for k, v in _amounts(pod.requests).items() if v))
        if want not in verdicts:
            verdicts[want] = _verdict(want, nodes)
        if verdicts[want]:
            out.append((pod.key, verdicts[want]))
    return out


def _verdict(want: tuple[tuple[str, int], ...], nodes: list[dict[str, int]]) -> str:
    """"" when some node has room; else the resources missing on the node short of the fewest."""
    best: list[str] | None = None
    for node in nodes:
        short = [name for name, v in want if node.get(name, 0) < v]
        if not short:
            return ""
        if best is None or len(short) < len(best):
            best = short
    if best is None:
        return "there is no node"
    return "requests more " + ", ".join(best) + " than any node has"
