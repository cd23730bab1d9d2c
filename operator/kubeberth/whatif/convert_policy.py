"""`kubeberth convert-policy POLICY.json`: an old scheduler Policy file to a SchedulingProfile.

The Policy API (kind Policy, apiVersion v1; removed upstream in v1.23) listed
predicates and priorities by name. A Policy that lists its own predicates
replaced the default ones, and likewise for priorities; so the profile written
here disables every default plugin at filter and score (and at preFilter /
preScore, whose plugins belong to those) and enables the translated ones. A
Policy that leaves `predicates` (or `priorities`) out keeps the defaults there.
NodeUnschedulable and TaintToleration stay enabled as filters: they were
mandatory predicates upstream. The queue sort, preemption and binding plugins
stay as in the default profile.

Also translated: priority weights; `requestedToCapacityRatioArguments` (to
NodeResourcesFit's RequestedToCapacityRatio strategy);
`hardPodAffinitySymmetricWeight` (to InterPodAffinity's hardPodAffinityWeight);
extenders (the legacy `enableHttps` and a `httpTimeout` in nanoseconds too).
Anything without an equivalent (serviceAffinity, labelsPresence,
serviceAntiAffinity, labelPreference arguments, removed predicates and
priorities, alwaysCheckAllPredicates) is reported as a warning and left out.

Entry points: `convert_policy(policy) -> (profile object, warnings)` and
`convert_file(path) -> (profile object, warnings)`; the command line is cli.py's.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..config.defaults import DEFAULT_MULTI_POINT, DEFAULT_SCHEDULER_NAME
from ..config.profile import GROUP, KIND, VERSION
from ..plugins.legacy_aliases import PREDICATES, PRIORITIES

# Filters in the order the old scheduler ran their predicates (predicatesOrdering).
FILTER_ORDER = [
    "CheckNodeCondition", "NodeUnschedulable", "NodeName", "NodePorts", "NodeAffinity",
    "NodeResourcesFit", "VolumeRestrictions", "TaintToleration", "EBSLimits", "GCEPDLimits",
    "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "CheckNodeMemoryPressure",
    "CheckNodePIDPressure", "CheckNodeDiskPressure", "PodTopologySpread", "InterPodAffinity",
]
MANDATORY_FILTERS = ["NodeUnschedulable", "TaintToleration"]

_REMOVED: dict[str, str] = {
    "MaxAzureDiskVolumeCount": "kubeberth has no in-tree Azure Disk limit; NodeVolumeLimits counts "
                               "disk.csi.azure.com volumes against the CSINode limit",
    "MaxCinderVolumeCount": "kubeberth has no in-tree Cinder limit; NodeVolumeLimits counts "
                            "cinder.csi.openstack.org volumes against the CSINode limit",
    "CheckNodeLabelPresence": "the NodeLabel plugin was removed upstream (v1.23); require the labels "
                              "with spec.affinity.nodeAffinity on the pods (operator Exists / DoesNotExist)",
    "CheckServiceAffinity": "the ServiceAffinity plugin was removed upstream (v1.23); use required "
                            "podAffinity to the service's pods with the label as topologyKey",
    "NodePreferAvoidPodsPriority": "the NodePreferAvoidPods plugin was removed upstream (v1.24)",
    "EqualPriority": "every node scores the same without it",
    "ResourceLimitsPriority": "the NodeResourceLimits plugin never became part of kube-scheduler",
    "NodeLabelPriority": "the NodeLabel plugin was removed upstream (v1.23); use preferred "
                         "nodeAffinity on the pods",
    "ServiceAntiAffinityPriority": "the ServiceAntiAffinity plugin was removed upstream (v1.23); use "
                                   "PodTopologySpread (whenUnsatisfiable: ScheduleAnyway) or preferred "
                                   "podAntiAffinity",
}

_EXTENDER_FIELDS = {
    "urlPrefix": "urlPrefix", "filterVerb": "filterVerb", "preemptVerb": "preemptVerb",
    "prioritizeVerb": "prioritizeVerb", "bindVerb": "bindVerb", "weight": "weight",
    "enableHttps": "enableHTTPS", "enableHTTPS": "enableHTTPS", "tlsConfig": "tlsConfig",
    "httpTimeout": "httpTimeout", "nodeCacheCapable": "nodeCacheCapable",
    "managedResources": "managedResources", "ignorable": "ignorable",
}


class PolicyError(ValueError):
    """The input is not a Policy that can be read."""


def _go_duration(nanos: int) -> str:
    for unit, size in (("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000),
                       ("ms", 1_000_000), ("us", 1_000)):
        if nanos % size == 0:
            return f"{nanos // size}{unit}"
    return f"{nanos}ns"


def _points() -> dict[str, list[str]]:
    from ..plugins import in_tree_registry

    registry = in_tree_registry()
    out: dict[str, list[str]] = {}
    for name in registry.names():
        spec = registry.get(name)
        assert spec is not None
        out[name] = spec.points()
    return out


def _convert_extender(i: int, raw: Any, warnings: list[str]) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping):
        warnings.append(f"extenders[{i}]: not an object, left out")
        return None
    out: dict[str, Any] = {}
    for key, value in raw.items():
        target = _EXTENDER_FIELDS.get(key)
        if target is None:
            warnings.append(f"extenders[{i}].{key}: unknown field, left out")
            continue
        if key == "httpTimeout" and isinstance(value, int | float) and not isinstance(value, bool):
            # The legacy v1 API serialised time.Duration as integer nanoseconds.
            value = _go_duration(int(value))
        out[target] = value
    if not out.get("urlPrefix"):
        warnings.append(f"extenders[{i}]: no urlPrefix, left out")
        return None
    if out.get("prioritizeVerb") and not out.get("weight"):
        out["weight"] = 1
        warnings.append(f"extenders[{i}]: prioritizeVerb without a positive weight; weight set to 1")
    return out


def convert_policy(policy: Mapping[str, Any], *, name: str = "policy",
                   scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> tuple[dict[str, Any], list[str]]:
    """Translate a Policy (as parsed JSON/YAML) into a SchedulingProfile object.

    Returns the object and the warnings about what had no equivalent.
    Raises PolicyError when the input is not a Policy.
    """
    if not isinstance(policy, Mapping):
        raise PolicyError("a Policy must be a JSON object")
    kind = policy.get("kind")
    if kind not in (None, "Policy"):
        raise PolicyError(f"kind is {kind!r}, want Policy")
    warnings: list[str] = []
    known = {"kind", "apiVersion", "predicates", "priorities", "extenders",
             "hardPodAffinitySymmetricWeight", "alwaysCheckAllPredicates"}
    for key in policy:
        if key not in known:
            warnings.append(f"{key}: unknown Policy field, left out")
    points = _points()
    plugins: dict[str, Any] = {}
    plugin_config: dict[str, dict[str, Any]] = {}

    # ---- predicates -> filter (and their preFilter) -----------------------------------
    predicates = policy.get("predicates")
    filters: list[str] = []
    if predicates is not None:
        if not isinstance(predicates, list):
            raise PolicyError("predicates must be a list")
        for i, pred in enumerate(predicates):
            pname = str((pred or {}).get("name") or "") if isinstance(pred, Mapping) else ""
            argument = pred.get("argument") if isinstance(pred, Mapping) else None
            where = f"predicates[{i}] {pname!r}"
            if argument:
                if "serviceAffinity" in argument:
                    warnings.append(f"{where}: serviceAffinity argument (labels "
                                    f"{(argument['serviceAffinity'] or {}).get('labels')}) has no equivalent: "
                                    f"{_REMOVED['CheckServiceAffinity']}; left out")
                    continue
                if "labelsPresence" in argument:
                    lp = argument["labelsPresence"] or {}
                    warnings.append(f"{where}: labelsPresence argument (labels {lp.get('labels')}, presence "
                                    f"{bool(lp.get('presence'))}) has no equivalent: "
                                    f"{_REMOVED['CheckNodeLabelPresence']}; left out")
                    continue
                warnings.append(f"{where}: unknown argument {sorted(argument)}, ignored")
            if pname not in PREDICATES:
                warnings.append(f"{where}: unknown predicate, left out")
                continue
            targets = PREDICATES[pname]
            if targets is None:
                warnings.append(f"{where} has no equivalent: {_REMOVED.get(pname, 'removed')}; left out")
                continue
            for t in targets:
                if t not in filters:
                    filters.append(t)
        for t in MANDATORY_FILTERS:
            if t not in filters:
                filters.append(t)
        filters.sort(key=lambda n: FILTER_ORDER.index(n) if n in FILTER_ORDER else len(FILTER_ORDER))
        plugins["preFilter"] = {"enabled": [{"name": n} for n in filters if "preFilter" in points.get(n, [])],
                                "disabled": [{"name": "*"}]}
        plugins["filter"] = {"enabled": [{"name": n} for n in filters], "disabled": [{"name": "*"}]}
        # A default plugin whose filter is gone keeps no Reserve / PreBind duties either.
        for point in ("reserve", "preBind"):
            off = [n for n, _ in DEFAULT_MULTI_POINT if point in points.get(n, [])
                   and "filter" in points.get(n, []) and n not in filters]
            if off:
                plugins[point] = {"disabled": [{"name": n} for n in off]}

    # ---- priorities -> score (and their preScore) -------------------------------------
    priorities = policy.get("priorities")
    if priorities is not None:
        if not isinstance(priorities, list):
            raise PolicyError("priorities must be a list")
        weights: dict[str, int] = {}
        source: dict[str, str] = {}
        for i, prio in enumerate(priorities):
            if not isinstance(prio, Mapping):
                warnings.append(f"priorities[{i}]: not an object, left out")
                continue
            pname = str(prio.get("name") or "")
            where = f"priorities[{i}] {pname!r}"
            weight = prio.get("weight", 1)
            if not isinstance(weight, int) or isinstance(weight, bool) or weight <= 0:
                warnings.append(f"{where}: weight {weight!r} is not a positive integer; using 1")
                weight = 1
            argument = prio.get("argument") or {}
            if "serviceAntiAffinity" in argument:
                warnings.append(f"{where}: serviceAntiAffinity argument (label "
                                f"{(argument['serviceAntiAffinity'] or {}).get('label')!r}) has no equivalent: "
                                f"{_REMOVED['ServiceAntiAffinityPriority']}; left out")
                continue
            if "labelPreference" in argument:
                lp = argument["labelPreference"] or {}
                warnings.append(f"{where}: labelPreference argument (label {lp.get('label')!r}, presence "
                                f"{bool(lp.get('presence'))}) has no equivalent: "
                                f"{_REMOVED['NodeLabelPriority']}; left out")
                continue
            if pname not in PRIORITIES:
                warnings.append(f"{where}: unknown priority, left out")
                continue
            entry = PRIORITIES[pname]
            if entry is None:
                warnings.append(f"{where} has no equivalent: {_REMOVED.get(pname, 'removed')}; left out")
                continue
            target, args = entry
            if pname == "RequestedToCapacityRatioPriority":
                rtc = argument.get("requestedToCapacityRatioArguments")
                if not rtc:
                    warnings.append(f"{where}: needs requestedToCapacityRatioArguments; left out")
                    continue
                args = {"scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "resources": [{"name": r.get("name"), "weight": r.get("weight") or 1}
                                  for r in rtc.get("resources") or []] or [
                        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                    "requestedToCapacityRatio": {"shape": [
                        {"utilization": p.get("utilization", 0), "score": p.get("score", 0)}
                        for p in rtc.get("shape") or []]},
                }}
            elif argument:
                warnings.append(f"{where}: unknown argument {sorted(argument)}, ignored")
            if target in weights:
                if args and plugin_config.get(target, args) != args:
                    warnings.append(f"{where} conflicts with {source[target]!r} (both configure {target} "
                                    f"scoring differently); kept {source[target]!r}, left this one out")
                    continue
                # Two old priorities computing the same scores: their weights add up.
                weights[target] += weight
                continue
            weights[target] = weight
            source[target] = pname
            if args:
                plugin_config[target] = args
        scored = list(weights)
        plugins["preScore"] = {"enabled": [{"name": n} for n in scored if "preScore" in points.get(n, [])],
                               "disabled": [{"name": "*"}]}
        plugins["score"] = {"enabled": [{"name": n, "weight": weights[n]} for n in scored],
                            "disabled": [{"name": "*"}]}

    hard = policy.get("hardPodAffinitySymmetricWeight")
    if hard not in (None, 0):
        if not isinstance(hard, int) or isinstance(hard, bool) or not 0 <= hard <= 100:
            warnings.append(f"hardPodAffinitySymmetricWeight {hard!r} is not an integer in 0..100; left out")
        else:
            plugin_config.setdefault("InterPodAffinity", {})["hardPodAffinityWeight"] = hard
    if policy.get("alwaysCheckAllPredicates"):
        warnings.append("alwaysCheckAllPredicates has no equivalent: filters stop at the first failure, "
                        "as upstream's scheduling framework does; left out")

    extenders: list[dict[str, Any]] = []
    for i, raw in enumerate(policy.get("extenders") or []):
        ext = _convert_extender(i, raw, warnings)
        if ext is not None:
            extenders.append(ext)

    spec: dict[str, Any] = {"schedulerName": scheduler_name}
    if plugins:
        order = ["preFilter", "filter", "preScore", "score", "reserve", "preBind"]
        spec["plugins"] = {p: plugins[p] for p in order if p in plugins}
    if plugin_config:
        spec["pluginConfig"] = [{"name": n, "args": a} for n, a in plugin_config.items()]
    if extenders:
        spec["extenders"] = extenders
    profile = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": name}, "spec": spec}
    return profile, warnings


def to_yaml(profile: Mapping[str, Any], warnings: Sequence[str] = (), source: str = "") -> str:
    header = [f"# Converted from {source or 'a scheduler Policy'} by kubeberth convert-policy."]
    header += [f"# warning: {w}" for w in warnings]
    return "\n".join(header) + "\n" + yaml.safe_dump(dict(profile), sort_keys=False)


class PolicyFileError(ValueError):
    """A Policy file that cannot be read or converted: the message names it."""


def read_policy(path: str) -> Any:
    """The Policy document of the file at `path` ('-' reads stdin), JSON or YAML. Raises
    PolicyFileError."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as exc:
        raise PolicyFileError(str(exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PolicyFileError(f"{path}: neither JSON nor YAML: {exc}") from None


def profile_name(path: str) -> str:
    """The profile's default metadata.name, from the file's name ("policy" for stdin)."""
    if path == "-":
        return "policy"
    stem = re.sub(r"[^a-z0-9-]+", "-", Path(path).stem.lower()).strip("-")
    return stem or "policy"


def convert_file(path: str, *, name: str | None = None, scheduler_name: str = DEFAULT_SCHEDULER_NAME
                 ) -> tuple[dict[str, Any], list[str]]:
    """`kubeberth convert-policy`: the Policy file at `path` as a SchedulingProfile (named `name`,
    by default after the file), with the warnings. Raises PolicyFileError for a file that cannot be
    read or converted, ConfigError when the converted profile is not one kubeberth would run (it is
    built once)."""
    try:
        profile, warnings = convert_policy(read_policy(path), name=name or profile_name(path),
                                           scheduler_name=scheduler_name)
    except PolicyError as exc:
        raise PolicyFileError(f"{path}: {exc}") from None
    from ..config import parse_profile_object
    from ..framework import SchedulerContext
    from ..plugins import in_tree_registry
    from ..profile import build_framework

    _, spec = parse_profile_object(profile)
    build_framework(spec, in_tree_registry(), SchedulerContext())
    return profile, warnings
