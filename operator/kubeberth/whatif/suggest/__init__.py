"""Suggestions (`simulate --suggest`): for each pod (or gang) simulate leaves unschedulable, the
smallest changes that would place it, ranked, each verified by simulating the edited input again.

- `core.py`: the units (a pod, a gang), the diagnosis read from the baseline's explanations, the
  `Rerun` that verifies a change (same seed, profiles, plugins, gates).
- `nodes.py`: AddNodes (node groups, the expanders' choice); `evict.py`: Evict and RaisePriority;
  `relax.py`: Relax (one constraint term); `requests.py`: LowerRequests; `gangs.py`: AddPods (a
  gang's missing pods); `uncordon.py`: Uncordon; `combine.py`: Combined (two or more changes).
- `search.py`: the search under a budget of re-simulations per unit, and the ranking.

Rendered (table lines, the `--explain` and HTML sections) and scoped for a tenant by
report/suggestions.py.
"""

from .search import DEFAULT_LIMIT, KIND_ORDER, UnitSuggestions, attach, by_pod, rank, suggest

__all__ = ["DEFAULT_LIMIT", "KIND_ORDER", "UnitSuggestions", "attach", "by_pod", "rank", "suggest"]
