"""What replay gives plugins: the WorkloadSummary published before the first arrival (read
through a declared kind), and the time series' columns of `Plugin.sample_metrics` (API 1.5)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from kubeberth.framework import CycleState, FilterPlugin, NodeInfo, ObjectKind, Pod, Status
from kubeberth.plugins import plugin_registry
from kubeberth.whatif.replay.engine import Replay, ReplayOptions
from kubeberth.whatif.replay.workload import ReplayInput, Timed, workload_summary

SUMMARY = ObjectKind("kubeberth.io", "v1alpha1", "workloadsummaries", "WorkloadSummary", namespaced=False)


class Counting(FilterPlugin):
    """Counts the pods it filtered; remembers the workload's size as the summary gave it."""

    name = "Counting"
    reads: ClassVar[tuple[ObjectKind, ...]] = (SUMMARY,)

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.filtered: set[str] = set()
        self.total_seen: list[float] = []

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        summary = self.handle.objects.get(SUMMARY.group_kind, "replay")
        self.total_seen.append(float(summary["spec"]["total"]))
        self.filtered.add(pod.key)
        return None

    def sample_metrics(self) -> Mapping[str, float]:
        return {"filtered": float(len(self.filtered)), **({"total": self.total_seen[-1]} if self.total_seen else {})}


def pod(name: str, cpu: str, arrival: float, annotations: dict[str, str] | None = None) -> Timed:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return Timed({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                  "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}},
                 arrival)


NODE = Timed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}})
PROFILE = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
           "spec": {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "Counting"}]}}}}


def test_plugins_read_the_summary_and_add_columns() -> None:
    registry = plugin_registry().copy()
    registry.register(Counting)
    data = ReplayInput(static=[PROFILE], timed=[NODE, pod("a", "1", 0), pod("b", "1", 5), pod("c", "2", 9)])
    r = Replay(data, ReplayOptions(), registry=registry, warn=io.StringIO())
    ledger = r.run()
    cols = ledger.columns
    assert cols[-2:] == ["Counting.filtered", "Counting.total"]
    rows = [dict(zip(cols, row, strict=True)) for row in ledger.padded_rows()]
    assert [(x["time"], x["Counting.filtered"], x["Counting.total"]) for x in rows] == [
        (0.0, 1.0, 3.0), (5.0, 2.0, 3.0), (9.0, 3.0, 3.0)]


def test_no_plugin_metrics_no_columns() -> None:
    r = Replay(ReplayInput(timed=[NODE, pod("a", "1", 0)]), ReplayOptions(), warn=io.StringIO())
    assert not [c for c in r.run().columns if c.count(".") and c.split(".")[0][0].isupper()]


@pytest.mark.parametrize(("pods", "shapes"), [
    pytest.param([], [], id="empty"),
    pytest.param(
        [pod("a", "1", 0), pod("b", "500m", 0), pod("c", "1", 0, {"kubeberth.io/duration": "5"})],
        [(2, {"cpu": "1000m"}, {}), (1, {"cpu": "500m"}, {})], id="most-frequent-first-own-annotations-left-out"),
    pytest.param(
        [pod("a", "2", 0, {"x": "1"}), pod("b", "1", 0, {"x": "2"})],
        # a tie: by the shape's JSON with sorted keys (annotations, then requests)
        [(1, {"cpu": "2000m"}, {"x": "1"}), (1, {"cpu": "1000m"}, {"x": "2"})], id="ties-by-shape"),
])
def test_workload_summary(pods: list[Timed], shapes: list[tuple[int, dict[str, str], dict[str, str]]]) -> None:
    summary = workload_summary(t.obj for t in pods)
    assert summary["kind"] == "WorkloadSummary" and summary["apiVersion"] == "kubeberth.io/v1alpha1"
    assert summary["metadata"] == {"name": "replay"}
    assert summary["spec"]["total"] == len(pods)
    assert [(s["count"], s["requests"], s["annotations"]) for s in summary["spec"]["shapes"]] == shapes


def test_the_summary_is_in_the_store_before_the_first_arrival() -> None:
    seen: list[Any] = []
    data = ReplayInput(timed=[NODE, pod("a", "1", 3)])
    opts = ReplayOptions(configure=lambda s: seen.append(s.ctx.objects.get("WorkloadSummary.kubeberth.io", "replay")))
    Replay(data, opts, warn=io.StringIO()).run()
    assert seen[0]["spec"] == {"total": 1, "shapes": [{"count": 1, "requests": {"cpu": "1000m"}, "annotations": {}}]}
