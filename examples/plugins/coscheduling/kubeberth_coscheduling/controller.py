"""The PodGroup status, as scheduler-plugins' PodGroup controller keeps it, written by kopf
handlers that run inside `kubeberth run` (or any kopf operator that imports this module).

`reconcile` is the controller's Reconcile, one step per call (a status patch brings the next
event, hence the next step): "" -> Pending; Pending -> Scheduling once the group has minMember
pods; then the running/succeeded/failed counts and the phase they give (Scheduling, Running,
Failed, Finished; back to Pending when pods go). Finished and Failed are final. Where upstream
leaves `scheduleStartTime` empty, we set it when the group enters Scheduling (and, since it is
set, leave out upstream's check that stops reconciling a group whose scheduleStartTime is 48
hours past its creation: upstream never sets the field, so the check never fires there).

The handlers keep an index of the labelled pods from kopf's watch of pods and of the PodGroups
from theirs, and patch `/status` with the scheduler's own API client (kopf's memo key
`kubeberth_api_client`, set by `kubeberth run`, which runs these handlers on the leader).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import kopf

from .podgroup import (
    FAILED,
    FINISHED,
    GROUP,
    PENDING,
    PLURAL,
    POD_GROUP_LABEL,
    RUNNING,
    SCHEDULING,
    VERSION,
)

log = logging.getLogger("kubeberth.coscheduling.controller")

@dataclass(frozen=True)
class PodSummary:
    """What the controller reads of a pod."""

    name: str
    phase: str
    owners: tuple[str, ...] = ()

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> PodSummary:
        meta = body.get("metadata") or {}
        owners = tuple(str(o.get("name", "")) for o in meta.get("ownerReferences") or [])
        return cls(str(meta.get("name", "")), str((body.get("status") or {}).get("phase") or "Pending"), owners)


@dataclass(frozen=True)
class Outcome:
    """What one reconcile decides: the status fields to patch (None: nothing)."""

    status: dict[str, Any] | None = None


def _count(pods: list[PodSummary]) -> tuple[int, int, int]:
    running = sum(1 for p in pods if p.phase == "Running")
    succeeded = sum(1 for p in pods if p.phase == "Succeeded")
    failed = sum(1 for p in pods if p.phase == "Failed")
    return running, succeeded, failed


def _occupied_by(namespace: str, pod: PodSummary) -> str:
    return ",".join(sorted(f"{namespace}/{owner}" for owner in pod.owners))


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def reconcile(pg: Mapping[str, Any], pods: list[PodSummary], now: datetime) -> Outcome:
    meta = pg.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    spec = pg.get("spec") or {}
    status = dict(pg.get("status") or {})
    min_member = int(spec.get("minMember") or 0)
    phase = str(status.get("phase") or "")
    if phase in (FINISHED, FAILED):
        return Outcome()
    pods = sorted(pods, key=lambda p: p.name)
    new = dict(status)
    if phase == "":
        new["phase"] = PENDING
    elif phase == PENDING:
        if len(pods) >= min_member:
            new["phase"] = SCHEDULING
            if pods and pods[0].owners:
                new["occupiedBy"] = _occupied_by(namespace, pods[0])
            if not status.get("scheduleStartTime"):
                new["scheduleStartTime"] = _rfc3339(now)
    else:
        running, succeeded, failed = _count(pods)
        new["running"], new["succeeded"], new["failed"] = running, succeeded, failed
        if len(pods) < min_member:
            new["phase"] = PENDING
        else:
            if succeeded + running < min_member:
                new["phase"] = SCHEDULING
            if succeeded + running >= min_member:
                new["phase"] = RUNNING
            if failed != 0 and failed + running + succeeded >= min_member:
                new["phase"] = FAILED
            if succeeded >= min_member:
                new["phase"] = FINISHED
    changed = {k: v for k, v in new.items() if status.get(k) != v and not (v == 0 and k not in status)}
    return Outcome(status=changed or None)


class _Lock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0  # holding it or waiting for it


class Index:
    """The labelled pods by group and the PodGroups, as the watches last showed them."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, PodSummary]] = {}
        self._pod_group: dict[str, tuple[str, str]] = {}  # pod uid -> its group
        self._locks: dict[tuple[str, str], _Lock] = {}

    def clear(self) -> None:
        self.groups.clear()
        self.pods.clear()
        self._pod_group.clear()
        self._locks.clear()

    @contextlib.asynccontextmanager
    async def lock(self, key: tuple[str, str]) -> AsyncIterator[None]:
        """The group's lock, held; kept only while someone holds it or waits for it (a lock per
        group ever seen would outlive the groups)."""
        entry = self._locks.get(key)
        if entry is None:
            entry = self._locks[key] = _Lock()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._locks.get(key) is entry:
                del self._locks[key]

    def pod_event(self, event_type: str | None, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Record the pod; the groups whose pods changed."""
        meta = body.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        namespace = str(meta.get("namespace") or "default")
        group = str((meta.get("labels") or {}).get(POD_GROUP_LABEL) or "")
        touched: list[tuple[str, str]] = []
        before = self._pod_group.pop(uid, None)
        if before is not None:
            members = self.pods.get(before)
            if members is not None:
                members.pop(uid, None)
                if not members:  # the group's last pod went: nothing kept for it
                    del self.pods[before]
            touched.append(before)
        if event_type != "DELETED" and group:
            key = (namespace, group)
            self.pods.setdefault(key, {})[uid] = PodSummary.of(body)
            self._pod_group[uid] = key
            if key not in touched:
                touched.append(key)
        return touched

    def group_event(self, event_type: str | None, body: Mapping[str, Any]) -> tuple[str, str]:
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        if event_type == "DELETED":
            self.groups.pop(key, None)
        else:
            self.groups[key] = body
        return key

    def pods_of(self, key: tuple[str, str]) -> list[PodSummary]:
        return list(self.pods.get(key, {}).values())


INDEX = Index()


class NoApiClient(RuntimeError):
    pass


def _api_client(memo: Any) -> Any:
    """The scheduler's kubernetes-asyncio ApiClient, which `kubeberth run` puts in kopf's memo."""
    client = memo.get("kubeberth_api_client") if hasattr(memo, "get") else None
    if client is None:
        raise NoApiClient("no API client in kopf's memo (kubeberth_api_client): these handlers run inside "
                          "`kubeberth run`, which loads this package through its entry point")
    return client


async def patch_status(api_client: Any, namespace: str, name: str, status: dict[str, Any]) -> Mapping[str, Any]:
    from kubernetes_asyncio.client import CustomObjectsApi

    api: Any = CustomObjectsApi(api_client)
    result: Mapping[str, Any] = await api.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, {"status": status},
        _content_type="application/merge-patch+json")
    return result


async def sync(key: tuple[str, str], memo: Any, index: Index | None = None) -> None:
    """Reconcile the group `key` once with what the index holds, and write what changed."""
    index = index if index is not None else INDEX
    async with index.lock(key):
        pg = index.groups.get(key)
        if pg is None:
            return
        outcome = reconcile(pg, index.pods_of(key), datetime.now(UTC))
        if outcome.status is None:
            return
        try:
            updated = await patch_status(_api_client(memo), key[0], key[1], outcome.status)
        except Exception as exc:  # the next event of the group or of its pods tries again
            log.warning("PodGroup %s/%s: status patch failed: %s", key[0], key[1], exc)
            return
        if key in index.groups:
            index.groups[key] = updated


@kopf.on.startup(id="coscheduling_index")
def forget_index(**_: Any) -> None:
    """kubeberth starts these handlers whenever a profile enables Coscheduling again: kopf lists the
    pods and groups anew then, and what went meanwhile must not linger in the index."""
    INDEX.clear()


@kopf.on.event(GROUP, VERSION, PLURAL, id="coscheduling_podgroup")
async def podgroup_event(*, type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    key = INDEX.group_event(type, body)
    if type != "DELETED":
        await sync(key, memo)


@kopf.on.event("", "v1", "pods", labels={POD_GROUP_LABEL: kopf.PRESENT}, id="coscheduling_pod")
async def pod_event(*, type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    for key in INDEX.pod_event(type, body):
        await sync(key, memo)
