from pydantic import BaseModel

from kubeberth.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, Pod, ScorePlugin


class PreferLabelArgs(BaseModel):
    label: str = "tier"
    value: str = "gold"


class PreferLabel(ScorePlugin):
    """Prefer the nodes whose label `label` is `value`."""

    name = "PreferLabel"
    args_model = PreferLabelArgs
    requires_api = ">=1.0,<2"

    def __init__(self, args: PreferLabelArgs, handle: Handle) -> None:
        super().__init__(args, handle)
        self.label, self.value = args.label, args.value

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        return MAX_NODE_SCORE if node is not None and node.labels.get(self.label) == self.value else 0
