"""What a pending pod's own update changed, as the queue reads it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..framework import events as ev
from ..framework.events import ClusterEvent
from ..model import Pod


def target_pod_events(new: Pod, old: Pod) -> list[ClusterEvent]:
    """The TargetPod events of a pending pod's own update. A change of status alone (our own
    PodScheduled patches, say) brings only the catch-all Update, which is dropped: only the
    specific changes upstream extracts from status (generated resource claims) count."""
    events = ev.pod_scheduling_properties_change(new, old, target=True)
    if not is_pod_updated(old, new):
        events = [e for e in events if e.action != ev.ActionType.UPDATE_OTHER]
    return events


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """Whether anything but status (and bookkeeping metadata) changed (upstream's isPodUpdated)."""
    return _strip(old.raw) != _strip(new.raw)


_META_IGNORED = ("resourceVersion", "generation", "managedFields", "finalizers")


def _strip(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k != "status"}
    # The claims the resourceclaim controller made for the pod count (DynamicResources waits for them).
    out["resourceClaimStatuses"] = (raw.get("status") or {}).get("resourceClaimStatuses")
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _META_IGNORED}
    return out

