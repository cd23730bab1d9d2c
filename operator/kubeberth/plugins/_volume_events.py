"""What the volume plugins' QueueingHints read of an event: the changed object checked for its
type (upstream's util.As), and whether a claim is one the pending pod mounts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..framework import Pod
from ._volume_util import Obj, meta, name_of, pod_claims


def as_object(obj: Any, kind: str) -> Obj | None:
    """The raw object of a storage event (None where it did not exist); anything else is a
    TypeError, which the queue takes as Queue, as upstream's hints answer a conversion error."""
    if obj is None or isinstance(obj, Mapping):
        return obj
    raise TypeError(f"{kind} event: expected a {kind} object, got {type(obj).__name__}")


def as_existing(obj: Any, kind: str) -> Obj:
    """As `as_object`, for the side of the event that must exist."""
    got = as_object(obj, kind)
    if got is None:
        raise TypeError(f"{kind} event: the {kind} object is missing")
    return got


def as_pod(obj: Any) -> Pod:
    if not isinstance(obj, Pod):
        raise TypeError(f"Pod event: expected a Pod, got {type(obj).__name__}")
    return obj


def namespace_of(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def claims_of(pod: Pod, *, ephemeral: bool) -> set[str]:
    """The names of the claims the pod mounts: its persistentVolumeClaim volumes, and with
    `ephemeral` the claims of its generic ephemeral volumes too."""
    return {name for name, is_ephemeral in pod_claims(pod) if ephemeral or not is_ephemeral}


def mounts_claim(pod: Pod, pvc: Obj, *, ephemeral: bool) -> bool:
    """Whether the claim is in the pod's namespace and among the claims it mounts."""
    return namespace_of(pvc) == pod.namespace and name_of(pvc) in claims_of(pod, ephemeral=ephemeral)


def pod_volumes(pod: Pod) -> list[Mapping[str, Any]]:
    return [v for v in pod.spec.get("volumes") or [] if isinstance(v, Mapping)]
