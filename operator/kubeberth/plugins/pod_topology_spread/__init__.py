"""PodTopologySpread, shaped as upstream's framework/plugins/podtopologyspread: the plugin
(plugin.py), its args (args.py), what the phases share (common.py: constraints and the rules of
which nodes and pods count), the hard constraints (filtering.py), the soft ones (scoring.py) and
the vectorised Filter path (vector.py)."""

from .args import DefaultConstraint, PodTopologySpreadArgs
from .common import (
    DO_NOT_SCHEDULE,
    ERR_CONSTRAINTS_NOT_MATCH,
    ERR_NODE_LABEL_NOT_MATCH,
    HONOR,
    IGNORE,
    LABEL_HOSTNAME,
    LABEL_ZONE,
    NAME,
    PRE_FILTER_KEY,
    PRE_SCORE_KEY,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    Selector,
    default_selector,
    required_node_affinity_matches,
)
from .plugin import PLUGINS, PodTopologySpread
from .scoring import score_for_count, topology_normalizing_weight

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_CONSTRAINTS_NOT_MATCH",
    "ERR_NODE_LABEL_NOT_MATCH",
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "LABEL_ZONE",
    "NAME",
    "PLUGINS",
    "PRE_FILTER_KEY",
    "PRE_SCORE_KEY",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "Constraint",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "Selector",
    "default_selector",
    "required_node_affinity_matches",
    "score_for_count",
    "topology_normalizing_weight",
]
