"""The peer benchmark's workloads (benchmarks/peer_cases.py): which objects each family creates
through the API, and the controllers' part the harness plays; against a recording stand-in for
the API client (the real API server's side is tests/cluster/test_peer_bench.py). No timing."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import orjson
import pytest
from benchmarks import dra
from benchmarks import peer_cases as pc
from benchmarks.event_lag import lag_summary
from benchmarks.peer import median_run


class RecordingKube:
    """Answers create/patch/list as an API server would for what the cases send: a name for a
    generateName, a uid; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self._uids = itertools.count(1)
        self.objects: dict[str, list[dict[str, Any]]] = {}

    async def create(self, kind: str, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        made = {**obj, "metadata": dict(obj["metadata"])}
        meta = made["metadata"]
        if "generateName" in meta:
            meta["name"] = meta.pop("generateName") + f"x{next(self._uids):04d}"
        meta["uid"] = f"uid-{next(self._uids)}"
        self.calls.append(("create", kind, made))
        self.objects.setdefault(kind, []).append(made)
        return made

    async def patch(self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None, *,
                    subresource: str = "") -> dict[str, Any]:
        self.calls.append(("patch", f"{kind}/{subresource}" if subresource else kind, (namespace, name, patch)))
        return {}

    def created(self, kind: str) -> list[dict[str, Any]]:
        return self.objects.get(kind, [])


def test_init_allocations_take_each_device_once_spread_over_the_nodes() -> None:
    allocations = pc.init_allocations(nodes=50, claims=250, devices=10)
    results = [a["devices"]["results"][0] for a in allocations]
    assert len({(r["pool"], r["device"]) for r in results}) == 250
    per_node: dict[str, list[str]] = {}
    for a, r in zip(allocations, results, strict=True):
        [term] = a["nodeSelector"]["nodeSelectorTerms"]
        [node] = term["matchFields"][0]["values"]
        assert r["pool"] == "resourceslice-" + node.rsplit("-", 1)[1]  # the node's own pool
        assert r["driver"] == dra.DRIVER and r["request"] == "req-0"
        per_node.setdefault(node, []).append(r["device"])
    # Each node's first free device, in order; nodes drawn at random, not filled one after another.
    assert all(devices == [f"basic-device-{d}" for d in range(len(devices))] for devices in per_node.values())
    assert len(per_node) > 40
    assert pc.init_allocations(nodes=50, claims=250, devices=10) == allocations  # seeded


def test_init_allocations_fill_every_device_and_refuse_more() -> None:
    full = pc.init_allocations(nodes=3, claims=30, devices=10)
    assert len({(a["devices"]["results"][0]["pool"], a["devices"]["results"][0]["device"]) for a in full}) == 30
    with pytest.raises(ValueError, match="31 init claims do not fit 3 nodes of 10 devices"):
        pc.init_allocations(nodes=3, claims=31, devices=10)


def test_select_finds_every_family_and_sizes_them() -> None:
    cases = pc.select(["SchedulingBasic/500Nodes", "SchedulingWithResourceClaimTemplate/5000pods_500nodes"])
    assert [(type(c).__name__, c.id) for c in cases] == [
        ("SchedulerPerfCase", "SchedulingBasic/500Nodes"),
        ("DraCase", "SchedulingWithResourceClaimTemplate/5000pods_500nodes")]
    assert {c.id for c in pc.select(["dra"])} == {w.id for w in dra.WORKLOADS}
    [small] = pc.select(["SchedulingWithResourceClaim/5000pods_500nodes"], nodes=4, init=6, pods=3)
    assert isinstance(small, pc.DraCase)
    assert (small.nodes, small.w.init_claims, small.measure_pods) == (4, 6, 3)
    assert small.describe()["threshold"] is None  # upstream's threshold is for its own size
    assert pc.select(["NoSuchWorkload"]) == []


def test_dra_case_creates_upstreams_objects_with_the_init_claims_allocated() -> None:
    [case] = pc.select(["SchedulingWithResourceClaimTemplate/5000pods_500nodes"], nodes=3, init=4, pods=2)
    kube = RecordingKube()
    asyncio.run(case.setup(kube))  # type: ignore[arg-type]
    assert [n["metadata"]["name"] for n in kube.created("nodes")] == [f"scheduler-perf-dra-{i}" for i in range(3)]
    assert [s["spec"]["nodeName"] for s in kube.created("resourceslices")] == [
        f"scheduler-perf-dra-{i}" for i in range(3)]
    assert [c["metadata"]["name"] for c in kube.created("deviceclasses")] == ["test-class"]
    assert sorted(c["metadata"]["name"] for c in kube.created("resourceclaims")) == [
        f"test-claim-{i}" for i in range(4)]
    status_patches = [args for op, kind, args in kube.calls if kind == "resourceclaims/status"]
    assert sorted(name for _, name, _ in status_patches) == [f"test-claim-{i}" for i in range(4)]
    assert all(ns == "init" and patch["status"]["allocation"]["devices"]["results"]
               for ns, _, patch in status_patches)
    [template] = kube.created("resourceclaimtemplates")
    assert (template["metadata"]["name"], template["metadata"]["namespace"]) == ("test-claim-template", "test")


def test_dra_case_with_claims_of_their_own_creates_one_per_measured_pod() -> None:
    [case] = pc.select(["SchedulingWithResourceClaim/5000pods_500nodes"], nodes=2, init=0, pods=3)
    kube = RecordingKube()
    asyncio.run(case.setup(kube))  # type: ignore[arg-type]
    assert sorted((c["metadata"]["namespace"], c["metadata"]["name"]) for c in kube.created("resourceclaims")) == [
        ("test", f"test-claim-{i}") for i in range(3)]
    assert not kube.created("resourceclaimtemplates")
    pods = list(case.pods("measure"))
    assert [p["spec"]["resourceClaims"] for p in pods] == [
        [{"name": "resource", "resourceClaimName": f"test-claim-{i}"}] for i in range(3)]


def test_template_pods_get_their_claim_and_status_as_the_resourceclaim_controller_makes_them() -> None:
    [case] = pc.select(["SchedulingWithResourceClaimTemplate/5000pods_500nodes"], nodes=2, init=0, pods=2)
    kube = RecordingKube()
    [pod, _] = case.pods("measure")
    created = asyncio.run(kube.create("pods", pod))
    asyncio.run(case.created(kube, created))  # type: ignore[arg-type]
    [claim] = kube.created("resourceclaims")
    meta = claim["metadata"]
    assert meta["name"].startswith("pod-000000-resource-") and meta["namespace"] == "test"
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "pod-000000",
                                        "uid": created["metadata"]["uid"], "controller": True}]
    assert meta["annotations"] == {"resource.kubernetes.io/pod-claim-name": "resource"}
    assert claim["spec"] == {"devices": {"requests": dra.REQUESTS}}
    [(_, kind, (ns, name, patch))] = [c for c in kube.calls if c[0] == "patch"]
    assert (kind, ns, name) == ("pods/status", "test", "pod-000000")
    assert patch == {"status": {"resourceClaimStatuses": [{"name": "resource", "resourceClaimName": meta["name"]}]}}


