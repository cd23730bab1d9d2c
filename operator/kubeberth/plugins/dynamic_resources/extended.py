"""Extended resources backed by DRA: a plain `example.com/gpu: 1` container request that a
DeviceClass names (`spec.extendedResourceName`, or `deviceclass.resource.kubernetes.io/<class>`)
is served by devices on a node that does not advertise the resource (allocatable 0); there
NodeResourcesFit leaves it to DynamicResources, which allocates a claim made for the pod (one
request per container, as upstream names them) and creates that claim in PreBind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model import NodeInfo, Pod
from ...model.quantity import QuantityError, value
from .._resource_allocation import qualified_name_error
from .claims import DEVICE_CLASS, meta

CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
SPECIAL_NAME = "<extended-resources>"


def is_dra_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or a class's implicit one."""
    if name.startswith(CLASS_PREFIX):
        return True
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return qualified_name_error("requests." + name) is None


def device_class_for(objects: Any, resource: str) -> Mapping[str, Any] | None:
    """The DeviceClass serving an extended resource: the implicit name, else the class naming it
    (the oldest, then the first by name, when several do)."""
    if resource.startswith(CLASS_PREFIX):
        return objects.get(DEVICE_CLASS, resource[len(CLASS_PREFIX):])
    best: Mapping[str, Any] | None = None
    for klass in objects.list(DEVICE_CLASS):
        if (klass.get("spec") or {}).get("extendedResourceName") != resource:
            continue
        key = (str(meta(klass).get("creationTimestamp") or ""), str(meta(klass).get("name")))
        if best is None or key < (str(meta(best).get("creationTimestamp") or ""), str(meta(best).get("name"))):
            best = klass
    return best


def delegated_resources(objects: Any, pod: Pod) -> dict[str, int]:
    """The pod's requests of extended resources that some DeviceClass serves."""
    if objects is None or not pod.requests.scalar:
        return {}
    return {name: q for name, q in pod.requests.scalar.items()
            if q and is_dra_resource_name(name) and device_class_for(objects, name) is not None}


def find_claim(objects: Any, pod: Pod) -> Mapping[str, Any] | None:
    """The claim made for the pod's extended resources in an earlier cycle, if any."""
    for claim in objects.list("ResourceClaim", pod.namespace):
        if (meta(claim).get("annotations") or {}).get(ANNOTATION) != "true":
            continue
        refs = meta(claim).get("ownerReferences") or ()
        if any(ref.get("controller") and str(ref.get("uid")) == pod.uid for ref in refs):
            return claim
    return None


def special_claim(pod: Pod) -> dict[str, Any]:
    """The claim to be made, as PreFilter holds it (its requests depend on the node)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": SPECIAL_NAME, "namespace": pod.namespace, "uid": f"{pod.uid}/extended-resources",
                         "generateName": f"{pod.name}-extended-resources-", "annotations": {ANNOTATION: "true"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                              "controller": True}]},
            "spec": {}}


def _count(raw: Any) -> int:
    try:
        return value(raw)
    except QuantityError:
        return 0


def node_requests(objects: Any, pod: Pod, node_info: NodeInfo,
                  resources: Mapping[str, int]) -> tuple[list[dict[str, Any]], list[dict[str, str]]] | str:
    """The device requests (and container mappings) for the resources this node does not
    advertise; or upstream's reason when a resource is neither advertised nor served by a class."""
    needed: dict[str, str] = {}  # resource -> class name
    allocatable = node_info.allocatable.scalar
    for name, quant in pod.requests.scalar.items():
        if not quant or not is_dra_resource_name(name):
            continue
        klass = device_class_for(objects, name) if name in resources else None
        if klass is not None and not allocatable.get(name):
            needed[name] = str(meta(klass).get("name"))
        elif name not in allocatable:
            return "cannot fit resource"
    spec = pod.spec
    inits = list(spec.get("initContainers") or ())
    containers = inits + list(spec.get("containers") or ())
    long_lived = [i for i, c in enumerate(containers) if i >= len(inits) or c.get("restartPolicy") == "Always"]
    short_lived = [i for i in range(len(inits)) if i not in long_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for name in sorted(needed):
        regular: dict[int, dict[str, Any]] = {}
        long_maps: list[dict[str, str]] = []
        for i in long_lived:
            req, maps = _container_request(i, containers[i], name, needed[name], [])
            if req is not None:
                regular[i] = req
            long_maps += maps
        biggest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_maps: list[dict[str, str]] = []
        for i in short_lived:
            later = [regular[j] for j in sorted(regular) if j >= i]
            req, maps = _container_request(i, containers[i], name, needed[name], later)
            if req is not None:
                short_names.add(str(req["name"]))
                if biggest is None or biggest["exactly"]["count"] < req["exactly"]["count"]:
                    biggest = req
            short_maps += maps
        if biggest is not None:
            # Init containers run one after another: the biggest of their requests serves them all.
            for m in short_maps:
                if m["requestName"] in short_names:
                    m["requestName"] = str(biggest["name"])
            requests.append(biggest)
        requests += list(regular.values())
        mappings += long_maps + short_maps
    return sorted(requests, key=lambda r: str(r["name"])), mappings


def _container_request(index: int, container: Mapping[str, Any], name: str, class_name: str,
                       reusable: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """createResourceRequestAndMappings: a container's request, less what the long-lived
    containers after an init container already hold."""
    requests = (container.get("resources") or {}).get("requests") or {}
    if name not in requests:
        return None, []
    want = _count(requests[name])
    if want == 0:
        return None, []
    cname = str(container.get("name") or "")
    mappings: list[dict[str, str]] = []
    have = 0
    for r in reusable:
        have += int(r["exactly"]["count"])
        mappings.append({"containerName": cname, "resourceName": name, "requestName": str(r["name"])})
        if have >= want:
            return None, mappings
    request_name = f"container-{index}-request-{sorted(requests).index(name)}"
    mappings.append({"containerName": cname, "resourceName": name, "requestName": request_name})
    return ({"name": request_name, "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount",
                                               "count": want - have}}, mappings)
