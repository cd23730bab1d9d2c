"""What the pods nominated to a node ask for, as the two-pass filter adds them for a pod."""

from __future__ import annotations

from ..framework.context import Nominator, nominated_pods_added_for
from ..model import Pod


def nominated_requests(nominator: Nominator | None, pod: Pod, node_name: str) -> tuple[int, int, int, int]:
    """(milli-CPU, memory, ephemeral storage, pods) of the pods nominated to `node_name` that
    run_filter_with_nominated_pods would add for `pod`: equal or higher priority, not `pod`."""
    cpu = mem = eph = count = 0
    for nom in nominated_pods_added_for(nominator, pod, node_name):
        r = nom.requests
        cpu += r.milli_cpu
        mem += r.memory
        eph += r.ephemeral_storage
        count += 1
    return cpu, mem, eph, count
