"""Suggestions (`simulate --suggest`): for each pod (or gang) simulate leaves unschedulable, the
smallest changes that would place it, ranked, each verified by simulating the edited input again.

- `core.py`: the units (a pod, a gang), the diagnosis read from the baseline's explanations, the
  `Rerun` that verifies a change (same seed, profiles, plugins, gates).
- `nodes.py`: AddNodes (node groups, the expanders' choice); `evict.py`: Evict and RaisePriority;
  `relax.py`: Relax (one constraint term); `requests.py`: LowerRequests; `gangs.py`: AddPods (a
  gang's missing pods, or its minCount lowered); `uncordon.py`: Uncordon; `combine.py`: Combined (a
  first step, then one more change); `on_node.py`: Combined on chosen nodes (every rejection a node
  gives answered there at once: relax, uncordon, lower requests, evict; and, on a node the pod is
  pinned to, node_change.py's RaiseVolumeLimit and AddNodeResource; repel.py: the pods whose
  anti-affinity keeps the pod out of the node's domain).
- `core.py` also holds the one verify path every kind uses (`verify_change`, `first_placing`) and the
  binary search for the smallest count that places the unit (`smallest`).
- `search.py`: the search under a budget of re-simulations per unit, and the ranking.

Rendered (table lines, the `--explain` and HTML sections) and scoped for a tenant by
report/suggestions.py.
"""

from .search import DEFAULT_LIMIT, KIND_ORDER, UnitSuggestions, attach, by_pod, rank, suggest

__all__ = ["DEFAULT_LIMIT", "KIND_ORDER", "UnitSuggestions", "attach", "by_pod", "rank", "suggest"]
