"""A protocol (protocol.py's `ReplayProtocol`, `--protocol NAME`) joined to replay's engine
through `ReplayOptions`' hooks; the engine itself knows nothing of GPUs.

`attach(protocol, data, options, tie_break)`:
- the workload: `protocol.workload(input pods, capacity)`, capacity the sum of the input
  nodes' allocatable `alibabacloud.com/gpu-milli`; the i-th pod built arrives at instant i
  (its `kubeberth.io/arrival-time`) and stays; the other timed objects (nodes...) are kept as
  they are;
- the WorkloadSummary counts `protocol.summary_source(input pods, workload)`;
- pods unschedulable after their attempt are dropped when the protocol says so;
- the scheduler: the tie-break rule `tie_break` (framework/tie_break.py) seeded with the
  replay's seed (the caller passes the protocol's, `fixed-order`, unless the user chose
  another), and the protocol's percentageOfNodesToScore (100) as the scheduler-wide value
  unless the options carry one the user gave (a profile's own value wins over both, as
  upstream's precedence says);
- after every sample, `protocol.observe(GpuSample(allocated, arrived, capacity))` from the
  series' `allocated.`, `arrivedRequests.` and `capacity.` columns of the GPU resource;
- at the end, the keys `protocol.finish` writes (`gpuAllocation`) are added to the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...framework.tie_break import tie_break_rule
from ...model import ModelError, Node
from ...scheduler import Scheduler
from ..inputs import InputError
from .engine import ReplayOptions, Sample
from .protocol import GPU_MILLI, ArtifactProtocol, GpuSample, ReplayProtocol
from .workload import ReplayInput, Timed

PROTOCOLS = ("artifact",)
DEFAULT_TUNE = 1.3  # the paper's curves go to 130% of the GPU capacity arrived


def make_protocol(name: str, tune: float, seed: int) -> ReplayProtocol:
    """The protocol called `name` (one of PROTOCOLS)."""
    if name == "artifact":
        return ArtifactProtocol(tune, seed)
    raise InputError(f"--protocol: unknown protocol {name!r} (one of: {', '.join(PROTOCOLS)})")


def gpu_capacity(data: ReplayInput) -> int:
    """The GPU milli of the input's nodes (allocatable `alibabacloud.com/gpu-milli`, summed)."""
    total = 0
    for t in data.timed:
        if t.kind == "Node":
            try:
                total += Node(t.obj).allocatable.scalar.get(GPU_MILLI, 0)
            except ModelError:
                continue
    return total


def attach(protocol: ReplayProtocol, data: ReplayInput, options: ReplayOptions, tie_break: str) -> ReplayInput:
    """The workload `protocol` replays instead of `data`, with `options`' hooks set (module text).
    InputError when the input has no GPU to measure or the protocol refuses it."""
    capacity = gpu_capacity(data)
    if capacity <= 0:
        raise InputError(f"--protocol {protocol.name}: the nodes have no {GPU_MILLI} (no GPU to allocate)")
    pods = [t.obj for t in data.pods]
    try:
        built = protocol.workload(pods, capacity)
    except ValueError as exc:
        raise InputError(f"--protocol {protocol.name}: {exc}") from None
    others = [t for t in data.timed if t.kind != "Pod"]
    timed = [*others, *(Timed(pod, float(i)) for i, pod in enumerate(built))]
    options.summary_pods = list(protocol.summary_source(pods, built))
    options.drop_unschedulable = protocol.drop_unschedulable
    if protocol.percentage_of_nodes_to_score is not None and not options.percentage_of_nodes_to_score:
        options.percentage_of_nodes_to_score = protocol.percentage_of_nodes_to_score
    percentage = options.percentage_of_nodes_to_score
    rule = tie_break_rule(tie_break, options.seed)

    def configure(sched: Scheduler) -> None:
        sched.ctx.tie_break = rule
        sched.ctx.percentage_of_nodes_to_score = percentage

    allocated, arrived, cap = (f"{c}.{GPU_MILLI}" for c in ("allocated", "arrivedRequests", "capacity"))

    def on_sample(sample: Sample) -> None:
        v = sample.values
        protocol.observe(GpuSample(float(v.get(allocated) or 0), float(v.get(arrived) or 0),
                                   float(v.get(cap) or capacity)))

    def extend(result: Mapping[str, Any]) -> Mapping[str, Any]:
        added: dict[str, Any] = {}
        protocol.finish(added)
        return added

    options.configure, options.on_sample, options.extend_result = configure, on_sample, extend
    return ReplayInput(static=data.static, timed=timed, origins=data.origins, problems=data.problems)
