"""The PodTopologySpread plugin: hard (DoNotSchedule) and soft (ScheduleAnyway) spread
constraints, as upstream (plugin.go); its phases are in filtering.py and scoring.py.

Pods without constraints of their own get the plugin's default constraints (upstream's system
defaults unless `defaultingType: List`), with a selector built from the Services selecting the
pod and its controlling ReplicaSet, ReplicationController or StatefulSet.

Counting goes through the shared label index (`_pod_index`): per constraint the matching pods
per node come from the few signatures that match its selector.
"""

from __future__ import annotations

from ...framework import ClusterEvent, ClusterEventWithHint, Handle, Pod
from .args import PodTopologySpreadArgs
from .common import NAME, SYSTEM_DEFAULT_CONSTRAINTS, Constraint, ConstraintSource
from .filtering import Filtering
from .queueing_hints import QueueingHints
from .scoring import Scoring
from .vector import SpreadVectors


class PodTopologySpread(Filtering, Scoring):
    name = NAME
    args_model = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle) -> None:
        self.args = args if args is not None else PodTopologySpreadArgs()
        self.handle = handle
        if self.args.defaultingType == "System":
            raw_defaults = SYSTEM_DEFAULT_CONSTRAINTS
            self.system_defaulted = True
        else:
            raw_defaults = [c.model_dump(exclude_none=True) for c in self.args.defaultConstraints]
            self.system_defaulted = False
        self.source = ConstraintSource(raw_defaults, self.system_defaulted, handle)
        self._vectors = SpreadVectors()  # the vectorised path's caches (vector.py)
        self._hints = QueueingHints(self.constraints)

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return self._hints.registrations()

    def constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's constraints for `action`, or the defaults when it has none of its own.
        Raises ValueError when they cannot be parsed."""
        return self.source.constraints(pod, action)


PLUGINS = [PodTopologySpread]
