"""Shadow mode: a SchedulingProfile with `spec.mode: Shadow` evaluates the pending pods of other
schedulers (`spec.shadow.schedulerNames`) and never binds them.

Each pending pod is evaluated once, soon after it is first seen, on a snapshot of the scheduler's
cache taken for the batch of pods seen together (PreFilter, Filter, PreScore, Score, select host: no PostFilter, so no
preemption, and no Reserve, Permit or Bind); a new version of the profile evaluates again the
pods its previous version evaluated that their own scheduler has not decided yet. When the pod's
own scheduler decides (the pod is bound, or marked PodScheduled=False/Unschedulable), the two
choices are compared and counted in kubeberth_shadow_decisions_total{profile, outcome}; a
disagreement gets a log line. The shadow frameworks run on a SchedulerContext of their own whose
cluster client refuses every write, so that nothing they do reaches the cluster; the only write
is the opt-in annotation shadow.kubeberth.io/<profile>, made here.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from ..config.models import SchedulingProfileSpec, ShadowConfig
from ..framework import CycleState, SchedulerContext
from ..framework.registry import Registry
from ..framework.runtime import Framework
from ..framework.types import FitError
from ..model import ModelError, Pod
from ..profile import build_framework
from ..scheduler import Scheduler
from ..scheduler.algorithm import NoNodesAvailable, SchedulingError, schedule_pod

logger = logging.getLogger(__name__)

SAME_NODE = "same_node"
OTHER_NODE = "other_node"
WE_UNSCHEDULABLE = "we_unschedulable"
THEY_UNSCHEDULABLE = "they_unschedulable"
BOTH_UNSCHEDULABLE = "both_unschedulable"
ANNOTATION_PREFIX = "shadow.kubeberth.io/"

Annotator = Callable[[str, str, dict[str, Any]], Awaitable[None]]  # (namespace, name, annotations patch)


class WriteRefused(RuntimeError):
    pass


class ReadOnlyClient:
    """The ClusterClient of shadow frameworks: every write is refused (and logged as a bug)."""

    def __getattr__(self, name: str) -> Callable[..., Awaitable[None]]:
        async def refuse(*args: Any, **kwargs: Any) -> None:
            logger.error("A shadow profile tried to write to the cluster (%s); refused", name)
            raise WriteRefused(f"shadow profiles do not write ({name})")
        return refuse


@dataclass
class Decision:
    node: str | None  # None: no node fits
    message: str = ""


@dataclass
class ShadowProfile:
    name: str
    fw: Framework
    config: ShadowConfig


def _unschedulable_by_them(raw: Mapping[str, Any]) -> bool:
    for cond in (raw.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" \
                and cond.get("reason") == "Unschedulable":
            return True
    return False


class ShadowEvaluator:
    def __init__(self, scheduler: Scheduler, registry: CollectorRegistry | None = None,
                 annotate: Annotator | None = None, active: Callable[[], bool] = lambda: True) -> None:
        self.scheduler = scheduler
        # With leader election only the leader evaluates (one count per decision across replicas).
        self.active = active
        self.ctx = SchedulerContext(objects=scheduler.ctx.objects, client=ReadOnlyClient(),  # type: ignore[arg-type]
                                    nominator=scheduler.ctx.nominator, clock=scheduler.ctx.clock)
        self.profiles: dict[str, ShadowProfile] = {}
        self.decisions: dict[tuple[str, str], Decision] = {}  # (profile, pod uid) -> our choice
        self.pending: dict[str, Mapping[str, Any]] = {}  # uid -> latest raw pod waiting to be evaluated
        self.annotate = annotate
        self.decisions_total = Counter(
            "kubeberth_shadow_decisions_total",
            "Pods evaluated by a Shadow SchedulingProfile, by how its choice compares with the node "
            "the pod's own scheduler picked.", ["profile", "outcome"], registry=registry)
        self._wake = asyncio.Event()

    # --- profiles ---

    def set_profile(self, name: str, spec: SchedulingProfileSpec, registry: Registry) -> None:
        """Raises ConfigError when the profile cannot run."""
        fw = build_framework(spec, registry, self.ctx, profile_name=f"shadow:{name}")
        replaced = name in self.profiles
        self.profiles[name] = ShadowProfile(name, fw, spec.shadow or ShadowConfig())
        logger.info("Shadow profile %s watches pods of %s", name, ", ".join(self.profiles[name].config.schedulerNames))
        if replaced:
            self._decide_again(name)

    def _decide_again(self, name: str) -> None:
        """A new version of a shadow profile is in force: the choices its previous version made
        for pods their own scheduler has not decided yet are made again, so that what is counted
        (and annotated) is the choice of the version in force."""
        for key in [k for k in self.decisions if k[0] == name]:
            del self.decisions[key]
            pod = self.scheduler.pending_pod(key[1])
            if pod is not None and pod.deletion_timestamp is None:
                self.pending[pod.uid] = pod.raw
        if self.pending:
            self._wake.set()

    def remove_profile(self, name: str) -> None:
        self.profiles.pop(name, None)
        for key in [k for k in self.decisions if k[0] == name]:
            del self.decisions[key]

    def _watching(self, scheduler_name: str) -> list[ShadowProfile]:
        return [p for p in self.profiles.values() if scheduler_name in p.config.schedulerNames]

    # --- pod events (from ingest) ---

    def on_pod(self, raw: Mapping[str, Any]) -> None:
        if not self.profiles:
            return
        spec = raw.get("spec") or {}
        meta = raw.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        watching = self._watching(str(spec.get("schedulerName") or "default-scheduler"))
        if not uid or not watching:
            return
        node = spec.get("nodeName")
        if node or _unschedulable_by_them(raw):
            self.pending.pop(uid, None)
            for prof in watching:
                self._resolve(prof, uid, raw, str(node) if node else None)
            return
        if meta.get("deletionTimestamp") is None and any((p.name, uid) not in self.decisions for p in watching):
            self.pending[uid] = raw
            self._wake.set()

    def on_pod_delete(self, raw: Mapping[str, Any]) -> None:
        uid = str((raw.get("metadata") or {}).get("uid") or "")
        self.pending.pop(uid, None)
        for name in list(self.profiles):
            self.decisions.pop((name, uid), None)

    def _resolve(self, prof: ShadowProfile, uid: str, raw: Mapping[str, Any], their_node: str | None) -> None:
        ours = self.decisions.pop((prof.name, uid), None)
        if ours is None:
            return  # not evaluated before they decided: nothing to compare
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        they = str((raw.get("spec") or {}).get("schedulerName") or "default-scheduler")
        if their_node is not None and ours.node == their_node:
            outcome = SAME_NODE
        elif their_node is not None and ours.node is not None:
            outcome = OTHER_NODE
            logger.info("Shadow profile %s: pod %s: we chose %s, %s bound it to %s",
                        prof.name, key, ours.node, they, their_node)
        elif their_node is not None:
            outcome = WE_UNSCHEDULABLE
            logger.info("Shadow profile %s: pod %s: no node fits for us (%s), %s bound it to %s",
                        prof.name, key, ours.message, they, their_node)
        elif ours.node is not None:
            outcome = THEY_UNSCHEDULABLE
            logger.info("Shadow profile %s: pod %s: we chose %s, %s found it unschedulable",
                        prof.name, key, ours.node, they)
        else:
            outcome = BOTH_UNSCHEDULABLE
        self.decisions_total.labels(prof.name, outcome).inc()

    # --- evaluation ---

    async def run(self) -> None:
        """Evaluate pending pods as they come, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.active():
                await self.evaluate_pending()
            else:
                self.pending.clear()

    async def evaluate_pending(self) -> None:
        """Evaluate the pods seen since the last call, on one snapshot taken now (the shadow
        assumes nothing, so the pods of one batch see the same cluster)."""
        if self.pending:
            self.ctx.snapshot = self.scheduler.cache.snapshot()
        while self.pending:
            uid, raw = next(iter(self.pending.items()))
            del self.pending[uid]
            try:
                pod = Pod(raw)
            except ModelError as exc:
                logger.info("Shadow: cannot read pod: %s", exc)
                continue
            for prof in self._watching(pod.scheduler_name):
                if (prof.name, uid) in self.decisions:
                    continue
                decision = await self._evaluate(prof, pod)
                if decision is None:
                    continue
                self.decisions[(prof.name, uid)] = decision
                if prof.config.annotate and self.annotate is not None:
                    await self._annotate(prof, pod, decision)

    async def _evaluate(self, prof: ShadowProfile, pod: Pod) -> Decision | None:
        if prof.fw.run_pre_enqueue(pod) is not None:
            return None  # gated: its own scheduler waits too
        try:
            result = await schedule_pod(prof.fw, CycleState(), pod)
        except FitError as exc:
            return Decision(None, exc.message())
        except NoNodesAvailable as exc:
            return Decision(None, str(exc))
        except SchedulingError as exc:
            logger.warning("Shadow profile %s: could not evaluate %s: %s", prof.name, pod.key, exc)
            return None
        return Decision(result.suggested_host)

    async def _annotate(self, prof: ShadowProfile, pod: Pod, decision: Decision) -> None:
        value = json.dumps({"node": decision.node} if decision.node else {"unschedulable": decision.message})
        assert self.annotate is not None
        try:
            await self.annotate(pod.namespace, pod.name, {ANNOTATION_PREFIX + prof.name: value})
        except Exception as exc:  # an annotation is best effort: the pod may be gone or bound meanwhile
            logger.info("Shadow profile %s: could not annotate %s: %s", prof.name, pod.key, exc)
