"""`kubeberth snapshot`: a live cluster as one YAML stream for `kubeberth simulate`.

Lists, page by page, exactly the kinds the scheduler reads (scheduler/watched.py), strips what
simulate does not need (managedFields, last-applied annotations, status fields outside the
scheduler's view) and writes one multi-document YAML stream. `--namespace`/`--selector` choose
the pending pods to bring along; pods already on a node always come, since they take room on it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

from ..scheduler.watched import POD, SCHEDULING_PROFILE, WATCHED, WatchedKind, declared_kinds

DEFAULT_PAGE_SIZE = 500
# Status fields the scheduler reads, per kind; other kinds keep their whole status (PV/PVC phase...).
KEPT_STATUS = {
    "Pod": ("phase", "nominatedNodeName", "startTime", "conditions", "qosClass", "resourceClaimStatuses"),
    "Node": ("capacity", "allocatable", "conditions", "images", "declaredFeatures"),
}
DROPPED_META = ("managedFields", "resourceVersion", "generation", "selfLink")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class SnapshotError(RuntimeError):
    pass


def clean(obj: Mapping[str, Any], kind: WatchedKind) -> dict[str, Any]:
    """An object as simulate reads it: typed, without the server's bookkeeping."""
    out = {"apiVersion": f"{kind.group}/{kind.version}" if kind.group else kind.version, "kind": kind.kind,
           **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in DROPPED_META}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    kept = KEPT_STATUS.get(kind.kind)
    if kept is not None and isinstance(obj.get("status"), Mapping):
        out["status"] = {k: v for k, v in obj["status"].items() if k in kept}
    return out


class Lister:
    """Paginated lists over kubeberth's REST client."""

    def __init__(self, rest: Any, page_size: int, progress: TextIO) -> None:
        self.rest = rest
        self.page_size = page_size
        self.progress = progress

    async def list(self, kind: WatchedKind, *, path: str | None = None,
                   query: Mapping[str, str] | None = None, what: str = "") -> list[dict[str, Any]] | None:
        """Every item, page by page; None when the server does not serve the kind (404)."""
        from kubernetes_asyncio.client.exceptions import ApiException

        items: list[dict[str, Any]] = []
        token = ""
        pages = 0
        while True:
            params = {"limit": str(self.page_size), **(query or {})}
            if token:
                params["continue"] = token
            try:
                answer = await self.rest.request("GET", path or kind.path, query=params)
            except ApiException as exc:
                if exc.status == 404 and not items:
                    return None
                if exc.status == 410 and token:  # the continue token expired: list again from the start
                    items, token, pages = [], "", 0
                    continue
                raise SnapshotError(f"listing {what or kind.plural}: HTTP {exc.status} {exc.reason}") from None
            items += answer.get("items") or []
            pages += 1
            token = (answer.get("metadata") or {}).get("continue") or ""
            if pages > 1 or token:
                self.progress.write(f"\rlisting {what or kind.plural}: {len(items)}" + ("..." if token else "\n"))
                self.progress.flush()
            if not token:
                return items


async def take(rest: Any, *, namespace: str | None = None, selector: str | None = None,
               page_size: int = DEFAULT_PAGE_SIZE, progress: TextIO = sys.stderr,
               kinds: Sequence[WatchedKind] | None = None) -> list[dict[str, Any]]:
    """The cluster's objects, kinds in the scheduler's sync order (classes first, pods last):
    the table's and those the loaded plugins declare they read (`kinds` instead, if given)."""
    if kinds is None:
        from ..plugins import plugin_registry

        kinds = [*WATCHED, *declared_kinds(plugin_registry())]
    lister = Lister(rest, page_size, progress)
    out: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for kind in sorted(kinds, key=lambda k: k.order):
        if kind.kind == POD:
            items = await _pods(lister, kind, namespace, selector)
        else:
            listed = await lister.list(kind)
            if listed is None:
                progress.write(f"note: the server does not serve {kind.plural}; none in the snapshot\n")
                continue
            items = listed
        counts[kind.kind] = len(items)
        out += [clean(o, kind) for o in items]
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    progress.write(f"snapshot: {summary or 'nothing'}\n")
    for line in refused_profiles(out):
        progress.write(f"warning: {line}; simulate refuses this snapshot until the profile is fixed or left out\n")
    return out


def refused_profiles(objects: list[dict[str, Any]]) -> list[str]:
    """What simulate will say of each SchedulingProfile of the snapshot it refuses (validated as
    the operator validates one), and whether the cluster's kubeberth refused it too."""
    from .config_files import CheckedProfile, check_profile, check_served
    from .inputs import InputError

    lines = []
    checked: list[CheckedProfile] = []
    for obj in objects:
        if obj.get("kind") != SCHEDULING_PROFILE:
            continue
        try:
            checked.append(check_profile(obj, None))
        except InputError as exc:
            conditions = (obj.get("status") or {}).get("conditions") or []
            refused = any(c.get("type") == "Accepted" and c.get("status") == "False" for c in conditions)
            lines.append(f"{exc}" + (" (the cluster's kubeberth refuses it too: Accepted=False)" if refused else ""))
    try:
        check_served(checked)
    except InputError as exc:
        lines.append(str(exc))
    return lines


async def _pods(lister: Lister, kind: WatchedKind, namespace: str | None,
                selector: str | None) -> list[dict[str, Any]]:
    if namespace is None and selector is None:
        return await lister.list(kind) or []
    bound = await lister.list(kind, query={"fieldSelector": "spec.nodeName!="}, what="pods on nodes") or []
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else None
    query = {"fieldSelector": "spec.nodeName=", **({"labelSelector": selector} if selector else {})}
    pending = await lister.list(kind, path=path, query=query, what="pending pods") or []
    return bound + pending


async def _snapshot(out: TextIO, *, kubeconfig: str | None, context: str | None, server: str | None,
                    namespace: str | None, selector: str | None, page_size: int, request_timeout: float) -> None:
    from ..operator.connection import load_configuration
    from ..operator.options import OperatorConfig
    from ..operator.rest import RestClient

    cfg = await load_configuration(OperatorConfig(kubeconfig=kubeconfig, context=context, server=server))
    rest = RestClient(cfg, pool_size=4, request_timeout=request_timeout, user_agent="kubeberth-snapshot")
    try:
        objects = await take(rest, namespace=namespace, selector=selector, page_size=page_size)
    finally:
        await rest.close()
    yaml.safe_dump_all(objects, out, sort_keys=False)


def write_snapshot(out: TextIO, *, kubeconfig: str | None = None, context: str | None = None,
                   server: str | None = None, namespace: str | None = None, selector: str | None = None,
                   page_size: int = DEFAULT_PAGE_SIZE, request_timeout: float = 60.0) -> None:
    """`kubeberth snapshot`: log in as kubectl would (`kubeconfig`, `context`, or a `server` URL
    without credentials), take the snapshot (`take`) and write it to `out` as one YAML stream.
    Raises SnapshotError for what stops it (a bad kubeconfig, an unreachable server, a list
    refused), its message one line."""
    import aiohttp
    from kubernetes_asyncio.config import ConfigException

    try:
        asyncio.run(_snapshot(out, kubeconfig=kubeconfig, context=context, server=server, namespace=namespace,
                              selector=selector, page_size=page_size, request_timeout=request_timeout))
    except (OSError, aiohttp.ClientError, ConfigException) as exc:
        raise SnapshotError(str(exc)) from exc
