"""A long run keeps its size, in short (issue 38): a minute of churn on the real API server (pods
created and deleted, some unschedulable, some preempting; nodes added and removed; the
SchedulingProfile edited), then every pod deleted: every per-pod structure the scheduler keeps
(`kubeberth_retained_objects`, operator/retained.py) is back to its baseline, and no metric series
names a pod or a node. The long run is `make bench ARGS="--churn 20"` (benchmarks/churn.py)."""

from __future__ import annotations

import asyncio
import time

import pytest
from benchmarks.churn import PER_POD, Churn, parse_metrics, per_pod_excess
from prometheus_client.parser import text_string_to_metric_families

from .conftest import OperatorProcess, Operators
from .kube import Kube

pytestmark = pytest.mark.cluster

CHURN_SECONDS = 75.0


def snapshot(op: OperatorProcess) -> tuple[dict[str, int], int]:
    return parse_metrics(op.metrics())


def churned_labels(op: OperatorProcess) -> list[str]:
    """Series whose labels name a churned pod or node."""
    out = []
    for family in text_string_to_metric_families(op.metrics()):
        for sample in family.samples:
            if any("churn-" in str(v) and k != "structure" for k, v in sample.labels.items()):
                out.append(f"{sample.name}{sample.labels}")
    return out


async def test_after_a_churn_every_per_pod_structure_is_back_to_its_baseline(
        kube: Kube, operators: Operators) -> None:
    churn = Churn(kube, rate=4.0, lifetime=10.0, nodes=8, node_every=15.0, profile_every=20.0)
    await churn.setup()
    op = operators.start()
    base, base_series = await asyncio.to_thread(snapshot, op)
    for key in ("cache.pods", "scheduler.records", "queue.unschedulable", "nominator.pods", "api_client.bound",
                "event_recorder.rate_buckets", "status_writer.pending"):
        assert key in base, f"{key} not counted: {sorted(base)}"
    assert base["cache.pods"] == 0 and base["scheduler.records"] == 0, base

    await churn.run(CHURN_SECONDS)
    during, during_series = await asyncio.to_thread(snapshot, op)
    summary = churn.summary()
    assert summary["pods_created"] >= 250 and summary["nodes_added"] >= 4 and summary["profile_edits"] >= 3, summary
    assert during["scheduler.records"] > 0 and during["event_recorder.rate_buckets"] > 0, during
    await churn.drain()

    deadline = time.monotonic() + 60.0
    while True:
        end, end_series = await asyncio.to_thread(snapshot, op)
        excess = per_pod_excess(base, end)
        if not excess or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    assert not excess, f"kept for pods that are gone (structure: (baseline, now)): {excess}"
    assert all(k in end for k in PER_POD if k in base)
    assert end["cache.nodes"] == 8, end  # the base nodes; the churned ones are gone
    # Bounded: the series are the label sets of the families (results, plugins, events...), none
    # per pod or node; after the churn no more appear.
    assert not await asyncio.to_thread(churned_labels, op)
    assert end_series <= during_series + 20, (base_series, during_series, end_series)
    assert op.process.alive()
