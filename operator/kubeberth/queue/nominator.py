"""Pods nominated to nodes, waiting for preemption victims to leave (upstream's nominator).

The framework's `run_filter_with_nominated_pods` reads `nominated_pods_for_node`; the
DefaultPreemption plugin calls `add_nominated_pod(pod, node)` when it nominates a pod and
`delete_nominated_pod_if_exists(pod)` when it clears a nomination. The scheduling queue keeps
the entries current on pod add/update/delete, and the scheduler removes a pod's nomination
when the pod is assumed on a node.
"""

from __future__ import annotations

from collections.abc import Callable

from ..model import Pod


class Nominator:
    """uid -> (latest pod, node) and node -> uids, in nomination order."""

    def __init__(self, pod_exists: Callable[[Pod], bool] | None = None) -> None:
        # Returns False when the pod was deleted or already bound: such a pod is not nominated.
        self.pod_exists = pod_exists
        self._by_uid: dict[str, tuple[Pod, str]] = {}
        self._by_node: dict[str, list[str]] = {}

    def add_nominated_pod(self, pod: Pod, node_name: str | None = None) -> None:
        """Nominate `pod` to `node_name`; None takes the pod's status.nominatedNodeName
        (upstream's ModeNoop), "" clears the nomination. Replaces any earlier nomination."""
        self._delete(pod.uid)
        node = pod.nominated_node_name if node_name is None else node_name
        if not node:
            return
        if pod.node_name:
            return
        if self.pod_exists is not None and not self.pod_exists(pod):
            return
        self._by_uid[pod.uid] = (pod, node)
        self._by_node.setdefault(node, []).append(pod.uid)

    def update_nominated_pod(self, old: Pod | None, new: Pod) -> None:
        """Point the nomination at the new version of the pod. When neither version names a
        node but the scheduler nominated one in memory, that nomination is kept (the status
        patch may not have arrived yet)."""
        keep: str | None = None
        if (old is None or not old.nominated_node_name) and not new.nominated_node_name:
            entry = self._by_uid.get(new.uid)
            if entry is not None:
                keep = entry[1]
        self._delete(old.uid if old is not None else new.uid)
        self.add_nominated_pod(new, keep)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self._delete(pod.uid)

    def _delete(self, uid: str) -> None:
        entry = self._by_uid.pop(uid, None)
        if entry is None:
            return
        node = entry[1]
        uids = self._by_node.get(node)
        if uids is not None:
            try:
                uids.remove(uid)
            except ValueError:
                pass
            if not uids:
                del self._by_node[node]

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        """The pods nominated to the node (a new list), in nomination order."""
        uids = self._by_node.get(node_name)
        if not uids:
            return []
        return [self._by_uid[u][0] for u in uids]

    def nominated_node_names(self) -> list[str]:
        """The nodes some pod is nominated to (the vectorised filter path checks these per node)."""
        return list(self._by_node)

    def nominated_node_for(self, pod: Pod) -> str:
        entry = self._by_uid.get(pod.uid)
        return entry[1] if entry is not None else ""

    def nominations(self) -> dict[str, str]:
        """pod key -> node, for debugging and tests."""
        return {p.key: n for p, n in self._by_uid.values()}

    def __len__(self) -> int:
        return len(self._by_uid)
