"""NodeVolumeLimits: how many volumes a node can have attached.

Two families of limits, both rejecting with "node(s) exceed max volume count":

- CSI (upstream's nodevolumelimits CSILimits, the default profile's
  NodeVolumeLimits): per CSI driver, the node's CSINode
  `spec.drivers[].allocatable.count` (or the node's
  `attachable-volumes-csi-<driver>` allocatable, which CSINode overrides).
  Volumes are counted once per node by driver and volume handle: PVs with
  `spec.csi`, unbound claims by their StorageClass's provisioner, and in-tree
  AWS EBS / GCE PD volumes on nodes that have a CSINode object (CSI migration
  of both is GA upstream, so their volumes count under ebs.csi.aws.com and
  pd.csi.storage.gke.io there).
- In-tree AWS EBS and GCE PD (the older MaxEBSVolumeCount and
  MaxGCEPDVolumeCount predicates, later the EBSLimits and GCEPDLimits
  plugins) on nodes without a CSINode (not migrated): at most 39 EBS
  volumes (25 on Nitro instance types) and 16 GCE PDs. The limit is, first
  match wins: the node's allocatable `attachable-volumes-aws-ebs` /
  `attachable-volumes-gce-pd`; the `maxEBSVolumes` / `maxGCEPDVolumes`
  plugin arg (a kubeberth addition); the `KUBE_MAX_PD_VOLS` environment
  variable (a positive integer, read when the plugin is built, as the old
  scheduler did); the default.

VolumeLimitScaling (beta and on in v1.37): before counting, every CSI driver the incoming
pod's new volumes use must be installed on the node (listed in its CSINode) when the driver's
CSIDriver object opts in with `spec.preventPodSchedulingIfMissing: true`; otherwise the node is
rejected (Unschedulable) with "<driver> CSI driver is not installed on the node". A driver
without a CSIDriver object, or one that does not opt in, is not checked.

NodeVolumeLimits enforces both. EBSLimits and GCEPDLimits (upstream names of
v1.18-v1.25, outside the default set; the targets of the legacy names) enforce
only their in-tree kind.

NodeVolumeLimits' pods are tried again (upstream's CSILimits hints) on a new CSINode, a
CSINode raising a driver's count, the deletion of a placed pod with a counted volume kind, the
creation of one of their claims, and the deletion of a VolumeAttachment: registered, but never
delivered, as VolumeAttachments are not watched. EBSLimits and GCEPDLimits keep "any event".

Not covered: Azure Disk and Cinder in-tree limits; VolumeAttachment objects
(volumes still attached to a node after their pod left).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..framework import (
    ASSIGNED_POD,
    PERSISTENT_VOLUME_CLAIM,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    PluginError,
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    Status,
)
from ..framework import CSI_NODE as CSI_NODE_EVENT
from ._csi_migration import inline_csi_driver, is_inline_migratable
from ._volume_events import as_existing, as_pod, mounts_claim, pod_volumes
from ._volume_util import (
    CSI_NODE,
    PV,
    PVC,
    STORAGE_CLASS,
    claim_class,
    csi_attach_limit_key,
    name_of,
    pod_claims,
    spec,
    volume_is_for_pod,
)

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
CSI_DRIVER = "CSIDriver"


def driver_not_installed(driver: str) -> str:
    return f"{driver} CSI driver is not installed on the node"
KUBE_MAX_PD_VOLS = "KUBE_MAX_PD_VOLS"

EBS_PLUGIN = "kubernetes.io/aws-ebs"
GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
CSI_DRIVER_OF = {EBS_PLUGIN: "ebs.csi.aws.com", GCE_PD_PLUGIN: "pd.csi.storage.gke.io"}
LIMIT_KEY_OF = {EBS_PLUGIN: "attachable-volumes-aws-ebs", GCE_PD_PLUGIN: "attachable-volumes-gce-pd"}
_IN_TREE_PLUGINS = frozenset({EBS_PLUGIN, GCE_PD_PLUGIN})
_INLINE_FIELD = {"awsElasticBlockStore": EBS_PLUGIN, "gcePersistentDisk": GCE_PD_PLUGIN}

DEFAULT_MAX_EBS_VOLUMES = 39
DEFAULT_MAX_EBS_NITRO_VOLUMES = 25
DEFAULT_MAX_GCE_PD_VOLUMES = 16
EBS_NITRO_LIMIT_REGEX = re.compile(r"^[cmr]5.*|t3|z1d")
_INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


class NodeVolumeLimitsArgs(BaseModel):
    """kubeberth addition: fixed in-tree limits (upstream had only KUBE_MAX_PD_VOLS)."""

    model_config = ConfigDict(extra="forbid")
    maxEBSVolumes: int | None = Field(default=None, gt=0)
    maxGCEPDVolumes: int | None = Field(default=None, gt=0)


def max_vols_from_env() -> int | None:
    """getMaxVolLimitFromEnv: a positive integer, else None (invalid values are ignored)."""
    raw = os.environ.get(KUBE_MAX_PD_VOLS, "")
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        return None
    return n if n > 0 else None


def _volume_id(plugin: str, src: Mapping[str, Any]) -> str:
    return str(src.get("volumeID") or "") if plugin == EBS_PLUGIN else str(src.get("pdName") or "")


# A pod's volumes, resolved through the ObjectStore, before knowing the node:
#   ("csi", driver, handle)          a PV with spec.csi
#   ("intree", plugin, volume id)    an inline or PV-backed AWS EBS / GCE PD volume
#   ("class", provisioner, pvc key)  a claim without (an existing) PV, by its class's provisioner
_Item = tuple[str, str, str]


class _PodVolumes:
    __slots__ = ("error", "generation", "items", "missing")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.items: list[_Item] = []
        self.missing = ""  # a claim that does not exist (fatal only for the incoming pod)
        self.error = ""  # an ephemeral claim the pod does not own


def _resolve(pod: Pod, objects: Any) -> _PodVolumes:
    out = _PodVolumes(objects.generation)
    for v in pod.spec.get("volumes") or []:
        for field, plugin in _INLINE_FIELD.items():
            src = v.get(field)
            if src is not None:
                out.items.append(("intree", plugin, _volume_id(plugin, src)))
    for claim, ephemeral in pod_claims(pod):
        if not claim:
            out.error = out.error or "PersistentVolumeClaim had no name"
            continue
        key = f"{pod.namespace}/{claim}"
        pvc = objects.get(PVC, key)
        if pvc is None:
            out.missing = out.missing or (
                f'looking up PVC {key}: persistentvolumeclaim "{claim}" not found')
            continue
        if ephemeral:
            err = volume_is_for_pod(pod, pvc)
            if err:
                out.error = out.error or err
                continue
        pv_name = str(spec(pvc).get("volumeName") or "")
        pv = objects.get(PV, pv_name) if pv_name else None
        if pv is None:
            sc_name = claim_class(pvc)
            sc = objects.get(STORAGE_CLASS, sc_name) if sc_name else None
            if sc is not None and sc.get("provisioner"):
                out.items.append(("class", str(sc["provisioner"]), key))
            continue
        ps = spec(pv)
        if ps.get("csi") is not None:
            csi = ps["csi"]
            driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
            if driver and handle:
                out.items.append(("csi", driver, handle))
            continue
        for field, plugin in _INLINE_FIELD.items():
            src = ps.get(field)
            if src is not None:
                out.items.append(("intree", plugin, _volume_id(plugin, src) or name_of(pv)))
    return out


class _Counted:
    __slots__ = ("csi", "drivers", "intree")

    def __init__(self) -> None:
        self.csi: dict[str, str] = {}  # driver/handle -> limit key
        self.drivers: dict[str, None] = {}  # the CSI drivers of those volumes, in order met
        self.intree: dict[str, set[str]] = {}  # plugin -> volume ids

    def add_csi(self, driver: str, unique: str) -> None:
        self.csi[unique] = csi_attach_limit_key(driver)
        self.drivers[driver] = None


def _count(items: Sequence[_Item], migrated: frozenset[str], out: _Counted, *, csi: bool,
           intree: frozenset[str]) -> None:
    for kind, a, b in items:
        if kind == "csi":
            if csi:
                out.add_csi(a, f"{a}/{b}")
        elif kind == "intree":
            if a in migrated:
                if csi:
                    driver = CSI_DRIVER_OF[a]
                    out.add_csi(driver, f"{driver}/{b}")
            elif a in intree:
                out.intree.setdefault(a, set()).add(b)
        else:  # "class": an unbound claim, counted by what would provision it
            if a in CSI_DRIVER_OF:
                if a in migrated:
                    if csi:
                        driver = CSI_DRIVER_OF[a]
                        out.add_csi(driver, f"{driver}/pvc:{b}")
                elif a in intree:
                    out.intree.setdefault(a, set()).add(f"pvc:{b}")
            elif csi:
                out.add_csi(a, f"{a}/pvc:{b}")


def _needs_check(pod: Pod) -> bool:
    for v in pod.spec.get("volumes") or []:
        if (v.get("persistentVolumeClaim") is not None or v.get("ephemeral") is not None
                or any(v.get(f) is not None for f in _INLINE_FIELD)):
            return True
    return False


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    name = "NodeVolumeLimits"
    args_model = NodeVolumeLimitsArgs
    check_csi = True
    in_tree: frozenset[str] = frozenset({EBS_PLUGIN, GCE_PD_PLUGIN})

    def __init__(self, args: NodeVolumeLimitsArgs | None = None, handle: Handle | None = None) -> None:
        self.handle = handle
        self.args = args or NodeVolumeLimitsArgs()
        self.env_max = max_vols_from_env()

    # ---- QueueingHints -----------------------------------------------------------

    def _handle(self) -> Handle:
        if self.handle is None:
            raise PluginError(f"{self.name} needs the framework's handle (objects, client)")
        return self.handle
    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        # Any new CSINode may let a pod rejected for its CSI volumes in: no hint for its Add.
        # VolumeAttachment is registered as upstream does, but scheduler/watched.py does not
        # watch it yet, so that event never reaches the queue.
        return [
            ClusterEvent(CSI_NODE_EVENT, ActionType.ADD),
            ClusterEventWithHint(ClusterEvent(CSI_NODE_EVENT, ActionType.UPDATE), self.after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self.after_assigned_pod_deleted),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.after_pvc_added),
            ClusterEventWithHint(ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE),
                                 self.after_volume_attachment_deleted),
        ]

    def after_assigned_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A placed pod went that had a volume counted against a limit."""
        deleted = as_pod(old)
        volumes = pod_volumes(deleted)
        if not volumes or not (deleted.node_name or deleted.nominated_node_name):
            return QueueingHint.QUEUE_SKIP
        for v in volumes:
            if v.get("persistentVolumeClaim") is not None or v.get("ephemeral") is not None or is_inline_migratable(v):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def after_pvc_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        pvc = as_existing(new, "PersistentVolumeClaim")
        return QueueingHint.QUEUE if mounts_claim(pod, pvc, ephemeral=True) else QueueingHint.QUEUE_SKIP

    def after_volume_attachment_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A detached volume may free a slot for the pod's claims, or for its inline in-tree
        volumes when their CSI driver is the attacher."""
        attacher = spec(as_existing(old, "VolumeAttachment")).get("attacher")
        for v in pod_volumes(pod):
            if v.get("persistentVolumeClaim") is not None:
                return QueueingHint.QUEUE
            # A volume the translation rejects raises: Queue, as upstream answers its error.
            driver = inline_csi_driver(v)
            if driver is not None and driver == attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def after_csi_node_updated(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Some driver's allocatable count went up (a driver without one counts 0)."""
        before = dict(_driver_counts(as_existing(old, "CSINode")))
        for driver, count in _driver_counts(as_existing(new, "CSINode")):
            if count > before.get(driver, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ---- limits ---------------------------------------------------------------
    def in_tree_limit(self, plugin: str, node: Node) -> int:
        from_node = node.allocatable.scalar.get(LIMIT_KEY_OF[plugin])
        if from_node is not None:
            return from_node
        configured = self.args.maxEBSVolumes if plugin == EBS_PLUGIN else self.args.maxGCEPDVolumes
        if configured is not None:
            return configured
        if self.env_max is not None:
            return self.env_max
        if plugin == GCE_PD_PLUGIN:
            return DEFAULT_MAX_GCE_PD_VOLUMES
        instance_type = next((node.labels[k] for k in _INSTANCE_TYPE_LABELS if k in node.labels), "")
        if EBS_NITRO_LIMIT_REGEX.search(instance_type):
            return DEFAULT_MAX_EBS_NITRO_VOLUMES
        return DEFAULT_MAX_EBS_VOLUMES

    @staticmethod
    def csi_limits(node: Node, csi_node: Mapping[str, Any] | None) -> dict[str, int]:
        limits = {k: v for k, v in node.allocatable.scalar.items()
                  if k.startswith("attachable-volumes-csi-")}
        if csi_node is not None:
            for d in spec(csi_node).get("drivers") or []:
                count = (d.get("allocatable") or {}).get("count")
                if count is not None and d.get("name"):
                    limits[csi_attach_limit_key(str(d["name"]))] = int(count)
        return limits

    def driver_installed(self, driver: str, csi_node: Mapping[str, Any] | None) -> bool:
        """checkCSIDriverOnNode: only a CSIDriver that sets preventPodSchedulingIfMissing
        requires the node's CSINode to list the driver."""
        csi_driver = self._handle().objects.get(CSI_DRIVER, driver)
        if csi_driver is None or spec(csi_driver).get("preventPodSchedulingIfMissing") is not True:
            return True
        if csi_node is None:
            return False
        return any(d.get("name") == driver for d in spec(csi_node).get("drivers") or [])

    # ---- per pod ----------------------------------------------------------------
    def _volumes(self, pod: Pod) -> _PodVolumes:
        objects = self._handle().objects
        cached = pod.cache.get("NodeVolumeLimits")
        if isinstance(cached, _PodVolumes) and cached.generation == objects.generation:
            return cached
        resolved = _resolve(pod, objects)
        pod.cache["NodeVolumeLimits"] = resolved
        return resolved

    # ---- extension points -------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        if not _needs_check(pod):
            return None, Status.skip()
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        vols = self._volumes(pod)
        if vols.missing:
            return Status.unresolvable(vols.missing)
        if vols.error:
            return Status(Code.ERROR, vols.error)
        if not vols.items:
            return None
        csi_node = self._handle().objects.get(CSI_NODE, node.name)
        # CSI migration of the in-tree EBS and GCE PD plugins is GA: wherever the node has a
        # CSINode, upstream counts those volumes under their CSI driver (isCSIMigrationOn).
        migrated = _IN_TREE_PLUGINS if csi_node is not None else frozenset()
        new = _Counted()
        _count(vols.items, migrated, new, csi=self.check_csi, intree=self.in_tree)
        if not new.csi and not new.intree:
            return None
        for driver in new.drivers:  # VolumeLimitScaling
            if not self.driver_installed(driver, csi_node):
                return Status.unschedulable(driver_not_installed(driver))
        limits = self.csi_limits(node, csi_node) if new.csi else {}
        if not limits and not new.intree:
            return None
        attached = _Counted()
        for existing in node_info.pods:
            ev = self._volumes(existing)
            if ev.error:
                return Status(Code.ERROR, ev.error)
            _count(ev.items, migrated, attached, csi=self.check_csi, intree=self.in_tree)
        if limits:
            attached_count: dict[str, int] = {}
            for unique, key in attached.csi.items():
                new.csi.pop(unique, None)
                attached_count[key] = attached_count.get(key, 0) + 1
            new_count: dict[str, int] = {}
            for key in new.csi.values():
                new_count[key] = new_count.get(key, 0) + 1
            for key, count in new_count.items():
                limit = limits.get(key)
                if limit is not None and attached_count.get(key, 0) + count > limit:
                    return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        for plugin, ids in new.intree.items():
            existing_ids = attached.intree.get(plugin, set())
            fresh = ids - existing_ids
            if len(existing_ids) + len(fresh) > self.in_tree_limit(plugin, node):
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None


def _driver_counts(csi_node: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(driver, allocatable count) in the CSINode's order; no count is 0."""
    counts: list[tuple[str, int]] = []
    for d in spec(csi_node).get("drivers") or []:
        count = (d.get("allocatable") or {}).get("count")
        counts.append((str(d.get("name") or ""), int(count) if count is not None else 0))
    return counts


class EBSLimits(NodeVolumeLimits):
    """In-tree AWS EBS attach limit only (the MaxEBSVolumeCount predicate)."""

    name = "EBSLimits"
    check_csi = False
    in_tree = frozenset({EBS_PLUGIN})

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        # Not a v1.37 plugin: NodeVolumeLimits' CSI registrations leave out the new nodes and
        # allocatable changes that raise in-tree limits, so any event requeues its pods.
        return []


class GCEPDLimits(NodeVolumeLimits):
    """In-tree GCE PD attach limit only (the MaxGCEPDVolumeCount predicate)."""

    name = "GCEPDLimits"
    check_csi = False
    in_tree = frozenset({GCE_PD_PLUGIN})

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return []  # as EBSLimits


PLUGINS = [NodeVolumeLimits, EBSLimits, GCEPDLimits]
