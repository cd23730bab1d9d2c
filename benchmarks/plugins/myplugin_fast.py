import numpy as np
from myplugin import PreferLabel as PerNode

from kubeberth.framework import MAX_NODE_SCORE, CycleState, Pod
from kubeberth.framework.vector import NodeView


class PreferLabel(PerNode):
    """PreferLabel, scoring every node of the cycle at once from the snapshot's label columns."""

    def score_all(self, state: CycleState, pod: Pod, nodes: NodeView) -> np.ndarray:
        wanted = nodes.arrays.label_code_of(self.label, self.value)  # 0: no node has that value
        codes = nodes.take(nodes.arrays.label_codes(self.label))  # per node of the view
        return np.where((codes == wanted) & (wanted != 0), MAX_NODE_SCORE, 0).astype(np.int64)
