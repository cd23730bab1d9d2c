"""What a replay runs: `ReplayInput`, the objects present from the start (profiles, classes...)
and the timed ones (nodes, pods, PodGroups, claims...: `Timed`, an object with its arrival and
departure), read from Kubernetes YAML with time annotations and `kind: ReplayScenario`
documents; and the `WorkloadSummary` replay publishes before the first arrival.

Time annotations (seconds from the replay's start, a float as a string):
`kubeberth.io/arrival-time`, `kubeberth.io/departure-time`, and for pods
`kubeberth.io/duration` (the pod leaves that long after it is bound). An object without an
arrival time is there from the start.

A ReplayScenario (apiVersion kubeberth.io/v1alpha1) lists timed copies of objects:

    spec:
      items:
      - object: {kind: Pod, ...}   # inline, or
        template: default/web      # a Pod of the input files (NAMESPACE/NAME or NAME): not replayed itself
        at: 10                     # first arrival (seconds; default 0)
        count: 3                   # copies (default 1), named NAME-0, NAME-1, ... when more than one
        every: 5                   # seconds between the copies' arrivals (default 0)
        departAt: 100              # departure of each copy (seconds), or
        duration: 60               # seconds after binding
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from ...model import ModelError, Pod
from ...model.resources import Resource
from ..inputs import InputError, Origins, object_key

ARRIVAL = "kubeberth.io/arrival-time"
DEPARTURE = "kubeberth.io/departure-time"
DURATION = "kubeberth.io/duration"
SCENARIO_KIND = "ReplayScenario"
API_VERSION = "kubeberth.io/v1alpha1"
SUMMARY_KIND = "WorkloadSummary"
SUMMARY_STORE_KEY = "WorkloadSummary.kubeberth.io"  # ObjectKind("kubeberth.io", ...).group_kind
OWN_PREFIX = "kubeberth.io/"


@dataclass
class Timed:
    """One object of the replay and its times (seconds from the start): `arrival`; `departure`
    (None: it stays); `duration`, pods only: it leaves that long after being bound."""

    obj: dict[str, Any]
    arrival: float = 0.0
    departure: float | None = None
    duration: float | None = None

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")


@dataclass
class ReplayInput:
    """`static`: objects present before anything arrives (profiles, PriorityClasses,
    configuration...), loaded as simulate loads its input; `timed`: nodes, pods and other
    objects with their times, in input order (a protocol may build this list itself: one pod
    per instant, say). `problems`: how many objects or rows were skipped (each reported)."""

    static: list[dict[str, Any]] = field(default_factory=list)
    timed: list[Timed] = field(default_factory=list)
    origins: Origins | None = None
    problems: int = 0

    @property
    def pods(self) -> list[Timed]:
        return [t for t in self.timed if t.kind == "Pod"]


TIMED_KINDS = frozenset({"Pod", "Node", "PodGroup", "ResourceClaim"})


def _seconds(value: Any, what: str) -> float:
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what}: {value!r} is not a number of seconds") from None
    if math.isnan(t) or math.isinf(t) or t < 0:
        raise InputError(f"{what}: {value!r} must be a finite number of seconds, at least 0")
    return t


def timed_from_annotations(obj: dict[str, Any], where: str) -> Timed:
    """The object with the times its annotations give (InputError naming `where` and the
    annotation when one is not a time, or it leaves before it arrives)."""
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    arrival = _seconds(ann[ARRIVAL], f"{where}: annotation {ARRIVAL}") if ARRIVAL in ann else 0.0
    departure = _seconds(ann[DEPARTURE], f"{where}: annotation {DEPARTURE}") if DEPARTURE in ann else None
    duration = None
    if DURATION in ann:
        if obj.get("kind") != "Pod":
            raise InputError(f"{where}: annotation {DURATION}: only pods have a duration")
        duration = _seconds(ann[DURATION], f"{where}: annotation {DURATION}")
    if departure is not None and departure < arrival:
        raise InputError(f"{where}: annotation {DEPARTURE} ({departure:g}) is before {ARRIVAL} ({arrival:g})")
    if departure is not None and duration is not None:
        raise InputError(f"{where}: give {DEPARTURE} or {DURATION}, not both")
    return Timed(obj, arrival, departure, duration)


def _find_template(name: str, pods: Mapping[str, dict[str, Any]], where: str) -> dict[str, Any]:
    if name in pods:
        return pods[name]
    found = [k for k in pods if "/" not in name and k.split("/", 1)[1] == name]
    if len(found) != 1:
        raise InputError(f"{where}: template {name!r} " + ("names no Pod of the input" if not found
                                                           else f"is ambiguous ({', '.join(found)})"))
    return pods[found[0]]


def scenario_items(doc: Mapping[str, Any], where: str, pods: Mapping[str, dict[str, Any]],
                   templates: set[str], warn: TextIO) -> tuple[list[Timed], int]:
    """The timed copies a ReplayScenario lists; an item in error is reported and skipped.
    Returns them and how many items were skipped; `templates` learns the pods used as templates."""
    items = (doc.get("spec") or {}).get("items")
    if not isinstance(items, list):
        warn.write(f"{where}: spec.items: want a list of items\n")
        return [], 1
    out: list[Timed] = []
    bad = 0
    for i, item in enumerate(items):
        here = f"{where}: spec.items[{i}]"
        try:
            copies, template = _scenario_item(item, here, pods)
            out.extend(copies)
            if template:
                templates.add(template)  # only once the item is good: a bad one leaves the pod as it is
        except InputError as exc:
            warn.write(f"{exc}\n")
            bad += 1
    return out, bad


def _scenario_item(item: Any, here: str, pods: Mapping[str, dict[str, Any]]) -> tuple[list[Timed], str]:
    if not isinstance(item, Mapping):
        raise InputError(f"{here}: want a mapping")
    unknown = sorted(set(item) - {"object", "template", "at", "count", "every", "departAt", "duration"})
    if unknown:
        raise InputError(f"{here}: unknown field {unknown[0]!r}")
    if ("object" in item) == ("template" in item):
        raise InputError(f"{here}: give one of object or template")
    if "object" in item:
        base = item["object"]
        if not isinstance(base, Mapping) or not base.get("kind"):
            raise InputError(f"{here}.object: want a Kubernetes object with a kind")
    else:
        base = _find_template(str(item["template"]), pods, f"{here}.template")
    at = _seconds(item.get("at", 0), f"{here}.at")
    every = _seconds(item.get("every", 0), f"{here}.every")
    count = item.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InputError(f"{here}.count: {count!r} must be a whole number, at least 1")
    depart = _seconds(item["departAt"], f"{here}.departAt") if "departAt" in item else None
    duration = _seconds(item["duration"], f"{here}.duration") if "duration" in item else None
    if depart is not None and duration is not None:
        raise InputError(f"{here}: give departAt or duration, not both")
    if duration is not None and base.get("kind") != "Pod":
        raise InputError(f"{here}.duration: only pods have a duration")
    out = []
    for n in range(count):
        obj = copy.deepcopy(dict(base))
        meta = obj.setdefault("metadata", {})
        if count > 1:
            meta["name"] = f"{meta.get('name') or 'copy'}-{n}"
        arrival = at + n * every
        if depart is not None and depart < arrival:
            raise InputError(f"{here}.departAt ({depart:g}) is before copy {n}'s arrival ({arrival:g})")
        out.append(Timed(obj, arrival, depart, duration))
    return out, object_key(base) if "template" in item else ""


def replay_input(objects: list[dict[str, Any]], warn: TextIO, origins: Origins | None = None) -> ReplayInput:
    """Split simulate's input into what is there from the start and what is timed (pods and
    nodes always; other objects with an arrival annotation), ReplayScenarios expanded. An object
    with bad times is reported on `warn` and skipped; the others go on."""
    out = ReplayInput(origins=origins)
    pods = {object_key(o): o for o in objects if o.get("kind") == "Pod"}
    templates: set[str] = set()
    scenario: list[Timed] = []
    timed: list[tuple[dict[str, Any], Timed]] = []
    for i, obj in enumerate(objects):
        where = ((origins.of(obj) if origins is not None else None)
                 or f"{obj.get('kind')} {object_key(obj)} (object {i + 1})")
        if obj.get("kind") == SCENARIO_KIND:
            items, bad = scenario_items(obj, where, pods, templates, warn)
            scenario.extend(items)
            out.problems += bad
            continue
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        timed_kind = obj.get("kind") in ("Pod", "Node")
        if timed_kind or ARRIVAL in ann or (obj.get("kind") in TIMED_KINDS and DEPARTURE in ann):
            try:
                timed.append((obj, timed_from_annotations(obj, where)))
            except InputError as exc:
                warn.write(f"{exc}; skipped\n")
                out.problems += 1
            continue
        out.static.append(obj)
    out.timed = [t for obj, t in timed if object_key(obj) not in templates or obj.get("kind") != "Pod"]
    out.timed.extend(scenario)
    return out


# ---- the WorkloadSummary ---------------------------------------------------------------------
def _quantities(r: Resource) -> dict[str, str]:
    out: dict[str, str] = {}
    if r.milli_cpu:
        out["cpu"] = f"{r.milli_cpu}m"
    if r.memory:
        mi = 1024 * 1024
        out["memory"] = f"{r.memory // mi}Mi" if r.memory % mi == 0 else str(r.memory)
    if r.ephemeral_storage:
        out["ephemeral-storage"] = str(r.ephemeral_storage)
    for name, v in sorted(r.scalar.items()):
        if v:
            out[name] = str(v)
    return out


def workload_summary(pods: Iterable[Mapping[str, Any]], name: str = "replay") -> dict[str, Any]:
    """The WorkloadSummary of `pods` (raw objects): how many, and one shape per distinct
    (effective requests, annotations but kubeberth.io/*), most frequent first, then by the
    shape's JSON with sorted keys.
    A pod that cannot be read is left out (it is reported where it is scheduled)."""
    counts: dict[str, int] = {}
    shapes: dict[str, dict[str, Any]] = {}
    total = 0
    for raw in pods:
        try:
            pod = Pod(raw)
        except ModelError:
            continue
        total += 1
        ann = {k: v for k, v in sorted(pod.annotations.items()) if not k.startswith(OWN_PREFIX)}
        shape = {"requests": _quantities(pod.requests), "annotations": ann}
        key = json.dumps(shape, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
        shapes.setdefault(key, shape)
    ordered = sorted(counts, key=lambda k: (-counts[k], k))
    return {"apiVersion": API_VERSION, "kind": SUMMARY_KIND, "metadata": {"name": name},
            "spec": {"total": total, "shapes": [{"count": counts[k], **shapes[k]} for k in ordered]}}