def test_pods_naming_their_claims_and_the_probe_need_no_controller() -> None:
    [case] = pc.select(["SchedulingWithResourceClaim/5000pods_500nodes"], nodes=2, init=0, pods=1)
    kube = RecordingKube()
    for pod in [*case.pods("init"), *case.pods("measure")]:
        asyncio.run(case.created(kube, asyncio.run(kube.create("pods", pod))))  # type: ignore[arg-type]
    assert [kind for _, kind, _ in kube.calls] == ["pods", "pods"]


def test_cases_without_init_pods_have_the_probe_pod() -> None:
    [dra_case] = pc.select(["SchedulingWithResourceClaimTemplate/5000pods_500nodes"])
    [churn] = pc.select(["SchedulingWithMixedChurn/1000Nodes"])
    [basic] = pc.select(["SchedulingBasic/500Nodes"])
    for case in (dra_case, churn):
        assert case.init_pods == 0 and case.init_count == 1
        assert [p["metadata"]["name"] for p in case.pods("init")] == ["init-probe"]
    assert basic.init_count == 500 and len(list(basic.pods("init"))) == 500
    assert all(p["metadata"]["name"].startswith("init-0") for p in basic.pods("init"))


def test_priorities_come_from_priority_classes() -> None:
    [case] = pc.select(["PreemptionBasic/500Nodes"], nodes=2, init=1, pods=1)
    kube = RecordingKube()
    asyncio.run(case.setup(kube))  # type: ignore[arg-type]
    assert [(c["metadata"]["name"], c["value"]) for c in kube.created("priorityclasses")] == [("bench-priority-10", 10)]
    [pod] = case.pods("measure")
    assert pod["spec"]["priorityClassName"] == "bench-priority-10" and "priority" not in pod["spec"]


def test_median_run_skips_failed_runs_and_lists_every_run() -> None:
    runs = [{"pods_per_s": 300.0}, {"error": "boom"}, {"pods_per_s": 100.0}, {"pods_per_s": 200.0}]
    chosen = median_run(runs)
    assert chosen["pods_per_s"] == 200.0
    assert chosen["runs_pods_per_s"] == [300.0, None, 100.0, 200.0] and chosen["runs_errors"] == 1
    assert median_run([{"pods_per_s": 5.0}]) == {"pods_per_s": 5.0}
    assert median_run([{"error": "a"}, {"error": "b"}])["error"] == "a"


