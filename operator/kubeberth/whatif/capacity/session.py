"""One scheduler over the cluster that copies are added to one at a time (the exact path): the
engine's scheduler (whatif/engine.py) with the cluster loaded as simulate loads it, an event loop
kept across the steps, and what became of each copy's pods."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TextIO

from ...framework.registry import Registry
from ...framework.tie_break import RESERVOIR
from ...scheduler import SCHEDULED, Scheduler
from ...scheduler.watched import OBJECT_KINDS, POD_GROUP, table_kind
from ..engine import admit_pod_group, load_objects, new_scheduler, run_settled, with_template_claims
from ..inputs import InputError, Origins
from ..outcomes import pod_outcome


class Session:
    """The scheduler of the cluster's `objects` (pending pods already left out by the caller),
    run until idle, ready for copies (`add`, then `run`)."""

    def __init__(self, objects: list[dict[str, Any]], registry: Registry, *, seed: int = 0,
                 tie_break: str = RESERVOIR, percentage_of_nodes_to_score: int = 0, warn: TextIO,
                 origins: Origins | None = None) -> None:
        self.sched: Scheduler
        self.sched, self.clock = new_scheduler(seed, tie_break)
        self.sched.ctx.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.loop = asyncio.new_event_loop()
        self.claim_templates = [o for o in objects if o.get("kind") == "ResourceClaimTemplate"]
        self.warn = warn
        load_objects(self.sched, objects, registry, warn=warn, origins=origins)
        self.loop.run_until_complete(self.sched.run_until_idle())

    def close(self) -> None:
        self.loop.close()

    def add(self, objects: Sequence[dict[str, Any]]) -> None:
        """A copy's objects as the API server would create them: its PodGroup admitted (an
        InputError when admission refuses it), the claims of its pods' templates, its pods."""
        sched = self.sched
        pods = [o for o in objects if o.get("kind") == "Pod"]
        for obj in objects:
            if obj.get("kind") == "PersistentVolumeClaim":
                sched.on_object("PersistentVolumeClaim", obj)
        for obj in objects:
            if obj.get("kind") == "PodGroup" and sched.pod_groups_enabled:
                admitted = admit_pod_group(sched, obj)
                if admitted is None:
                    key = f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"
                    raise InputError(f"the template's PodGroup: {sched.pod_group_errors.get(key, 'refused')}")
                sched.on_object(POD_GROUP, admitted)
        if self.claim_templates and any((p.get("spec") or {}).get("resourceClaims") for p in pods):
            made = with_template_claims(self.claim_templates + list(pods))
            pods = [o for o in made if o.get("kind") == "Pod"]
            for claim in made:
                if claim.get("kind") == "ResourceClaim" and table_kind(claim) in OBJECT_KINDS:
                    sched.on_object(str(claim["kind"]), claim)
        for pod in pods:
            sched.on_pod_add(pod)

    def run(self) -> None:
        """Until nothing more can change (engine's run_until_idle)."""
        self.loop.run_until_complete(self.sched.run_until_idle())

    def settle(self) -> None:
        """The retries simulate makes once idle (engine.run_settled)."""
        self.loop.run_until_complete(run_settled(self.sched, self.clock))

    def placed(self, keys: Sequence[str]) -> dict[str, str] | None:
        """Each pod's node when every one of `keys` is scheduled; None otherwise."""
        out = {}
        for key in keys:
            rec = self.sched.outcomes.get(key)
            if rec is None or rec.status != SCHEDULED or not rec.node:
                return None
            out[key] = rec.node
        return out

    def victims(self, keys: Sequence[str]) -> list[str]:
        """The pods evicted to place these (with --allow-preemption)."""
        return [v for key in keys if (rec := self.sched.outcomes.get(key)) is not None for v in rec.victims]

    def message(self, keys: Sequence[str]) -> str:
        """simulate's message for the first of `keys` not scheduled (its FailedScheduling diagnosis)."""
        for key in keys:
            rec = self.sched.outcomes.get(key)
            if rec is None or rec.status != SCHEDULED:
                return pod_outcome(key, rec, self.sched).message
        return ""
