"""The scheduler's nominator: the queue's Nominator, noting the node of every change.

preemption/nominated.py keeps, per preemptor priority, the requests of the pods nominated to
each row of the node arrays; with this log it recomputes only the rows of the nodes whose
nominations changed since it last looked, instead of walking every nomination each cycle.
Every change goes through add_nominated_pod, update_nominated_pod and
delete_nominated_pod_if_exists; each notes the node the pod was nominated to before and after.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ..model import Pod
from ..queue.nominator import Nominator

_LOG_LIMIT = 4096
_epochs = itertools.count(1)


class LoggedNominator(Nominator):
    """A Nominator with `change_epoch` and `changed_nodes` (the ChangeLog of preemption/nominated):
    the nodes whose nominations changed, in order, since `change_epoch` began."""

    log_limit = _LOG_LIMIT

    def __init__(self, pod_exists: Callable[[Pod], bool] | None = None) -> None:
        super().__init__(pod_exists)
        self.change_epoch = next(_epochs)
        self.changed_nodes: list[str] = []

    def _note(self, *nodes: str) -> None:
        log = self.changed_nodes
        if len(log) >= self.log_limit:  # readers recompute everything when the epoch changes
            self.change_epoch = next(_epochs)
            log.clear()
        for node in nodes:
            if node:
                log.append(node)

    def add_nominated_pod(self, pod: Pod, node_name: str | None = None) -> None:
        before = self.nominated_node_for(pod)
        super().add_nominated_pod(pod, node_name)
        self._note(before, self.nominated_node_for(pod))

    def update_nominated_pod(self, old: Pod | None, new: Pod) -> None:
        pods = (new,) if old is None or old.uid == new.uid else (old, new)
        before = [self.nominated_node_for(p) for p in pods]
        super().update_nominated_pod(old, new)
        self._note(*before, *(self.nominated_node_for(p) for p in pods))

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        before = self.nominated_node_for(pod)
        if not before:
            return  # not nominated: nothing changes (every assumed pod comes here)
        super().delete_nominated_pod_if_exists(pod)
        self._note(before)
