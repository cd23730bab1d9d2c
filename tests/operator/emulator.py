"""A Kubernetes API server emulator for the operator's integration tests.

Built on kmock's `KubernetesScaffold` (API discovery, served over HTTP on 127.0.0.1 by
`kmock.Server`) with the semantics the scheduler operator relies on, which kmock's
generic `KubernetesEmulator` leaves out:

- a global resourceVersion, uids, creationTimestamp, metadata.generation bumped on
  spec changes (pods' too, as v1.37 does, but not by a binding); lists carry the list
  resourceVersion, watches resume from one (or answer 410 Gone when it is too old);
- label selectors and field selectors (metadata.name/namespace, spec.nodeName,
  status.phase, any dotted path) on lists and watches;
- the pods/binding subresource: sets spec.nodeName and PodScheduled=True (and clears
  status.nominatedNodeName), answers 409 when the pod is already assigned, is terminating,
  or has another UID; a status write that sets a bound pod's nominatedNodeName is a 422;
- status subresources: the main resource ignores status, /status only writes status;
- merge, strategic-merge (conditions by type, ...) and JSON patches, with
  resourceVersion preconditions;
- deletes with UID/resourceVersion preconditions, finalizers, and graceful deletion
  of pods bound to a node (deletionTimestamp now, gone after `pod_grace_seconds`);
- injectable faults: an HTTP error, a delay (timeout), or an error *after* the
  change was applied (a lost response), per method/resource/subresource/name;
- a log of every request for assertions (e.g. nothing ever patched a Pod's metadata).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp.web
import jsonpatch
import kmock
import orjson
from kmock._internal import parsing, rendering

Obj = dict[str, Any]

_kmock_parse_path = parsing.parse_path


def _parse_path(path: str) -> parsing.ParsedPath:
    """kmock's parser, plus the Namespace objects themselves (/api/v1/namespaces[/name[/status]])."""
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "namespaces"] and (len(parts) <= 4 or parts[4] in ("status", "finalize")):
        return parsing.ParsedPath(group="", version="v1", plural="namespaces",
                                  name=parts[3] if len(parts) > 3 else None,
                                  subresource=parts[4] if len(parts) > 4 else None)
    return _kmock_parse_path(path)


parsing.parse_path = _parse_path


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    key: str = ""  # the name it is stored, listed and logged under when `plural` is taken (another group's)

    @property
    def store(self) -> str:
        return self.key or self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


