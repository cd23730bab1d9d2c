"""Coscheduling for kubeberth: scheduler-plugins' gang scheduling on PodGroups
(`scheduling.x-k8s.io/v1alpha1`), as an out-of-tree plugin on kubeberth's public API.

The entry point (group `kubeberth.plugins`) names this module: its `PLUGINS` is the plugin,
and importing it registers the PodGroup status controller's kopf handlers.
"""

from . import controller
from .plugin import Coscheduling, CoschedulingArgs

PLUGINS = [Coscheduling]

__all__ = ["PLUGINS", "Coscheduling", "CoschedulingArgs", "controller"]
