"""Names of the older scheduler Policy API (predicates and priorities), accepted in a
SchedulingProfile as aliases of today's plugins, as upstream's legacy registry
translated them (pkg/scheduler/framework/plugins/legacy_registry.go, v1.18-v1.22).

An alias stands wherever a plugin name does (`plugins.<point>.enabled/disabled`,
`pluginConfig[].name`); some carry preset args (MostRequestedPriority is
NodeResourcesFit scoring MostAllocated). CheckNodeMemoryPressure,
CheckNodeDiskPressure, CheckNodePIDPressure and CheckNodeCondition are plugins
under their old names (node_conditions.py), so they need no alias.

`PREDICATES` and `PRIORITIES` are the full old name tables, also used by
`kubeberth convert-policy`; names without a target have no equivalent.
"""

from __future__ import annotations

from typing import Any

from ..framework import Alias


def _strategy(kind: str) -> dict[str, Any]:
    return {"scoringStrategy": {"type": kind, "resources": [{"name": "cpu", "weight": 1},
                                                            {"name": "memory", "weight": 1}]}}


LEAST_ALLOCATED_ARGS = _strategy("LeastAllocated")
MOST_ALLOCATED_ARGS = _strategy("MostAllocated")

# Old predicate name -> today's plugin(s) (filter side). None: no equivalent.
PREDICATES: dict[str, list[str] | None] = {
    "PodFitsResources": ["NodeResourcesFit"],
    "PodFitsHostPorts": ["NodePorts"],
    "PodFitsPorts": ["NodePorts"],
    "HostName": ["NodeName"],
    "PodFitsHost": ["NodeName"],
    "MatchNodeSelector": ["NodeAffinity"],
    "GeneralPredicates": ["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"],
    "NoDiskConflict": ["VolumeRestrictions"],
    "NoVolumeZoneConflict": ["VolumeZone"],
    "MaxEBSVolumeCount": ["EBSLimits"],
    "MaxGCEPDVolumeCount": ["GCEPDLimits"],
    "MaxCSIVolumeCountPred": ["NodeVolumeLimits"],
    "MaxAzureDiskVolumeCount": None,
    "MaxCinderVolumeCount": None,
    "CheckVolumeBinding": ["VolumeBinding"],
    "PodToleratesNodeTaints": ["TaintToleration"],
    "PodToleratesNodeNoExecuteTaints": ["TaintToleration"],
    "MatchInterPodAffinity": ["InterPodAffinity"],
    "EvenPodsSpread": ["PodTopologySpread"],
    "CheckNodeUnschedulable": ["NodeUnschedulable"],
    "CheckNodeMemoryPressure": ["CheckNodeMemoryPressure"],
    "CheckNodeDiskPressure": ["CheckNodeDiskPressure"],
    "CheckNodePIDPressure": ["CheckNodePIDPressure"],
    "CheckNodeCondition": ["CheckNodeCondition"],
    "CheckNodeLabelPresence": None,
    "CheckServiceAffinity": None,
    "NoVolumeNodeConflict": ["VolumeBinding"],
}

# Old priority name -> (today's plugin, preset args). None: no equivalent.
PRIORITIES: dict[str, tuple[str, dict[str, Any]] | None] = {
    "LeastRequestedPriority": ("NodeResourcesFit", LEAST_ALLOCATED_ARGS),
    "MostRequestedPriority": ("NodeResourcesFit", MOST_ALLOCATED_ARGS),
    "RequestedToCapacityRatioPriority": ("NodeResourcesFit", {}),
    "BalancedResourceAllocation": ("NodeResourcesBalancedAllocation", {}),
    "SelectorSpreadPriority": ("SelectorSpread", {}),
    "ServiceSpreadingPriority": ("SelectorSpread", {}),
    "ImageLocalityPriority": ("ImageLocality", {}),
    "NodeAffinityPriority": ("NodeAffinity", {}),
    "TaintTolerationPriority": ("TaintToleration", {}),
    "InterPodAffinityPriority": ("InterPodAffinity", {}),
    "EvenPodsSpreadPriority": ("PodTopologySpread", {}),
    "NodePreferAvoidPodsPriority": None,
    "EqualPriority": None,
    "ResourceLimitsPriority": None,
    "NodeLabelPriority": None,
    "ServiceAntiAffinityPriority": None,
}

ALIASES = [
    # predicates
    Alias("PodFitsResources", "NodeResourcesFit"),
    Alias("PodFitsHostPorts", "NodePorts"),
    Alias("PodFitsPorts", "NodePorts", note="the name of PodFitsHostPorts before v1.10"),
    Alias("HostName", "NodeName"),
    Alias("PodFitsHost", "NodeName"),
    Alias("MatchNodeSelector", "NodeAffinity"),
    Alias("NoDiskConflict", "VolumeRestrictions"),
    Alias("NoVolumeZoneConflict", "VolumeZone"),
    Alias("MaxEBSVolumeCount", "EBSLimits"),
    Alias("MaxGCEPDVolumeCount", "GCEPDLimits"),
    Alias("MaxCSIVolumeCountPred", "NodeVolumeLimits"),
    Alias("CheckVolumeBinding", "VolumeBinding"),
    Alias("PodToleratesNodeTaints", "TaintToleration"),
    Alias("MatchInterPodAffinity", "InterPodAffinity"),
    Alias("EvenPodsSpread", "PodTopologySpread"),
    Alias("CheckNodeUnschedulable", "NodeUnschedulable"),
    # priorities
    Alias("LeastRequestedPriority", "NodeResourcesFit", LEAST_ALLOCATED_ARGS),
    Alias("MostRequestedPriority", "NodeResourcesFit", MOST_ALLOCATED_ARGS),
    Alias("BalancedResourceAllocation", "NodeResourcesBalancedAllocation"),
    Alias("SelectorSpreadPriority", "SelectorSpread"),
    Alias("ServiceSpreadingPriority", "SelectorSpread"),
    Alias("ImageLocalityPriority", "ImageLocality"),
    Alias("NodeAffinityPriority", "NodeAffinity"),
    Alias("TaintTolerationPriority", "TaintToleration"),
    Alias("InterPodAffinityPriority", "InterPodAffinity"),
    Alias("EvenPodsSpreadPriority", "PodTopologySpread"),
]