KINDS: list[Kind] = [
    Kind("", "v1", "pods", "Pod", True, frozenset({"status", "binding"})),
    Kind("", "v1", "nodes", "Node", False, frozenset({"status"})),
    Kind("", "v1", "namespaces", "Namespace", False, frozenset({"status"})),
    Kind("", "v1", "events", "Event", True),
    # events.k8s.io/v1 Events, stored apart from core/v1 ones (no conversion between the two here).
    Kind("events.k8s.io", "v1", "events", "Event", True, key="events.events.k8s.io"),
    Kind("", "v1", "services", "Service", True, frozenset({"status"})),
    Kind("", "v1", "replicationcontrollers", "ReplicationController", True, frozenset({"status"})),
    Kind("", "v1", "persistentvolumes", "PersistentVolume", False, frozenset({"status"})),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, frozenset({"status"})),
    Kind("apps", "v1", "replicasets", "ReplicaSet", True, frozenset({"status"})),
    Kind("apps", "v1", "statefulsets", "StatefulSet", True, frozenset({"status"})),
    Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    Kind("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True, frozenset({"status"})),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, frozenset({"status"})),
    Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    Kind("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    Kind("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    Kind("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    Kind("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    Kind("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    Kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, frozenset({"status"})),
    Kind("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    Kind("resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", False),
    Kind("kubeberth.io", "v1alpha1", "schedulingprofiles", "SchedulingProfile", False, frozenset({"status"})),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True),
    Kind("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
         frozenset({"status"})),
]
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

# Strategic-merge-patch list keys of the fields the operator and tests patch.
SMP_MERGE_KEYS: dict[str, str | None] = {
    "conditions": "type", "containers": "name", "initContainers": "name", "ownerReferences": "uid",
    "volumes": "name", "env": "name", "finalizers": None, "taints": "key", "tolerations": None,
}


class ApiError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    def as_status(self) -> Obj:
        return {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.status}


def conflict(message: str) -> ApiError:
    return ApiError(409, "Conflict", message)


def not_found(kind: Kind, name: str) -> ApiError:
    what = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    return ApiError(404, "NotFound", f'{what} "{name}" not found')


def clone(obj: Any) -> Any:
    """A deep copy of JSON data (several times faster than copy.deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


def _json(body: Any, status: int) -> aiohttp.web.Response:
    return aiohttp.web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- selectors ---------------------------------------------------------------------------

_LABEL_REQ = re.compile(
    r"^\s*(?P<key>[^\s!=,()]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[^\s,()]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$")


def _split_selector(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def label_matcher(selector: str) -> Callable[[Mapping[str, str]], bool]:
    reqs: list[Callable[[Mapping[str, str]], bool]] = []
    for part in _split_selector(selector or ""):
        part = part.strip()
        if not part:
            continue
        if part.startswith("!"):
            key = part[1:].strip()
            reqs.append(lambda labels, k=key: k not in labels)
            continue
        m = _LABEL_REQ.match(part)
        if m is None:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
        key = m["key"]
        if m["op"] in ("=", "=="):
            reqs.append(lambda labels, k=key, v=m["value"]: labels.get(k) == v)
        elif m["op"] == "!=":
            reqs.append(lambda labels, k=key, v=m["value"]: labels.get(k) != v)
        elif m["setop"]:
            values = {v.strip() for v in m["values"].split(",") if v.strip()}
            if m["setop"] == "in":
                reqs.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                reqs.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        else:
            reqs.append(lambda labels, k=key: k in labels)
    return lambda labels: all(r(labels) for r in reqs)


def _dotted(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_matcher(selector: str) -> Callable[[Mapping[str, Any]], bool]:
    reqs: list[Callable[[Mapping[str, Any]], bool]] = []
    for part in (selector or "").split(","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([\w.]+)\s*(==|=|!=)\s*(.*)$", part)
        if m is None:
            raise ApiError(400, "BadRequest", f"invalid field selector: {part!r}")
        path, op, value = m.groups()
        if op == "!=":
            reqs.append(lambda o, p=path, v=value: _dotted(o, p) != v)
        else:
            reqs.append(lambda o, p=path, v=value: _dotted(o, p) == v)
    return lambda obj: all(r(obj) for r in reqs)


# --- patches -------------------------------------------------------------------------------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return clone(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, key: str | None = None) -> Any:
    """A strategic merge patch for the list fields in SMP_MERGE_KEYS (others are replaced)."""
    if isinstance(patch, Mapping):
        result = dict(target) if isinstance(target, Mapping) else {}
        for k, value in patch.items():
            if k.startswith("$"):
                continue
            if value is None:
                result.pop(k, None)
            else:
                result[k] = strategic_merge_patch(result.get(k), value, k)
        return result
    if isinstance(patch, list) and key in SMP_MERGE_KEYS and isinstance(target, list):
        merge_key = SMP_MERGE_KEYS[key]
        result_list = list(target)
        for item in patch:
            if merge_key is None or not isinstance(item, Mapping):
                if item not in result_list:
                    result_list.append(clone(item))
                continue
            for i, existing in enumerate(result_list):
                if isinstance(existing, Mapping) and existing.get(merge_key) == item.get(merge_key):
                    result_list[i] = strategic_merge_patch(existing, item)
                    break
            else:
                result_list.append({k: v for k, v in item.items() if v is not None})
        return result_list
    return clone(patch)


# --- faults --------------------------------------------------------------------------------

@dataclass
class Fault:
    """An injected failure: matching requests are answered with `status` (None: no error).

    `delay` holds the answer back (for client timeouts); `after_apply` performs the
    request first and then fails it (a response lost after the change was made).
    `times` is how many requests it affects (None: all of them).
    """

    method: str | None = None
    plural: str | None = None
    subresource: str | None = None  # "" for the main resource, None for any
    name: str | None = None
    status: int | None = 500
    times: int | None = 1
    delay: float = 0.0
    after_apply: bool = False
    watch: bool | None = None  # True: only watch requests, False: all but watch requests
    message: str = "injected fault"
    hits: int = 0

    def matches(self, method: str, kind: Kind, subresource: str, name: str | None, watch: bool = False) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        return ((self.method is None or self.method.upper() == method)
                and (self.watch is None or self.watch == watch)
                and (self.plural is None or self.plural == kind.store)
                and (self.subresource is None or self.subresource == subresource)
                and (self.name is None or self.name == name))


@dataclass
class Logged:
    method: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str
    status: int
    body: Any = None
    content_type: str = ""
    fault: bool = False
    watch: bool = False


@dataclass
class _Watcher:
    kind: Kind
    namespace: str | None
    labels: Callable[[Mapping[str, str]], bool]
    fields: Callable[[Mapping[str, Any]], bool]
    queue: asyncio.Queue[tuple[str, Obj, Obj | None] | None] = field(default_factory=asyncio.Queue)

    def visible(self, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels(meta.get("labels") or {}) and self.fields(obj)


class Emulator(kmock.KubernetesScaffold):
    """The stateful API server. Also usable directly (create/get/patch/delete) by tests."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.kinds: dict[str, Kind] = {}
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.history: list[tuple[int, str, str, Obj, Obj | None]] = []
        self.rv = 1000
        self.compacted_rv = 0  # watches from an older resourceVersion get 410 Gone
        self.faults: list[Fault] = []
        self.log: list[Logged] = []
        self.pod_grace_seconds = 0.2
        self.bindings: list[tuple[str, str, str]] = []  # (namespace/name, uid, node) of successful binds
        self.token: str | None = None  # when set, every request without "Bearer <token>" is answered 401
        self.unauthorized = 0
        self._watchers: list[_Watcher] = []
        self._timers: list[asyncio.TimerHandle] = []
        for kind in KINDS:
            self.add_kind(kind)

    def add_kind(self, kind: Kind) -> None:
        self.kinds[kind.store] = kind
        self.resources[f"{kind.api_version}/{kind.plural}" if kind.group else f"v1/{kind.plural}"] = \
            kmock.ResourceInfo(namespaced=kind.namespaced, kind=kind.kind, singular=kind.kind.lower(),
                               verbs=VERBS, subresources=set(kind.subresources))

    # --- test helpers (in-loop, no HTTP) ---

    def inject(self, **kwargs: Any) -> Fault:
        fault = Fault(**kwargs)
        self.faults.append(fault)
        return fault

    def create(self, plural: str, obj: Mapping[str, Any]) -> Obj:
        return clone(self._create(self.kinds[plural], None, obj))

    def get(self, plural: str, name: str, namespace: str | None = None) -> Obj | None:
        kind = self.kinds[plural]
        obj = self.objects.get((plural, namespace if kind.namespaced else None, name))
        return clone(obj) if obj is not None else None

    def list(self, plural: str, namespace: str | None = None) -> list[Obj]:
        keys = sorted((k for k in self.objects if k[0] == plural and (namespace is None or k[1] == namespace)),
                      key=lambda k: (k[1] or "", k[2]))
        return [clone(self.objects[k]) for k in keys]

    def patch(self, plural: str, name: str, patch: Mapping[str, Any], namespace: str | None = None,
              subresource: str = "") -> Obj:
        kind = self.kinds[plural]
        return clone(self._patch(kind, namespace if kind.namespaced else None, name, subresource,
                                         patch, "application/merge-patch+json"))

    def delete(self, plural: str, name: str, namespace: str | None = None, grace: bool = True) -> None:
        kind = self.kinds[plural]
        self._delete(kind, namespace if kind.namespaced else None, name, {} if grace else {"gracePeriodSeconds": 0})

    def requests(self, method: str | None = None, plural: str | None = None,
                 subresource: str | None = None) -> list[Logged]:
        return [r for r in self.log if (method is None or r.method == method)
                and (plural is None or r.plural == plural)
                and (subresource is None or r.subresource == subresource)]

    def disconnect_watches(self) -> None:
        """Close every open watch stream (clients reconnect with their last resourceVersion)."""
        for w in list(self._watchers):
            w.queue.put_nowait(None)

    def compact(self) -> None:
        """Forget the history: watches from older resourceVersions now get 410 Gone."""
        self.compacted_rv = self.rv
        self.history.clear()

    def close(self) -> None:
        for t in self._timers:
            t.cancel()
        self.disconnect_watches()

    # --- the state machine ---

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _notify(self, kind: Kind, etype: str, obj: Obj, old: Obj | None) -> None:
        snapshot = clone(obj)
        self.history.append((self.rv, kind.store, etype, snapshot, old))
        for w in self._watchers:
            if w.kind is kind:
                w.queue.put_nowait((etype, snapshot, old))

    def _key(self, kind: Kind, namespace: str | None, name: str) -> tuple[str, str | None, str]:
        return (kind.store, namespace if kind.namespaced else None, name)

    def _create(self, kind: Kind, namespace: str | None, body: Mapping[str, Any]) -> Obj:
        if not isinstance(body, Mapping):
            raise ApiError(400, "BadRequest", "the body must be an object")
        obj: Obj = clone(dict(body))
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        name = meta.get("name")
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        if kind.namespaced:
            ns = namespace or meta.get("namespace") or "default"
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise ApiError(400, "BadRequest", "the namespace of the object does not match the URL")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
            ns = None
        key = self._key(kind, ns, name)
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", f'{kind.plural} "{name}" already exists')
        obj["apiVersion"] = kind.api_version
        obj["kind"] = kind.kind
        meta["uid"] = meta.get("uid") or str(uuid.uuid4())
        meta["creationTimestamp"] = meta.get("creationTimestamp") or now_iso()
        meta["generation"] = 1
        meta.pop("deletionTimestamp", None)
        if kind.plural == "pods":
            self._admit_pod(obj)
        meta["resourceVersion"] = self._next_rv()
        self.objects[key] = obj
        self._notify(kind, "ADDED", obj, None)
        return obj

    def _admit_pod(self, pod: Obj) -> None:
        spec = pod.setdefault("spec", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        status = pod.setdefault("status", {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", "BestEffort")
        if spec.get("priority") is None:  # the Priority admission plugin
            pcs = {k[2]: o for k, o in self.objects.items() if k[0] == "priorityclasses"}
            cls = pcs.get(spec.get("priorityClassName") or "")
            if cls is None and not spec.get("priorityClassName"):
                defaults = [c for c in pcs.values() if c.get("globalDefault")]
                cls = defaults[0] if defaults else None
                if cls is not None:
                    spec["priorityClassName"] = cls["metadata"]["name"]
            if cls is not None:
                spec["priority"] = int(cls.get("value", 0))
                spec.setdefault("preemptionPolicy", cls.get("preemptionPolicy") or "PreemptLowerPriority")
            elif not spec.get("priorityClassName"):
                spec["priority"] = 0

    def _get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        obj = self.objects.get(self._key(kind, namespace, name))
        if obj is None:
            raise not_found(kind, name)
        return obj

    def _store(self, kind: Kind, obj: Obj, old: Obj, *, count_spec_change: bool = True) -> Obj:
        meta = obj["metadata"]
        # Pods too (v1.37's pod generation tracking), except through pods/binding, which writes
        # storage directly and leaves the generation alone.
        if count_spec_change and old.get("spec") != obj.get("spec") and kind.plural != "events":
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        meta["resourceVersion"] = self._next_rv()
        key = self._key(kind, meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            if kind.plural == "pods" and self._graceful_pending(obj):
                self.objects[key] = obj
                self._notify(kind, "MODIFIED", obj, old)
                return obj
            del self.objects[key]
            self._notify(kind, "DELETED", obj, old)
            return obj
        self.objects[key] = obj
        self._notify(kind, "MODIFIED", obj, old)
        return obj

    def _graceful_pending(self, pod: Obj) -> bool:
        return bool(pod["metadata"].get("deletionGracePeriodSeconds")) and bool(
            (pod.get("spec") or {}).get("nodeName"))

    def _check_rv(self, current: Obj, wanted: Any) -> None:
        if wanted and str(wanted) != current["metadata"]["resourceVersion"]:
            raise conflict(f'Operation cannot be fulfilled on {current["kind"].lower()}s '
                           f'"{current["metadata"]["name"]}": the object has been modified; '
                           f'please apply your changes to the latest version and try again')

    def _patch(self, kind: Kind, namespace: str | None, name: str, subresource: str, patch: Any,
               content_type: str) -> Obj:
        current = self._get(kind, namespace, name)
        old = clone(current)
        base = clone(current)
        ctype = content_type.split(";")[0].strip()
        if ctype == "application/json-patch+json":
            try:
                patched = jsonpatch.apply_patch(base, patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise ApiError(422, "Invalid", f"the JSON patch failed: {exc}") from exc
        elif ctype == "application/strategic-merge-patch+json":
            if not isinstance(patch, Mapping):
                raise ApiError(400, "BadRequest", "a strategic merge patch must be an object")
            self._check_rv(current, (patch.get("metadata") or {}).get("resourceVersion"))
            patched = strategic_merge_patch(base, patch)
        else:
            if not isinstance(patch, Mapping):
                raise ApiError(400, "BadRequest", "a merge patch must be an object")
            self._check_rv(current, (patch.get("metadata") or {}).get("resourceVersion"))
            patched = merge_patch(base, patch)
        return self._apply_update(kind, current, old, patched, subresource)

    def _apply_update(self, kind: Kind, current: Obj, old: Obj, new: Obj, subresource: str) -> Obj:
        if subresource == "status":
            result = clone(current)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            if kind.plural == "pods" and (current.get("spec") or {}).get("nodeName"):
                # ClearingNominatedNodeNameAfterBinding (beta, on at v1.37): ValidatePodStatusUpdate
                nominated = (result.get("status") or {}).get("nominatedNodeName")
                if nominated and nominated != (current.get("status") or {}).get("nominatedNodeName"):
                    raise ApiError(422, "Invalid", f'Pod "{current["metadata"]["name"]}" is invalid: '
                                   "status.nominatedNodeName: Forbidden: may not be set on pods that are "
                                   "already bound to a node")
        elif subresource:
            raise ApiError(405, "MethodNotAllowed", f"cannot update the {subresource} subresource")
        else:
            result = new
            if "status" in kind.subresources:  # the main resource does not write status
                if "status" in current:
                    result["status"] = clone(current["status"])
                else:
                    result.pop("status", None)
            for fixed in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                          "deletionGracePeriodSeconds"):
                if fixed in current["metadata"]:
                    result.setdefault("metadata", {})[fixed] = current["metadata"][fixed]
                else:
                    result.setdefault("metadata", {}).pop(fixed, None)
            if kind.plural == "pods" and (current.get("spec") or {}).get("nodeName") != \
                    (result.get("spec") or {}).get("nodeName") and (current.get("spec") or {}).get("nodeName"):
                raise ApiError(422, "Invalid", "spec.nodeName: Forbidden: pod updates may not change nodeName")
        result["apiVersion"] = kind.api_version
        result["kind"] = kind.kind
        return self._store(kind, result, old)

    def _replace(self, kind: Kind, namespace: str | None, name: str, subresource: str, body: Any) -> Obj:
        current = self._get(kind, namespace, name)
        if not isinstance(body, Mapping):
            raise ApiError(400, "BadRequest", "the body must be an object")
        self._check_rv(current, (body.get("metadata") or {}).get("resourceVersion"))
        return self._apply_update(kind, current, clone(current), clone(dict(body)), subresource)

    def _bind(self, namespace: str | None, name: str, body: Any) -> Obj:
        kind = self.kinds["pods"]
        pod = self._get(kind, namespace, name)
        if not isinstance(body, Mapping) or not (body.get("target") or {}).get("name"):
            raise ApiError(422, "Invalid", "target.name: Required value")
        want_uid = (body.get("metadata") or {}).get("uid")
        if want_uid and want_uid != pod["metadata"]["uid"]:
            raise conflict(f'Operation cannot be fulfilled on pods/binding "{name}": '
                           f"Precondition failed: UID in precondition: {want_uid}, "
                           f"UID in object meta: {pod['metadata']['uid']}")
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict(f'Operation cannot be fulfilled on pods/binding "{name}": '
                           f"pod {name} is being deleted, cannot be assigned to a host")
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            raise conflict(f'Operation cannot be fulfilled on pods/binding "{name}": '
                           f'pod {name} is already assigned to node "{node}"')
        old = clone(pod)
        new = clone(pod)
        target = body["target"]["name"]
        new.setdefault("spec", {})["nodeName"] = target
        (new.get("status") or {}).pop("nominatedNodeName", None)  # ClearingNominatedNodeNameAfterBinding
        new["status"] = strategic_merge_patch(new.get("status") or {}, {"conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": now_iso()}]})
        for cond in new["status"]["conditions"]:
            if cond.get("type") == "PodScheduled":  # replaced whole: no reason, message, observedGeneration
                cond.pop("reason", None)
                cond.pop("message", None)
                cond.pop("observedGeneration", None)
        self.bindings.append((f"{pod['metadata']['namespace']}/{name}", pod["metadata"]["uid"], target))
        self._store(kind, new, old, count_spec_change=False)
        return {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Success", "code": 201}

    def _delete(self, kind: Kind, namespace: str | None, name: str, options: Any) -> Obj:
        current = self._get(kind, namespace, name)
        options = options if isinstance(options, Mapping) else {}
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != current["metadata"]["uid"]:
            raise conflict(f'Operation cannot be fulfilled on {kind.plural} "{name}": '
                           f"Precondition failed: UID in precondition: {pre['uid']}, "
                           f"UID in object meta: {current['metadata']['uid']}")
        if pre.get("resourceVersion"):
            self._check_rv(current, pre["resourceVersion"])
        old = clone(current)
        if current["metadata"].get("deletionTimestamp"):
            grace = options.get("gracePeriodSeconds")
            if grace == 0 and not current["metadata"].get("finalizers"):
                return self._finalize(kind, namespace, name)
            return current
        grace = options.get("gracePeriodSeconds")
        bound = kind.plural == "pods" and bool((current.get("spec") or {}).get("nodeName"))
        graceful = bound and grace != 0 and self.pod_grace_seconds > 0
        if current["metadata"].get("finalizers") or graceful:
            new = clone(current)
            new["metadata"]["deletionTimestamp"] = now_iso()
            if graceful:
                new["metadata"]["deletionGracePeriodSeconds"] = int(
                    grace if grace is not None else (current.get("spec") or {}).get(
                        "terminationGracePeriodSeconds", 30))
                loop = asyncio.get_running_loop()
                self._timers.append(loop.call_later(self.pod_grace_seconds, self._finalize_quietly,
                                                    kind, namespace, name, new["metadata"]["uid"]))
            return self._store(kind, new, old)
        del self.objects[self._key(kind, namespace, name)]
        current["metadata"]["resourceVersion"] = self._next_rv()
        self._notify(kind, "DELETED", current, old)
        return current

    def _finalize(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        obj = self.objects.pop(self._key(kind, namespace, name))
        old = clone(obj)
        obj["metadata"]["resourceVersion"] = self._next_rv()
        self._notify(kind, "DELETED", obj, old)
        return obj

    def _finalize_quietly(self, kind: Kind, namespace: str | None, name: str, uid: str) -> None:
        obj = self.objects.get(self._key(kind, namespace, name))
        if obj is not None and obj["metadata"]["uid"] == uid and not obj["metadata"].get("finalizers"):
            self._finalize(kind, namespace, name)

    def _list(self, kind: Kind, namespace: str | None, params: Mapping[str, str]) -> Obj:
        labels = label_matcher(params.get("labelSelector", ""))
        fields = field_matcher(params.get("fieldSelector", ""))
        items = [clone(o) for (p, ns, _), o in self.objects.items()
                 if p == kind.store and (namespace is None or ns == namespace)
                 and labels((o.get("metadata") or {}).get("labels") or {}) and fields(o)]
        items.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        return {"apiVersion": kind.api_version, "kind": f"{kind.kind}List",
                "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    # --- HTTP ---

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            self.unauthorized += 1  # as kube-apiserver: authentication before anything else, discovery included
            return self._error(ApiError(401, "Unauthorized", "Unauthorized"))
        res = request.resource
        kind = (self.kinds.get(f"{res.plural}.{res.group}") or self.kinds.get(res.plural)
                if res is not None and res.plural else None)
        if kind is None or res is None or (kind.group, kind.version) != (res.group, res.version):
            return await super()._handle(request)
        method = request.method.value.upper() if hasattr(request.method, "value") else str(request.method).upper()
        subresource = request.subresource or ""
        name = request.name
        namespace = request.namespace if kind.namespaced else None
        raw = request._raw_request
        content_type = raw.headers.get("Content-Type", "") if raw is not None else ""
        entry = Logged(method, kind.store, namespace, name, subresource, 0, request.data, content_type,
                       watch=request.params.get("watch") in ("true", "1"))
        self.log.append(entry)

        fault = next((f for f in self.faults if f.matches(method, kind, subresource, name, entry.watch)), None)
        if fault is not None:
            fault.hits += 1
            entry.fault = True
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.status is not None and not fault.after_apply:
                entry.status = fault.status
                reason = {401: "Unauthorized", 403: "Forbidden"}.get(
                    fault.status, "InternalError" if fault.status >= 500 else "Conflict")
                return self._error(ApiError(fault.status, reason, fault.message))

        try:
            if method == "GET" and entry.watch:
                entry.status = 200
                return await self._watch(request, kind, namespace)
            result, status = self._dispatch(method, kind, namespace, name, subresource, request.data,
                                             content_type, request.params)
        except ApiError as exc:
            entry.status = exc.status
            return self._error(exc)
        if fault is not None and fault.after_apply and fault.status is not None:
            entry.status = fault.status
            return self._error(ApiError(fault.status, "InternalError", fault.message))
        entry.status = status
        return _json(result, status)

    # Answers are serialised as soon as they are made (`_json`): stored objects need no copy here.
    def _dispatch(self, method: str, kind: Kind, namespace: str | None, name: str | None, subresource: str,
                  data: Any, content_type: str, params: Mapping[str, str]) -> tuple[Any, int]:
        if name is None:
            if method == "GET":
                return self._list(kind, namespace, params), 200
            if method == "POST":
                return self._create(kind, namespace, data or {}), 201
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on a collection")
        if subresource == "binding" and kind.plural == "pods":
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", "only POST on pods/binding")
            return self._bind(namespace, name, data), 201
        if subresource and subresource not in kind.subresources:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({subresource})")
        if method == "GET":
            return self._get(kind, namespace, name), 200
        if method == "PATCH":
            return self._patch(kind, namespace, name, subresource, data, content_type), 200
        if method == "PUT":
            return self._replace(kind, namespace, name, subresource, data), 200
        if method == "DELETE":
            return self._delete(kind, namespace, name, data), 200
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")

    def _error(self, exc: ApiError) -> aiohttp.web.Response:
        return _json(exc.as_status(), exc.status)

    async def _watch(self, request: rendering.Request, kind: Kind, namespace: str | None
                     ) -> aiohttp.web.StreamResponse:
        params = request.params
        watcher = _Watcher(kind, namespace, label_matcher(params.get("labelSelector", "")),
                           field_matcher(params.get("fieldSelector", "")))
        since = params.get("resourceVersion") or ""
        backlog: list[tuple[str, Obj, Obj | None]] = []
        gone = False
        # Snapshot and subscribe without yielding to the loop: no event is lost or doubled.
        if since and since != "0":
            if int(since) < self.compacted_rv:
                gone = True
            else:
                backlog = [(etype, obj, old) for rv, plural, etype, obj, old in self.history
                           if plural == kind.store and rv > int(since)]
        else:
            backlog = [("ADDED", clone(o), None) for (p, _, _), o in self.objects.items()
                       if p == kind.store]
        self._watchers.append(watcher)
        assert request._raw_request is not None
        response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
        try:
            await response.prepare(request._raw_request)
            if gone:
                await response.write(json.dumps({"type": "ERROR", "object": {
                    "apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 410, "reason": "Expired",
                    "message": f"too old resource version: {since} ({self.compacted_rv})"}}).encode() + b"\n")
                return response
            timeout = float(params["timeoutSeconds"]) if params.get("timeoutSeconds") else None
            async with asyncio.timeout(timeout):
                for etype, obj, old in backlog:
                    await self._write_event(response, watcher, etype, obj, old)
                while True:
                    item = await watcher.queue.get()
                    if item is None:
                        break
                    await self._write_event(response, watcher, *item)
        except (TimeoutError, ConnectionResetError):
            pass
        finally:
            self._watchers.remove(watcher)
        return response

    async def _write_event(self, response: aiohttp.web.StreamResponse, watcher: _Watcher, etype: str,
                           obj: Obj, old: Obj | None) -> None:
        now_visible = watcher.visible(obj)
        was_visible = watcher.visible(old)
        if etype == "MODIFIED" and not now_visible and was_visible:
            etype = "DELETED"
        elif etype == "MODIFIED" and now_visible and not was_visible and old is not None:
            etype = "ADDED"
        elif etype == "DELETED" and not (now_visible or was_visible):
            return
        elif etype != "DELETED" and not now_visible:
            return
        await response.write(orjson.dumps({"type": etype, "object": obj}) + b"\n")


def events_for(emulator: Emulator, name: str, reason: str | None = None,
               namespace: str = "default") -> list[Obj]:
    """The Events about a pod (optionally of one reason), each as written: the scheduling events
    (events.k8s.io/v1: `regarding`, `note`, `series`), then the explanations (core/v1)."""
    return [e for store, ref in (("events.events.k8s.io", "regarding"), ("events", "involvedObject"))
            for e in emulator.list(store, namespace)
            if (e.get(ref) or {}).get("name") == name and (reason is None or e.get("reason") == reason)]


def series_count(event: Mapping[str, Any]) -> int:
    """How many times an events.k8s.io/v1 Event was observed, as far as written: 1 without a series."""
    return int((event.get("series") or {}).get("count") or 1)


def pods_on(emulator: Emulator, node: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in emulator.list("pods") if (p.get("spec") or {}).get("nodeName") == node)


def make_node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
              labels: Mapping[str, str] | None = None, taints: Iterable[Mapping[str, Any]] = ()) -> Obj:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity),
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def make_pod(name: str, cpu: str = "100m", memory: str = "128Mi", *, namespace: str = "default",
             scheduler: str = "default-scheduler", node: str | None = None, priority: int | None = None,
             labels: Mapping[str, str] | None = None, priority_class: str | None = None) -> Obj:
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
            "spec": spec}
