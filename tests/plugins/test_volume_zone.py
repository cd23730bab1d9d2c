"""VolumeZone, after upstream's volume_zone_test.go (TestSingleZone, TestMultiZone, TestWithBinding)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.framework import Code, CycleState, Status
from kubeberth.model import NodeInfo
from kubeberth.plugins.volume_zone import ERR_REASON_CONFLICT, VolumeZone
from tests.builders import make_node, make_pod
from tests.doubles import handle, store_of

from ._volume_helpers import claim_volume, pv, pvc, storage_class

ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"

CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)
SKIP = Status.skip()


def pv_labels(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return pv(name, labels=labels)


SINGLE_ZONE_OBJECTS = [
    pv_labels("Vol_1", {ZONE_BETA: "us-west1-a"}),
    pv_labels("Vol_2", {REGION_BETA: "us-west1", "uselessLabel": "none"}),
    pv_labels("Vol_3", {REGION_BETA: "us-west1"}),
    pv_labels("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv_labels("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv_labels("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_2", volume_name="Vol_2"),
    pvc("PVC_3", volume_name="Vol_3"),
    pvc("PVC_4", volume_name="Vol_not_exist"),
    pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
    pvc("PVC_Stable_3", volume_name="Vol_Stable_3"),
]


def pod_with(*claims: str) -> Any:
    return make_pod("pod_1", volumes=[claim_volume(c) for c in claims])


def node(labels: dict[str, str] | None) -> NodeInfo:
    n = make_node("host1", labels=labels or {})
    # make_node adds kubernetes.io/hostname only; no topology label unless given.
    return NodeInfo(n)


def run(objects: list[dict[str, Any]], pod: Any, ni: NodeInfo) -> tuple[Status | None, Status | None]:
    plugin = VolumeZone(None, handle(objects=store_of(*objects)))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [ni])
    return pre, plugin.filter(state, pod, ni)


SINGLE_ZONE = [
    ("pod without volume", pod_with(), {ZONE_BETA: "us-west1-a"}, SKIP, None),
    ("node without labels", pod_with("PVC_1"), None, None, None),
    ("beta zone label matched", pod_with("PVC_1"), {ZONE_BETA: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("beta region label matched", pod_with("PVC_2"), {REGION_BETA: "us-west1", "uselessLabel": "none"},
     None, None),
    ("beta region label doesn't match", pod_with("PVC_2"), {REGION_BETA: "no_us-west1", "uselessLabel": "none"},
     None, CONFLICT),
    ("beta zone label doesn't match", pod_with("PVC_1"), {ZONE_BETA: "no_us-west1-a", "uselessLabel": "none"},
     None, CONFLICT),
    ("zone label matched", pod_with("PVC_Stable_1"), {ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
    ("region label matched", pod_with("PVC_Stable_2"), {REGION: "us-west1", "uselessLabel": "none"}, None, None),
    ("region label doesn't match", pod_with("PVC_Stable_2"), {REGION: "no_us-west1", "uselessLabel": "none"},
     None, CONFLICT),
    ("zone label doesn't match", pod_with("PVC_Stable_1"), {ZONE: "no_us-west1-a", "uselessLabel": "none"},
     None, CONFLICT),
    ("pv with zone and region, node with only zone", pod_with("PVC_Stable_3"), {ZONE: "us-west1-a"},
     None, CONFLICT),
    ("pv with zone, node with beta zone", pod_with("PVC_Stable_1"), {ZONE_BETA: "us-west1-a"}, None, CONFLICT),
    ("pv with beta label, node with ga label, matched", pod_with("PVC_1"), {ZONE: "us-west1-a"}, None, None),
    ("pv with beta label, node with ga label, don't match", pod_with("PVC_1"), {ZONE: "us-west1-b"},
     None, CONFLICT),
    ("beta region pv, ga region node", pod_with("PVC_3"), {REGION: "us-west1"}, None, None),
    ("node with only unrelated labels", pod_with("PVC_1"), {"uselessLabel": "none"}, None, None),
    ("pv without topology labels skips", pod_with("PVC_untopo"), {ZONE: "us-west1-a"}, SKIP, None),
    ("two volumes, second conflicts", pod_with("PVC_1", "PVC_Stable_2"),
     {ZONE: "us-west1-a", REGION: "us-east1"}, None, CONFLICT),
    ("two volumes, both match", pod_with("PVC_1", "PVC_Stable_2"),
     {ZONE: "us-west1-a", REGION: "us-west1"}, None, None),
]


@pytest.mark.parametrize(("pod", "labels", "want_pre", "want_filter"), [c[1:] for c in SINGLE_ZONE],
                         ids=[c[0] for c in SINGLE_ZONE])
def test_single_zone(pod: Any, labels: dict[str, str] | None, want_pre: Status | None,
                     want_filter: Status | None) -> None:
    objects = [*SINGLE_ZONE_OBJECTS, pv("Vol_untopo"), pvc("PVC_untopo", volume_name="Vol_untopo")]
    pre, filt = run(objects, pod, node(labels))
    assert pre == want_pre
    if want_pre is None or not want_pre.is_skip():
        assert filt == want_filter


MULTI_ZONE_OBJECTS = [
    pv_labels("Vol_1", {ZONE_BETA: "us-west1-a"}),
    pv_labels("Vol_2", {ZONE_BETA: "us-west1-b", "uselessLabel": "none"}),
    pv_labels("Vol_3", {ZONE_BETA: "us-west1-c__us-west1-a"}),
    pv_labels("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv_labels("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_2", volume_name="Vol_2"),
    pvc("PVC_3", volume_name="Vol_3"),
    pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
]

MULTI_ZONE = [
    ("node without labels", pod_with("PVC_3"), None, None),
    ("beta zone label matched", pod_with("PVC_3"), {ZONE_BETA: "us-west1-a", "uselessLabel": "none"}, None),
    ("beta zone label matched, other zone of the list", pod_with("PVC_3"), {ZONE_BETA: "us-west1-c"}, None),
    ("beta zone label doesn't match", pod_with("PVC_1"), {ZONE_BETA: "us-west1-b", "uselessLabel": "none"},
     CONFLICT),
    ("zone label matched", pod_with("PVC_Stable_2"), {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("zone label doesn't match", pod_with("PVC_Stable_1"), {ZONE: "us-west1-b", "uselessLabel": "none"},
     CONFLICT),
    ("zone list doesn't contain the node's zone", pod_with("PVC_Stable_2"), {ZONE: "us-west1-b"}, CONFLICT),
]


@pytest.mark.parametrize(("pod", "labels", "want"), [c[1:] for c in MULTI_ZONE], ids=[c[0] for c in MULTI_ZONE])
def test_multi_zone(pod: Any, labels: dict[str, str] | None, want: Status | None) -> None:
    pre, filt = run(MULTI_ZONE_OBJECTS, pod, node(labels))
    assert pre is None
    assert filt == want


BINDING_OBJECTS = [
    storage_class("Class_Immediate"),
    storage_class("Class_Wait", wait=True),
    pv_labels("Vol_1", {ZONE_BETA: "us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_NoSC", storage_class="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
    pvc("PVC_4", volume_name="Vol_not_exist"),
    pvc("PVC_BetaClass", annotations={"volume.beta.kubernetes.io/storage-class": "Class_Wait"}),
]

NO_CLASS = Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")

WITH_BINDING = [
    ("label zone failure domain matched", pod_with("PVC_1"), None, None),
    ("unbound volume empty storage class", pod_with("PVC_EmptySC"), NO_CLASS, NO_CLASS),
    ("unbound volume no storage class", pod_with("PVC_NoSC"),
     Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
     Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found')),
    ("unbound volume immediate binding mode", pod_with("PVC_ImmediateSC"),
     Status.unresolvable("PersistentVolume had no name"), Status.unresolvable("PersistentVolume had no name")),
    ("unbound volume wait binding mode", pod_with("PVC_WaitSC"), SKIP, None),
    ("class from the beta annotation", pod_with("PVC_BetaClass"), SKIP, None),
    ("pvc not found", pod_with("PVC_missing"), Status.unresolvable('persistentvolumeclaim "PVC_missing" not found'),
     Status.unresolvable('persistentvolumeclaim "PVC_missing" not found')),
    ("pv not found", pod_with("PVC_4"), Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
     Status.unresolvable('persistentvolume "Vol_not_exist" not found')),
    ("pvc with no name", make_pod("pod_1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": ""}}]),
     Status.unresolvable("PersistentVolumeClaim had no name"),
     Status.unresolvable("PersistentVolumeClaim had no name")),
    ("wait claim next to a bound one", pod_with("PVC_WaitSC", "PVC_1"), None, None),
]


@pytest.mark.parametrize(("pod", "want_pre", "want_filter"), [c[1:] for c in WITH_BINDING],
                         ids=[c[0] for c in WITH_BINDING])
def test_with_binding(pod: Any, want_pre: Status | None, want_filter: Status | None) -> None:
    ni = node({ZONE_BETA: "us-west1-a", "uselessLabel": "none"})
    plugin = VolumeZone(None, handle(objects=store_of(*BINDING_OBJECTS)))
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [ni])
    assert pre == want_pre
    if pre is not None and pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        # Filter without PreFilter state recomputes (upstream's fallback) and says the same.
        assert plugin.filter(CycleState(), pod, ni) == want_filter
    elif pre is None:
        assert plugin.filter(state, pod, ni) == want_filter


def test_conflict_is_unresolvable() -> None:
    _, filt = run(SINGLE_ZONE_OBJECTS, pod_with("PVC_1"), node({ZONE_BETA: "us-east1-a"}))
    assert filt is not None and filt.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pod_with_only_non_claim_volumes_skips() -> None:
    pod = make_pod("p", volumes=[{"name": "e", "emptyDir": {}}])
    pre, filt = run(SINGLE_ZONE_OBJECTS, pod, node({ZONE: "us-west1-a"}))
    assert pre == SKIP
    assert filt is None