def test_median_run_lists_every_runs_event_and_attempt_tails() -> None:
    runs = [{"pods_per_s": 3.0, "events_within_1s": 10, "event_lag_p99_ms": 900.0, "p99_attempt_ms": 50.0},
            {"pods_per_s": 1.0, "events_within_1s": 9, "event_lag_p99_ms": 1200.0}]
    chosen = median_run(runs)
    assert chosen["runs_events_within_1s"] == [10, 9] and chosen["runs_event_lag_p99_ms"] == [900.0, 1200.0]
    assert chosen["runs_p99_attempt_ms"] == [50.0, None]
    assert "runs_events_within_1s" not in median_run([{"pods_per_s": 1.0}, {"pods_per_s": 2.0}])


def _audit(verb: str, resource: str, name: str, received: str, done: str, *, subresource: str = "",
           code: int = 201) -> bytes:
    ref = {"resource": resource, "namespace": "ns", "name": name}
    if subresource:
        ref["subresource"] = subresource
    return orjson.dumps({"verb": verb, "objectRef": ref, "responseStatus": {"code": code},
                         "requestReceivedTimestamp": f"2026-11-27T00:00:{received}Z",
                         "stageTimestamp": f"2026-11-27T00:00:{done}Z"}) + b"\n"


def test_event_lag_takes_the_first_event_sent_after_the_binding_in_two_parts(tmp_path: Any) -> None:
    log = tmp_path / "audit.log"
    log.write_bytes(b"".join([
        _audit("create", "pods", "pod-a", "00.000000", "00.100000", subresource="binding"),
        _audit("create", "events", "pod-a.0", "00.050000", "00.200000"),  # sent before the binding answered
        _audit("create", "events", "pod-a.1", "00.300000", "00.400000"),
        _audit("create", "events", "pod-a.2", "00.350000", "00.900000"),  # a later Event: not the first
        _audit("create", "pods", "pod-b", "01.000000", "01.000000", subresource="binding"),
        _audit("create", "events", "pod-b.1", "01.500000", "02.200000", code=409),  # refused: not written
        _audit("create", "events", "pod-b.2", "02.000000", "02.500000"),
        _audit("create", "pods", "pod-c", "03.000000", "03.000000", subresource="binding"),
        b'{"verb": "create", "objectRef": {"res',  # a line the batch backend is still writing
    ]))
    out = lag_summary(log, "ns", "pod-")
    assert out["event_lag_max_ms"] == 1500.0 and out["event_lag_p50_ms"] == 300.0
    assert out["events_within_1s"] == 1 and out["event_lag_missing"] == 1
    assert out["event_sent_ms"] == [200.0, 1000.0, 1000.0]
    assert out["event_served_ms"] == [100.0, 500.0, 500.0]


def test_gang_case_creates_the_pod_groups_before_the_pods_that_name_them_with_the_gate_on() -> None:
    [case] = pc.select(["GangScheduling/5000Nodes_1000Gangs_3000Pods"], nodes=2, pods=6)
    assert case.feature_gates == "GenericWorkload=true" and case.measure_namespace == "gang-ns-0"
    kube = RecordingKube()
    asyncio.run(case.setup(kube))  # type: ignore[arg-type]
    groups = kube.created("podgroups")
    assert [(g["metadata"]["name"], g["metadata"]["namespace"], g["spec"]["schedulingPolicy"]) for g in groups] == \
        [("gang-0", "gang-ns-0", {"gang": {"minCount": 3}}), ("gang-1", "gang-ns-0", {"gang": {"minCount": 3}})]
    assert [n["metadata"]["name"] for n in kube.created("namespaces")] == ["gang-ns-0"]
    [probe] = case.pods("init")  # no init pods: the probe alone
    assert "schedulingGroup" not in probe["spec"]
    pods = list(case.pods("measure"))
    assert [(p["metadata"]["name"], p["spec"]["schedulingGroup"]["podGroupName"]) for p in pods] == \
        [("pod-000000", "gang-0"), ("pod-000001", "gang-0"), ("pod-000002", "gang-0"),
         ("pod-000003", "gang-1"), ("pod-000004", "gang-1"), ("pod-000005", "gang-1")]


def test_workloads_without_groups_create_no_pod_groups_and_set_no_gate() -> None:
    [case] = pc.select(["SchedulingBasic/500Nodes"], nodes=2, init=0, pods=2)
    assert case.feature_gates == ""
    kube = RecordingKube()
    asyncio.run(case.setup(kube))  # type: ignore[arg-type]
    assert kube.created("podgroups") == []
