"""A small async REST client for the real-cluster tests and the end-to-end benchmark.

Deliberately not kubeberth's own API client: the tests observe the operator from outside,
through the API server, as another client of the cluster would.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp

T = TypeVar("T")

CORE = "/api/v1"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class ApiError(Exception):
    def __init__(self, status: int, body: Any, what: str) -> None:
        self.status = status
        self.body = body
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{what}: HTTP {status}: {message}")


RESOURCE_KINDS = ("deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates", "devicetaintrules")


EVENTS_V1 = "events.events.k8s.io"  # the Events as events.k8s.io/v1 shows them ('events' is core/v1's view)


def collection(kind: str, namespace: str | None = None) -> str:
    """The collection path of a kind: 'pods', 'nodes', 'priorityclasses', 'poddisruptionbudgets', ..."""
    if kind == EVENTS_V1:
        return (f"/apis/events.k8s.io/v1/namespaces/{namespace}/events" if namespace
                else "/apis/events.k8s.io/v1/events")
    group = {"priorityclasses": "/apis/scheduling.k8s.io/v1", "poddisruptionbudgets": "/apis/policy/v1",
             "schedulingprofiles": "/apis/kubeberth.io/v1alpha1", "leases": "/apis/coordination.k8s.io/v1",
             "storageclasses": "/apis/storage.k8s.io/v1",
             "runtimeclasses": "/apis/node.k8s.io/v1", "csinodes": "/apis/storage.k8s.io/v1",
             "csidrivers": "/apis/storage.k8s.io/v1", "csistoragecapacities": "/apis/storage.k8s.io/v1",
             "customresourcedefinitions": "/apis/apiextensions.k8s.io/v1",
             "replicasets": "/apis/apps/v1", "statefulsets": "/apis/apps/v1",
             "podgroups": "/apis/scheduling.k8s.io/v1beta1",
             **dict.fromkeys(RESOURCE_KINDS, "/apis/resource.k8s.io/v1")}.get(kind, CORE)
    return f"{group}/namespaces/{namespace}/{kind}" if namespace else f"{group}/{kind}"


class Kube:
    """`async with Kube(url, token, ssl_context) as kube:` then get/list/create/patch/delete."""

    def __init__(self, url: str, token: str, ssl_context: ssl.SSLContext, *, connections: int = 50) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._ssl = ssl_context
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Kube:
        connector = aiohttp.TCPConnector(ssl=self._ssl, limit=self._connections)
        self._session = aiohttp.ClientSession(connector=connector, headers=self.headers,
                                              timeout=aiohttp.ClientTimeout(total=60))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "use `async with Kube(...)`"
        return self._session

    async def request(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None,
                      content_type: str = "application/json", ok: tuple[int, ...] = (200, 201, 202)) -> Any:
        assert self._session is not None, "use `async with Kube(...)`"
        async with self._session.request(method, self.url + path, json=body, params=params,
                                         headers={"Content-Type": content_type}) as resp:
            data = await resp.json(content_type=None) if resp.content_length != 0 else None
            if resp.status not in ok:
                raise ApiError(resp.status, data, f"{method} {path}")
            return data

    async def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return dict(await self.request("GET", f"{collection(kind, namespace)}/{name}"))

    async def get_or_none(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return await self.get(kind, name, namespace)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def list(self, kind: str, namespace: str | None = None, **params: str) -> list[dict[str, Any]]:
        data = await self.request("GET", collection(kind, namespace), params=params or None)
        return list(data.get("items") or [])

    async def create(self, kind: str, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if namespace is None and kind not in CLUSTER_SCOPED:
            namespace = obj.get("metadata", {}).get("namespace") or "default"
        return dict(await self.request("POST", collection(kind, namespace), body=obj))

    async def patch(self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None, *,
                    subresource: str = "", content_type: str = MERGE) -> dict[str, Any]:
        path = f"{collection(kind, namespace)}/{name}" + (f"/{subresource}" if subresource else "")
        return dict(await self.request("PATCH", path, body=patch, content_type=content_type))

    async def delete(self, kind: str, name: str, namespace: str | None = None, *,
                     grace_period: int | None = None, missing_ok: bool = True) -> None:
        body = {"gracePeriodSeconds": grace_period} if grace_period is not None else None
        ok = (200, 202, 404) if missing_ok else (200, 202)
        await self.request("DELETE", f"{collection(kind, namespace)}/{name}", body=body, ok=ok)

    async def delete_all(self, kind: str, namespace: str | None = None, *, grace_period: int | None = None) -> None:
        body = {"gracePeriodSeconds": grace_period} if grace_period is not None else None
        await self.request("DELETE", collection(kind, namespace), body=body)


async def reset_devices(kube: Kube) -> None:
    """DynamicResources' objects; allocated claims carry a finalizer that no controller removes here."""
    for claim in await kube.list("resourceclaims"):
        meta = claim["metadata"]
        if meta.get("finalizers"):
            await kube.patch("resourceclaims", meta["name"], {"metadata": {"finalizers": None}}, meta["namespace"])
        await kube.delete("resourceclaims", meta["name"], meta["namespace"])
    for template in await kube.list("resourceclaimtemplates"):
        await kube.delete("resourceclaimtemplates", template["metadata"]["name"], template["metadata"]["namespace"])
    for kind in ("deviceclasses", "resourceslices", "devicetaintrules"):
        await kube.delete_all(kind)


SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
PAUSE_IMAGE = "pause:3.10"
OVERCOMMITTABLE = {"cpu", "memory", "ephemeral-storage"}


def as_created(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as a client creates it: without what the server sets; a pod's containers get an image.
    Nodes, PVs and PVCs keep their status (no kubelet or controller would write it here)."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    for key in SERVER_SET:
        meta.pop(key, None)
    if obj.get("kind") not in ("Node", "PersistentVolume", "PersistentVolumeClaim"):
        obj.pop("status", None)
    if obj.get("kind") == "Pod":
        spec = obj.setdefault("spec", {})
        for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            c.setdefault("image", PAUSE_IMAGE)
            c.setdefault("name", "c")
        if not spec.get("containers"):
            spec["containers"] = [{"name": "c", "image": PAUSE_IMAGE}]
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            resources = c.get("resources") or {}
            for name, value in (resources.get("requests") or {}).items():
                if name not in OVERCOMMITTABLE:  # the API server wants limits equal to requests there
                    resources.setdefault("limits", {}).setdefault(name, value)
        if spec.get("priorityClassName"):
            spec.pop("priority", None)  # the Priority admission plugin sets it from the class
    return obj


CLUSTER_SCOPED = {"nodes", "namespaces", "priorityclasses", "schedulingprofiles",
                  "runtimeclasses", "storageclasses", "csinodes", "csidrivers", "persistentvolumes",
                  "customresourcedefinitions", "deviceclasses", "resourceslices", "devicetaintrules"}


async def eventually(check: Callable[[], Awaitable[T | None]], *, timeout: float = 30.0,
                     interval: float = 0.1, what: str = "condition") -> T:
    """Polls `check` until it returns something truthy; its last value or error is in the failure."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = await check()
        except ApiError as exc:
            last = exc
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s (last: {last!r})")
        await asyncio.sleep(interval)


def node(name: str, *, cpu: str = "4", memory: str = "32Gi", pods: str = "110",
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A Ready node as a kubelet would have registered it (scheduler_perf's node template)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": capacity, "allocatable": capacity,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                   "phase": "Running"},
    }


def pod(name: str, *, namespace: str = "default", cpu: str = "100m", memory: str = "500Mi",
        scheduler: str | None = None, priority_class: str | None = None, node_name: str | None = None,
        labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A pod with one pause container (scheduler_perf's pod template)."""
    body: dict[str, Any] = {
        "containers": [{"name": "pause", "image": PAUSE_IMAGE,
                        "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        **spec,
    }
    if scheduler:
        body["schedulerName"] = scheduler
    if priority_class:
        body["priorityClassName"] = priority_class
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": body}
