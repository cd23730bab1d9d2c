"""Extended resources backed by DRA: which DeviceClass serves a resource, the device requests a
pod's containers make on a node without the resource (upstream's names and mappings), and
NodeResourcesFit leaving such a resource to DynamicResources."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.cache.objects import ObjectStore
from kubeberth.framework import CycleState
from kubeberth.plugins.dynamic_resources.extended import delegated_resources, device_class_for, node_requests
from kubeberth.plugins.node_resources_fit import NodeResourcesFit
from tests.builders import make_node, make_pod, node_info
from tests.doubles import handle

GPU = "example.com/gpu"


def _Handle(*classes: dict[str, Any]) -> Any:
    """A handle whose objects hold the DeviceClasses."""
    objects = ObjectStore()
    for c in classes:
        objects.put("DeviceClass", c)
    return handle(objects=objects)


def klass(name: str, resource: str | None = None, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    spec = {"extendedResourceName": resource} if resource else {}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def container(name: str, gpus: int, **kw: Any) -> dict[str, Any]:
    return {"name": name, "image": "i", "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}, **kw}


def test_the_oldest_class_naming_a_resource_serves_it() -> None:
    h = _Handle(klass("new", GPU, "2026-02-01T00:00:00Z"), klass("old", GPU), klass("plain"))
    assert (device_class_for(h.objects, GPU) or {})["metadata"]["name"] == "old"
    implicit = device_class_for(h.objects, "deviceclass.resource.kubernetes.io/plain") or {}
    assert implicit["metadata"]["name"] == "plain"
    assert device_class_for(h.objects, "example.com/other") is None


@pytest.mark.parametrize(("containers", "inits", "want_requests", "want_mappings"), [
    ([container("a", 2)], [], [("container-0-request-0", 2)], [("a", "container-0-request-0")]),
    ([container("a", 1), container("b", 3)], [],
     [("container-0-request-0", 1), ("container-1-request-0", 3)],
     [("a", "container-0-request-0"), ("b", "container-1-request-0")]),
    # An init container reuses what the regular container after it holds, asking only for more.
    ([container("a", 1)], [container("init", 3)],
     [("container-0-request-0", 2), ("container-1-request-0", 1)],
     [("a", "container-1-request-0"), ("init", "container-1-request-0"), ("init", "container-0-request-0")]),
    ([container("a", 2)], [container("init", 1)], [("container-1-request-0", 2)],
     [("a", "container-1-request-0"), ("init", "container-1-request-0")]),
], ids=["one container", "two containers", "init needs more", "init fits in the regular one"])
def test_requests_and_mappings(containers: list[dict[str, Any]], inits: list[dict[str, Any]],
                               want_requests: list[tuple[str, int]], want_mappings: list[tuple[str, str]]) -> None:
    h = _Handle(klass("gpu", GPU))
    pod = make_pod("p", containers=containers, initContainers=inits)
    built = node_requests(h.objects, pod, node_info(make_node("n")), delegated_resources(h.objects, pod))
    assert not isinstance(built, str)
    requests, mappings = built
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == want_requests
    assert all(r["exactly"]["deviceClassName"] == "gpu" for r in requests)
    assert [(m["containerName"], m["requestName"]) for m in mappings] == want_mappings


@pytest.mark.parametrize(("classes", "node_gpus", "want"), [
    ([klass("gpu", GPU)], None, None),
    ([klass("gpu", GPU)], "1", ["Insufficient example.com/gpu"]),
    ([], None, ["Insufficient example.com/gpu"]),
], ids=["served by DRA", "advertised by a device plugin", "no class"])
def test_node_resources_fit_leaves_served_resources_to_dra(classes: list[dict[str, Any]], node_gpus: str | None,
                                                          want: list[str] | None) -> None:
    handle = _Handle(*classes)
    pl = NodeResourcesFit(None, handle)
    pod = make_pod("p", containers=[container("a", 2)])
    extra = {GPU: node_gpus} if node_gpus else {}
    node = make_node("n", extra=extra) if extra else make_node("n")
    state = CycleState()
    pl.pre_filter(state, pod, [])
    status = pl.filter(state, pod, node_info(node))
    assert (status.reasons if status is not None else None) == want
