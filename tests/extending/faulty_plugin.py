"""A plugin at every extension point that raises at the one its args name (tests/extending)."""

from pydantic import BaseModel

from kubeberth.framework import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)


class FaultyArgs(BaseModel):
    raiseAt: str = ""


class Faulty(PreEnqueuePlugin, PreFilterPlugin, PreFilterExtensions, FilterPlugin, PostFilterPlugin,
             PreScorePlugin, ScorePlugin, ReservePlugin, PermitPlugin, PreBindPlugin, BindPlugin, PostBindPlugin):
    name = "Faulty"
    args_model = FaultyArgs
    has_normalize = True

    def __init__(self, args, handle):
        self.at = args.raiseAt
        self.calls: list[str] = []

    def _maybe(self, point):
        self.calls.append(point)
        if point == self.at:
            raise RuntimeError(f"boom at {point}")

    def pre_enqueue(self, pod):
        self._maybe("PreEnqueue")

    def pre_filter(self, state, pod, nodes):
        self._maybe("PreFilter")
        return None, None

    def pre_filter_extensions(self):
        return self

    def add_pod(self, state, pod, pod_to_add, node_info):
        self._maybe("AddPod")

    def remove_pod(self, state, pod, pod_to_remove, node_info):
        self._maybe("RemovePod")

    def filter(self, state, pod, node_info):
        self._maybe("Filter")
        if self.at == "PostFilter":
            return Status.unschedulable("never fits")
        return None

    async def post_filter(self, state, pod, statuses):
        self._maybe("PostFilter")
        return None, Status.unschedulable("no help")

    def pre_score(self, state, pod, nodes):
        self._maybe("PreScore")

    def score(self, state, pod, node_info):
        self._maybe("Score")
        return 0

    def normalize_score(self, state, pod, scores):
        self._maybe("NormalizeScore")

    def reserve(self, state, pod, node_name):
        self._maybe("Reserve")

    def unreserve(self, state, pod, node_name):
        self._maybe("Unreserve")

    def permit(self, state, pod, node_name):
        self._maybe("Permit")
        if self.at == "Unreserve":  # to have Unreserve called
            return Status.unschedulable("not now"), 0
        return None, 0

    async def pre_bind(self, state, pod, node_name):
        self._maybe("PreBind")

    async def bind(self, state, pod, node_name):
        self._maybe("Bind")
        return Status.skip()

    def post_bind(self, state, pod, node_name):
        self._maybe("PostBind")
