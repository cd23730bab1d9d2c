"""Label helpers shared by InterPodAffinity and PodTopologySpread (not a plugin module).

The checks live in model/label_validation.py, where the model's own parse of pod affinity
terms uses them too; they are re-exported here for the plugins that import them from here."""

from __future__ import annotations

from ..framework import label_value_errors, qualified_name_errors, validate_selector

__all__ = ["label_value_errors", "qualified_name_errors", "validate_selector"]
