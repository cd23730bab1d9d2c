"""Suggestions in the cluster: for a pod annotated `kubeberth.io/suggest: "true"` (and
`kubeberth.io/explain: "true"`, whose explanation carries them) that the live scheduler left
unschedulable, the what-if input is taken from the scheduler's own state (its profiles, the
nodes and pods of its cache, its pending pods, the PodGroups and the other objects it lists) and
`suggest` runs on it in a worker thread, off the event loop. At most one search per pod per
`interval` seconds (the last answer is reused in between) and one at a time.

What it cannot see, it leaves out: objects of kinds only plugins of one's own read. Its
answers are then those `kubeberth simulate --suggest` gives on a `kubeberth snapshot` of the
same moment, up to the state the scheduler had not yet observed."""

from __future__ import annotations

import asyncio
import copy
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...clock import Clock
from ..engine import run_simulation
from .search import by_pod, suggest

if TYPE_CHECKING:
    from ...model import Pod
    from ...scheduler import Scheduler

SUGGEST_ANNOTATION = "kubeberth.io/suggest"
PROFILE_API = "kubeberth.io/v1alpha1"


def wants_suggestions(pod: Pod) -> bool:
    """The opt-in: the pod carries `kubeberth.io/suggest: "true"`."""
    annotations = (pod.raw.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(SUGGEST_ANNOTATION, "")).lower() == "true"


def _with_kind(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    out = dict(obj)
    out.setdefault("kind", kind)
    return out


def live_objects(sched: Scheduler) -> list[dict[str, Any]]:
    """The scheduler's view of the cluster as simulate's input (deep copies: the caller may hand
    them to another thread)."""
    out: list[dict[str, Any]] = []
    for name, fw in sched.profiles.items():
        spec = fw.spec.model_dump(mode="json", exclude_none=True)
        out.append({"apiVersion": PROFILE_API, "kind": "SchedulingProfile", "metadata": {"name": name}, "spec": spec})
    for kind in sched.ctx.objects.kinds():
        out.extend(_with_kind(o, kind) for o in sched.ctx.objects.list(kind))
    for key in list(sched.pod_groups.keys()):
        pg = sched.pod_groups.pod_group(str(key))
        if pg is not None:
            out.append(_with_kind(pg.raw, "PodGroup"))
    for ni in sched.cache.snapshot().node_infos:
        if ni.node is not None:
            out.append(_with_kind(ni.node.raw, "Node"))
    for p in sched.all_pods():
        raw = _with_kind(p.raw, "Pod")
        if p.node_name:  # bound, or assumed: its binding is under way
            raw["spec"] = {**(raw.get("spec") or {}), "nodeName": p.node_name}
        out.append(raw)
    return copy.deepcopy(out)


def suggestions_for(objects: list[dict[str, Any]], key: str, seed: int = 0) -> list[dict[str, Any]]:
    """The suggestions for pod `key` on `objects` (its unit's; [] when the pod is placed there)."""
    outcomes, _ = run_simulation(objects, seed=seed, warn=io.StringIO())
    return by_pod(suggest(objects, outcomes, seed=seed, pods=[key])).get(key, [])


class LiveSuggester:
    """ExplainPublisher's suggester for the live scheduler (see the module's doc)."""

    def __init__(self, sched: Scheduler, clock: Clock, interval: float = 60.0) -> None:
        self.sched = sched
        self.clock = clock
        self.interval = interval
        self._last: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        self._lock = asyncio.Lock()
        self.searches = 0

    async def __call__(self, pod: Pod) -> list[dict[str, Any]] | None:
        """The pod's suggestions, None when it did not ask for them."""
        if not wants_suggestions(pod):
            return None
        now = self.clock.now()
        last = self._last.get(pod.uid)
        if last is not None and now - last[0] < self.interval:
            return last[1]
        async with self._lock:
            objects = live_objects(self.sched)
            found = await asyncio.to_thread(suggestions_for, objects, pod.key)
        self.searches += 1
        self._last[pod.uid] = (now, found)
        if len(self._last) > 4096:
            self._last.pop(next(iter(self._last)))
        return found

    def forget_pod(self, uid: str) -> None:
        self._last.pop(uid, None)

    async def for_pods(self, pods: list[dict[str, Any]]) -> str | None:
        """A verified suggestion, in words, for pods that do not exist yet (a Kueue Workload's, all of
        one namespace): they join the scheduler's view as pending pods, and the first suggestion for
        the first of them left unplaced is given, scoped to their namespace (other namespaces' pods
        counted, no node named). None when none is found (or they all fit)."""
        if not pods:
            return None
        async with self._lock:
            objects = live_objects(self.sched) + copy.deepcopy(pods)
            found = await asyncio.to_thread(_first_suggestion, objects, pods)
        self.searches += 1
        return found


def _first_suggestion(objects: list[dict[str, Any]], pods: list[dict[str, Any]]) -> str | None:
    from ...report.scope import COUNTS
    from ...report.suggestions import describe, scoped

    outcomes, _ = run_simulation(objects, warn=io.StringIO())
    mine = {f"{(p.get('metadata') or {}).get('namespace')}/{(p.get('metadata') or {}).get('name')}" for p in pods}
    stuck = next((o.pod for o in outcomes if o.pod in mine and o.status != "Scheduled"), None)
    if stuck is None:
        return None
    found = by_pod(suggest(objects, outcomes, pods=[stuck])).get(stuck, [])
    namespace = stuck.split("/", 1)[0]
    shown = scoped(found, namespace, COUNTS)
    return describe(shown[0]) if shown else None
