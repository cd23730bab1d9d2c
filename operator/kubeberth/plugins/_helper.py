"""Helpers shared by in-tree plugins (upstream's plugins/helper package).

`default_normalize_score` is part of the public plugin API (`kubeberth.framework`); it is
re-exported here for the modules that import it from here."""

from __future__ import annotations

from ..framework import default_normalize_score

__all__ = ["default_normalize_score"]
