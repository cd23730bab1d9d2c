"""OpenGpuShare: the accounting of GPU shares (the artifact's open_gpu_share.go). Filter keeps
the nodes with the GPUs the pod needs (model, count, milli left per GPU); Reserve takes the GPUs
the enabled policy chooses on the chosen node; PreBind writes them on the pod
(`alibabacloud.com/gpu-index`) through the cluster client; `sample_metrics` reports the
paper's fragmentation and the GPU milli in use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from kubeberth.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    ObjectKind,
    Pod,
    PreBindPlugin,
    ReservePlugin,
    Status,
)
from kubeberth.framework.vector import AllNodes, NodeArrays, NodeView

from .ledger import ledger
from .metrics import FragMeter
from .model import GPU_INDEX, GpuRequest, GpuRequestError, format_gpu_index, gpu_request, model_allowed
from .policy_base import REQUIRES_API, REQUIRES_VECTOR_API, GpuPolicy, NodeState, WholeSnapshot, best_fit
from .typical import WORKLOAD_SUMMARY

POLICIES = ("FGD", "BestFit", "GpuPacking", "GpuClustering", "DotProd", "Random")
CHOSEN_KEY = "kubeberth_gpushare.chosen"
NO_GPU = "node(s) had no GPU"
WRONG_MODEL = "node(s) had no GPU of the requested model"
NO_ROOM = "node(s) had not enough GPU left"


class OpenGpuShare(FilterPlugin, ReservePlugin, PreBindPlugin):
    """The GPU-share accounting plugin (enable it at filter, reserve and preBind)."""

    name = "OpenGpuShare"
    reads: ClassVar[tuple[ObjectKind, ...]] = (WORKLOAD_SUMMARY,)  # sample_metrics' fragmentation
    requires_api: ClassVar[str | None] = REQUIRES_API
    requires_vector_api: ClassVar[str | None] = REQUIRES_VECTOR_API

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.handle: Handle = handle  # type: ignore[assignment]
        self._policy: GpuPolicy | bool | None = False
        self._meter = FragMeter()

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        """GPUs come free when a bound pod goes; a node may come or change its GPUs or model."""
        return [ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL)]

    def policy(self) -> GpuPolicy | None:
        """The profile's policy plugin whose rule chooses the GPUs (None: best fit)."""
        if self._policy is False:
            found = (self.handle.plugin(n) for n in POLICIES)
            self._policy = next((p for p in found if isinstance(p, GpuPolicy)), None)
        return self._policy if isinstance(self._policy, GpuPolicy) else None

    def _choose(self, state: CycleState, pod: Pod, req: GpuRequest, nodes: NodeState) -> tuple[int, ...]:
        policy = self.policy()
        return policy.choose(state, pod, req, nodes) if policy is not None else best_fit(nodes.free[0], req)

    # ---- Filter -------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            req = gpu_request(pod)
        except GpuRequestError as exc:
            return Status.unresolvable(str(exc))
        if req.milli <= 0:
            return None
        nodes = NodeState.of_node(self.handle, node_info)
        if nodes.count[0] <= 0:
            return Status.unresolvable(NO_GPU)
        if not model_allowed(req.models, str(nodes.model[0])):
            return Status.unresolvable(WRONG_MODEL)
        if int((nodes.free[0] >= req.milli).sum()) < req.count:
            return Status.unschedulable(NO_ROOM)
        try:
            gpus = self._choose(state, pod, req, nodes)
        except Exception as exc:  # an explanation's detail never fails the filter
            return Status(Code.SUCCESS, detail=f"GPU choice: {exc}")
        policy = self.policy()
        return Status(Code.SUCCESS, detail=f"GPU {format_gpu_index(gpus)} ({policy.name if policy else 'best fit'})")

    def filter_all(self, state: CycleState, pod: Pod, nodes: NodeView | AllNodes) -> np.ndarray | None:
        try:
            req = gpu_request(pod)
        except GpuRequestError:
            return None
        if req.milli <= 0:
            return np.ones(len(nodes), dtype=bool)
        every = NodeState.of_nodes(self.handle, nodes)
        ok = (every.count > 0) & ((every.free >= req.milli).sum(axis=1) >= req.count)
        if req.models:
            ok &= np.isin(every.model, list(req.models))
        return ok  # type: ignore[no-any-return]

    def filter_statuses(self, state: CycleState, pod: Pod, arrays: NodeArrays,
                        rows: np.ndarray) -> list[Status] | None:
        """`filter`'s rejections of `rows` at once (three shared statuses)."""
        try:
            req = gpu_request(pod)
        except GpuRequestError:
            return None
        every = NodeState.of_nodes(self.handle, WholeSnapshot(arrays))
        no_gpu = every.count[rows] <= 0
        wrong = ~np.isin(every.model[rows], list(req.models)) if req.models else np.zeros(len(rows), dtype=bool)
        table = [Status.unresolvable(NO_GPU), Status.unresolvable(WRONG_MODEL), Status.unschedulable(NO_ROOM)]
        which = np.where(no_gpu, 0, np.where(wrong, 1, 2))
        return [table[k] for k in which.tolist()]

    # ---- Reserve / Unreserve --------------------------------------------------------------
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            req = gpu_request(pod)
        except GpuRequestError as exc:
            return Status.error(str(exc))
        if req.milli <= 0:
            return None
        ni = self.handle.snapshot.get(node_name)
        if ni is None:
            return Status.error(f"node {node_name} is not in the snapshot")
        gpus = self._choose(state, pod, req, NodeState.of_node(self.handle, ni, pod.uid))
        if len(gpus) != req.count:
            return Status.error(f"no GPU of node {node_name} fits pod {pod.key} any more")
        book = ledger(self.handle)
        book.assigned[pod.uid] = (node_name, gpus)
        book.pending[pod.uid] = (node_name, gpus, req.milli, int(pod.requests.milli_cpu))
        state.write(CHOSEN_KEY, gpus)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        book = ledger(self.handle)
        book.assigned.pop(pod.uid, None)
        book.pending.pop(pod.uid, None)
        state.delete(CHOSEN_KEY) if CHOSEN_KEY in state else None

    # ---- PreBind ------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None if pod.uid in ledger(self.handle).assigned else Status.skip()

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        mine = ledger(self.handle).assigned.get(pod.uid)
        client = self.handle.client
        if mine is None or client is None:
            return None
        await client.annotate_pod(pod, {GPU_INDEX: format_gpu_index(mine[1])})
        return None

    # ---- metrics (API 1.5's Plugin.sample_metrics) ---------------------------------------
    def sample_metrics(self) -> Mapping[str, float]:
        """`gpuMilliUsed`, and with a WorkloadSummary the paper's fragmentation: `fragMilli` (the
        GPU milli the typical pods could not use, frag.go) and `fragRatio` (% of the idle milli).
        Read from the latest cycle's snapshot plus the pods reserved since (a pod deleted since
        counts until the next cycle)."""
        return self._meter.sample(self.handle)


