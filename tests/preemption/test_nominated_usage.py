"""The per-row sums of nominated pods (preemption/nominated.nominated_usage), kept across cycles
from the scheduler nominator's change log, match nominated_requests node by node.

Random sequences of nominations, updates (to another node, to none) and deletions, on
nominators of the scheduler's kind, with node lists reordered now and then; after each step
every row of the per-row sums is compared with the per-node reference for a probe pod of a
random priority, nominated itself or not.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeberth.cache.node_arrays import NodeArrays
from kubeberth.model import Pod
from kubeberth.preemption.nominated import nominated_requests, nominated_rows, nominated_usage
from kubeberth.queue.nominator import Nominator
from kubeberth.scheduler.nominations import LoggedNominator
from tests.builders import node_info, pod_dict

SCALE = int(os.environ.get("KUBEBERTH_VECTOR_EXAMPLES", "1"))
NODES = ["n0", "n1", "n2", "n3", "gone"]  # "gone" is nominated to but not in the node arrays
PRIORITIES = [0, 5, 10, 10, 100]


def _pod(i: int, version: int, priority: int, cpu: int) -> Pod:
    return Pod(pod_dict(f"p{i}", cpu=f"{cpu}m", memory=f"{cpu}Mi", priority=priority,
                        labels={"v": str(version)}))


steps = st.lists(st.tuples(
    st.sampled_from(["add", "add", "update", "delete", "reorder", "probe"]),
    st.integers(0, 5),                      # which pod
    st.sampled_from(["", *NODES]),          # where to
    st.sampled_from(PRIORITIES),            # its priority (or the probe's)
    st.integers(0, 3),                      # its cpu, in 100m
), max_size=40)


@settings(max_examples=80 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.integers(0, 3), st.sampled_from([3, 4096]))
def test_per_row_sums_follow_every_change(ops: list[tuple[str, int, str, int, int]], probe_at: int,
                                          log_limit: int) -> None:
    infos = [node_info(name) for name in NODES[:4]]
    arrays = NodeArrays(infos)
    others = LoggedNominator()  # a second scheduler's nominator: the cache must not mix them up
    nominator = LoggedNominator()
    nominator.log_limit = log_limit  # a short log starts new epochs often
    pods: dict[int, Pod] = {}
    for step, (op, i, node, priority, cpu) in enumerate(ops):
        old = pods.get(i)
        if op == "add":
            pods[i] = _pod(i, step, old.priority if old else priority, 100 * cpu)
            nominator.add_nominated_pod(pods[i], node)
            others.add_nominated_pod(_pod(i, step, 100, 300), "n0")
        elif op == "update" and old is not None:
            raw = pod_dict(f"p{i}", cpu=f"{100 * cpu}m", priority=old.priority, labels={"v": str(step)})
            raw["status"]["nominatedNodeName"] = node
            pods[i] = Pod(raw)
            nominator.update_nominated_pod(old, pods[i])
        elif op == "delete" and old is not None:
            nominator.delete_nominated_pod_if_exists(old)
        elif op == "reorder":
            infos = infos[1:] + infos[:1]
            arrays.rebuild(infos)
        probe = pods.get(probe_at) if op != "probe" else _pod(99, step, priority, 100)
        if probe is None:
            probe = _pod(98, step, priority, 100)
        _check(nominator, probe, arrays)
        if op == "probe":  # now and then (each switch makes the cache start over)
            _check(others, probe, arrays)


def _check(nominator: Any, probe: Pod, arrays: NodeArrays) -> None:
    usage = nominated_usage(nominator, probe, arrays)
    assert usage is not None
    for row, name in enumerate(arrays.names):
        assert tuple(usage[row].tolist()) == nominated_requests(nominator, probe, name), (name, probe.priority)
    rows, sums = nominated_rows(nominator, probe, arrays.pos)
    assert sorted(zip(rows, sums)) == [(r, tuple(usage[r].tolist())) for r in range(arrays.n) if usage[r][3]]


def test_a_nominator_without_a_log_is_asked_node_by_node() -> None:
    arrays = NodeArrays([node_info("n0")])
    assert nominated_usage(Nominator(), _pod(0, 0, 10, 100), arrays) is None
    assert nominated_usage(None, _pod(0, 0, 10, 100), arrays) is None
