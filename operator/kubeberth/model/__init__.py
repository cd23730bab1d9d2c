"""Pure model of the Kubernetes objects the scheduler reads. No I/O."""

from .affinity_terms import AffinityTerm, PodAffinityTerms, pod_affinity_terms
from .errors import ModelError
from .node import ImageState, Node
from .nodeinfo import NodeInfo
from .pod import DEFAULT_SCHEDULER, HostPort, Pod, placeholder_pod
from .pod_group import PodGroup
from .quantity import QuantityError, milli_value, parse_quantity, value
from .resources import Resource, pod_requests
from .selectors import LabelSelector, NodeSelector, NodeSelectorTerm, PreferredTerm, Requirement
from .taints import Taint, Toleration, find_untolerated

__all__ = [
    "DEFAULT_SCHEDULER", "AffinityTerm", "HostPort", "ImageState", "LabelSelector", "ModelError", "Node", "NodeInfo",
    "NodeSelector", "NodeSelectorTerm", "Pod", "PodAffinityTerms", "PodGroup", "PreferredTerm", "QuantityError",
    "Requirement",
    "Resource", "Taint", "Toleration", "find_untolerated", "milli_value", "parse_quantity", "placeholder_pod",
    "pod_affinity_terms", "pod_requests", "value",
]
