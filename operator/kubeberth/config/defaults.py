"""Upstream's default profile and the enabled/disabled merge rules."""

from __future__ import annotations

from .. import features
from .models import PluginRef, Plugins, PluginSet, SchedulingProfileSpec

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Upstream's default MultiPoint set (kube-scheduler v1.37 with its feature gates at their
# defaults: DynamicResources, GA, before DefaultPreemption; NodeDeclaredFeatures, GA, last), in
# order; the order is the order filters run and reasons are reported.
DEFAULT_MULTI_POINT: list[tuple[str, int | None]] = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),
]



def default_multi_point(gates: features.FeatureGates | None = None) -> list[tuple[str, int | None]]:
    """The default MultiPoint set under `gates` (default: the process's), as upstream's
    applyFeatureGates: GangScheduling appended with GenericWorkload; TopologyPlacementGenerator and
    PodGroupPodsCount (weight 1) with TopologyAwareWorkloadScheduling."""
    gates = gates if gates is not None else features.current()
    plugins = list(DEFAULT_MULTI_POINT)
    if gates.generic_workload:
        plugins.append(("GangScheduling", None))
    if gates.topology_aware_workload_scheduling:
        plugins.append(("TopologyPlacementGenerator", None))
        plugins.append(("PodGroupPodsCount", 1))
    return plugins


def default_plugins(gates: features.FeatureGates | None = None) -> Plugins:
    return Plugins(multiPoint=PluginSet(
        enabled=[PluginRef(name=n, weight=w) for n, w in default_multi_point(gates)]))


def default_spec(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> SchedulingProfileSpec:
    return SchedulingProfileSpec(schedulerName=scheduler_name)


def _merge_enabled(default: PluginSet, custom: PluginSet) -> list[tuple[PluginRef, int | None]]:
    """The merged enabled list, each entry with its index in `custom.enabled` (None: a default's)."""
    disabled_names = {p.name for p in custom.disabled} | {p.name for p in default.disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[tuple[PluginRef, int | None]] = []
    if "*" not in disabled_names:
        for p in default.enabled:
            if p.name in disabled_names:
                continue
            if p.name in custom_index:
                i = custom_index[p.name]
                replaced.add(i)
                enabled.append((custom.enabled[i], i))
            else:
                enabled.append((p, None))
    enabled += [(p, i) for i, p in enumerate(custom.enabled) if i not in replaced]
    return enabled


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream's mergePluginSet: custom disables drop defaults ("*" all of them);
    a custom entry naming a default plugin replaces it in place; the rest append."""
    disabled = [PluginRef(name=p.name) for p in custom.disabled] + [
        PluginRef(name=p.name) for p in default.disabled]
    return PluginSet(enabled=[p for p, _ in _merge_enabled(default, custom)], disabled=disabled)


def merge_with_defaults(custom: Plugins) -> Plugins:
    defaults = default_plugins()
    merged = {
        point: merge_plugin_set(getattr(defaults, point), getattr(custom, point))
        for point in Plugins.model_fields
    }
    return Plugins(**merged)


def merged_origins(custom: Plugins) -> dict[str, list[int | None]]:
    """Per extension point, where each entry of `merge_with_defaults(custom)`'s enabled list comes
    from: its index in `custom`'s list of that point (what a user's error names), or None for one
    of upstream's defaults."""
    defaults = default_plugins()
    return {point: [i for _, i in _merge_enabled(getattr(defaults, point), getattr(custom, point))]
            for point in Plugins.model_fields}
