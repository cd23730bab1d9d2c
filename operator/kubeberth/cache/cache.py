"""The scheduler cache (upstream's backend/cache): nodes and the pods on them, with assumed pods.

Fed by watch events (add/update/remove node, add/update/remove pod) and by the scheduler:
`assume_pod` at the end of a scheduling cycle (the pod counts on its node before it is
bound), `finish_binding` when the bind call returned, `forget_pod` when binding failed. The
bound pod's add/update event confirms an assumed pod.

Assumed pods expire `ttl` seconds after `finish_binding` if their confirmation never
arrived (`cleanup_assumed_pods`, driven by the injectable clock). Upstream's default is no
expiry (scheduler.go: durationToExpireAssumedPod = 0, since kubernetes#106361: expiring raced
with slow bind confirmations and double-counted resources); `ttl=0` here means the same.

`update_snapshot` copies into a Snapshot only the NodeInfos whose generation changed since the
snapshot was last updated; the copies are clones, so a cycle never sees a half-applied change
and nothing the cache mutates is shared with a snapshot. A removed node that still has pods
stays as a NodeInfo without node (left out of snapshots) until its pods are gone, as upstream.
Nodes are listed in upstream's nodeTree order: round-robin over zones, in order of arrival.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clock import Clock, FakeClock
from ..model import Node, NodeInfo, Pod

if TYPE_CHECKING:
    from .snapshot import Snapshot

log = logging.getLogger(__name__)

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


class CacheError(ValueError):
    """An operation the cache's state does not allow (assume twice, forget a bound pod...)."""


def zone_key(node: Node) -> str:
    """upstream's utilnode.GetZoneKey: region and zone, '' when the node has neither."""
    labels = node.labels
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names per zone; `list()` interleaves the zones (upstream's nodeTree)."""

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def add(self, node: Node) -> bool:
        """Add (or re-zone) a node; False when nothing changed."""
        zone = zone_key(node)
        current = self._zone_of.get(node.name)
        if current == zone:
            return False
        if current is not None:
            self.remove(node.name)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone
        return True

    def remove(self, name: str) -> bool:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return False
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]
        return True

    def __len__(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: str) -> bool:
        return name in self._zone_of

    def list(self) -> list[str]:
        zones = list(self._zones.values())
        if len(zones) == 1:
            return list(zones[0])
        out: list[str] = []
        i = 0
        total = len(self._zone_of)
        while len(out) < total:
            for names in zones:
                if i < len(names):
                    out.append(names[i])
            i += 1
        return out


class _PodState:
    __slots__ = ("binding_finished", "deadline", "pod")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.binding_finished = False
        self.deadline: float | None = None


def _in_affinity_lists(ni: NodeInfo) -> bool:
    return bool(ni.pods_with_affinity or ni.pods_with_required_anti_affinity)


def _clear_node(ni: NodeInfo) -> None:
    ni.node = None
    ni.generation = NodeInfo._bump()


