"""VolumeBinding: a pod's PersistentVolumeClaims must be (or become) bound to volumes its
node can reach. As upstream's volumebinding plugin with v1.37's default gates:

- PreFilter (`plugin.py`): a pod without claims (PVC or generic ephemeral volumes) skips the
  plugin. A missing claim, a claim being deleted or lost, or an ephemeral claim the pod does
  not own rejects the pod (UnschedulableAndUnresolvable). Unbound claims of an Immediate class
  (and claims pre-bound by `spec.volumeName` whose PV is missing) reject it with "pod has
  unbound immediate PersistentVolumeClaims". No node subset (since v1.33).
- Filter (`binder.py`, FindPodVolumes): every bound claim's PV node affinity must match;
  every unbound WaitForFirstConsumer claim needs an Available PV of its class that fits (the
  smallest wins; claims matched smallest request first, one PV each), or a class that
  provisions on this node (provisioner set and not `kubernetes.io/no-provisioner`,
  `allowedTopologies` matching) and, for a CSI driver whose CSIDriver sets
  `storageCapacity: true`, a CSIStorageCapacity of the class reachable from the node with
  room for the request ("node(s) did not have enough free storage" otherwise,
  `capacity.py`). A claim already given a node (`volume.kubernetes.io/selected-node`) fits
  only that node.
- Score (StorageCapacityScoring, beta and on in v1.37): the utilisation of the PVs chosen for
  static binding, or of the CSIStorageCapacity pools of claims to provision, through the
  `shape` arg (default: 0% -> 10, 100% -> 0, so emptier nodes win), averaged over classes.
- Reserve assumes the chosen PVs and selected nodes; Unreserve forgets them.
- PreBind writes what kube-scheduler writes, through the ClusterClient: the PV's
  `spec.claimRef` (and `pv.kubernetes.io/bound-by-controller`) for a static binding, the
  claim's `volume.kubernetes.io/selected-node` for provisioning; then it waits, polling the
  watched objects once a second for up to `bindTimeoutSeconds` (600), until the PV
  controller (or provisioner) has bound every claim, failing with upstream's errors
  ("binding volumes: context deadline exceeded", "ClaimRef got reset for pv ...",
  "provisioning failed for PVC ..."). simulate's in-memory client plays the PV controller
  and the provisioner, so its wait ends at once.

Documented gaps: in-tree PVs are not translated to CSI topology; the check that the pod
still exists during the wait is left to the binding that follows (it fails for a deleted
pod); an object without a uid (a hand-written dump) is accepted in a claimRef without one.
"""

from .args import UtilizationShapePoint, VolumeBindingArgs
from .binder import Binding, DynamicProvision, PodVolumeClaims, PodVolumes, VolumeBinder
from .claims import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_REASON_UNBOUND_IMMEDIATE,
    bind_immediate_claims,
    bind_volume_to_claim_ref,
    complete_binding,
    match_topology_selector_terms,
    pvc_key,
)
from .plugin import NAME, STATE_KEY, VolumeBinding

__all__ = [
    "ERR_REASON_BIND_CONFLICT", "ERR_REASON_NODE_CONFLICT", "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST", "ERR_REASON_UNBOUND_IMMEDIATE", "NAME", "PLUGINS", "STATE_KEY", "Binding",
    "DynamicProvision", "PodVolumeClaims", "PodVolumes", "UtilizationShapePoint", "VolumeBinder",
    "VolumeBinding", "VolumeBindingArgs", "bind_immediate_claims", "bind_volume_to_claim_ref",
    "complete_binding", "match_topology_selector_terms", "pvc_key",
]

PLUGINS = [VolumeBinding]
