"""In-tree plugins. Each module lists its plugin classes in `PLUGINS` and may
list older policy names in `ALIASES`; they are discovered here, so adding a
plugin never means editing a central table."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from ..framework.registry import Registry


@lru_cache(maxsize=1)
def _in_tree() -> Registry:
    registry = Registry()
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for cls in getattr(module, "PLUGINS", ()):
            registry.register(cls)
        for alias in getattr(module, "ALIASES", ()):
            registry.add_alias(alias)
    return registry


def in_tree_registry() -> Registry:
    """A fresh copy of the in-tree registry (callers may add out-of-tree plugins to it)."""
    return _in_tree().copy()
