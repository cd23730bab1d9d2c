"""The InterPodAffinity plugin (upstream's plugin.go): its filtering and scoring halves joined,
with what they keep between cycles."""

from __future__ import annotations

from ...framework import ClusterEvent, ClusterEventWithHint, Handle
from . import queueing_hints
from .args import InterPodAffinityArgs
from .common import NAME
from .filtering import Filtering
from .scoring import Scoring
from .vector import AffinityVectors


class InterPodAffinity(Filtering, Scoring):
    name = NAME
    args_model = InterPodAffinityArgs
    has_normalize = True

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        self.args = args if args is not None else InterPodAffinityArgs()
        self.handle = handle
        self._vectors = AffinityVectors()  # the vectorised path's caches

    def events_to_register(self) -> list[ClusterEvent | ClusterEventWithHint]:
        return queueing_hints.registrations()
