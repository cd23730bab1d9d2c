"""What the six policies share: reading the ledger for one node or all of them, the GPU
selection rules, and the policy registry the accounting plugin asks for a GPU choice."""

from __future__ import annotations

import random
from typing import Any, ClassVar

import numpy as np

from kubeberth.framework import CycleState, Handle, NodeInfo, PluginError, Pod, ScorePlugin
from kubeberth.framework.vector import NodeView

from .ledger import cpu_left, ledger, model_column, node_cpu_left
from .model import MILLI, GpuRequest, GpuRequestError, gpu_request, node_gpu_model

REQUIRES_API = ">=1.5,<2"
REQUIRES_VECTOR_API = ">=1.0,<2"


class WholeSnapshot:
    """Every row of a snapshot's arrays, as a node view without an index (NodeState.of_nodes)."""

    idx = None

    def __init__(self, arrays: Any) -> None:
        self.arrays = arrays

    def take(self, column: np.ndarray) -> np.ndarray:
        return column


class NodeState:
    """Nodes as the policies see them (one row per node): `free` (nodes, width) milli left per
    GPU (-1: no such GPU), `count` GPUs, `tags` GpuClustering bits, `cpu` milli-CPU left,
    `model` GPU model (object array)."""

    __slots__ = ("count", "cpu", "free", "model", "tags")

    def __init__(self, free: np.ndarray, count: np.ndarray, tags: np.ndarray, cpu: np.ndarray,
                 model: np.ndarray) -> None:
        self.free, self.count, self.tags, self.cpu, self.model = free, count, tags, cpu, model

    @classmethod
    def of_node(cls, handle: Handle, ni: NodeInfo, without: str = "") -> NodeState:
        """One node (leaving out the pod of UID `without`: the one being placed, if it is there)."""
        row = ledger(handle).row(ni, without)
        w = len(row) - 2
        node = ni.node
        cpu = node_cpu_left(ni) + sum(p.requests.milli_cpu for p in ni.pods if without and p.uid == without)
        return cls(row[None, :w], row[None, w], row[None, w + 1], np.array([cpu], dtype=np.int64),
                   np.array([node_gpu_model(node) if node is not None else ""], dtype=object))

    @classmethod
    def of_nodes(cls, handle: Handle, nodes: Any) -> NodeState:
        arrays = nodes.arrays
        table = nodes.take(ledger(handle).table(arrays))
        w = table.shape[1] - 2
        return cls(table[:, :w], table[:, w], table[:, w + 1], nodes.take(cpu_left(arrays)),
                   nodes.take(model_column(arrays)))


def best_fit(free: np.ndarray, req: GpuRequest) -> tuple[int, ...]:
    """The artifact's default rule: a sharing pod takes the GPU with the least milli left that
    fits (lowest index on a tie), whole GPUs the lowest-index free ones. `free`: one node's row."""
    if req.count <= 0:
        return ()
    if req.sharing:
        fits = free >= req.milli
        if not fits.any():
            return ()
        return (int(np.argmin(np.where(fits, free, MILLI + 1))),)
    return lowest_free(free, req)


def lowest_free(free: np.ndarray, req: GpuRequest) -> tuple[int, ...]:
    """The artifact's AllocateExclusiveGpuId: the lowest-index GPUs with nothing in use."""
    idx = np.flatnonzero(free >= MILLI)[:req.count]
    return tuple(int(i) for i in idx) if len(idx) == req.count else ()


def random_fit(free: np.ndarray, req: GpuRequest, rng: random.Random) -> tuple[int, ...]:
    """A sharing pod: a GPU drawn uniformly among those that fit; whole GPUs: the lowest free."""
    if req.count <= 0:
        return ()
    if req.sharing:
        idx = np.flatnonzero(free >= req.milli)
        return (int(idx[rng.randrange(len(idx))]),) if len(idx) else ()
    return lowest_free(free, req)


class GpuPolicy(ScorePlugin):
    """A policy of the paper: a Score plugin with its GPU-selection rule (`choose`), which the
    accounting plugin (OpenGpuShare) asks at Reserve for the node the pod goes to."""

    requires_api: ClassVar[str | None] = REQUIRES_API
    requires_vector_api: ClassVar[str | None] = REQUIRES_VECTOR_API

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.handle: Handle = handle  # type: ignore[assignment]

    def request(self, pod: Pod) -> GpuRequest:
        try:
            return gpu_request(pod)
        except GpuRequestError as exc:
            raise PluginError(str(exc), self.name) from None

    def choose(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> tuple[int, ...]:
        """The GPUs the pod takes on the one node of `nodes` (best fit unless the policy says)."""
        return best_fit(nodes.free[0], req)

    def scores(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> np.ndarray:
        """The raw score of each node (int64)."""
        raise NotImplementedError

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return int(self.scores(state, pod, self.request(pod), NodeState.of_node(self.handle, node_info))[0])

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray | None:
        return self.scores(state, pod, self.request(pod), NodeState.of_nodes(self.handle, nodes))


def go_div(a: np.ndarray, b: int) -> np.ndarray:
    """Go's integer division (truncated toward zero) of an int64 array by a positive int."""
    return np.where(a >= 0, a // b, -((-a) // b))