class SchedulerCache:
    def __init__(self, *, clock: Clock | None = None, ttl: float = 0.0) -> None:
        self.clock: Clock = clock or FakeClock()
        self.ttl = ttl
        # Most recently changed last, so a snapshot update walks only the changed ones.
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        self._tree = NodeTree()
        self._pods: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        # Told of each pod the cache starts or stops holding assumed (the pod groups' counts).
        self.on_assumed_change: Callable[[Pod], None] | None = None
        self._image_nodes: dict[str, set[str]] = {}
        self._image_counts: dict[str, int] = {}
        self._images_version = 0
        self._order_version = 0
        # The snapshot last updated, and where its NodeInfos are in its list.
        self._snap: Snapshot | None = None
        self._snap_index: dict[str, int] = {}
        self._snap_images_version = -1
        self._snap_order_version = -1

    # ---- nodes ----------------------------------------------------------------------
    def _touch(self, name: str) -> None:
        self._nodes.move_to_end(name)

    def add_node(self, node: Node) -> None:
        """A node was added or changed."""
        ni = self._nodes.get(node.name)
        if ni is None:
            ni = NodeInfo()
            self._nodes[node.name] = ni
        else:
            self._remove_images(ni.node)
        if self._tree.add(node):
            self._order_version += 1
        self._add_images(node)
        ni.set_node(node)
        self._touch(node.name)

    update_node = add_node

    def remove_node(self, name: str) -> bool:
        """The node was deleted. Its NodeInfo stays, without node, while pods are left on it."""
        ni = self._nodes.get(name)
        if ni is None:
            return False
        self._remove_images(ni.node)
        _clear_node(ni)
        if ni.pods:
            self._touch(name)
        else:
            del self._nodes[name]
        if self._tree.remove(name):
            self._order_version += 1
        return True

    def get_node(self, name: str) -> NodeInfo | None:
        """A clone of the cached NodeInfo (tests and debugging)."""
        ni = self._nodes.get(name)
        return ni.clone() if ni is not None else None

    def node(self, name: str) -> Node | None:
        ni = self._nodes.get(name)
        return ni.node if ni is not None else None

    def node_names(self) -> list[str]:
        """Nodes that exist (not the ghosts of removed ones), in nodeTree order."""
        return self._tree.list()

    def node_count(self) -> int:
        return len(self._tree)

    def _add_images(self, node: Node) -> None:
        changed = False
        for img in node.images:
            for name in img.names:
                nodes = self._image_nodes.setdefault(name, set())
                if node.name not in nodes:
                    nodes.add(node.name)
                    changed = True
        if changed:
            self._images_changed()

    def _remove_images(self, node: Node | None) -> None:
        if node is None:
            return
        changed = False
        for img in node.images:
            for name in img.names:
                nodes = self._image_nodes.get(name)
                if nodes is not None and node.name in nodes:
                    nodes.discard(node.name)
                    changed = True
                    if not nodes:
                        del self._image_nodes[name]
        if changed:
            self._images_changed()

    def _images_changed(self) -> None:
        self._images_version += 1
        self._image_counts = {name: len(nodes) for name, nodes in self._image_nodes.items()}

    # ---- pods -----------------------------------------------------------------------
    def _add(self, pod: Pod, assumed: bool = False) -> None:
        ni = self._nodes.get(pod.node_name)
        if ni is None:
            # The pod's node has not arrived yet (or is gone): keep a NodeInfo without node.
            ni = NodeInfo()
            self._nodes[pod.node_name] = ni
        ni.add_pod(pod)
        self._touch(pod.node_name)
        self._pods[pod.uid] = _PodState(pod)
        if assumed:
            self._assumed.add(pod.uid)
            if self.on_assumed_change is not None:
                self.on_assumed_change(pod)

    def _remove(self, pod: Pod) -> None:
        """Remove the cached pod (the version in the cache, on the node it is cached on)."""
        ni = self._nodes.get(pod.node_name)
        if ni is None:
            log.warning("node %s not found when removing pod %s", pod.node_name, pod.key)
        else:
            ni.remove_pod(pod)
            if not ni.pods and ni.node is None:
                del self._nodes[pod.node_name]
            else:
                self._touch(pod.node_name)
        self._pods.pop(pod.uid, None)
        if pod.uid in self._assumed:
            self._assumed.discard(pod.uid)
            if self.on_assumed_change is not None:
                self.on_assumed_change(pod)

    def add_pod(self, pod: Pod) -> None:
        """An assigned pod was added. It confirms the pod when assumed (also on another node)."""
        state = self._pods.get(pod.uid)
        if state is not None and pod.uid in self._assumed:
            if state.pod.node_name != pod.node_name:
                log.info("pod %s was assumed on %s but added on %s", pod.key, state.pod.node_name, pod.node_name)
            self._remove(state.pod)
            self._add(pod)
        elif state is None:
            self._add(pod)
        else:
            # Already added: apply it as an update (duplicate or replayed event).
            self._remove(state.pod)
            self._add(pod)

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        """An assigned pod changed. An assumed pod's update confirms it, like add_pod."""
        state = self._pods.get(new.uid)
        if state is None or new.uid in self._assumed:
            self.add_pod(new)
            return
        if state.pod.node_name != new.node_name:
            log.error("pod %s updated on node %s but cached on %s", new.key, new.node_name, state.pod.node_name)
        self._remove(state.pod)
        self._add(new)

    def remove_pod(self, pod: Pod) -> bool:
        """The pod was deleted (assumed or not); False when the cache did not have it."""
        state = self._pods.get(pod.uid)
        if state is None:
            return False
        self._remove(state.pod)
        return True

    def assume_pod(self, pod: Pod) -> None:
        """Count `pod` (whose node_name is the chosen node) on its node before it is bound."""
        if not pod.node_name:
            raise CacheError(f"pod {pod.key} has no node to be assumed on")
        if pod.uid in self._pods:
            raise CacheError(f"pod {pod.key} is in the cache, so can't be assumed")
        self._add(pod, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        """The bind call returned; the expiry countdown (if any) starts."""
        state = self._pods.get(pod.uid)
        if state is None or pod.uid not in self._assumed:
            return
        state.binding_finished = True
        state.deadline = self.clock.now() + self.ttl if self.ttl > 0 else None

    def forget_pod(self, pod: Pod) -> None:
        """Undo assume_pod (binding failed). A pod no longer cached is ignored."""
        state = self._pods.get(pod.uid)
        if state is None:
            return
        if state.pod.node_name != pod.node_name:
            raise CacheError(f"pod {pod.key} was assumed on {pod.node_name} but assigned to {state.pod.node_name}")
        if pod.uid not in self._assumed:
            raise CacheError(f"pod {pod.key} is not assumed, so it cannot be forgotten")
        self._remove(state.pod)

    def cleanup_assumed_pods(self) -> list[Pod]:
        """Expire assumed pods whose binding finished more than ttl ago; returns them."""
        if self.ttl <= 0:
            return []
        now = self.clock.now()
        expired = []
        for uid in list(self._assumed):
            state = self._pods.get(uid)
            if state is None:
                self._assumed.discard(uid)
                continue
            if not state.binding_finished or state.deadline is None:
                continue
            if now > state.deadline:
                log.warning("assumed pod %s on %s expired", state.pod.key, state.pod.node_name)
                self._remove(state.pod)
                expired.append(state.pod)
        return expired

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def get_pod(self, uid: str) -> Pod | None:
        state = self._pods.get(uid)
        return state.pod if state is not None else None

    def assumed_pods(self) -> list[Pod]:
        return [self._pods[u].pod for u in self._assumed if u in self._pods]

    def assumed_count(self) -> int:
        return len(self._assumed)

    def pod_count(self) -> int:
        return len(self._pods)

    def pods(self) -> list[Pod]:
        return [s.pod for s in self._pods.values()]

    # ---- snapshots -------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring `snapshot` up to date: clone the NodeInfos changed since its last update."""
        full = snapshot is not self._snap
        if full:
            snapshot.node_infos = []
            snapshot.by_name = {}
            snapshot.generation = 0
            self._snap = snapshot
            self._snap_index = {}
        since = snapshot.generation
        by_name = snapshot.by_name
        rebuild_order = full
        lists_dirty = False
        if full:
            self._snap_images_version = -1
        images_changed = self._snap_images_version != self._images_version
        counts = self._image_counts
        newest = since
        for name in reversed(self._nodes):
            ni = self._nodes[name]
            if ni.generation <= since:
                break
            newest = max(newest, ni.generation)
            if ni.node is None:
                continue
            clone = ni.clone()
            clone.image_num_nodes = counts
            existing = by_name.get(name)
            by_name[name] = clone
            if _in_affinity_lists(clone) or (existing is not None and _in_affinity_lists(existing)):
                lists_dirty = True
            idx = self._snap_index.get(name)
            if existing is None or idx is None or idx >= len(snapshot.node_infos) \
                    or snapshot.node_infos[idx] is not existing:
                rebuild_order = True
            else:
                snapshot.node_infos[idx] = clone
        if rebuild_order or self._snap_order_version != self._order_version:
            # Nodes were added, removed or re-zoned: drop the removed ones, re-list in tree order.
            for name in [n for n in by_name if n not in self._tree]:
                del by_name[name]
            snapshot.node_infos = [by_name[n] for n in self._tree.list() if n in by_name]
            self._snap_index = {ni.name: i for i, ni in enumerate(snapshot.node_infos)}
            self._snap_order_version = self._order_version
            lists_dirty = True
        if images_changed:
            for ni in snapshot.node_infos:
                ni.image_num_nodes = counts
            self._snap_images_version = self._images_version
        if lists_dirty:
            # Only when a NodeInfo in (or entering) these lists changed: they hold the copies.
            # Rebuilt on first use (the vectorised plugins do not read them).
            snapshot.affinity_lists_changed()
        snapshot.generation = newest
        if len(snapshot.node_infos) != len(self._tree):
            log.error("snapshot inconsistent: %d NodeInfos for %d nodes; rebuilding",
                      len(snapshot.node_infos), len(self._tree))
            self._snap = None
            self.update_snapshot(snapshot)

    def snapshot(self) -> Snapshot:
        """A new, full snapshot."""
        from .snapshot import Snapshot

        saved = (self._snap, self._snap_index, self._snap_images_version, self._snap_order_version)
        snap = Snapshot()
        self.update_snapshot(snap)
        self._snap, self._snap_index, self._snap_images_version, self._snap_order_version = saved
        return snap
