"""Preemption: candidates, victims, PodDisruptionBudgets, picking the node, acting.

Used by the DefaultPreemption PostFilter plugin (plugins/default_preemption.py).
Extenders receive and return `{node name: Victims}` in `process_preemption`.
"""

from ..framework.victims import Candidate, Victims, candidates_to_victims_map
from .evaluator import Evaluator, calculate_num_candidates
from .pdb import PDB, filter_pods_with_pdb_violation, list_pdbs
from .pick import pick_one_node_for_preemption
from .select_victims import default_is_eligible_pod

__all__ = [
    "PDB", "Candidate", "Evaluator", "Victims", "calculate_num_candidates", "candidates_to_victims_map",
    "default_is_eligible_pod", "filter_pods_with_pdb_violation", "list_pdbs", "pick_one_node_for_preemption",
]
